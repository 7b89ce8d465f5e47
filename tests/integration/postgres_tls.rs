//! TLS to PostgreSQL: what `sslmode` and `sslrootcert` in the URL do (as
//! libpq reads them), on the local server, which answers TLS, and on a
//! throwaway cluster serving a certificate signed by an authority the test
//! makes.

use proxydeck::store::{self, DatabaseUrl, PostgresSettings, StoreOptions};
use tokio_postgres::config::Host;

use crate::binary::*;
use crate::helpers::*;
use crate::postgres_cluster::{PrivateCluster, ServerTls};

/// Of the connections named `application_name` on the server `admin_url`
/// reaches, how many are encrypted, and how many there are.
fn encrypted_connections(admin_url: &str, application_name: &str) -> (i64, i64) {
    let count = |only_encrypted: &str| {
        postgres_count(
            admin_url,
            &format!(
                "SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
                  WHERE a.application_name = '{application_name}' {only_encrypted}"
            ),
        )
    };
    (count("AND s.ssl"), count(""))
}

/// The service on `url` (a schema of the test server) answers a listing.
async fn serves_a_listing(url: String) -> TestApp {
    let app =
        TestApp::on(TestStore::at(DatabaseUrl::Postgres(url), suite_store_options()).await).await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let token = app.token("u1").await;
    let (status, body) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), ["p1"]);
    app
}

/// `sslmode=require` (or `prefer`: the local server offers TLS) on the
/// local server: the service works and every connection of its own is
/// encrypted; `sslmode=disable`: none is; no `sslmode` at all: none is
/// when the server is this machine (`localhost`, a loopback address),
/// every one when it is named otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_encrypts_every_connection_and_disable_none() {
    require!(Backend::Postgres);
    let base = postgres_base_url().unwrap();
    let settings = PostgresSettings::from_url(base).expect("the test URL is valid");
    if !settings
        .config
        .get_hosts()
        .iter()
        .any(|host| matches!(host, Host::Tcp(_)))
    {
        eprintln!(
            "\n######## SKIPPED: the test PostgreSQL is reached over a Unix socket, where there is no TLS;\n######## the throwaway TLS cluster's test checks require and disable.\n"
        );
        return;
    }
    let loopback = settings.config.get_hosts().iter().all(|host| {
        matches!(host, Host::Tcp(name) if name == "localhost" || name.starts_with("127.") || name == "::1")
    });
    for (sslmode, encrypted) in [
        ("require", true),
        ("prefer", true),
        ("disable", false),
        ("", !loopback),
    ] {
        let schema = Schema::create(base);
        let url = without_sslmode(&schema.direct_url());
        let url = match sslmode {
            "" => url,
            given => format!("{url}&sslmode={given}"),
        };
        let app = serves_a_listing(url).await;
        let (tls, all) = encrypted_connections(base, schema.name());
        assert!(all > 0, "no connection of the service's is seen");
        assert_eq!(
            tls,
            if encrypted { all } else { 0 },
            "sslmode={sslmode:?}: {tls} of {all} connections encrypted"
        );
        app.stop().await;
    }
}

/// `url` without the `sslmode` its query may hold.
fn without_sslmode(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.starts_with("sslmode="))
        .collect();
    format!("{base}?{}", kept.join("&"))
}

/// Opens the store on `url`: its error as printed when it fails.
async fn open(url: String) -> Result<std::sync::Arc<store::Store>, String> {
    store::open(&DatabaseUrl::Postgres(url), &StoreOptions::default())
        .await
        .map(std::sync::Arc::new)
        .map_err(|error| format!("{error:#}"))
}

