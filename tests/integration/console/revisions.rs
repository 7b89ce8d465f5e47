//! Revisions in the console: compared side by side by the rule the
//! terminal client follows, and activated by editors only.

use super::*;

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
                 import('/console/revision-diff.js').then((rule) => done(rule.revisionDiff(from, to)));",
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
