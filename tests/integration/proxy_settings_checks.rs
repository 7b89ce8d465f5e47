//! Checks before activation (docs/management.md): the API's rules past
//! the import's on createProjectProxySettings and on activation (every
//! regex compiles, `address` is a host with an optional port,
//! `ca_certificate` is PEM certificates, continent and country codes are
//! valid, regions are names), each taking every body the public document
//! and the platform's proxy configuration take, and
//! on the regex members of projects, each a 400 naming every member at
//! fault; revisions stored before them still list and are not activated;
//! `dry_run=true` answers what either proxy-settings write would do and
//! stores nothing.

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use super::proxy_settings_writes::{P, create, fixture, revisions, update};
use crate::helpers::*;

const DRY: &str = "?dry_run=true";

/// A self-signed certificate, and its key, as PEM.
fn certificate_and_key() -> (String, String) {
    let made = rcgen::generate_simple_self_signed(vec!["ca.example".to_owned()]).unwrap();
    (made.cert.pem(), made.signing_key.serialize_pem())
}

/// A revision that passes every check, and uses each rule's edges.
fn good(certificate: &str) -> Value {
    json!({"description": "good",
           "backends": [
               {"name": "origin", "address": "origin.example.com:443", "default": true,
                "ca_certificate": format!("Our CA, twice\n{certificate}{certificate}")},
               {"name": "v4", "address": "192.0.2.7:65535"},
               {"name": "v6", "address": "[2001:db8::1]:1"}],
           "routes": [
               {"path": "^/eu/(fr|de)/[a-z]+\\.html$", "regex": true, "backend_name": "origin",
                "rank": "1", "continent": ["EU", "AF"], "country": ["FR", "DE", "XK"],
                "region": ["EU-West", "US-East", "FR-IDF"]},
               {"path": "(not a regex", "backend_name": "v4", "rank": 2},
               {"path": "/", "backend_name": "v6"}]})
}

/// What a client of the public API sends, shaped as the platform's own
/// proxy configuration is (`edgee.toml`: `address = "192.168.0.10"` with
/// `enable_ssl = true`): addresses without a port, routes without a rank
/// or sharing one, Fastly's region names, an empty `ca_certificate`, a
/// regex the edge's `regex` crate compiles over 1 MiB.
fn as_the_platform_writes_it() -> Value {
    json!({"description": "from edgee.toml",
           "backends": [
               {"name": "demo", "default": true, "address": "192.168.0.10", "enable_ssl": true},
               {"name": "api", "address": "192.168.0.30", "enable_ssl": true,
                "ca_certificate": "", "sni_hostname": "", "check_certificate": ""},
               {"name": "local", "address": "localhost:8080", "enable_ssl": false},
               {"name": "named", "address": "origin.example.com."},
               {"name": "v6", "address": "[2001:db8::1]"}],
           "routes": [
               {"path": "/api/", "backend_name": "api"},
               {"path": "/local/", "backend_name": "local"},
               {"path": "^/files/\\w{32}$", "regex": true, "backend_name": "named", "rank": "5"},
               {"path": "/v6/", "backend_name": "v6", "rank": "5",
                "region": ["EU-West", "APAC", "Asia-South"], "continent": ["EU"], "country": ["FR"]}]})
}

/// p1's revisions as the listing gives them, oldest first.
async fn listing(app: &TestApp, token: &str) -> Value {
    let path = format!("/v1/projects/{P}/proxy-settings?order_direction=ASC");
    let (status, listing) = app.get_json(&path, token).await;
    assert_eq!(status, 200, "{listing}");
    listing["data"].clone()
}

