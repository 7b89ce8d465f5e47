//! The console as a product (issue 48, part 3): every page and state
//! passes axe-core's accessibility rules and does not scroll sideways at
//! 1280 and 360 px (`Browser::audit`, which keeps a full-page screenshot
//! of each); signed out, the header shows nothing of a signed-in user;
//! the small defects of its text stay fixed; a token made and revoked
//! with the keyboard alone. What the pages did is checked in the API.

use super::*;

const ACME: &str = "0190b7a4-0000-7000-8000-000000000001";

/// The header's links and buttons a person can see now (their text).
async fn header_controls(browser: &Browser) -> Vec<String> {
    let shown = browser
        .run(
            "return [...document.querySelectorAll('header a, header button, header #who-name')]
               .filter((e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden')
               .map((e) => e.textContent.trim())",
            vec![],
        )
        .await;
    serde_json::from_value(shown).expect("texts")
}

/// An invitation to Acme made through the API: its link's path on the
/// server (`/console/#/accept?invitation=...`).
async fn invitation_link(server: &Server, token: &str, email: &str) -> String {
    let (status, invited) = api(
        server,
        reqwest::Method::POST,
        "/v1/invitations",
        token,
        json!({"organization_id": ACME, "email": email, "role": "member"}),
    )
    .await;
    assert_eq!(status, 200, "{invited}");
    let link = invited["accept_url"].as_str().expect("a link");
    link.strip_prefix(&server.base)
        .expect("on the server")
        .to_owned()
}

#[tokio::test]
async fn signed_out_pages_pass_the_audit_and_show_no_signed_in_links() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let link = invitation_link(&server, &token, "guest@acme.example").await;
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };

    // Signed out: the brand alone, no user's links, name or Sign out.
    browser.visit("/console").await;
    browser.sees("h1", "Sign in").await;
    assert_eq!(header_controls(&browser).await, ["proxydeck"]);
    // The hint names the command as code, with no Markdown left in it.
    assert_eq!(
        browser.text("#token-help code").await,
        "proxydeck admin token create"
    );
    let hint = browser.text("#token-help").await;
    assert!(!hint.contains('`'), "{hint}");
    browser.audit("sign-in").await;

    browser.fill("#token", "pxd_not-a-real-token").await;
    browser.click("form.sign-in button[type=submit]").await;
    browser.sees("#sign-in-problem", "was not accepted").await;
    browser.audit("sign-in-refused").await;

    // The invitation's page, without its link and with it.
    browser.visit("/console#/accept").await;
    browser.sees("main", "This page needs the link").await;
    assert_eq!(header_controls(&browser).await, ["proxydeck"]);
    browser.audit("accept-without-link").await;
    // Someone with an account has a way on: signing in.
    browser.click("main a[href='#/projects']").await;
    browser.sees("h1", "Sign in").await;
    browser.visit(&link).await;
    browser.element("#accept-email").await;
    browser.audit("accept").await;
    // axe-core was injected over WebDriver (DevTools' evaluation, outside
    // the page's policy), and the policy still holds for the page itself:
    // an inline script it adds does not run.
    let inline = browser
        .run(
            "const script = document.createElement('script');
             script.textContent = 'window.__inline = 1';
             document.body.append(script);
             script.remove();
             return [typeof window.axe, window.__inline === undefined]",
            vec![],
        )
        .await;
    assert_eq!(inline, json!(["object", true]));

    // Signed in, the header has the links; signed out, they are gone.
    browser.sign_in(&token).await;
    assert_eq!(
        header_controls(&browser).await,
        [
            "proxydeck",
            "Projects",
            "Organizations",
            "API tokens",
            "Demo User (demo@proxydeck.example)",
            "Sign out"
        ]
    );
    browser.click("#sign-out").await;
    browser.sees("#notice", "forgotten").await;
    assert_eq!(header_controls(&browser).await, ["proxydeck"]);
    browser.audit("signed-out").await;
    // The invitation is still pending: looking at it accepted nothing.
    let (_, listed) = server
        .get(&format!("/v1/invitations?organization_id={ACME}"), &token)
        .await;
    assert_eq!(listed["data"][0]["status"], json!("pending"), "{listed}");
}

