//! The web console (`/console`): served with a strict policy, and used in
//! a real headless Chromium against a real `proxydeck demo` process, as a
//! person would: signing in, paging, filtering, opening a project,
//! comparing and activating revisions, making and revoking tokens. Every
//! change the console makes is checked through the public API.

mod browser;

use reqwest::StatusCode;
use reqwest::header::{
    CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH, X_FRAME_OPTIONS,
};
use serde_json::{Value, json};

use crate::binary::{Sandbox, Server};
use crate::helpers::json_of;
use browser::{Browser, Screen};

const GLOBEX: &str = "0190b7a4-0000-7000-8000-000000000002";

/// `proxydeck demo` on a fresh SQLite file; answers the server and the
/// demo user's token (admin of Acme Corp, editor of Globex).
fn demo(sandbox: &Sandbox) -> (Server, String) {
    let server = Server::start(|listen| sandbox.command(&["demo", "--json", "--listen", listen]));
    let started: Value = serde_json::from_str(&server.stdout_line()).expect("the demo's JSON line");
    let token = started["token"].as_str().expect("a token").to_owned();
    (server, token)
}

/// A user who is a `member` of Globex (reads, may not change), made with
/// the operator's command line on the demo's file; answers a token of it.
fn globex_member(sandbox: &Sandbox) -> String {
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "viewer@globex.example",
        "--name",
        "Globex Viewer",
        "--org",
        &format!("{GLOBEX}:member"),
        "--id",
        "globex-viewer",
    ]);
    sandbox.token("globex-viewer", "console")
}

/// A request of the API with `token` and the JSON `body`: the status and
/// the answer's JSON.
async fn api(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = server
        .client
        .request(method, server.url(path))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("an answer");
    json_of(response).await
}

/// The active revision of a project, as the API says.
async fn active_revision(server: &Server, project: &str, token: &str) -> u64 {
    let revisions = server.revisions(project, token).await;
    let active: Vec<u64> = revisions
        .iter()
        .filter(|revision| revision["is_active"] == json!(true))
        .map(|revision| revision["revision"].as_u64().unwrap())
        .collect();
    assert_eq!(active.len(), 1, "{revisions:#?}");
    active[0]
}

#[tokio::test]
async fn the_console_is_served_from_the_binary_with_a_strict_policy() {
    let sandbox = Sandbox::new();
    let (server, _) = demo(&sandbox);
    for (path, kind) in [
        ("/console", "text/html"),
        ("/console/", "text/html"),
        ("/console/console.js", "text/javascript"),
        ("/console/console.css", "text/css"),
        ("/console/icon.svg", "image/svg+xml"),
    ] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        assert!(
            headers[CONTENT_TYPE].to_str().unwrap().starts_with(kind),
            "{path}: {headers:?}"
        );
        let policy = headers[CONTENT_SECURITY_POLICY].to_str().unwrap();
        for rule in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'none'",
        ] {
            assert!(policy.contains(rule), "{path}: {policy}");
        }
        assert!(
            !policy.contains("unsafe") && !policy.contains("http"),
            "{policy}"
        );
        assert_eq!(headers[X_FRAME_OPTIONS], "DENY", "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["referrer-policy"], "no-referrer", "{path}");
        // A reload revalidates and gets a 304.
        let again = server
            .client
            .get(server.url(path))
            .header(IF_NONE_MATCH, headers[ETAG].clone())
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path}");
    }
    let page = server
        .client
        .get(server.url("/console"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"<script type="module" src="/console/console.js"></script>"#),
        "{page}"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "an outside address: {page}"
    );
    for (path, status) in [
        ("/console/nothing.js", 404),
        ("/console/..%2Fopenapi.json", 404),
    ] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), status, "{path}");
    }
    let posted = server
        .client
        .post(server.url("/console"))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 405);
}