/// Each rule on its own: one member broken, the 400 names it (and
/// nothing else). Every case is tried before the test fails, so that
/// the failure lists each rule that no longer holds.
#[tokio::test]
async fn each_check_names_the_member_that_breaks_it() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (certificate, key) = certificate_and_key();
    let no_end = certificate.replace("-----END CERTIFICATE-----", "");
    let cases: Vec<(&str, Value, &str)> = vec![
        ("/routes/0/path", json!("^/eu/(fr"), "routes[0].path"),
        ("/routes/0/path", json!("^/(?!admin)"), "routes[0].path"),
        ("/routes/0/path", json!("(a)\\1"), "routes[0].path"),
        (
            "/backends/0/address",
            json!("origin.example.com/"),
            "backends[0].address",
        ),
        (
            "/backends/0/address",
            json!("origin.example.com:"),
            "backends[0].address",
        ),
        (
            "/backends/0/address",
            json!("https://origin.example.com:443"),
            "backends[0].address",
        ),
        (
            "/backends/0/address",
            json!("origin.example.com:65536"),
            "backends[0].address",
        ),
        (
            "/backends/1/address",
            json!("192.0.2.300:80"),
            "backends[1].address",
        ),
        (
            "/backends/2/address",
            json!("2001:db8::1:443"),
            "backends[2].address",
        ),
        (
            "/backends/2/address",
            json!("2001:db8::1"),
            "backends[2].address",
        ),
        (
            "/backends/0/ca_certificate",
            json!(no_end),
            "backends[0].ca_certificate",
        ),
        (
            "/backends/0/ca_certificate",
            json!(format!("{certificate}{key}")),
            "backends[0].ca_certificate",
        ),
        (
            "/routes/0/continent/1",
            json!("EUR"),
            "routes[0].continent[1]",
        ),
        ("/routes/0/country/1", json!("UK"), "routes[0].country[1]"),
        ("/routes/0/region/0", json!(""), "routes[0].region[0]"),
        (
            "/routes/0/region/2",
            json!("r".repeat(65)),
            "routes[0].region[2]",
        ),
    ];
    let mut wrong = Vec::new();
    for (pointer, value, param) in cases {
        let mut body = good(&certificate);
        *body.pointer_mut(pointer).unwrap() = value.clone();
        let (status, error, _) = create(&app, &token, P, "", &[], &body).await;
        if status != 400 || params(&error) != [param] {
            wrong.push(format!("{pointer} = {value:.40}: {status} {error:.300}"));
        } else if error.to_string().contains("PRIVATE") {
            wrong.push(format!("{pointer}: a private key is repeated back"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(revisions(&app, &token).await.is_empty());
    let (status, created, _) = create(&app, &token, P, "", &[], &good(&certificate)).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["routes"][2]["rank"], "0");
}

/// A revision written as the public document and the platform's own
/// proxy configuration allow is created (through the client generated
/// from the public document, and as plain JSON), dry-run, activated, and
/// read back as sent: the stricter checks refuse none of it.
#[tokio::test]
async fn what_the_platform_writes_is_created_activated_and_read_as_sent() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let sent = as_the_platform_writes_it();
    let typed: edgee_api_client::types::ProxySettingsCreateInput =
        serde_json::from_value(sent.clone()).unwrap();
    let first = generated_client(&app, &token)
        .create_project_proxy_settings()
        .id(P.to_owned())
        .body(typed)
        .send()
        .await
        .expect("createProjectProxySettings through the generated client")
        .into_inner();
    assert_eq!(first.revision, Some(1.0));
    for query in [DRY, ""] {
        let (status, answer, _) = create(&app, &token, P, query, &[], &sent).await;
        assert_eq!(status, 200, "{query}: {answer}");
    }
    for query in [DRY, ""] {
        let (status, answer, _) =
            update(&app, &token, "2", query, &[], json!({"is_active": true})).await;
        assert_eq!(status, 200, "{query}: {answer}");
    }
    assert_eq!(revisions(&app, &token).await, [(1, false), (2, true)]);
    // Every member sent is answered as sent.
    let listed = listing(&app, &token).await;
    for revision in [&listed[0], &listed[1]] {
        for list in ["backends", "routes"] {
            for (i, item) in sent[list].as_array().unwrap().iter().enumerate() {
                for (member, value) in item.as_object().unwrap() {
                    assert_eq!(&revision[list][i][member], value, "{list}[{i}].{member}");
                }
            }
        }
    }
}

/// One answer names every member at fault: the checks before activation,
/// the import's rules, and the schema's when there are some.
#[tokio::test]
async fn one_answer_names_every_member_at_fault() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (certificate, _) = certificate_and_key();
    let mut body = good(&certificate);
    for (pointer, value) in [
        ("/routes/0/path", json!("[z-a]")),
        ("/backends/0/address", json!("origin.example.com:0")),
        ("/backends/2/address", json!("2001:db8::1")),
        ("/backends/0/ca_certificate", json!("not PEM")),
        ("/backends/1/name", json!("origin")),
    ] {
        *body.pointer_mut(pointer).unwrap() = value;
    }
    let mut expected = vec![
        "backends[1].name",
        "backends[0].address",
        "backends[0].ca_certificate",
        "backends[2].address",
        "routes[0].path",
    ];
    let (status, error, _) = create(&app, &token, P, "", &[], &body).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(params(&error), expected, "{error}");
    assert_eq!(
        error["error"]["message"],
        "5 members of the request body are wrong; see params"
    );
    // With a member the schema refuses, and codes and names it refuses
    // by its lists and lengths, the schema's problems come with the same
    // others.
    body["backends"][1]["name"] = json!("v4");
    body["backends"][1]["enable_ssl"] = json!("yes");
    body["routes"][0]["country"][0] = json!("ZZ");
    body["routes"][0]["continent"][1] = json!("eu");
    body["routes"][0]["region"][1] = json!("");
    expected.retain(|param| *param != "backends[1].name");
    expected.extend([
        "backends[1].enable_ssl",
        "routes[0].country[0]",
        "routes[0].continent[1]",
        "routes[0].region[1]",
    ]);
    let (status, error, _) = create(&app, &token, P, "", &[], &body).await;
    assert_eq!(status, 400, "{error}");
    let mut named = params(&error);
    named.sort();
    expected.sort();
    assert_eq!(named, expected, "{error}");
    assert!(revisions(&app, &token).await.is_empty());
}

