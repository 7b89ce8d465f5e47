//! Changing projects in the console: creating one with its settings,
//! editing every group while a second person edits it too (the first save
//! wins, the second is told what changed and nothing is lost), the API's
//! refusals at their fields, deleting one once its slug is typed, and a
//! member who sees no controls. Each step is checked through the API.

use super::*;

const ACME: &str = "0190b7a4-0000-7000-8000-000000000001";

/// The project `id` as the API holds it, with its ETag.
async fn stored(server: &Server, id: &str, token: &str) -> (StatusCode, Value, String) {
    let response = server.get_raw(&format!("/v1/projects/{id}"), token).await;
    let etag = response
        .headers()
        .get(ETAG)
        .map(|tag| tag.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let (status, body) = json_of(response).await;
    (status, body, etag)
}

/// The value of the input `id` in the page (checked, for a checkbox).
async fn value_of(browser: &Browser, id: &str) -> Value {
    browser
        .run(
            "const input = document.getElementById(arguments[0]);
             return input.type === 'checkbox' ? input.checked : input.value",
            vec![json!(id)],
        )
        .await
}

/// Records, from now on, each request the page sends with a body or
/// `If-Match`: [method, path, If-Match, Idempotency-Key, body]. (A
/// WebDriver script is not bound by the page's policy.)
async fn record_requests(browser: &Browser) {
    browser
        .run(
            "window.sent = [];
             const fetched = window.fetch;
             window.fetch = (path, init = {}) => {
               const headers = init.headers || {};
               if (init.body || headers['If-Match']) {
                 window.sent.push([init.method, String(path), headers['If-Match'] || null,
                                   headers['Idempotency-Key'] || null, init.body ? JSON.parse(init.body) : null]);
               }
               return fetched(path, init);
             };",
            vec![],
        )
        .await;
}

/// The requests recorded since [`record_requests`], and forgets them.
async fn sent_requests(browser: &Browser) -> Vec<Value> {
    let sent = browser
        .run(
            "const sent = window.sent; window.sent = []; return sent",
            vec![],
        )
        .await;
    sent.as_array().expect("recorded requests").clone()
}

/// The names of an object's members, sorted.
fn members_of(body: &Value) -> Vec<String> {
    let mut names: Vec<String> = body
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect();
    names.sort();
    names
}

/// The CSS of the input named `member` in the last row of the list `param`.
fn last_row(param: &str, member: &str) -> String {
    format!(".row-list[data-param={param}] li.row:last-child [id$='-{member}']")
}

/// A second person: an editor of Acme, made with the operator's command
/// line on the demo's file; answers a token of theirs.
fn acme_editor(sandbox: &Sandbox) -> String {
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "editor@acme.example",
        "--name",
        "Acme Editor",
        "--org",
        &format!("{ACME}:editor"),
        "--id",
        "acme-editor",
    ]);
    sandbox.token("acme-editor", "console")
}