#[tokio::test]
async fn sign_in_page_filter_find_and_read_a_project_then_sign_out() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };

    // A wrong token is refused in words, and nothing is kept.
    browser.visit("/console").await;
    browser.screenshot("sign-in").await;
    browser.fill("#token", "pxd_not-a-real-token").await;
    browser.click("form.sign-in button[type=submit]").await;
    browser.sees("#sign-in-problem", "was not accepted").await;
    assert_eq!(
        browser.run("return sessionStorage.length", vec![]).await,
        json!(0)
    );

    browser.fill("#token", &token).await;
    browser.click("form.sign-in button[type=submit]").await;
    browser.sees("h1", "Projects").await;
    browser
        .sees("#who-name", "Demo User (demo@proxydeck.example)")
        .await;

    // The first page is the API's first page, 20 newest first.
    let api_first = server.get("/v1/projects?limit=20", &token).await.1;
    let slugs = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["slug"].as_str().unwrap().to_owned())
            .collect()
    };
    browser.element("#projects").await;
    let first = browser.texts("#projects tbody td[data-label=Slug]").await;
    assert_eq!(first, slugs(&api_first));
    browser.screenshot("projects").await;

    // Forward along the API's cursor, and back.
    browser.click("nav.pager button:last-child").await;
    browser.sees("nav.pager", "Page 2").await;
    let last_key = api_first["last_key"].as_str().unwrap();
    let api_second = server
        .get(
            &format!("/v1/projects?limit=20&start_key={last_key}"),
            &token,
        )
        .await
        .1;
    assert_eq!(
        browser.texts("#projects tbody td[data-label=Slug]").await,
        slugs(&api_second)
    );
    browser.click("nav.pager button:first-child").await;
    browser.sees("nav.pager", "Page 1").await;
    assert_eq!(
        browser.texts("#projects tbody td[data-label=Slug]").await,
        first
    );

    // Filtered by organization: Globex's 15 projects, one page.
    browser.choose("#filter-organization", GLOBEX).await;
    browser.click("form.toolbar button[type=submit]").await;
    browser
        .until("location.hash.includes('organization_id')")
        .await;
    browser
        .until("document.querySelectorAll('#projects tbody tr').length === 15")
        .await;
    let organizations = browser
        .texts("#projects tbody td[data-label=Organization]")
        .await;
    assert!(
        organizations.iter().all(|name| name == "Globex"),
        "{organizations:?}"
    );
    let next_disabled = browser
        .run(
            "return document.querySelector('nav.pager button:last-child').disabled",
            vec![],
        )
        .await;
    assert_eq!(next_disabled, json!(true));

    // Found by slug, then read as a person reads it.
    browser.visit("/console#/projects").await;
    browser.fill("#find-slug", "acme-docs-2").await;
    browser.click("form[role=search] button").await;
    browser.sees("h1", "acme-docs-2").await;
    for section in [
        "Overview",
        "Caching",
        "Proxying",
        "SDK",
        "IP rules",
        "Rate limiting",
        "Cookies",
        "Proxy settings",
    ] {
        browser.sees("main h2", section).await;
    }
    browser
        .sees("#s-overview + dl", "The docs site of acme")
        .await;
    browser.screenshot("project").await;

    // The token is in the tab's session storage, and nowhere else.
    let exposed = browser.exposed().await;
    assert!(!exposed.contains(&token), "the token shows: {exposed}");
    assert_eq!(
        browser
            .run("return sessionStorage.getItem('proxydeck.token')", vec![])
            .await,
        json!(token)
    );

    // Signing out forgets it; a reload stays signed out.
    browser.click("#sign-out").await;
    browser.sees("h1", "Sign in").await;
    browser.sees("#notice", "forgotten").await;
    assert_eq!(
        browser.run("return sessionStorage.length", vec![]).await,
        json!(0)
    );
    browser.visit("/console#/projects").await;
    browser.sees("h1", "Sign in").await;
}

