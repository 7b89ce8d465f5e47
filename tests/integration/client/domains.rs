//! `proxydeck domains list|add|verify|remove`: against a service whose
//! DNS checks ask a real DNS server on loopback (`helpers::DnsServer`),
//! so that `verify` verifies for real once the test publishes the record
//! `add` printed. `verify` exits 4 while the name is not verified, 1 on
//! any other failure.

use std::time::Duration;

use proxydeck::domain_checks::DomainOptions;
use proxydeck::store::StoreOptions;
use reqwest::Method;

use super::*;

/// `site` (u1's, in org-1), served with its DNS checks asking `dns`.
async fn served(dns: &DnsServer) -> (TestApp, String, TempDir) {
    let options = proxydeck::app::ServiceOptions {
        domains: DomainOptions {
            resolver: Some(dns.addr()),
            lookup_timeout: Duration::from_millis(500),
            ..DomainOptions::default()
        },
        ..test_options()
    };
    let app = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    app.seed(vec![org(1), user("u1", &[1]), project("site", 1, 1)])
        .await;
    let token = app.token("u1").await;
    (app, token, tempfile::tempdir().expect("a temporary folder"))
}

/// The exit status the client ended with.
fn code(out: &Out) -> Option<i32> {
    out.status.code()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_is_added_verified_by_its_record_listed_and_removed() {
    let dns = DnsServer::start();
    let (app, token, cwd) = served(&dns).await;
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
    let url = app.url("");
    let env = [
        ("PROXYDECK_URL", url.as_str()),
        ("PROXYDECK_TOKEN", token.as_str()),
    ];
    let on_a_terminal = |args: &[&str]| on_terminal(cwd.path(), args, &env, 200);

    // Added, piped: the object the API answered, pending, with its record.
    let added = run(&["domains", "add", "org-1/site", "Shop.Example.com"]).json();
    assert_eq!(added["name"], json!("shop.example.com"), "{added}");
    assert_eq!(added["verification"]["status"], json!("pending"), "{added}");
    let record = added["verification"]["record"].clone();
    let (record_name, record_value) = (
        record["name"].as_str().unwrap(),
        record["value"].as_str().unwrap(),
    );
    assert_eq!(record_name, "_proxydeck-challenge.shop.example.com");

    // Added on a terminal: the record to create, plainly.
    let out = on_a_terminal(&["domains", "add", "org-1/site", "*.shops.example.com"]);
    assert!(out.status.success(), "{out:#?}");
    let (_, wildcard) = app
        .get_json("/v1/projects/site/domains/*.shops.example.com", &token)
        .await;
    let wildcard_record = &wildcard["verification"]["record"];
    assert_eq!(
        out.stdout,
        format!(
            "Added *.shops.example.com to org-1/site (pending).\nCreate this DNS record to prove you own it:\n  TXT  {}  \"{}\"\nproxydeck checks it now and again until it is found; `proxydeck domains verify org-1/site *.shops.example.com` checks at once.\n",
            text_of(&wildcard_record["name"]),
            text_of(&wildcard_record["value"]),
        )
    );

    // No record yet: not verified, exit status 4, the answer on stdout.
    let out = run(&["domains", "verify", "site", "shop.example.com"]);
    assert_eq!(code(&out), Some(4), "{out:#?}");
    let answer = one_json_document(&out.stdout);
    assert_eq!(answer["dns_status"], json!(false), "{answer}");
    assert_eq!(answer["verification"]["last_result"], json!("absent"));
    assert_eq!(
        out.stderr, "error: shop.example.com is not verified\n",
        "{out:#?}"
    );
    let out = on_a_terminal(&["domains", "verify", "site", "shop.example.com"]);
    assert_eq!(code(&out), Some(4), "{out:#?}");
    assert_eq!(
        out.stdout,
        format!(
            "shop.example.com is not verified, so it does not route: no TXT record was found under the record's name.\nCreate this DNS record to prove you own it:\n  TXT  {record_name}  \"{record_value}\"\nerror: shop.example.com is not verified\n"
        )
    );
    // A record holding another value is said so.
    dns.set_txt(record_name, &["proxydeck-verification=someone-else"]);
    let out = run(&["domains", "verify", "site", "shop.example.com"]);
    assert_eq!(code(&out), Some(4), "{out:#?}");
    assert_eq!(
        one_json_document(&out.stdout)["verification"]["last_result"],
        json!("mismatch")
    );

    // The record published: verified at once, exit status 0.
    dns.set_txt(record_name, &[record_value]);
    let out = on_a_terminal(&["domains", "verify", "org-1/site", "shop.example.com"]);
    assert_eq!(code(&out), Some(0), "{out:#?}");
    assert_eq!(
        out.stdout,
        "shop.example.com is verified: it routes to org-1/site (the TXT record holds this domain's value).\n"
    );
    let (_, now) = app
        .get_json("/v1/projects/site/domains/shop.example.com", &token)
        .await;
    assert_eq!(now["dns_status"], json!(true), "{now}");
    let out = run(&[
        "domains",
        "verify",
        "site",
        "shop.example.com",
        "--jq",
        ".verification.status",
    ]);
    assert_eq!(code(&out), Some(0), "{out:#?}");
    assert_eq!(out.stdout, "verified\n");

    // Listed: piped, every domain as the API answers them; as a table,
    // each one's status and last check.
    let (_, page) = app.get_json("/v1/projects/site/domains", &token).await;
    let out = run(&["domains", "list", "org-1/site"]);
    assert!(out.stderr.is_empty(), "{out:#?}");
    assert_eq!(out.json(), page["data"]);
    let names = run(&["domains", "list", "site", "--jq", ".[].name"]);
    assert_eq!(names.stdout, "*.shops.example.com\nshop.example.com\n");
    let out = run(&["domains", "list", "site", "-o", "table"]);
    assert!(out.status.success(), "{out:#?}");
    let rows = table(&out.stdout, &["NAME", "DNS", "SSL", "LAST CHECK (UTC)"]);
    let checked = minute_of(&now["verification"]["checked_at"], "-");
    assert_eq!(rows.len(), 2, "{}", out.stdout);
    assert_eq!(rows[0][..3], ["*.shops.example.com", "pending", "no"]);
    assert_eq!(
        rows[1],
        [
            "shop.example.com",
            "verified",
            "no",
            &format!("found, {checked}")
        ]
    );

    // Removed: never without --yes when no one can be asked.
    let out = run(&["domains", "remove", "site", "shop.example.com"]);
    out.error(&["--yes", "remove domain shop.example.com from project site"]);
    let out = run(&[
        "domains",
        "remove",
        "org-1/site",
        "shop.example.com",
        "--yes",
    ]);
    assert_eq!(
        out.json(),
        json!({"object": "domain", "id": "shop.example.com", "deleted": true})
    );
    let names = run(&["domains", "list", "site", "--jq", ".[].name"]);
    assert_eq!(names.stdout, "*.shops.example.com\n");
    // A name the project does not have: the API's 404, exit status 1.
    let out = run(&["domains", "verify", "site", "shop.example.com"]);
    assert_eq!(code(&out), Some(1), "{out:#?}");
    out.error(&[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_name_says_the_rule() {
    let dns = DnsServer::start();
    let (app, token, cwd) = served(&dns).await;
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
    for (name, rule) in [
        ("192.0.2.1", "name must be a host name, not an IP address"),
        (
            "shop.example.com:8443",
            "name must be a host name without a port",
        ),
        ("localhost", "name must have at least two labels"),
    ] {
        let out = run(&["domains", "add", "site", name]);
        assert_eq!(code(&out), Some(1), "{name}: {out:#?}");
        out.error(&[rule]);
    }
    let (status, page, _) = send(
        &app,
        Method::GET,
        "/v1/projects/site/domains",
        &token,
        &[],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(page["data"], json!([]), "nothing was added: {page}");
}