#[tokio::test]
async fn a_project_is_created_with_its_settings() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    // An organization with no project yet, for the listing's empty state.
    let (status, empty) = api(
        &server,
        reqwest::Method::POST,
        "/v1/organizations",
        &token,
        json!({"name": "Empty Co", "slug": "empty-co"}),
    )
    .await;
    assert_eq!(status, 200, "{empty}");
    browser.sign_in(&token).await;
    let before = server.projects(&token).await.len();
    browser.click("#new-project-link").await;
    browser.sees("h1", "New project").await;
    // Every organization of the caller, with its role there.
    browser
        .sees("#new-organization option", "Globex (editor)")
        .await;
    browser.choose("#new-organization", GLOBEX).await;

    // A slug the API refuses: its rule next to the field, nothing made.
    browser.fill("#new-slug", "Globex Store").await;
    browser.click("#create-project-button").await;
    browser.sees("#new-slug-error", "slug must be").await;
    assert_eq!(
        browser
            .run(
                "return document.getElementById('new-slug').getAttribute('aria-invalid')",
                vec![]
            )
            .await,
        json!("true")
    );
    // A slug the organization has already: the API's 409, as worded.
    browser.fill("#new-slug", "globex-shop").await;
    browser.click("#create-project-button").await;
    browser
        .sees(
            "#create-problem [role=alert]",
            "the organization already has a project with the slug globex-shop",
        )
        .await;
    assert_eq!(server.projects(&token).await.len(), before);

    // Settings of several groups, a forwarded header and a cache rule.
    browser.fill("#new-slug", "globex-store").await;
    browser.fill("#new-description", "The store").await;
    browser.choose("#new-type", "mcp").await;
    browser.choose("#new-log_severity", "WARNING").await;
    browser.click("#new-cache").await;
    browser
        .fill("#new-trusted_ips", "10.1.0.0/16\n\n 2001:db8::1 ")
        .await;
    browser.click("#new-forwarded_headers-add").await;
    browser
        .fill(&last_row("forwarded_headers", "name"), "X-Store")
        .await;
    browser
        .fill(&last_row("forwarded_headers", "value"), "globex")
        .await;
    browser.click("#new-override_cache-add").await;
    browser
        .fill(&last_row("override_cache", "path"), "/assets/")
        .await;
    browser
        .fill(&last_row("override_cache", "ttl"), "600")
        .await;
    browser
        .fill(
            &last_row("override_cache", "conditions"),
            r#"{"request_methods": ["GET"]}"#,
        )
        .await;
    browser.run("window.scrollTo(0, 0)", vec![]).await;
    browser.audit("project-new").await;
    // Every flag and choice as the form shows it, to compare with what
    // the API makes of it (those left alone included).
    let shown = browser
        .run(
            "return Object.fromEntries([...document.querySelectorAll('#create-project .form-fields > .field > [id^=new-]')]
               .filter((e) => e.matches('input[type=checkbox], select') && e.id !== 'new-organization')
               .map((e) => [e.id.slice(4), e.type === 'checkbox' ? e.checked : e.value]))",
            vec![],
        )
        .await;
    assert!(shown.as_object().unwrap().len() == 13, "{shown}");
    record_requests(&browser).await;
    browser.click("#create-project-button").await;

    // On the new project's page, told so; the API holds those settings,
    // and the defaults for the rest.
    browser.sees("h1", "globex-store").await;
    browser
        .sees("#notice", "globex-store was created in Globex.")
        .await;
    let projects = server.projects(&token).await;
    assert_eq!(projects.len(), before + 1);
    let made = projects
        .iter()
        .find(|p| p["slug"] == json!("globex-store"))
        .expect("the new project is listed");
    let id = made["id"].as_str().unwrap();
    let (status, project, _) = stored(&server, id, &token).await;
    assert_eq!(status, 200, "{project}");
    assert_eq!(project["organization_id"], json!(GLOBEX));
    assert_eq!(project["description"], json!("The store"));
    assert_eq!(project["type"], json!("mcp"));
    assert_eq!(project["log_severity"], json!("WARNING"));
    assert_eq!(project["cache"], json!(true));
    assert_eq!(
        project["trusted_ips"],
        json!(["10.1.0.0/16", "2001:db8::1"])
    );
    assert_eq!(
        project["forwarded_headers"],
        json!([{"name": "X-Store", "value": "globex"}])
    );
    let rule = &project["override_cache"][0];
    assert_eq!(
        (
            &rule["path"],
            &rule["ttl"],
            &rule["conditions"]["request_methods"]
        ),
        (&json!("/assets/"), &json!(600), &json!(["GET"])),
        "{project}"
    );
    // What the form showed for the settings left alone is what was made:
    // only the organization, the slug and what was changed were sent,
    // with an Idempotency-Key.
    for (member, value) in shown.as_object().unwrap() {
        assert_eq!(&project[member], value, "{member}");
    }
    let sent = sent_requests(&browser).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        (&sent[0][0], &sent[0][1]),
        (&json!("POST"), &json!("/v1/projects"))
    );
    assert!(
        sent[0][3]
            .as_str()
            .is_some_and(|key| key.starts_with("console-"))
    );
    assert_eq!(
        members_of(&sent[0][4]),
        [
            "cache",
            "description",
            "forwarded_headers",
            "log_severity",
            "organization_id",
            "override_cache",
            "slug",
            "trusted_ips",
            "type"
        ]
    );
    browser.sees("#s-caching + dl", "#1 /assets/").await;

    // The listing's empty state offers it too.
    let empty = empty["id"].as_str().unwrap();
    browser
        .visit(&format!("/console#/projects?organization_id={empty}"))
        .await;
    browser.sees("main .empty", "No projects here yet.").await;
    browser.click("#empty-new-project").await;
    browser.sees("h1", "New project").await;
    assert_eq!(value_of(&browser, "new-organization").await, json!(empty));

    // On a phone, the form fits the screen.
    let Some(phone) = Browser::open(&server.base, Screen::Phone).await else {
        return;
    };
    phone.sign_in(&token).await;
    phone.visit("/console#/projects/new").await;
    phone.element("#create-project").await;
    assert!(
        !phone.overflows().await,
        "the new project page scrolls sideways"
    );
    phone.screenshot("phone-project-new").await;
}

