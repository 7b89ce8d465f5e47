//! Revisions made in the console: a revision's page, the new-revision
//! form (backends and routes as rows), the preview (`dry_run=true`: the
//! API's checks at their fields, the diff by the diff page's rule), save,
//! activate, and the edges' report on it; a member reads and is refused.
//! Each step checks what the API holds.

use super::*;

/// The rows of a list of the form (`backends` or `routes`), from 1.
fn row(list: &str, n: usize) -> String {
    format!(".row-list[data-param='{list}'] > ol > li.row:nth-child({n})")
}

/// The field of `member` in row `n` of `list`.
fn input(list: &str, n: usize, member: &str) -> String {
    format!("{} [name='{member}']", row(list, n))
}

/// Scrolls the first element matching `css` to the top of the window,
/// for a screenshot of it.
async fn scroll_to(browser: &Browser, css: &str) {
    browser
        .run(
            "document.querySelector(arguments[0]).scrollIntoView()",
            vec![json!(css)],
        )
        .await;
}

/// What the JavaScript expression `of_e` says of the first element
/// matching `css` (named `e` in it).
async fn about(browser: &Browser, css: &str, of_e: &str) -> Value {
    let script = format!("const e = document.querySelector(arguments[0]); return {of_e}");
    browser.run(&script, vec![json!(css)]).await
}

/// The revisions the API holds for `project`, oldest first.
async fn revisions(server: &Server, project: &str, token: &str) -> Vec<Value> {
    server.revisions(project, token).await
}