#[tokio::test]
async fn revisions_compare_side_by_side_and_only_editors_activate() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let member = globex_member(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    // What the edges report: two run revision 3, one failed on 2.
    for report in [
        json!({"name": "edge-a", "revision": 3, "status": "applied"}),
        json!({"name": "edge-b", "revision": 3, "status": "applied"}),
        json!({"name": "edge-c", "revision": 2, "status": "failed", "error": "haproxy: no server"}),
    ] {
        let path = "/v1/projects/acme-shop/edges";
        let (status, body) = api(&server, reqwest::Method::POST, path, &token, report).await;
        assert_eq!(status, 200, "{body}");
    }

    // The timeline: newest first, the active one marked in words.
    browser.visit("/console#/projects/acme-shop").await;
    browser.element("ol.timeline").await;
    // Who runs which revision, in words, and on each revision.
    assert_eq!(
        browser.text("#revisions .edges-summary").await,
        "2 edges on revision 3, 1 failed on 2: haproxy: no server"
    );
    assert_eq!(
        browser.texts("li[data-revision='3'] .edge").await,
        ["Running on edge-a", "Running on edge-b"]
    );
    assert_eq!(
        browser.texts("li[data-revision='2'] .edge.failed").await,
        ["Failed on edge-c: haproxy: no server"]
    );
    // Names chosen to sort first do not push the failed edge out of view,
    // and the words stay bounded (issue 44: 88,844 characters of summary).
    for i in 0..120 {
        let report = json!({"name": format!("aaa-{i:03}"), "revision": 3, "status": "applied"});
        let path = "/v1/projects/acme-shop/edges";
        let (status, body) = api(&server, reqwest::Method::POST, path, &token, report).await;
        assert_eq!(status, 200, "{body}");
    }
    browser.visit("/console#/projects").await;
    browser.visit("/console#/projects/acme-shop").await;
    browser.element("ol.timeline").await;
    let summary = browser.text("#revisions .edges-summary").await;
    assert!(
        summary.contains("1 failed on 2: haproxy: no server") && summary.len() < 300,
        "{summary}"
    );
    assert_eq!(
        browser.texts("li[data-revision='2'] .edge.failed").await,
        ["Failed on edge-c: haproxy: no server"]
    );
    let shown = browser.texts("li[data-revision='3'] .edge").await;
    assert_eq!(shown.len(), 6, "{shown:?}");
    assert!(shown[5].starts_with("and "), "{shown:?}");
    assert_eq!(
        browser.texts("ol.timeline li .revision-head strong").await,
        ["Revision 3", "Revision 2", "Revision 1"]
    );
    let active = browser.text("ol.timeline li.active .revision-head").await;
    assert!(
        active.contains("Revision 3") && active.contains("✓ Active"),
        "{active}"
    );
    // No absent part written as the word "null" (an admin of Acme Corp
    // saw it twice, as an editor of Globex does: the member's note and the
    // "Load older revisions" button, both absent).
    let section = browser.text("#revisions").await;
    assert!(!section.contains("null"), "{section}");

    // Revision 1 against 3: the images backend and route added, the
    // origin's address and the static backend's TLS changed.
    browser.choose("#diff-a", "1").await;
    browser.choose("#diff-b", "3").await;
    browser
        .click("form[aria-label='Compare two revisions'] button")
        .await;
    browser.sees("h1", "revision 1 against revision 3").await;
    let verdicts = browser
        .run(
            "return [...document.querySelectorAll('.diff-row')].map((row) => row.querySelector('h3').textContent)",
            vec![],
        )
        .await;
    let verdicts: Vec<String> = serde_json::from_value(verdicts).unwrap();
    for expected in [
        "backend origin (changed)",
        "backend static (changed)",
        "backend images (added)",
        "route /images/ (added)",
        "route /assets/ (unchanged)",
        "route ^/eu/.* (regex) (changed)",
    ] {
        assert!(
            verdicts.iter().any(|v| v.ends_with(expected)),
            "{expected} not in {verdicts:?}"
        );
    }
    browser
        .sees(
            ".diff-row.changed .side:first-child li.changed",
            "origin-1.acme-shop.example:443",
        )
        .await;
    browser
        .sees(
            ".diff-row.changed .side:last-child li.changed",
            "origin-3.acme-shop.example:443",
        )
        .await;
    browser.screenshot("diff").await;

    // As an editor of Globex: cancel changes nothing; confirm activates.
    assert_eq!(active_revision(&server, "globex-api", &token).await, 4);
    browser.visit("/console#/projects/globex-api").await;
    browser.element("ol.timeline").await;
    let section = browser.text("#revisions").await;
    assert!(!section.contains("null"), "{section}");
    browser.click("li[data-revision='2'] button.activate").await;
    browser.sees("#confirm-title", "Activate revision 2?").await;
    browser.click("#confirm-cancel").await;
    assert_eq!(active_revision(&server, "globex-api", &token).await, 4);
    browser.click("li[data-revision='2'] button.activate").await;
    browser.click("#confirm-ok").await;
    browser
        .sees("#notice", "Revision 2 of globex-api is now active.")
        .await;
    browser.sees("li.active .revision-head", "Revision 2").await;
    assert_eq!(active_revision(&server, "globex-api", &token).await, 2);

    // As a member: the API refuses, the console says why, nothing changes.
    browser.click("#sign-out").await;
    browser.sign_in(&member).await;
    browser.visit("/console#/projects/globex-api").await;
    browser
        .sees("#revisions", "Your role in Globex is member")
        .await;
    let section = browser.text("#revisions").await;
    assert!(!section.contains("null"), "{section}");
    browser.click("li[data-revision='3'] button.activate").await;
    browser.click("#confirm-ok").await;
    browser
        .sees(
            ".revision-status [role=alert]",
            "your role in Globex is member",
        )
        .await;
    assert_eq!(active_revision(&server, "globex-api", &token).await, 2);
    browser.screenshot("refused").await;
}