#[tokio::test]
async fn two_people_edit_one_project_and_nothing_is_lost() {
    let sandbox = Sandbox::new();
    let (server, admin) = demo(&sandbox);
    let editor = acme_editor(&sandbox);
    let Some(first) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    let Some(second) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    first.sign_in(&admin).await;
    second.sign_in(&editor).await;
    // Both open acme-shop's page, and its edit page from a group's link.
    for browser in [&first, &second] {
        browser.visit("/console#/projects/acme-shop").await;
        browser.sees("h1", "acme-shop").await;
    }
    first.click("#edit-project-link").await;
    second.click("a.edit-group[href$='group=caching']").await;
    for browser in [&first, &second] {
        browser.sees("h1", "Edit acme-shop").await;
        browser.element("#edit-project").await;
    }
    first.audit("project-edit").await;
    let (_, original, etag) = stored(&server, "acme-shop", &admin).await;
    record_requests(&first).await;
    record_requests(&second).await;

    // The first saves a description and a log severity: it wins.
    first.fill("#edit-description", "Edited by the first").await;
    first.choose("#edit-log_severity", "DEBUG").await;
    first.click("#save-project").await;
    first
        .sees("#notice", "acme-shop was saved: Description, Log severity.")
        .await;
    let (_, after_first, etag_after_first) = stored(&server, "acme-shop", &admin).await;
    assert_eq!(after_first["description"], json!("Edited by the first"));
    assert_eq!(after_first["log_severity"], json!("DEBUG"));
    // Only what was changed was sent, on the ETag read.
    let sent = sent_requests(&first).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        (&sent[0][0], &sent[0][1], &sent[0][2]),
        (
            &json!("POST"),
            &json!("/v1/projects/acme-shop"),
            &json!(etag)
        )
    );
    assert_eq!(members_of(&sent[0][4]), ["description", "log_severity"]);

    // The second, on the version it read, changes the caching, the log
    // severity, the blocked addresses and adds a rate limiting rule.
    second.click("#edit-cache").await;
    second.choose("#edit-log_severity", "ERROR").await;
    second
        .fill("#edit-blocked_ips", "203.0.113.7\n198.51.100.0/24")
        .await;
    second.click("#edit-rate_limiting-add").await;
    second.fill(&last_row("rate_limiting", "limit"), "5").await;
    second
        .fill(&last_row("rate_limiting", "path"), "/login")
        .await;
    second.audit("project-edit-rules").await;
    second.click("#save-project").await;

    // Told what changed meanwhile, member by member; nothing of theirs
    // was stored; their edits are still in the form.
    second
        .sees(
            "#conflict h2",
            "Someone else saved acme-shop while you were editing it",
        )
        .await;
    second
        .sees(
            "#conflict li[data-member=description]",
            "Description (Overview): was “The shop site of acme”, now “Edited by the first”.",
        )
        .await;
    second
        .sees(
            "#conflict li[data-member=log_severity]",
            "was “INFO”, now “DEBUG”. You changed it too: saving puts yours, “ERROR”.",
        )
        .await;
    assert_eq!(
        second.texts("#conflict li").await.len(),
        2,
        "only what the first changed"
    );
    second
        .sees("#conflict .yours-kept", "Blocked addresses")
        .await;
    let (_, unchanged, _) = stored(&server, "acme-shop", &admin).await;
    assert_eq!(unchanged, after_first, "the refused save changed nothing");
    let changed_by_second = ["blocked_ips", "cache", "log_severity", "rate_limiting"];
    let sent = sent_requests(&second).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0][2], json!(etag), "on the ETag it read");
    assert_eq!(members_of(&sent[0][4]), changed_by_second);
    assert_eq!(value_of(&second, "edit-cache").await, json!(false));
    assert_eq!(value_of(&second, "edit-log_severity").await, json!("ERROR"));
    assert_eq!(
        value_of(&second, "edit-blocked_ips").await,
        json!("203.0.113.7\n198.51.100.0/24")
    );
    // The rest of the form shows the other's version now.
    assert_eq!(
        value_of(&second, "edit-description").await,
        json!("Edited by the first")
    );
    second
        .sees("#save-project", "Save my changes over theirs")
        .await;
    second.audit("project-conflict").await;

    // Saved again, deliberately: both people's changes are held.
    second.click("#save-project").await;
    second.sees("#notice", "acme-shop was saved").await;
    let sent = sent_requests(&second).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0][2], json!(etag_after_first), "on the new ETag");
    assert_eq!(
        members_of(&sent[0][4]),
        changed_by_second,
        "its own changes only"
    );
    let (_, both, _) = stored(&server, "acme-shop", &admin).await;
    assert_eq!(both["description"], json!("Edited by the first"));
    assert_eq!(both["log_severity"], json!("ERROR"));
    assert_eq!(both["cache"], json!(false));
    assert_eq!(
        both["blocked_ips"],
        json!(["203.0.113.7", "198.51.100.0/24"])
    );
    let rules = both["rate_limiting"].as_array().expect("rules");
    assert_eq!(rules.len(), 1, "{both}");
    assert_eq!(rules[0]["limit"], json!(5));
    assert_eq!(rules[0]["conditions"]["path"], json!("/login"));
    // Nothing else moved.
    for member in [
        "override_cache",
        "trusted_ips",
        "cookie_whitelist",
        "autocapture",
    ] {
        assert_eq!(both[member], original[member], "{member}");
    }

    // On a phone, the edit page fits the screen.
    let Some(phone) = Browser::open(&server.base, Screen::Phone).await else {
        return;
    };
    phone.sign_in(&admin).await;
    phone.visit("/console#/projects/acme-shop/edit").await;
    phone.element("#edit-project").await;
    assert!(!phone.overflows().await, "the edit page scrolls sideways");
    phone.screenshot("phone-project-edit").await;
}