/// A project's regex members compile, or a 400 names each; a project
/// stored before the rule reads and lists, and a write that does not set
/// the member leaves it.
#[tokio::test]
async fn project_regexes_must_compile() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let body_of = |slug: &str, regex: &str| {
        json!({"organization_id": org_id(1), "slug": slug,
               "proxy_only_path_regex": regex,
               "override_cache": [{"path": "/a", "regex": true}, {"path": "(", "regex": false},
                                  {"path": regex, "regex": true}],
               "rate_limiting": [{"rank": 1, "limit": 1, "conditions": {"path": regex, "regex": true}},
                                 {"rank": 2, "limit": 1, "conditions": {"path": "(", "regex": false}}]})
    };
    let post = |path: String, body: Value| {
        let (app, token) = (&app, &token);
        async move { send(app, Method::POST, &path, token, &[], Some(&body)).await }
    };
    let (status, error, _) = post("/v1/projects".into(), body_of("bad", "a{2,1}")).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(
        params(&error),
        [
            "proxy_only_path_regex",
            "override_cache[2].path",
            "rate_limiting[0].conditions.path"
        ]
    );
    // Beside a member the schema refuses, in the same answer.
    let mut body = body_of("bad", "(");
    body["cache"] = json!("yes");
    let (status, error, _) = post("/v1/projects".into(), body).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(params(&error).len(), 4, "{error}");
    let (status, created, _) = post("/v1/projects".into(), body_of("good", "^/api/v[0-9]+/")).await;
    assert_eq!(status, 200, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, error, _) = post(
        format!("/v1/projects/{id}"),
        json!({"proxy_only_path_regex": "(?<=x)y"}),
    )
    .await;
    assert_eq!(
        (status, params(&error)),
        (400, vec!["proxy_only_path_regex".to_owned()])
    );

    // Stored before the rule (the import keeps what it brings).
    let mut old = project("old", 1, 0);
    old["proxy_only_path_regex"] = json!("(");
    old["override_cache"] = json!([{"path": "[", "regex": true}]);
    app.seed(vec![old]).await;
    let (status, read, _) = send(&app, Method::GET, "/v1/projects/old", &token, &[], None).await;
    assert_eq!((status, &read["proxy_only_path_regex"]), (200, &json!("(")));
    let (status, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200, "{listing}");
    assert!(ids(&listing).contains(&"old".to_owned()), "{listing}");
    let (status, updated, _) = post(
        "/v1/projects/old".into(),
        json!({"description": "still here"}),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["proxy_only_path_regex"], "(");
    assert_eq!(updated["override_cache"][0]["path"], "[");
    let (status, error, _) = post(
        "/v1/projects/old".into(),
        json!({"proxy_only_path_regex": "("}),
    )
    .await;
    assert_eq!(
        (status, params(&error)),
        (400, vec!["proxy_only_path_regex".to_owned()])
    );
}

