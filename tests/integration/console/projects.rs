//! Signing in, paging, filtering and reading projects in the console, as
//! a person does in Chromium, on small screens and with the keyboard alone;
//! text from the store shown as text; a missing project and a stopped
//! service said in words.

use super::*;

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
async fn a_phone_screen_and_the_keyboard_alone_are_enough() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Phone).await else {
        return;
    };
    browser.visit("/console").await;
    assert_eq!(
        browser.run("return window.innerWidth", vec![]).await,
        json!(360)
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
        "the projects page scrolls sideways at 360 px"
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
        "the project page scrolls sideways at 360 px"
    );

    browser.visit("/console#/projects/acme-shop/diff/1/3").await;
    browser.sees("h1", "revision 1 against revision 3").await;
    assert!(
        !browser.overflows().await,
        "the diff scrolls sideways at 360 px"
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