#[tokio::test]
async fn a_refused_value_is_shown_at_its_field_and_changes_nothing() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.visit("/console#/projects/acme-shop/edit").await;
    browser.element("#edit-project").await;
    let (_, before, etag) = stored(&server, "acme-shop", &token).await;

    // A conditions field that is no JSON: said before anything is sent.
    let conditions = ".row-list[data-param=override_cache] li.row:first-child [id$='-conditions']";
    browser.fill(conditions, "{not json").await;
    browser.click("#save-project").await;
    browser
        .sees(
            ".row-list[data-param=override_cache] li.row:first-child .field-error",
            "override_cache[0].conditions must be a JSON object",
        )
        .await;
    assert_eq!(stored(&server, "acme-shop", &token).await.2, etag);
    browser
        .fill(conditions, r#"{"request_methods": ["GET"]}"#)
        .await;

    // Values the API refuses: each at its field, in the API's words.
    browser.fill("#edit-proxy_only_path_regex", "^/api/(").await;
    browser
        .fill("#edit-trusted_ips", "10.0.0.0/8\nnot-an-ip")
        .await;
    browser
        .click(".row-list[data-param=override_cache] li.row:first-child [id$='-regex']")
        .await;
    browser
        .fill(
            ".row-list[data-param=override_cache] li.row:first-child [id$='-path']",
            "/static/(",
        )
        .await;
    browser.click("#save-project").await;
    browser
        .sees(
            "#edit-proxy_only_path_regex-error",
            "proxy_only_path_regex must be a regular expression",
        )
        .await;
    browser
        .sees(
            "#edit-trusted_ips-error",
            "trusted_ips[1] (“not-an-ip”) must be an IP address or a CIDR block",
        )
        .await;
    browser
        .sees(
            ".row-list[data-param=override_cache] li.row:first-child [id$='-path-error']",
            "override_cache[0].path must be a regular expression",
        )
        .await;
    browser
        .sees("#save-problem", "Check the fields marked below.")
        .await;
    let invalid = browser
        .run(
            "return [...document.querySelectorAll('[aria-invalid=true]')].map((e) => e.id)",
            vec![],
        )
        .await;
    assert_eq!(invalid.as_array().unwrap().len(), 3, "{invalid}");
    browser.audit("project-refused").await;
    let (_, after, still) = stored(&server, "acme-shop", &token).await;
    assert_eq!((after, still), (before.clone(), etag));

    // Fixed, it saves, and the marks go.
    browser.fill("#edit-proxy_only_path_regex", "^/api/").await;
    browser
        .fill("#edit-trusted_ips", "10.0.0.0/8\n192.0.2.1")
        .await;
    browser
        .fill(
            ".row-list[data-param=override_cache] li.row:first-child [id$='-path']",
            "^/static/",
        )
        .await;
    browser.click("#save-project").await;
    browser.sees("#notice", "acme-shop was saved").await;
    let (_, saved, _) = stored(&server, "acme-shop", &token).await;
    assert_eq!(saved["proxy_only_path_regex"], json!("^/api/"));
    assert_eq!(saved["trusted_ips"], json!(["10.0.0.0/8", "192.0.2.1"]));
    assert_eq!(saved["override_cache"][0]["path"], json!("^/static/"));
    assert_eq!(saved["override_cache"][0]["regex"], json!(true));
    assert_eq!(
        saved["override_cache"][0]["conditions"]["request_methods"],
        json!(["GET"])
    );
    assert_eq!(saved["blocked_ips"], before["blocked_ips"]);
}