#[tokio::test]
async fn a_revision_is_built_checked_previewed_saved_activated_and_reported() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.visit("/console#/projects/acme-shop").await;
    browser.click("#revisions .new-revision a").await;
    browser.sees("h1", "New revision of acme-shop").await;
    // It starts from the active revision, 3.
    browser
        .sees("main", "Starting from revision 3 (active)")
        .await;
    assert_eq!(
        about(&browser, "#revision-description", "e.value").await,
        json!("revision 3 of acme-shop")
    );
    assert_eq!(
        browser
            .texts(".row-list[data-param='backends'] li.row")
            .await
            .len(),
        3
    );
    assert_eq!(
        browser
            .texts(".row-list[data-param='routes'] li.row")
            .await
            .len(),
        3
    );

    // The origin moves (an address without a port: the platform takes
    // it), "static" is renamed "assets" (its route follows the rename),
    // a backend "api" and a route to it are added, with a regex that
    // does not compile and a backend address with a scheme.
    browser.fill("#revision-description", "api, assets").await;
    browser
        .fill(
            &input("backends", 1, "address"),
            "origin-4.acme-shop.example",
        )
        .await;
    browser.fill(&input("backends", 2, "name"), "assets").await;
    let chosen = "e.options[e.selectedIndex].text";
    assert_eq!(
        about(&browser, &input("routes", 2, "backend_name"), chosen).await,
        json!("assets"),
        "the route to the renamed backend follows it"
    );
    browser
        .click(".row-list[data-param='backends'] > .row-add")
        .await;
    browser.fill(&input("backends", 4, "name"), "api").await;
    browser
        .fill(&input("backends", 4, "address"), "http://api.internal:8080")
        .await;
    browser
        .click(&format!("{} [name='enable_ssl']", row("backends", 4)))
        .await;
    browser
        .click(".row-list[data-param='routes'] > .row-add")
        .await;
    browser
        .fill(&input("routes", 4, "path"), "^/api/(v1|v2")
        .await;
    browser.click(&input("routes", 4, "regex")).await;
    browser
        .element(&input("routes", 4, "backend_name"))
        .await
        .select_by_label("api")
        .await
        .expect("the api backend is a choice");
    browser.fill(&input("routes", 4, "rank"), "1").await;
    browser.fill(&input("routes", 4, "country"), "FR\nDE").await;
    scroll_to(
        &browser,
        "form.revision-form .row-list[data-param='routes']",
    )
    .await;
    browser.audit("revision-form").await;

    // Preview: each refusal next to its field; nothing stored.
    browser.click("form.revision-form .preview-button").await;
    browser
        .sees(
            &format!("{} .field-error", row("routes", 4)),
            "routes[3].path",
        )
        .await;
    browser
        .sees(
            &format!("{} .field-error", row("backends", 4)),
            "backends[3].address",
        )
        .await;
    let invalid = "e.getAttribute('aria-invalid')";
    assert_eq!(
        about(&browser, &input("routes", 4, "path"), invalid).await,
        json!("true")
    );
    browser
        .sees(
            ".form-problem [role=alert]",
            "Check the fields marked below.",
        )
        .await;
    assert_eq!(
        about(&browser, "#preview", "e.hidden").await,
        json!(true),
        "no preview from a refusal"
    );
    assert_eq!(revisions(&server, "acme-shop", &token).await.len(), 3);

    // Fixed, the preview says what the API says and what would change,
    // drawn as the diff page draws it.
    browser
        .fill(&input("backends", 4, "address"), "api.internal:8080")
        .await;
    browser
        .fill(&input("routes", 4, "path"), "^/api/(v1|v2)/")
        .await;
    browser.click("form.revision-form .preview-button").await;
    browser
        .sees(
            "#preview .verdict-line",
            "Saved, it would be revision 4, inactive: revision 3 stays active",
        )
        .await;
    assert_eq!(
        browser.texts(".field-error").await.concat(),
        "",
        "the refusals are gone"
    );
    assert_eq!(
        browser.texts("#preview section.diff h3").await,
        [
            "Backends: 2 added, 1 removed, 1 changed, 1 unchanged",
            "Routes: 1 added, 1 changed, 2 unchanged",
        ]
    );
    assert_eq!(
        browser.texts("#preview .diff-row h4").await,
        [
            "~backend origin (changed)",
            "−backend static (removed)",
            "=backend images (unchanged)",
            "+backend assets (added)",
            "+backend api (added)",
            "=route /images/ (unchanged)",
            "~route /assets/ (changed)",
            "=route ^/eu/.* (regex) (unchanged)",
            "+route ^/api/(v1|v2)/ (regex) (added)",
        ]
    );
    browser
        .sees(
            "#preview .diff-row.changed .side:last-child li.changed",
            "origin-4.acme-shop.example",
        )
        .await;
    scroll_to(&browser, "#preview").await;
    browser.audit("revision-preview").await;
    assert_eq!(revisions(&server, "acme-shop", &token).await.len(), 3);

    // The api route moved up twice, ahead of /assets/ (rank 1 both: the
    // edges try it first): the preview is stale until asked again.
    browser
        .click(&format!("{} .row-up", row("routes", 4)))
        .await;
    browser
        .until("document.querySelector('#preview').dataset.stale === 'true'")
        .await;
    browser
        .sees("#preview .stale-note", "The form changed")
        .await;
    browser
        .click(&format!("{} .row-up", row("routes", 3)))
        .await;
    browser.click("form.revision-form .preview-button").await;
    browser
        .until("document.querySelector('#preview').dataset.stale === 'false'")
        .await;

    // Saved: exactly what was built, in its order, not active.
    browser.click("form.revision-form .save-button").await;
    browser.sees("h1", "acme-shop: revision 4").await;
    browser
        .sees(
            "#notice",
            "Revision 4 of acme-shop was saved. It is not active",
        )
        .await;
    let held = revisions(&server, "acme-shop", &token).await;
    assert_eq!(held.len(), 4);
    let saved = &held[3];
    assert_eq!(saved["revision"], json!(4));
    assert_eq!(saved["is_active"], json!(false));
    assert_eq!(saved["description"], json!("api, assets"));
    assert_eq!(
        saved["backends"],
        json!([
            {"name": "origin", "address": "origin-4.acme-shop.example", "enable_ssl": true,
             "check_certificate": "origin.acme-shop.example", "sni_hostname": "origin.acme-shop.example",
             "default": true},
            {"name": "assets", "address": "static.example:443", "enable_ssl": true, "default": false,
             "override_host": "static.example"},
            {"name": "images", "address": "images.example:443", "enable_ssl": true, "default": false},
            {"name": "api", "address": "api.internal:8080", "enable_ssl": false, "default": false},
        ])
    );
    assert_eq!(
        saved["routes"],
        json!([
            {"path": "/images/", "regex": false, "backend_name": "images", "rank": "0",
             "continent": [], "region": [], "country": []},
            {"path": "^/api/(v1|v2)/", "regex": true, "backend_name": "api", "rank": "1",
             "continent": [], "region": [], "country": ["FR", "DE"]},
            {"path": "/assets/", "regex": false, "backend_name": "assets", "rank": "1",
             "continent": [], "region": [], "country": []},
            {"path": "^/eu/.*", "regex": true, "backend_name": "origin", "rank": "2",
             "continent": ["EU"], "region": [], "country": ["FR", "DE", "ES"]},
        ])
    );
    assert_eq!(active_revision(&server, "acme-shop", &token).await, 3);

    // The revision's page: every member of each backend and route.
    browser
        .sees(".revision-state", "Inactive: revision 3 is the active one.")
        .await;
    browser
        .sees("#backends li[data-backend='api']", "api.internal:8080")
        .await;
    browser
        .sees(
            "#backends li[data-backend='origin']",
            "origin.acme-shop.example",
        )
        .await;
    assert_eq!(
        browser.texts("#routes li.member h3").await,
        [
            "1. /images/ → images",
            "2. ^/api/(v1|v2)/ (regex) → api",
            "3. /assets/ → assets",
            "4. ^/eu/.* (regex) → origin",
        ]
    );
    browser.sees("#routes li[data-route='2']", "FR, DE").await;
    browser.audit("revision").await;

    // Activated, by the choice of the person, after the confirmation.
    browser.click(".revision-actions button.activate").await;
    browser.sees("#confirm-title", "Activate revision 4?").await;
    browser.click("#confirm-ok").await;
    browser
        .sees("#notice", "Revision 4 of acme-shop is now active.")
        .await;
    browser.sees(".revision-state", "✓ Active").await;
    assert_eq!(active_revision(&server, "acme-shop", &token).await, 4);

    // An edge reports it, as `proxydeck follow` does: the revision's page
    // and the timeline say who runs it.
    let report = json!({"name": "edge-eu-1", "revision": 4, "status": "applied"});
    let (status, body) = api(
        &server,
        reqwest::Method::POST,
        "/v1/projects/acme-shop/edges",
        &token,
        report,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    browser.visit("/console#/projects/acme-shop").await;
    browser
        .sees("li[data-revision='4'] .edge", "Running on edge-eu-1")
        .await;
    browser
        .click("li[data-revision='4'] .revision-head a")
        .await;
    browser.sees("h1", "acme-shop: revision 4").await;
    browser
        .sees(".edges-on .edge", "Running on edge-eu-1")
        .await;
}

