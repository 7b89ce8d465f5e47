//! A project's domains in the console: each with its status and the
//! record to create; "Check now" with the record published in a DNS
//! server on loopback (`helpers::DnsServer`, which the demo's checks ask)
//! turns it verified; adding and removing for editors and admins only.

use super::*;
use crate::helpers::DnsServer;

const SHOP: &str = "shop.acme.example";

/// The domain `name` of `project`, as the API answers it.
async fn domain(server: &Server, project: &str, name: &str, token: &str) -> (StatusCode, Value) {
    let path = format!("/v1/projects/{project}/domains/{name}");
    api(server, reqwest::Method::GET, &path, token, Value::Null).await
}

#[tokio::test]
async fn domains_show_their_record_and_check_now_verifies_them() {
    let dns = DnsServer::start();
    let sandbox = Sandbox::new();
    let resolver = dns.addr().to_string();
    let (server, token) = demo_with(&sandbox, &["--dns-resolver", &resolver]);
    let member = globex_member(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.visit("/console#/projects/acme-shop").await;
    browser.sees("#domains", "No domain yet").await;

    // Added through the form: pending, with the record the API gives.
    browser.fill("#domain-name", "Shop.Acme.Example").await;
    browser
        .click("form[aria-label='Add a domain'] button[type=submit]")
        .await;
    let item = format!("#domains li[data-domain='{SHOP}']");
    browser.sees(&format!("{item} .badge"), "DNS pending").await;
    let (status, added) = domain(&server, "acme-shop", SHOP, &token).await;
    assert_eq!(status, 200, "{added}");
    let record = &added["verification"]["record"];
    assert_eq!(
        browser.texts(&format!("{item} dl.record code")).await,
        [&record["type"], &record["name"], &record["value"]]
            .map(|part| part.as_str().unwrap().to_owned())
    );
    assert_eq!(
        browser
            .texts(&format!("{item} dl.record button"))
            .await
            .len(),
        3
    );
    // The first check runs in the background: once the API has its
    // result, the page shows it (read again: it does not poll).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, now) = domain(&server, "acme-shop", SHOP, &token).await;
        if now["verification"]["last_result"].is_string() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never checked: {now}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    browser.visit("/console#/projects").await;
    browser.visit("/console#/projects/acme-shop").await;
    browser
        .sees(&format!("{item} .last-check"), "no TXT record was found")
        .await;

    // The record published, "Check now": verified, said in place, and so
    // in the API.
    dns.set_txt(
        record["name"].as_str().unwrap(),
        &[record["value"].as_str().unwrap()],
    );
    browser.click(&format!("{item} button.check-now")).await;
    browser
        .sees(&format!("{item} .badge"), "✓ DNS verified")
        .await;
    assert_eq!(
        browser.text(&format!("{item} .check-answer")).await,
        "shop.acme.example is verified: it routes to acme-shop (the TXT record holds this domain's value)."
    );
    let (_, verified) = domain(&server, "acme-shop", SHOP, &token).await;
    assert_eq!(verified["dns_status"], json!(true), "{verified}");
    browser.screenshot("domains").await;

    // A refused name: the API's rule, in words; nothing added.
    browser.fill("#domain-name", "192.0.2.1").await;
    browser
        .click("form[aria-label='Add a domain'] button[type=submit]")
        .await;
    browser
        .sees(
            "#domains [role=alert]",
            "must be a host name, not an IP address",
        )
        .await;

    // Removed after confirming: gone from the page and the API.
    browser.click(&format!("{item} button.remove-domain")).await;
    browser
        .sees("#confirm-title", "Remove shop.acme.example?")
        .await;
    browser.click("#confirm-ok").await;
    browser
        .sees("#notice", "shop.acme.example was removed from acme-shop.")
        .await;
    browser.sees("#domains", "No domain yet").await;
    let (status, _) = domain(&server, "acme-shop", SHOP, &token).await;
    assert_eq!(status, 404);

    // A member of Globex reads a domain and its record, and is told why
    // it may not add, check or remove one.
    let path = "/v1/projects/globex-api/domains";
    let (status, body) = api(
        &server,
        reqwest::Method::POST,
        path,
        &token,
        json!({"name": "api.globex.example"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    browser.click("#sign-out").await;
    browser.sign_in(&member).await;
    browser.visit("/console#/projects/globex-api").await;
    let item = "#domains li[data-domain='api.globex.example']";
    browser.sees(&format!("{item} .badge"), "DNS pending").await;
    browser
        .sees(
            &format!("{item} dl.record"),
            body["verification"]["record"]["value"].as_str().unwrap(),
        )
        .await;
    browser
        .sees("#domains", "Your role in Globex is member")
        .await;
    let buttons = browser
        .texts("#domains button.check-now, #domains button.remove-domain, #domain-name")
        .await;
    assert!(buttons.is_empty(), "{buttons:?}");
}