#[tokio::test]
async fn signed_in_pages_pass_the_audit() {
    let dns = crate::helpers::DnsServer::start();
    let sandbox = Sandbox::new();
    let resolver = dns.addr().to_string();
    let (server, token) = demo_with(&sandbox, &["--dns-resolver", &resolver]);
    let member = globex_member(&sandbox);
    // A project page with all its parts: a domain (pending, its record
    // and buttons), the edges' reports (one running, one failed).
    let path = "/v1/projects/acme-shop/domains";
    let (status, added) = api(
        &server,
        reqwest::Method::POST,
        path,
        &token,
        json!({"name": "shop.acme.example"}),
    )
    .await;
    assert_eq!(status, 200, "{added}");
    for report in [
        json!({"name": "edge-a", "revision": 3, "status": "applied"}),
        json!({"name": "edge-b", "revision": 2, "status": "failed", "error": "haproxy: no server"}),
    ] {
        let path = "/v1/projects/acme-shop/edges";
        let (status, body) = api(&server, reqwest::Method::POST, path, &token, report).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, empty) = api(
        &server,
        reqwest::Method::POST,
        "/v1/organizations",
        &token,
        json!({"name": "Empty Team", "slug": "empty-team"}),
    )
    .await;
    assert_eq!(status, 200, "{empty}");
    let empty = empty["id"].as_str().unwrap().to_owned();
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.element("#projects").await;
    browser.audit("projects").await;

    browser
        .visit(&format!("/console#/projects?organization_id={empty}"))
        .await;
    browser.sees("main .empty", "No projects").await;
    browser.audit("projects-empty").await;

    browser.visit("/console#/projects/acme-shop").await;
    browser.element("ol.timeline").await;
    browser
        .element("#domains li[data-domain='shop.acme.example']")
        .await;
    browser.element("#revisions .edge.failed").await;
    browser.audit("project").await;

    browser.visit("/console#/projects/acme-shop/diff/1/3").await;
    browser.sees("h1", "revision 1 against revision 3").await;
    browser.audit("diff").await;

    browser.click("nav a[data-nav=tokens]").await;
    browser.element("#tokens").await;
    browser.audit("tokens").await;
    browser.fill("#token-name", "audit bot").await;
    browser
        .click("form[aria-label='Create a token'] button[type=submit]")
        .await;
    browser.element("#new-secret").await;
    browser.audit("token-created").await;
    let made = server.tokens(&token).await;
    assert!(
        made.iter().any(|t| t["name"] == json!("audit bot")),
        "{made:?}"
    );

    browser.click("nav a[data-nav=organizations]").await;
    browser.element("#organizations").await;
    browser.audit("organizations").await;

    // An admin's view: members, an invitation's link shown once, the
    // pending invitations, rename and delete.
    browser
        .visit(&format!("/console#/organizations/{ACME}"))
        .await;
    browser.element("#member-list").await;
    browser.fill("#invite-email", "audit@acme.example").await;
    browser.click("#invite button[type=submit]").await;
    browser.element("#invitation-link").await;
    browser.sees("#invitation-rows", "audit@acme.example").await;
    browser.audit("organization").await;
    let (_, listed) = server
        .get(&format!("/v1/invitations?organization_id={ACME}"), &token)
        .await;
    assert_eq!(listed["data"][0]["email"], json!("audit@acme.example"));

    // A new organization: its admin alone, no invitation yet.
    browser
        .visit(&format!("/console#/organizations/{empty}"))
        .await;
    browser.element("#member-list").await;
    browser.sees("#invitations .empty", "No invitation").await;
    browser.audit("organization-new").await;

    // A member's view: read only, and told why.
    browser.click("#sign-out").await;
    browser.sign_in(&member).await;
    browser.visit("/console#/projects/globex-api").await;
    browser
        .sees("#revisions", "Your role in Globex is member")
        .await;
    browser
        .sees("#domains", "Your role in Globex is member")
        .await;
    browser.audit("project-as-member").await;
    browser
        .visit(&format!("/console#/organizations/{GLOBEX}"))
        .await;
    browser
        .sees("#members", "Your role in Globex is member")
        .await;
    browser.audit("organization-as-member").await;
}

