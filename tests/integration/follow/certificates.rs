//! `follow --tls-check` (docs/domains.md, "Certificates"): each verified
//! name probed with a TLS handshake on an edge, here a TLS server of the
//! test's on loopback (`helpers::tls`) that answers each name with the
//! certificate the test chose; `ssl_status` reported as the probe found.

use super::Following;
use super::routing::{add_domain, caught_up, options};
use crate::helpers::*;

/// The service's `ssl_status` of `name` in `p1`.
async fn ssl_status(app: &TestApp, token: &str, name: &str) -> bool {
    let (status, body) = app
        .get_json(&format!("/v1/projects/p1/domains/{name}"), token)
        .await;
    assert_eq!(status, 200, "{body}");
    body["ssl_status"].as_bool().expect("a boolean")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_check_reports_ssl_status_only_for_a_valid_certificate_for_the_name() {
    let dns = DnsServer::start();
    let (app, token, _) = two_organizations_with(Backend::Sqlite, options(&dns)).await;
    let (trusted, unknown) = (authority("the edge's CA"), authority("another CA"));
    let edge = TlsServer::start().await;
    // A certificate for another name, signed by the trusted authority; one
    // for the name, signed by an authority the probe does not trust.
    edge.serve(
        "wrong.example.com",
        &server_certificate(&trusted, &["other.example.com"]),
    );
    edge.serve(
        "untrusted.example.com",
        &server_certificate(&unknown, &["untrusted.example.com"]),
    );
    for name in [
        "wrong.example.com",
        "untrusted.example.com",
        "*.example.org",
    ] {
        add_domain(&app, &dns, &token, "p1", name, true).await;
    }
    let work = tempfile::tempdir().unwrap();
    let ca = work.path().join("ca.pem");
    std::fs::write(&ca, trusted.pem()).unwrap();
    let dir = work.path().join("edge");
    let (dir_arg, ca_arg) = (dir.display().to_string(), ca.display().to_string());
    let edge_arg = edge.addr().to_string();
    let args = [
        "--project",
        "p1",
        "--dir",
        &dir_arg,
        "--no-report",
        "--tls-check",
        &edge_arg,
        "--tls-check-ca",
        &ca_arg,
    ];
    let follow = Following::on(&app, &token, work.path(), &args);
    // Probed, and their round over before the next name is verified:
    // rounds never overlap, so what it reports of them is reported by
    // the time the next name's true is.
    until("both names are probed", || {
        edge.was_asked("wrong.example.com") && edge.was_asked("untrusted.example.com")
    })
    .await;

    // A valid certificate for the name: true, once verified and probed.
    edge.serve(
        "shop.example.com",
        &server_certificate(&trusted, &["shop.example.com"]),
    );
    add_domain(&app, &dns, &token, "p1", "shop.example.com", true).await;
    eventually("shop.example.com's ssl_status turns true", || {
        ssl_status(&app, &token, "shop.example.com")
    })
    .await;
    for name in [
        "wrong.example.com",
        "untrusted.example.com",
        "*.example.org",
    ] {
        assert!(
            !ssl_status(&app, &token, name).await,
            "{name}\n{}",
            follow.log()
        );
    }
    // A wildcard is not probed.
    assert!(!edge.was_asked("*.example.org"));

    // Restarted, resuming from its cursor (no listing read): what the
    // service says is read, not written again. Two rounds: the second
    // starts once the first has reported.
    caught_up(&app, &token, &dir).await;
    drop(follow);
    let shop = "p1/shop.example.com";
    let audited = audit_of(&app, Some(shop)).await.len();
    let asked = edge.asks("shop.example.com");
    let follow = Following::on(&app, &token, work.path(), &args);
    until("a round after the restart", || {
        edge.asks("shop.example.com") > asked
    })
    .await;
    // A pending name: a change, which starts a round.
    add_domain(&app, &dns, &token, "p1", "next.example.com", false).await;
    until("a second round", || {
        edge.asks("shop.example.com") > asked + 1
    })
    .await;
    assert!(
        follow.log().contains("resuming after cursor"),
        "{}",
        follow.log()
    );
    assert_eq!(
        audit_of(&app, Some(shop)).await.len(),
        audited,
        "{}",
        follow.log()
    );
    assert!(ssl_status(&app, &token, "shop.example.com").await);

    // The edge serves a certificate the roots do not trust: false again,
    // at the next round (a change starts one).
    edge.serve(
        "shop.example.com",
        &server_certificate(&unknown, &["shop.example.com"]),
    );
    // A pending name: a change, which starts a round.
    add_domain(&app, &dns, &token, "p1", "later.example.com", false).await;
    eventually("shop.example.com's ssl_status turns false", || async {
        !ssl_status(&app, &token, "shop.example.com").await
    })
    .await;
}