/// The certificate is checked as `sslmode` says, against the authority
/// `sslrootcert` names: the whole of libpq's table, on one cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_are_checked_as_sslmode_says() {
    let (ca, other_ca) = (authority("proxydeck test CA"), authority("another CA"));
    let (certificates, key) = server_certificate(&ca, &["localhost", "127.0.0.1"]);
    let Some(server) = PrivateCluster::start_with_tls(ServerTls {
        certificates: &certificates,
        key: &key,
    }) else {
        return;
    };
    let files = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = files.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let (right, wrong) = (
        write("ca.pem", &ca.pem()),
        write("other.pem", &other_ca.pem()),
    );
    // A name the certificate is not for, reached at the server's address.
    let elsewhere = "db.example";
    let at_elsewhere = |query: &str| {
        let address = "hostaddr=127.0.0.1";
        let query = match query {
            "" => address.to_owned(),
            more => format!("{address}&{more}"),
        };
        server.cluster.tcp_url(elsewhere, &query)
    };

    let accepted = [
        (
            "verify-full, localhost",
            server.cluster.tcp_url(
                "localhost",
                &format!("sslmode=verify-full&sslrootcert={right}"),
            ),
        ),
        (
            "verify-full, the address",
            server.cluster.tcp_url(
                "127.0.0.1",
                &format!("sslmode=verify-full&sslrootcert={right}"),
            ),
        ),
        (
            "verify-ca, another name",
            at_elsewhere(&format!("sslmode=verify-ca&sslrootcert={right}")),
        ),
        ("require, another name", at_elsewhere("sslmode=require")),
        ("prefer (the default)", at_elsewhere("")),
    ];
    for (number, (case, url)) in accepted.into_iter().enumerate() {
        let application_name = format!("accepted{number}");
        let store = open(format!("{url}&application_name={application_name}"))
            .await
            .unwrap_or_else(|error| panic!("{case}: {error}"));
        store.run(Ping).await.unwrap();
        let (tls, all) = encrypted_connections(&server.cluster.url(), &application_name);
        assert!(
            all > 0 && tls == all,
            "{case}: {tls} of {all} connections encrypted"
        );
        drop(store);
    }
    let store = open(at_elsewhere("sslmode=disable&application_name=plain"))
        .await
        .unwrap();
    let (tls, all) = encrypted_connections(&server.cluster.url(), "plain");
    assert!(
        all > 0 && tls == 0,
        "disable: {tls} of {all} connections encrypted"
    );
    drop(store);

    let not_signed =
        "the server's certificate is not signed by an authority that sslrootcert names";
    let refused = [
        (
            "verify-full, another authority",
            server.cluster.tcp_url(
                "localhost",
                &format!("sslmode=verify-full&sslrootcert={wrong}"),
            ),
            not_signed,
        ),
        (
            "verify-full, another name",
            at_elsewhere(&format!("sslmode=verify-full&sslrootcert={right}")),
            "certificate not valid for name \"db.example\"",
        ),
        (
            "verify-ca, another authority",
            at_elsewhere(&format!("sslmode=verify-ca&sslrootcert={wrong}")),
            not_signed,
        ),
        // With sslrootcert, require checks the chain (libpq's verify-ca).
        (
            "require with sslrootcert, another authority",
            at_elsewhere(&format!("sslmode=require&sslrootcert={wrong}")),
            not_signed,
        ),
    ];
    for (case, url, cause) in refused {
        let error = match open(url).await {
            Ok(_) => panic!("{case}: the connection was accepted"),
            Err(error) => error,
        };
        assert!(
            error.starts_with("cannot connect to PostgreSQL at "),
            "{case}: {error}"
        );
        assert!(error.contains("TLS"), "{case}: {error}");
        assert!(error.contains(cause), "{case}: {error}");
    }

    // The system's authorities: those SSL_CERT_FILE names, as with libpq;
    // sslrootcert=system means verify-full. Through the binary, with a
    // password in the URL that no output may show.
    let system = server
        .cluster
        .tcp_url("localhost", "sslrootcert=system")
        .replace("postgres@", "postgres:hunter2@");
    let migrate = |authorities: &str| {
        let mut command = proxydeck(files.path());
        command
            .arg("migrate")
            .env("PROXYDECK_DATABASE_URL", &system)
            .env("SSL_CERT_FILE", authorities)
            .env_remove("SSL_CERT_DIR");
        finish(command, None)
    };
    let migrated = migrate(&right);
    assert!(migrated.status.success(), "{migrated:#?}");
    assert!(!format!("{migrated:?}").contains("hunter2"));
    let refused = migrate(&wrong);
    refused.error_after_logs(&["cannot connect to PostgreSQL at localhost:", not_signed]);
    assert!(!format!("{refused:?}").contains("hunter2"));
}

/// Bad TLS settings stop the binary at once with one line that names the
/// setting (exit status 2, as for any bad setting), never the password.
#[test]
fn bad_tls_settings_are_refused_by_name() {
    let files = tempfile::tempdir().unwrap();
    let empty = files.path().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let url = "postgres://app:hunter2@db.internal/proxydeck";
    for (query, needles) in [
        (
            "sslmode=verify",
            vec![
                "sslmode=\"verify\" is not one of disable, prefer, require, verify-ca, verify-full",
            ],
        ),
        (
            "sslmode=verify-full",
            vec!["sslmode=verify-full needs sslrootcert"],
        ),
        (
            "sslmode=require&sslrootcert=system",
            vec!["sslmode=require may not be used with sslrootcert=system (use verify-full)"],
        ),
        (
            "sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem",
            vec!["sslrootcert /nonexistent/ca.pem: cannot read: "],
        ),
        (
            &format!("sslmode=verify-full&sslrootcert={}", empty.display()),
            vec!["holds no certificate"],
        ),
    ] {
        let mut command = proxydeck(files.path());
        command
            .arg("migrate")
            .env("PROXYDECK_DATABASE_URL", format!("{url}?{query}"));
        let out = finish(command, None);
        assert_eq!(out.status.code(), Some(2), "{query}: {out:#?}");
        let line = out.error(&needles);
        assert!(
            line.starts_with("error: database URL: ")
                && line.ends_with("(the value of PROXYDECK_DATABASE_URL)"),
            "{line}"
        );
        assert!(!line.contains("hunter2"), "{line}");
    }
}