/// Revisions imported before the checks list as they are; activating one
/// that breaks them is a 400 naming each member at fault by its path in
/// the revision (its dry run too), and nothing changes. Deactivating one,
/// or changing its description, is no activation.
#[tokio::test]
async fn revisions_stored_before_the_checks_list_and_are_not_activated() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let broken = |revision: u32, active: bool| {
        let mut old = settings(P, revision, active);
        old["backends"] = json!([
            {"name": "origin", "address": "origin.example:0", "default": true,
             "ca_certificate": "-----BEGIN CERTIFICATE-----"}]);
        old["routes"] = json!([
            {"path": "(", "regex": true, "backend_name": "origin", "rank": "1"},
            {"path": "/b", "backend_name": "origin", "rank": "1", "continent": ["EUR"],
             "region": [""], "country": ["ZZ"]}]);
        old
    };
    // The import takes them: it applies the import's rules only.
    app.seed(vec![
        settings(P, 1, false),
        broken(2, false),
        broken(3, true),
    ])
    .await;
    let listed = revisions(&app, &token).await;
    assert_eq!(listed, [(1, false), (2, false), (3, true)]);
    let (_, listing) = app
        .get_json(&format!("/v1/projects/{P}/proxy-settings?limit=1"), &token)
        .await;
    assert_eq!(listing["data"][0]["routes"][1]["country"], json!(["ZZ"]));
    assert_eq!(
        listing["data"][0]["backends"][0]["address"],
        "origin.example:0"
    );
    let audited = format!("{:?}", audit_of(&app, None).await);

    let expected = [
        "backends[0].address",
        "backends[0].ca_certificate",
        "routes[0].path",
        "routes[1].continent[0]",
        "routes[1].region[0]",
        "routes[1].country[0]",
    ];
    for query in ["", DRY] {
        let (status, error, _) =
            update(&app, &token, "2", query, &[], json!({"is_active": true})).await;
        assert_eq!(status, 400, "{query}: {error}");
        assert_eq!(params(&error), expected, "{query}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "revision 2 cannot be activated: it was stored before the checks it breaks"
            ),
            "{message}"
        );
    }
    assert_eq!(revisions(&app, &token).await, listed);
    assert_eq!(format!("{:?}", audit_of(&app, None).await), audited);
    // Already active: nothing is activated, so nothing is refused.
    let (status, _, _) = update(&app, &token, "3", "", &[], json!({"is_active": true})).await;
    assert_eq!(status, 200);
    let (status, described, _) = update(
        &app,
        &token,
        "2",
        "",
        &[],
        json!({"description": "kept for the record"}),
    )
    .await;
    assert_eq!(
        (status, &described["description"]),
        (200, &json!("kept for the record"))
    );
    // Rolling back to a good revision deactivates the broken one; going
    // back to it is refused.
    let (status, _, _) = update(&app, &token, "1", "", &[], json!({"is_active": true})).await;
    assert_eq!(status, 200);
    let (status, error, _) = update(&app, &token, "3", "", &[], json!({"is_active": true})).await;
    assert_eq!((status, params(&error).len()), (400, 6), "{error}");
    let active: Vec<u64> = revisions(&app, &token)
        .await
        .into_iter()
        .filter(|r| r.1)
        .map(|r| r.0)
        .collect();
    assert_eq!(active, [1]);
}

