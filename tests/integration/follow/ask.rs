//! `follow --ask-listen` (docs/domains.md, "Certificates"): the answer to
//! Caddy's on-demand TLS `ask`, from the verified names this follow
//! follows, against the real service whose DNS checks ask a DNS server on
//! loopback.

use reqwest::Method;

use super::Following;
use super::routing::{add_domain, caught_up, options};
use crate::binary::free_port;
use crate::helpers::*;

/// The status of `GET /ask?{query}` on `port`.
async fn ask(port: u16, query: &str) -> u16 {
    let url = format!("http://127.0.0.1:{port}/ask?{query}");
    let answer = reqwest::get(&url).await.expect("the ask endpoint answers");
    let status = answer.status().as_u16();
    let body = answer.text().await.unwrap();
    assert!(body.is_empty(), "{query}: a body: {body:?}");
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_allows_only_the_verified_names_followed() {
    let dns = DnsServer::start();
    let (app, token, other_token) = two_organizations_with(Backend::Sqlite, options(&dns)).await;
    add_domain(&app, &dns, &token, "p1", "shop.example.com", true).await;
    add_domain(&app, &dns, &token, "p1", "*.example.org", true).await;
    add_domain(&app, &dns, &token, "p1", "pending.example.com", false).await;
    // Verified in the other organization: never this follow's to allow.
    add_domain(&app, &dns, &other_token, "p3", "theirs.example.net", true).await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    let dir_arg = dir.display().to_string();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let org1 = org_id(1);
    let args = [
        "--organization",
        &org1,
        "--dir",
        &dir_arg,
        "--no-report",
        "--ask-listen",
        &listen,
    ];
    let follow = Following::on(&app, &token, work.path(), &args);
    eventually("follow allows its verified name", || async {
        crate::binary::accepts(port) && ask(port, "domain=shop.example.com").await == 200
    })
    .await;

    for (query, expected) in [
        // Spellings fold as the service folds them.
        ("domain=SHOP.Example.com.", 200),
        ("domain=%EF%BD%93hop.example.com", 200),
        // A wildcard covers one label, not two, nor its base.
        ("domain=a.example.org", 200),
        ("domain=a.b.example.org", 404),
        ("domain=example.org", 404),
        ("domain=*.example.org", 404),
        ("domain=pending.example.com", 404),
        ("domain=theirs.example.net", 404),
        ("domain=", 404),
        ("domain=not%20a%20name", 404),
        ("", 404),
    ] {
        assert_eq!(
            ask(port, query).await,
            expected,
            "{query}\n{}",
            follow.log()
        );
    }

    // A name deleted is refused once follow applied the change.
    let shop = "/v1/projects/p1/domains/shop.example.com";
    write(&app, &token, Method::DELETE, shop, None).await;
    caught_up(&app, &token, &dir).await;
    assert_eq!(ask(port, "domain=shop.example.com").await, 404);
    assert_eq!(ask(port, "domain=a.example.org").await, 200);
}