#[tokio::test]
async fn a_project_is_deleted_once_its_slug_is_typed() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.visit("/console#/projects/acme-blog").await;
    browser.sees("h1", "acme-blog").await;
    let (_, _, loaded) = stored(&server, "acme-blog", &token).await;

    // Cancelled: nothing deleted.
    browser.click("#delete-open").await;
    browser
        .sees(
            "#delete-project",
            "with its proxy-settings revisions and its custom domains",
        )
        .await;
    browser.click("#delete-cancel").await;
    browser
        .until("document.getElementById('delete-project').hidden")
        .await;
    assert_eq!(stored(&server, "acme-blog", &token).await.0, 200);

    // The slug mistyped: nothing deleted.
    browser.click("#delete-open").await;
    browser.fill("#delete-slug", "acme-blo").await;
    browser.click("#delete-confirm").await;
    browser
        .sees("#delete-slug-error", "Type acme-blog exactly to delete it")
        .await;
    assert_eq!(stored(&server, "acme-blog", &token).await.0, 200);

    // Changed behind the page: If-Match refuses, the page says what changed.
    let (status, body) = api(
        &server,
        reqwest::Method::POST,
        "/v1/projects/acme-blog",
        &token,
        json!({"description": "Changed elsewhere"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    browser.fill("#delete-slug", "acme-blog").await;
    browser.audit("project-delete").await;
    record_requests(&browser).await;
    browser.click("#delete-confirm").await;
    browser
        .sees(
            "#delete-changed",
            "Nothing was deleted: acme-blog changed since you opened this page.",
        )
        .await;
    browser
        .sees(
            "#delete-changed li[data-member=description]",
            "now “Changed elsewhere”",
        )
        .await;
    assert_eq!(stored(&server, "acme-blog", &token).await.0, 200);

    // Confirmed again, on the version now read: deleted.
    let (_, _, now) = stored(&server, "acme-blog", &token).await;
    browser.fill("#delete-slug", "acme-blog").await;
    browser.click("#delete-confirm").await;
    browser.sees("h1", "Projects").await;
    browser.sees("#notice", "acme-blog was deleted").await;
    assert_eq!(stored(&server, "acme-blog", &token).await.0, 404);
    let deletes: Vec<Value> = sent_requests(&browser)
        .await
        .into_iter()
        .filter(|sent| sent[0] == json!("DELETE"))
        .map(|sent| sent[2].clone())
        .collect();
    assert_eq!(deletes, [json!(loaded), json!(now)], "each with If-Match");
    assert!(
        !server
            .projects(&token)
            .await
            .iter()
            .any(|p| p["slug"] == json!("acme-blog"))
    );
}

#[tokio::test]
async fn a_member_sees_no_edit_or_delete_controls_and_why() {
    let sandbox = Sandbox::new();
    let (server, _) = demo(&sandbox);
    let member = globex_member(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&member).await;
    browser.visit("/console#/projects/globex-shop").await;
    browser
        .sees(".read-only", "Your role in Globex is member")
        .await;
    let controls = browser
        .texts("#edit-project-link, a.edit-group, #delete, #delete-open")
        .await;
    assert!(controls.is_empty(), "{controls:?}");
    // The edit and new pages, opened by address, say why and show no form.
    browser.visit("/console#/projects/globex-shop/edit").await;
    browser
        .sees(".read-only", "changing one needs an editor or an admin")
        .await;
    assert!(browser.texts("#edit-project").await.is_empty());
    browser.visit("/console#/projects/new").await;
    browser
        .sees(
            ".read-only",
            "Your role is member in each of your organizations",
        )
        .await;
    assert!(browser.texts("#create-project").await.is_empty());
}