/// What a dry run answers: the revision as the write would answer it (a
/// create's with its number and activity), the active revision now, and
/// the JSON Patch from that one to this one.
#[tokio::test]
async fn a_dry_run_answers_what_the_write_would_do() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let first = json!({"description": "one",
        "backends": [{"name": "origin", "address": "origin-1.example:443", "default": true}],
        "routes": [{"path": "/", "backend_name": "origin", "rank": "1"}]});
    let (status, dry, tag) = create(&app, &token, P, DRY, &[], &first).await;
    assert_eq!(status, 200, "{dry}");
    assert_eq!(tag, None, "a dry run has no version");
    assert_eq!(dry["object"], "proxy_settings_dry_run");
    assert_eq!(dry["active_revision"], Value::Null);
    // From an empty revision.
    assert_eq!(
        dry["diff"],
        json!([
            {"op": "add", "path": "/backends/0", "value": {"name": "origin",
             "address": "origin-1.example:443", "enable_ssl": false, "default": true}},
            {"op": "replace", "path": "/description", "value": "one"},
            {"op": "add", "path": "/routes/0", "value": {"path": "/", "regex": false,
             "backend_name": "origin", "rank": "1", "continent": [], "region": [], "country": []}},
        ])
    );
    // The write answers what the dry run said it would.
    let (status, created, _) = create(&app, &token, P, "", &[], &first).await;
    assert_eq!(status, 200);
    assert_eq!(created, dry["revision"]);
    assert_eq!(
        (&created["revision"], &created["is_active"]),
        (&json!(1), &json!(true))
    );

    let mut second = first.clone();
    second["description"] = json!("two");
    second["backends"][0]["address"] = json!("origin-2.example:443");
    second["routes"] = json!([
        {"path": "/images/", "backend_name": "origin", "rank": "0"},
        {"path": "/", "backend_name": "origin", "rank": "1"}]);
    let (status, dry, _) = create(&app, &token, P, DRY, &[], &second).await;
    assert_eq!(status, 200, "{dry}");
    assert_eq!(
        (&dry["revision"]["revision"], &dry["revision"]["is_active"]),
        (&json!(2), &json!(false))
    );
    assert_eq!(dry["active_revision"], 1);
    // Members in name order: backends, description, routes.
    let two_from_one = json!([
        {"op": "replace", "path": "/backends/0/address", "value": "origin-2.example:443"},
        {"op": "replace", "path": "/description", "value": "two"},
        {"op": "add", "path": "/routes/0", "value": {"path": "/images/", "regex": false,
         "backend_name": "origin", "rank": "0", "continent": [], "region": [], "country": []}},
    ]);
    assert_eq!(dry["diff"], two_from_one);
    let (_, created, _) = create(&app, &token, P, "", &[], &second).await;
    assert_eq!(created, dry["revision"]);

    // Activating 2 (and describing it): what it would be, the revision it
    // would deactivate, and the diff between them.
    let body = json!({"is_active": true, "description": "live"});
    let (status, dry, tag) = update(&app, &token, "2", DRY, &[], body.clone()).await;
    assert_eq!((status, tag), (200, None), "{dry}");
    assert_eq!(dry["active_revision"], 1);
    assert_eq!(
        (
            &dry["revision"]["is_active"],
            &dry["revision"]["description"]
        ),
        (&json!(true), &json!("live"))
    );
    let mut live_from_one = two_from_one.clone();
    live_from_one[1]["value"] = json!("live");
    assert_eq!(dry["diff"], live_from_one);
    let (_, activated, _) = update(&app, &token, "2", "", &[], body).await;
    assert_eq!(activated, dry["revision"]);
    // Rolling back: from 2 to 1, the patch the other way.
    let (_, dry, _) = update(&app, &token, "1", DRY, &[], json!({"is_active": true})).await;
    assert_eq!(dry["active_revision"], 2);
    assert_eq!(
        dry["diff"],
        json!([
            {"op": "replace", "path": "/backends/0/address", "value": "origin-1.example:443"},
            {"op": "replace", "path": "/description", "value": "one"},
            {"op": "remove", "path": "/routes/0"},
        ])
    );
    // Deactivating the active one: the diff is from it to itself.
    let (_, dry, _) = update(&app, &token, "2", DRY, &[], json!({"is_active": false})).await;
    assert_eq!(
        (&dry["active_revision"], &dry["revision"]["is_active"]),
        (&json!(2), &json!(false))
    );
    assert_eq!(dry["diff"], json!([]));
}