#[tokio::test]
async fn a_token_is_shown_once_then_revoked_and_a_revoked_session_ends() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.click("nav a[data-nav=tokens]").await;
    browser.sees("h1", "API tokens").await;
    browser
        .sees(
            "#tokens",
            &format!("pxd_****{} (this session)", &token[token.len() - 4..]),
        )
        .await;

    browser.fill("#token-name", "deploy bot").await;
    browser.choose("#token-expiry", "30").await;
    browser
        .click("form[aria-label='Create a token'] button[type=submit]")
        .await;
    browser
        .sees("#created-token", "only time it is shown")
        .await;
    let secret = browser
        .run("return document.getElementById('new-secret').value", vec![])
        .await;
    let secret = secret.as_str().unwrap().to_owned();
    assert!(secret.starts_with("pxd_") && secret.len() == 42, "{secret}");
    // The secret works, and is not part of the page's markup.
    let (status, me) = server.get("/v1/users/me", &secret).await;
    assert_eq!(status, 200, "{me}");
    assert!(!browser.exposed().await.contains(&secret));
    browser.click("#hide-secret").await;
    browser.sees("#tokens", "deploy bot").await;
    assert!(
        !browser
            .run(
                "return document.body.textContent + document.documentElement.outerHTML",
                vec![]
            )
            .await
            .as_str()
            .unwrap()
            .contains(&secret),
        "the secret stayed on the page after hiding"
    );
    browser.screenshot("tokens").await;

    // Revoked with a confirmation: listed no more, refused by the API.
    let made = server.tokens(&token).await;
    let id = made
        .iter()
        .find(|t| t["name"] == json!("deploy bot"))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        made.iter()
            .any(|t| t["name"] == json!("deploy bot") && t.get("expires_at").is_some())
    );
    browser
        .click(&format!("tr[data-token='{id}'] button.danger"))
        .await;
    browser
        .sees("#confirm-title", "Revoke the token “deploy bot”?")
        .await;
    browser.click("#confirm-ok").await;
    browser.sees("#notice", "revoked").await;
    browser
        .until(&format!(
            "document.querySelector('#tokens') && !document.querySelector(\"tr[data-token='{id}']\")"
        ))
        .await;
    assert_eq!(server.get("/v1/users/me", &secret).await.0, 401);

    // The session's own token revoked elsewhere: the next step signs out.
    let own = server.tokens(&token).await;
    let own_id = own[0]["id"].as_str().unwrap().to_owned();
    let (status, _) = api(
        &server,
        reqwest::Method::DELETE,
        &format!("/v1/api_tokens/{own_id}"),
        &token,
        Value::Null,
    )
    .await;
    assert_eq!(status, 200);
    browser.click("nav a[data-nav=projects]").await;
    browser.sees("h1", "Sign in").await;
    browser.sees("#sign-in-problem", "no longer accepted").await;
    assert_eq!(
        browser.run("return sessionStorage.length", vec![]).await,
        json!(0)
    );
}

