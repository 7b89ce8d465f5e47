//! Rollouts in the console (`docs/rollouts.md`): started from a
//! revision's page ("Roll out…"), followed on the rollout's page (each
//! stage's edges with their health, reported through the API as
//! `proxydeck follow` reports), promoted to their end; a second one
//! refused with a link to the first; a member sees no buttons, and why.
//! Each step checks what the API holds.

use super::*;

/// An edge's report (reportEdge) on acme-shop.
async fn report(server: &Server, token: &str, name: &str, revision: u32, canary: bool) {
    let body = json!({"name": name, "revision": revision, "status": "applied", "canary": canary});
    let (status, answer) = api(
        server,
        reqwest::Method::POST,
        "/v1/projects/acme-shop/edges",
        token,
        body,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
}

/// Rollout `number` of acme-shop as the API has it.
async fn rollout(server: &Server, token: &str, number: u64) -> Value {
    let response = server
        .client
        .get(server.url(&format!("/v1/projects/acme-shop/rollouts/{number}")))
        .bearer_auth(token)
        .send()
        .await
        .expect("an answer");
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn a_rollout_is_started_from_a_revision_followed_and_promoted_to_its_end() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    // Two edges run the active revision, 3; the canary goes first.
    report(&server, &token, "edge-eu-1", 3, true).await;
    report(&server, &token, "edge-us-1", 3, false).await;
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.visit("/console#/projects/acme-shop").await;
    browser.sees("#rollouts", "No rollout yet").await;

    // Roll out revision 2: a bake long enough that only a promotion moves it.
    browser
        .visit("/console#/projects/acme-shop/revisions/2")
        .await;
    browser.click(".revision-actions .roll-out-open").await;
    browser.fill("#rollout-stages", "1, 100%").await;
    browser.fill("#rollout-bake", "3600").await;
    browser
        .click("form.roll-out-form button[type=submit]")
        .await;
    browser.sees("h1", "acme-shop: rollout 1").await;
    browser
        .sees("#notice", "Rollout 1 of revision 2 started: stage 1 of 2.")
        .await;
    let started = rollout(&server, &token, 1).await;
    assert_eq!(started["state"], json!("running"), "{started}");
    assert_eq!(
        started["plan"]["stages"],
        json!([{"edges": 1}, {"percent": 100}])
    );
    assert_eq!(started["plan"]["bake_seconds"], json!(3600));

    // Stage 1 of 2, its bake counting down, the canary pending (the other
    // waits for stage 2), then healthy once it reports revision 2.
    browser
        .sees(".rollout-standing", "Stage 1 of 2: bake 59 min")
        .await;
    browser
        .sees(
            ".stage[data-stage='1'] .edge[data-edge='edge-eu-1']",
            "… pending",
        )
        .await;
    browser
        .sees(
            ".stage[data-stage='2'] .edge[data-edge='edge-us-1']",
            "· waiting",
        )
        .await;
    report(&server, &token, "edge-eu-1", 2, true).await;
    browser
        .sees(
            ".stage[data-stage='1'] .edge[data-edge='edge-eu-1']",
            "✓ healthy",
        )
        .await;
    browser
        .sees(".rollout-health", "Healthy: 1 of 1 edges so far (needs 1)")
        .await;
    browser.audit("rollout").await;
    // Every part absent is left out, not written "null".
    assert!(!browser.text("main").await.contains("null"));

    // A second rollout is refused, with a link to this one.
    browser
        .visit("/console#/projects/acme-shop/revisions/1")
        .await;
    browser.click(".revision-actions .roll-out-open").await;
    browser
        .click("form.roll-out-form button[type=submit]")
        .await;
    browser
        .sees(".roll-out-status .error", "Not started.")
        .await;
    browser.click(".roll-out-status a.running-rollout").await;
    browser.sees("h1", "acme-shop: rollout 1").await;

    // Promoted to stage 2, then to its end: revision 2 is active.
    browser.click(".rollout-actions .rollout-promote").await;
    browser.sees(".rollout-standing", "Stage 2 of 2").await;
    assert_eq!(rollout(&server, &token, 1).await["stage"], json!(2));
    browser
        .sees(".rollout-actions .rollout-promote", "Promote: activate now")
        .await;
    browser.click(".rollout-actions .rollout-promote").await;
    browser
        .sees(".rollout-standing", "Succeeded: revision 2 is active.")
        .await;
    assert!(browser.texts(".rollout-actions button").await.is_empty());
    assert_eq!(
        rollout(&server, &token, 1).await["state"],
        json!("succeeded")
    );
    assert_eq!(active_revision(&server, "acme-shop", &token).await, 2);

    // The project's page: the last rollout, linking to its page.
    browser.visit("/console#/projects/acme-shop").await;
    browser
        .sees("#rollouts .rollout h3", "Rollout 1: revision 2, succeeded")
        .await;

    // Another, of revision 1 to every edge at once, rolled back by the
    // service when an edge fails it: the project's page says why and
    // which edge, and lists the first below.
    let (status, body) = api(
        &server,
        reqwest::Method::POST,
        "/v1/projects/acme-shop/rollouts",
        &token,
        json!({"revision": 1}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let failure = json!({"name": "edge-eu-1", "revision": 1, "status": "failed",
                         "error": "no backend answers", "canary": true});
    let (status, answer) = api(
        &server,
        reqwest::Method::POST,
        "/v1/projects/acme-shop/edges",
        &token,
        failure,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    browser.visit("/console#/projects/acme-shop").await;
    browser
        .sees(
            "#rollouts .rollout-standing",
            "Rolled back: every edge is back on revision 2.",
        )
        .await;
    let ended = rollout(&server, &token, 2).await;
    assert_eq!(ended["state"], json!("rolled_back"), "{ended}");
    browser
        .sees(
            "#rollouts .rollback-reason",
            ended["reason"].as_str().expect("a reason"),
        )
        .await;
    browser
        .sees(
            "#rollouts .failed-edges .edge[data-edge='edge-eu-1']",
            "edge-eu-1 on revision 1: failed: no backend answers",
        )
        .await;
    browser
        .sees("#rollouts .past-rollouts li[data-rollout='1']", "succeeded")
        .await;
    browser.audit("rollout-rolled-back").await;
}

#[tokio::test]
async fn a_member_follows_a_rollout_without_buttons_and_an_abort_rolls_back() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let member = globex_member(&sandbox);
    // globex-api: the demo user is its editor, the member reads it.
    let (status, started) = api(
        &server,
        reqwest::Method::POST,
        "/v1/projects/globex-api/rollouts",
        &token,
        json!({"revision": 1, "bake_seconds": 3600}),
    )
    .await;
    assert_eq!(status, 201, "{started}");
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&member).await;
    browser
        .visit("/console#/projects/globex-api/rollouts/1")
        .await;
    browser.sees(".rollout-standing", "Stage 1 of 1").await;
    browser
        .sees(".rollout", "Your role in Globex is member")
        .await;
    assert!(browser.texts(".rollout-actions button").await.is_empty());
    // No "Roll out…" on a revision's page either.
    browser
        .visit("/console#/projects/globex-api/revisions/1")
        .await;
    browser.sees("h1", "globex-api: revision 1").await;
    assert!(browser.texts(".roll-out-open").await.is_empty());

    // The editor aborts, after the confirmation: every edge back.
    browser.click("#sign-out").await;
    browser.sign_in(&token).await;
    browser
        .visit("/console#/projects/globex-api/rollouts/1")
        .await;
    browser.click(".rollout-actions .rollout-abort").await;
    browser.sees("#confirm-title", "Abort rollout 1?").await;
    browser.click("#confirm-ok").await;
    browser
        .sees(
            ".rollout-standing",
            "Aborted: every edge is back on revision",
        )
        .await;
    let response = server
        .client
        .get(server.url("/v1/projects/globex-api/rollouts/1"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("an answer");
    let (_, ended) = json_of(response).await;
    assert_eq!(ended["state"], json!("aborted"), "{ended}");
}