#[tokio::test]
async fn failures_pass_the_audit_and_offer_to_try_again() {
    let sandbox = Sandbox::new();
    let (mut server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.visit("/console#/projects/no-such-project").await;
    browser.sees("main [role=alert]", "Not found").await;
    browser.sees("main button", "Try again").await;
    browser.audit("project-not-found").await;

    browser.visit("/console#/projects").await;
    browser.element("#projects").await;
    let (_, status, _, _) = server.stop_with("TERM").await;
    assert!(status.success());
    browser.click("nav.pager button:last-child").await;
    browser
        .sees("main [role=alert]", "The service did not answer")
        .await;
    browser.sees("main button", "Try again").await;
    browser.audit("service-down").await;

    // The service back on the same address: "Try again" reads the page.
    let address = server.address.to_string();
    let _back = Server::start(|_| sandbox.command(&["serve", "--listen", &address]));
    browser.click("main button.retry").await;
    browser.sees("nav.pager", "Page 2").await;
    browser.element("#projects").await;
}

/// A reload that cannot reach the API for a reason other than the token
/// (here its rate limit, 429) keeps the tab's token and offers to try
/// again; only a refused token (401) is forgotten.
#[tokio::test]
async fn a_reload_the_api_cannot_answer_keeps_the_session() {
    let sandbox = Sandbox::new();
    // A bucket of 3 requests that refills in 1,000 s: spent below.
    let (server, token) = demo_with(
        &sandbox,
        &["--rate-limit", "0.001", "--rate-limit-burst", "3"],
    );
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.visit("/console").await;
    browser.element("#token").await;
    browser
        .run(
            "sessionStorage.setItem('proxydeck.token', arguments[0])",
            vec![json!(token)],
        )
        .await;
    let client = reqwest::Client::new();
    let mut limited = false;
    for _ in 0..4 {
        let answer = client
            .get(server.url("/v1/users/me"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        limited |= answer.status() == StatusCode::TOO_MANY_REQUESTS;
    }
    assert!(limited, "the bucket was not spent");
    // Another path than the page's (`/console/`): a whole load, not a
    // move within the page.
    browser.visit("/console/#/projects").await;
    browser.sees("main [role=alert]", "Too many requests").await;
    browser.sees("main button.retry", "Try again").await;
    assert_eq!(
        browser
            .run("return sessionStorage.getItem('proxydeck.token')", vec![])
            .await,
        json!(token),
        "the session's token was forgotten"
    );
    browser.audit("signing-in-refused-for-now").await;
}

#[tokio::test]
async fn revision_counts_read_as_words() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let backend = |name: &str, default: bool| json!({"name": name, "address": format!("{name}.example:443"), "enable_ssl": true, "default": default});
    let route = |path: &str| json!({"path": path, "backend_name": "origin", "rank": 1});
    for body in [
        json!({"description": "one and two", "backends": [backend("origin", true)], "routes": [route("/a"), route("/b")]}),
        json!({"description": "two and none", "backends": [backend("origin", true), backend("spare", false)], "routes": []}),
    ] {
        let path = "/v1/projects/acme-docs-2/proxy-settings";
        let (status, made) = api(&server, reqwest::Method::POST, path, &token, body).await;
        assert_eq!(status, 200, "{made}");
    }
    let revisions = server.revisions("acme-docs-2", &token).await;
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.visit("/console#/projects/acme-docs-2").await;
    browser.element("ol.timeline").await;
    let mut checked = 0;
    for revision in &revisions {
        let (backends, routes) = (
            revision["backends"].as_array().unwrap().len(),
            revision["routes"].as_array().unwrap().len(),
        );
        let said = match (revision["description"].as_str(), backends, routes) {
            (Some("one and two"), 1, 2) => "1 backend, 2 routes",
            (Some("two and none"), 2, 0) => "2 backends, no route",
            _ => continue,
        };
        let number = &revision["revision"];
        assert_eq!(
            browser
                .text(&format!("li[data-revision='{number}'] p.muted"))
                .await,
            said
        );
        checked += 1;
    }
    assert_eq!(checked, 2, "{revisions:#?}");
}

/// Presses `keys` on whatever has the focus.
async fn press(browser: &Browser, keys: &str) {
    browser
        .client
        .active_element()
        .await
        .expect("a focused element")
        .send_keys(keys)
        .await
        .expect("the keys are pressed");
}

const TAB: &str = "\u{E004}";
const SHIFT_TAB: &str = "\u{E008}\u{E004}\u{E000}";
const ENTER: &str = "\u{E007}";
const ARROW_DOWN: &str = "\u{E015}";

/// Presses `key` (Tab or Shift+Tab) until the focused element matches
/// the CSS selector `css`; fails after 40 presses.
async fn tab_to(browser: &Browser, key: &str, css: &str) {
    let css = serde_json::to_string(css).unwrap();
    let check = format!("return document.activeElement.matches({css})");
    for _ in 0..40 {
        press(browser, key).await;
        if browser.run(&check, vec![]).await == json!(true) {
            return;
        }
    }
    let at = browser
        .run(
            "return document.activeElement.outerHTML.slice(0, 200)",
            vec![],
        )
        .await;
    panic!("the keyboard never reached {css}; the focus is on {at}");
}

#[tokio::test]
async fn a_token_is_made_and_revoked_with_the_keyboard_alone() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.element("#projects").await;
    // From the page's heading back up to the header's link, and Enter.
    tab_to(&browser, SHIFT_TAB, "nav a[data-nav=tokens]").await;
    press(&browser, ENTER).await;
    browser.sees("h1", "API tokens").await;
    browser.element("#tokens").await;

    // The form: a name, an expiry chosen with the arrows, Enter.
    tab_to(&browser, TAB, "#token-name").await;
    press(&browser, "keyboard bot").await;
    tab_to(&browser, TAB, "#token-expiry").await;
    press(&browser, &ARROW_DOWN.repeat(2)).await;
    tab_to(
        &browser,
        TAB,
        "form[aria-label='Create a token'] button[type=submit]",
    )
    .await;
    press(&browser, ENTER).await;
    // The secret has the focus, selected, for copying at once.
    browser
        .until("document.activeElement && document.activeElement.id === 'new-secret'")
        .await;
    let made = server.tokens(&token).await;
    let bot = made
        .iter()
        .find(|t| t["name"] == json!("keyboard bot"))
        .unwrap_or_else(|| panic!("{made:?}"))
        .clone();
    // "In 30 days", two steps down from "Never".
    let at = |name: &str| {
        let text = bot[name]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {bot}"));
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
            .expect("a time")
    };
    let days = (at("expires_at") - at("created_at")).as_seconds_f64() / 86_400.0;
    assert!((days - 30.0).abs() < 0.1, "{bot}");
    tab_to(&browser, TAB, "#hide-secret").await;
    press(&browser, ENTER).await;
    browser.sees("#tokens", "keyboard bot").await;

    // Revoked: Tab to its button, Enter; the dialog starts on Cancel,
    // Tab reaches Revoke, Enter.
    let id = bot["id"].as_str().unwrap();
    browser
        .run("document.querySelector('main h1').focus()", vec![])
        .await;
    tab_to(
        &browser,
        TAB,
        &format!("tr[data-token='{id}'] button.danger"),
    )
    .await;
    press(&browser, ENTER).await;
    browser
        .until("document.activeElement && document.activeElement.id === 'confirm-cancel'")
        .await;
    tab_to(&browser, TAB, "#confirm-ok").await;
    press(&browser, ENTER).await;
    browser.sees("#notice", "revoked").await;
    let left = server.tokens(&token).await;
    assert!(
        !left.iter().any(|t| t["id"] == json!(id)),
        "still listed: {left:?}"
    );
}