#[tokio::test]
async fn text_from_the_store_is_shown_as_text_never_run() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let hostile = r#"<script>window.__hit = 1</script>"><img src=x onerror="window.__hit = 2">"#;
    let (status, project) = api(
        &server,
        reqwest::Method::POST,
        "/v1/projects",
        &token,
        json!({"organization_id": "0190b7a4-0000-7000-8000-000000000001", "slug": "hostile", "description": hostile}),
    )
    .await;
    assert_eq!(status, 200, "{project}");
    let id = project["id"].as_str().unwrap();
    let (status, revision) = api(
        &server,
        reqwest::Method::POST,
        &format!("/v1/projects/{id}/proxy-settings"),
        &token,
        json!({"description": hostile, "backends": [{"name": "origin", "address": "o.example:443", "enable_ssl": true, "default": true}], "routes": []}),
    )
    .await;
    assert_eq!(status, 200, "{revision}");
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser
        .sees("#projects td[data-label=Description]", hostile)
        .await;
    browser.visit(&format!("/console#/projects/{id}")).await;
    browser.sees("#s-overview + dl", hostile).await;
    browser.sees("ol.timeline", hostile).await;
    let ran = browser
        .run("return [window.__hit === undefined, document.querySelectorAll('main img, main script').length]", vec![])
        .await;
    assert_eq!(ran, json!([true, 0]), "the description became markup");
}

/// The console compares revisions by the rule the terminal follows
/// (docs/management.md, "Comparing revisions"): its `revisionDiff` gives,
/// for every case of the file the terminal's tests run too, what the
/// case expects; and for the same two revisions the page and
/// `proxydeck proxy-settings diff` count the same changes.
#[tokio::test]
async fn revisions_compare_by_the_rule_the_terminal_follows() {
    let cases: Value =
        serde_json::from_str(include_str!("../fixtures/revision-diff-cases.json")).unwrap();
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.visit("/console").await;
    for case in cases["cases"].as_array().unwrap() {
        // The page's own module (imported again, it is the same instance).
        let said = browser
            .client
            .execute_async(
                "const [from, to, done] = arguments;
                 import('/console/console.js').then((console) => done(console.revisionDiff(from, to)));",
                vec![case["from"].clone(), case["to"].clone()],
            )
            .await
            .expect("the console's revisionDiff runs");
        assert_eq!(said, case["expected"], "{}", case["name"]);
    }

    // The case of issue 43 on a page: a route whose path changed.
    let case = cases["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|case| case["name"] == "a path changed")
        .expect("the case");
    let (status, project) = api(
        &server,
        reqwest::Method::POST,
        "/v1/projects",
        &token,
        json!({"organization_id": "0190b7a4-0000-7000-8000-000000000001", "slug": "paths"}),
    )
    .await;
    assert_eq!(status, 200, "{project}");
    let id = project["id"].as_str().unwrap();
    for side in ["from", "to"] {
        let mut body = case[side].clone();
        body["description"] = json!(side);
        let path = format!("/v1/projects/{id}/proxy-settings");
        let (status, made) = api(&server, reqwest::Method::POST, &path, &token, body).await;
        assert_eq!(status, 200, "{made}");
    }
    browser.sign_in(&token).await;
    browser
        .visit(&format!("/console#/projects/{id}/diff/1/2"))
        .await;
    browser.sees("h1", "revision 1 against revision 2").await;
    assert_eq!(
        browser.texts("section.diff h2").await,
        [
            "Backends: 1 unchanged",
            "Routes: 1 added, 1 removed, 1 unchanged"
        ]
    );
    assert_eq!(
        browser.texts(".diff-row h3").await,
        [
            "=backend origin (unchanged)",
            "=route / (unchanged)",
            "−route /v2/ (removed)",
            "+route /one/ (added)",
        ]
    );
    let mut command = crate::binary::proxydeck(sandbox.path());
    command
        .args(["proxy-settings", "diff", "acme-corp/paths", "1", "2"])
        .env("PROXYDECK_URL", &server.base)
        .env("PROXYDECK_TOKEN", &token);
    let out = crate::binary::finish(command, None);
    assert!(out.status.success(), "{out:#?}");
    let tallies: Vec<&str> = out
        .stdout
        .lines()
        .filter(|line| line.starts_with("backends:") || line.starts_with("routes:"))
        .collect();
    assert_eq!(
        tallies,
        [
            "backends: 1 unchanged",
            "routes: 1 added, 1 removed, 1 unchanged"
        ]
    );
}

#[tokio::test]
async fn a_phone_screen_and_the_keyboard_alone_are_enough() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Phone).await else {
        return;
    };
    browser.visit("/console").await;
    assert_eq!(
        browser.run("return window.innerWidth", vec![]).await,
        json!(390)
    );
    // The token field has the focus; typing and Enter sign in.
    browser
        .until("document.activeElement && document.activeElement.id === 'token'")
        .await;
    browser
        .client
        .active_element()
        .await
        .unwrap()
        .send_keys(&format!("{token}\u{E007}"))
        .await
        .unwrap();
    browser.sees("h1", "Projects").await;
    browser.element("#projects").await;
    assert!(
        !browser.overflows().await,
        "the projects page scrolls sideways at 390 px"
    );
    browser.screenshot("phone-projects").await;

    // Tab from the heading reaches the first project's link; Enter opens it.
    let first = browser.text("#projects tbody td[data-label=Slug] a").await;
    browser
        .run("document.querySelector('main h1').focus()", vec![])
        .await;
    let mut reached = false;
    for _ in 0..20 {
        browser
            .client
            .active_element()
            .await
            .unwrap()
            .send_keys("\u{E004}")
            .await
            .unwrap();
        let focused = browser
            .run("return document.activeElement.textContent", vec![])
            .await;
        if focused == json!(first) {
            reached = true;
            break;
        }
    }
    assert!(reached, "Tab never reached the first project's link");
    browser
        .client
        .active_element()
        .await
        .unwrap()
        .send_keys("\u{E007}")
        .await
        .unwrap();
    browser.sees("h1", &first).await;
    assert!(
        !browser.overflows().await,
        "the project page scrolls sideways at 390 px"
    );

    browser.visit("/console#/projects/acme-shop/diff/1/3").await;
    browser.sees("h1", "revision 1 against revision 3").await;
    assert!(
        !browser.overflows().await,
        "the diff scrolls sideways at 390 px"
    );
    browser.screenshot("phone-diff").await;
}