#[tokio::test]
async fn a_member_reads_a_revision_on_a_phone_and_is_refused_in_words() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let member = globex_member(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Phone).await else {
        return;
    };
    browser.sign_in(&member).await;
    browser
        .visit("/console#/projects/globex-api/revisions/2")
        .await;
    browser.sees("h1", "globex-api: revision 2").await;
    browser
        .sees(".revision-state", "Inactive: revision 4 is the active one.")
        .await;
    browser.sees("main", "Your role in Globex is member").await;
    browser
        .sees(
            "#backends li[data-backend='origin']",
            "origin-2.globex-api.example:443",
        )
        .await;
    assert!(
        !browser.overflows().await,
        "the revision's page scrolls sideways on a phone"
    );
    browser.screenshot("phone-revision").await;

    // The form is offered (as the activate button is: the API decides),
    // and its refusal is said in the API's words.
    browser
        .click(".revision-actions a[href$='new?from=2']")
        .await;
    browser.sees("h1", "New revision of globex-api").await;
    browser.sees("main", "Starting from revision 2.").await;
    assert!(
        !browser.overflows().await,
        "the form scrolls sideways on a phone"
    );
    browser.screenshot("phone-revision-form").await;
    browser
        .fill("#revision-description", "a member's try")
        .await;
    for button in [".preview-button", ".save-button"] {
        browser
            .run(
                "document.querySelectorAll('.form-problem').forEach((p) => p.replaceChildren())",
                vec![],
            )
            .await;
        browser.click(&format!("form.revision-form {button}")).await;
        browser.sees(".form-problem [role=alert]", "member").await;
    }
    let said = browser.text(".form-problem [role=alert]").await;
    assert!(said.starts_with("Not done."), "{said}");
    assert_eq!(revisions(&server, "globex-api", &token).await.len(), 4);
    assert_eq!(active_revision(&server, "globex-api", &token).await, 4);
    scroll_to(&browser, ".form-actions").await;
    browser.screenshot("phone-revision-refused").await;

    // The same page on a phone for an editor of Globex: the preview fits.
    browser.click("#sign-out").await;
    browser.sign_in(&token).await;
    browser
        .visit("/console#/projects/globex-api/revisions/new")
        .await;
    browser
        .sees("main", "Starting from revision 4 (active)")
        .await;
    browser
        .fill("#revision-description", "same, described")
        .await;
    browser.click("form.revision-form .preview-button").await;
    browser
        .sees("#preview .verdict-line", "Saved, it would be revision 5")
        .await;
    assert_eq!(
        browser.texts("#preview section.diff h3").await,
        ["Backends: 3 unchanged", "Routes: 3 unchanged"]
    );
    assert!(
        !browser.overflows().await,
        "the preview scrolls sideways on a phone"
    );
    scroll_to(&browser, "#preview").await;
    browser.screenshot("phone-revision-preview").await;
    assert_eq!(revisions(&server, "globex-api", &token).await.len(), 4);
}