/// A dry run writes nothing: no revision (the next one gets the number
/// the dry run gave), no change of activity or version, no audit record,
/// no change in the feed, no idempotency key.
#[tokio::test]
async fn a_dry_run_stores_nothing() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (certificate, _) = certificate_and_key();
    let body = good(&certificate);
    for _ in 0..2 {
        assert_eq!(create(&app, &token, P, "", &[], &body).await.0, 200);
    }
    let listed = listing(&app, &token).await;
    let audited = format!("{:?}", audit_of(&app, None).await);
    let (_, head) = app.get_json("/v1/changes", &token).await;
    let cursor = head["cursor"].as_str().unwrap().to_owned();

    let (status, dry, _) = create(&app, &token, P, DRY, &[], &body).await;
    assert_eq!(
        (status, &dry["revision"]["revision"]),
        (200, &json!(3)),
        "{dry}"
    );
    for (revision, change) in [
        ("2", json!({"is_active": true, "description": "x"})),
        ("1", json!({"is_active": false})),
        ("1", json!({"description": "y"})),
    ] {
        let (status, dry, _) = update(&app, &token, revision, DRY, &[], change).await;
        assert_eq!(status, 200, "{dry}");
    }
    // An Idempotency-Key with a dry run is refused, and not kept.
    let key = [("idempotency-key", "deploy-1")];
    let (status, error, _) = create(&app, &token, P, DRY, &key, &body).await;
    assert_eq!(
        (status, params(&error)),
        (400, vec!["Idempotency-Key".to_owned()])
    );

    assert_eq!(listing(&app, &token).await, listed);
    assert_eq!(format!("{:?}", audit_of(&app, None).await), audited);
    let (status, changes) = app
        .get_json(&format!("/v1/changes?after={cursor}"), &token)
        .await;
    assert_eq!(
        (status.as_u16(), &changes["data"]),
        (200, &json!([])),
        "{changes}"
    );
    // Versions did not move: the tags read before still match.
    let (status, _, tag) =
        update(&app, &token, "1", "", &[("if-match", "\"v1\"")], json!({})).await;
    assert_eq!((status, tag.as_deref()), (200, Some("\"v2\"")));
    // The key is free, and the number the dry run gave is the next one.
    let (status, created, _) = create(&app, &token, P, "", &key, &body).await;
    assert_eq!(
        (status, &created["revision"]),
        (200, &json!(3)),
        "{created}"
    );
    let (status, again, _) = create(&app, &token, P, "", &key, &body).await;
    assert_eq!((status, again), (200, created));
}

/// A dry run is refused as the write would be, by every check the write
/// makes: rights, the project, the revision, If-Match, the body; and
/// `dry_run` is `true` or `false` and the operations' only parameter.
#[tokio::test]
async fn a_dry_run_is_refused_as_the_write_would_be() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (certificate, _) = certificate_and_key();
    let body = good(&certificate);
    assert_eq!(create(&app, &token, P, "", &[], &body).await.0, 200);
    let member = app.token("u2").await;
    let stranger = app.token("u3").await;
    let activate = json!({"is_active": true});
    for query in ["", DRY] {
        let status = |answer: (u16, Value, Option<String>)| answer.0;
        assert_eq!(
            status(create(&app, &member, P, query, &[], &body).await),
            403
        );
        assert_eq!(
            status(update(&app, &member, "1", query, &[], activate.clone()).await),
            403
        );
        assert_eq!(
            status(create(&app, &stranger, P, query, &[], &body).await),
            404
        );
        assert_eq!(
            status(create(&app, &token, "nope", query, &[], &body).await),
            404
        );
        assert_eq!(
            status(update(&app, &token, "9", query, &[], activate.clone()).await),
            404
        );
        let stale = [("if-match", "\"v7\"")];
        assert_eq!(
            status(update(&app, &token, "1", query, &stale, json!({})).await),
            412
        );
        let mut bad = body.clone();
        bad["backends"][0]["address"] = json!("origin:0");
        let (status, error, _) = create(&app, &token, P, query, &[], &bad).await;
        assert_eq!(
            (status, params(&error)),
            (400, vec!["backends[0].address".to_owned()])
        );
    }
    for (query, param) in [
        ("?dry_run=yes", "dry_run"),
        ("?dry_run=1", "dry_run"),
        ("?dry_run=", "dry_run"),
        ("?dry_run=true&dry_run=true", "dry_run"),
        ("?dry=true", "dry"),
    ] {
        let (status, error, _) = create(&app, &token, P, query, &[], &body).await;
        assert_eq!(
            (status, params(&error)),
            (400, vec![param.to_owned()]),
            "{query}"
        );
        let (status, error, _) = update(&app, &token, "1", query, &[], json!({})).await;
        assert_eq!(
            (status, params(&error)),
            (400, vec![param.to_owned()]),
            "{query}"
        );
    }
    assert_eq!(revisions(&app, &token).await.len(), 1);
    // `false` is the write.
    let (status, created, tag) = create(&app, &token, P, "?dry_run=false", &[], &body).await;
    assert_eq!(
        (status, &created["object"], tag.as_deref()),
        (200, &json!("proxy_settings"), Some("\"v1\""))
    );
}