#[tokio::test]
async fn a_missing_project_and_a_stopped_service_are_said_in_words() {
    let sandbox = Sandbox::new();
    let (mut server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    // Another organization's project is the same 404 as a missing one.
    for id in ["no-such-project", "initech-shop"] {
        browser.visit(&format!("/console#/projects/{id}")).await;
        browser
            .sees(
                "main [role=alert]",
                "Not found: it does not exist, or it is not visible to you.",
            )
            .await;
    }
    browser.visit("/console#/projects").await;
    browser.element("#projects").await;
    let (_, status, _, _) = server.stop_with("TERM").await;
    assert!(status.success());
    browser.click("nav.pager button:last-child").await;
    browser
        .sees("main [role=alert]", "The service did not answer")
        .await;
    browser.sees("main button", "Try again").await;
    // The session is kept: the token was not refused, the service was away.
    assert_eq!(
        browser
            .run("return sessionStorage.getItem('proxydeck.token')", vec![])
            .await,
        json!(token)
    );
}

#[tokio::test]
async fn the_console_can_be_switched_off() {
    let sandbox = Sandbox::new();
    // By flag, and by the environment: /console is then an unknown route.
    let by_flag = sandbox.serve(&["--console", "off"]);
    let by_environment = Server::start(|listen| {
        let mut command = sandbox.command(&["serve", "--listen", listen]);
        command.env("PROXYDECK_CONSOLE", "off");
        command
    });
    for server in [&by_flag, &by_environment] {
        for path in ["/console", "/console/console.js"] {
            let response = server.client.get(server.url(path)).send().await.unwrap();
            assert_eq!(response.status(), 404, "{path}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["error"]["type"], json!("not_found_error"), "{body}");
        }
        let document = server
            .client
            .get(server.url("/openapi.json"))
            .send()
            .await
            .unwrap();
        assert_eq!(document.status(), 200);
    }
    let on = sandbox.serve(&[]);
    let page = on.client.get(on.url("/console")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    // Anything but on or off is refused before serving, naming the flag.
    sandbox
        .run(&["serve", "--console", "yes"])
        .error(&["--console", "on or off"]);
}
