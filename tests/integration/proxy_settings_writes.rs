//! The management API's proxy-settings operations:
//! createProjectProxySettings and updateProjectProxySettings (revision
//! numbers, the one active revision, roll back, If-Match, Idempotency-Key,
//! roles, limits, the audit).

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

pub(super) const P: &str = "p1";

/// Project p1 in organization 1 (u1 admin, u2 member), p3 in 3 (u3 only).
pub(super) async fn fixture() -> (TestApp, String) {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        org(1),
        org(3),
        user("u1", &[1]),
        user("u2", &[1]),
        user("u3", &[3]),
        project(P, 1, 0),
        project("p3", 3, 0),
    ])
    .await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let token = app.token("u1").await;
    (app, token)
}

fn revision(description: &str) -> Value {
    json!({"description": description,
           "backends": [{"name": "origin", "address": "origin.example:443", "default": true},
                        {"name": "static", "address": "static.example:443"}],
           "routes": [{"path": "/assets", "backend_name": "static", "rank": "2"},
                      {"path": "/", "backend_name": "origin", "rank": 1}]})
}

/// createProjectProxySettings on `project`, with `query` (`""`, or from
/// `?`).
pub(super) async fn create(
    app: &TestApp,
    token: &str,
    project: &str,
    query: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Value, Option<String>) {
    let path = format!("/v1/projects/{project}/proxy-settings{query}");
    send(app, Method::POST, &path, token, headers, Some(body)).await
}

/// updateProjectProxySettings on p1's `revision`, with `query`.
pub(super) async fn update(
    app: &TestApp,
    token: &str,
    revision: &str,
    query: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, Value, Option<String>) {
    let path = format!("/v1/projects/{P}/proxy-settings/{revision}{query}");
    send(app, Method::POST, &path, token, headers, Some(&body)).await
}

/// The listing right now, oldest first: (revision, is_active) of each.
pub(super) async fn revisions(app: &TestApp, token: &str) -> Vec<(u64, bool)> {
    let (status, listing) = app
        .get_json(
            &format!("/v1/projects/{P}/proxy-settings?order_direction=ASC"),
            token,
        )
        .await;
    assert_eq!(status, 200, "{listing}");
    listing["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["revision"].as_u64().unwrap(),
                r["is_active"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn revisions_are_numbered_and_the_first_is_active() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (status, first, tag) = create(&app, &token, P, "", &[], &revision("one")).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(tag.as_deref(), Some("\"v1\""));
    assert_eq!(first["object"], "proxy_settings");
    assert_eq!(
        (first["revision"].as_u64(), first["is_active"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(first["routes"][1]["rank"], "1");
    assert_eq!(first["backends"][1]["default"], false);
    assert!(first.get("project_id").is_none());
    let (_, second, _) = create(&app, &token, P, "", &[], &revision("two")).await;
    assert_eq!(
        (second["revision"].as_u64(), second["is_active"].as_bool()),
        (Some(2), Some(false))
    );
    // Read right after: the listing shows both, as they were answered.
    assert_eq!(revisions(&app, &token).await, [(1, true), (2, false)]);
    let (_, listing) = app
        .get_json(&format!("/v1/projects/{P}/proxy-settings"), &token)
        .await;
    assert_eq!(listing["data"][0], second);
    // After an imported revision 7, the next is 8.
    app.seed(vec![settings(P, 7, false)]).await;
    let (_, eighth, _) = create(&app, &token, P, "", &[], &revision("eight")).await;
    assert_eq!(eighth["revision"], 8);
}

#[tokio::test]
async fn bodies_follow_the_rules_of_a_revision() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let backend = |name: &str| json!({"name": name, "address": "a.example:443"});
    let many_backends: Vec<Value> = (0..101).map(|i| backend(&format!("b{i}"))).collect();
    let many_routes: Vec<Value> = (0..1001)
        .map(|i| json!({"path": format!("/{i}"), "backend_name": "a", "rank": i}))
        .collect();
    for (body, param) in [
        (json!({"backends": [backend("a")]}), "description"),
        (json!({"description": "d"}), "backends"),
        (json!({"description": "d", "backends": []}), "backends"),
        (
            json!({"description": "d", "backends": [backend("a"), backend("a")]}),
            "backends[1].name",
        ),
        (
            json!({"description": "d", "backends": [backend("a")],
                   "routes": [{"path": "/", "backend_name": "b"}]}),
            "routes[0].backend_name",
        ),
        (
            json!({"description": "d", "backends": [
                {"name": "a", "address": "x", "default": true},
                {"name": "b", "address": "y", "default": true}]}),
            "backends[1].default",
        ),
        (
            json!({"description": "d", "backends": [backend("a")],
                   "routes": [{"path": "/", "backend_name": "a", "rank": "1.5"}]}),
            "routes[0].rank",
        ),
        (
            json!({"description": "d", "backends": [{"name": "a"}]}),
            "backends[0].address",
        ),
        (
            json!({"description": "d", "backends": many_backends}),
            "backends",
        ),
        (
            json!({"description": "d", "backends": [backend("a")], "routes": many_routes}),
            "routes",
        ),
        (
            json!({"description": "d", "backends": [backend("a")], "revision": 3}),
            "revision",
        ),
        (
            json!({"description": "d", "backends": [backend("a")], "is_active": true}),
            "is_active",
        ),
    ] {
        let (status, error, _) = create(&app, &token, P, "", &[], &body).await;
        assert_eq!(status, 400, "{param}: {error}");
        assert!(
            params(&error).contains(&param.to_owned()),
            "{param}: {error}"
        );
    }
    // Nothing was created; 100 backends and 1,000 routes are fine.
    assert!(revisions(&app, &token).await.is_empty());
    let most_backends: Vec<Value> = (0..100).map(|i| backend(&format!("b{i}"))).collect();
    let most_routes: Vec<Value> = (0..1000)
        .map(|i| json!({"path": format!("/{i}"), "backend_name": "b0", "rank": i}))
        .collect();
    let body = json!({"description": "big", "backends": most_backends, "routes": most_routes});
    assert_eq!(create(&app, &token, P, "", &[], &body).await.0, 200);
}

#[tokio::test]
async fn roles_and_visibility_decide_who_writes() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let member = app.token("u2").await;
    let (status, error, _) = create(&app, &member, P, "", &[], &revision("m")).await;
    assert_eq!(
        (status, error["error"]["type"].as_str()),
        (403, Some("forbidden_error"))
    );
    assert_eq!(
        create(&app, &token, "p3", "", &[], &revision("x")).await.0,
        404
    );
    assert_eq!(
        create(&app, &token, "nope", "", &[], &revision("x"))
            .await
            .0,
        404
    );
    assert_eq!(
        create(&app, &token, P, "", &[], &revision("one")).await.0,
        200
    );
    assert_eq!(
        update(&app, &member, "1", "", &[], json!({"description": "m"}))
            .await
            .0,
        403
    );
    let stranger = app.token("u3").await;
    assert_eq!(
        update(&app, &stranger, "1", "", &[], json!({"description": "s"}))
            .await
            .0,
        404
    );
    // The member reads.
    assert_eq!(revisions(&app, &member).await, [(1, true)]);
    app.data
        .execute("UPDATE memberships SET role = 'editor' WHERE user_id = 'u2'");
    assert_eq!(
        create(&app, &member, P, "", &[], &revision("e")).await.0,
        200
    );
}

#[tokio::test]
async fn activation_moves_and_rolls_back_in_one_step() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for d in ["one", "two", "three"] {
        create(&app, &token, P, "", &[], &revision(d)).await;
    }
    let (status, third, tag) = update(&app, &token, "3", "", &[], json!({"is_active": true})).await;
    assert_eq!(status, 200, "{third}");
    assert_eq!(third["is_active"], true);
    assert_eq!(tag.as_deref(), Some("\"v2\""));
    assert_eq!(
        revisions(&app, &token).await,
        [(1, false), (2, false), (3, true)]
    );
    // Roll back: activate an older revision.
    let (_, first, _) = update(&app, &token, "1", "", &[], json!({"is_active": true})).await;
    assert_eq!(first["is_active"], true);
    assert_eq!(
        revisions(&app, &token).await,
        [(1, true), (2, false), (3, false)]
    );
    // Only the description changes; backends and routes stay.
    let (_, described, _) = update(
        &app,
        &token,
        "2",
        "",
        &[],
        json!({"description": "renamed"}),
    )
    .await;
    assert_eq!(described["description"], "renamed");
    assert_eq!(
        described["backends"],
        revision("two")["backends"]
            .clone()
            .as_array()
            .map(|b| {
                b.iter()
                    .map(|b| {
                        let mut b = b.clone();
                        b.as_object_mut()
                            .unwrap()
                            .entry("enable_ssl")
                            .or_insert(json!(false));
                        b.as_object_mut()
                            .unwrap()
                            .entry("default")
                            .or_insert(json!(false));
                        b
                    })
                    .collect::<Vec<_>>()
            })
            .map(Value::from)
            .unwrap()
    );
    assert_eq!(described["is_active"], false);
    // Deactivating the active one leaves none.
    let (_, off, _) = update(&app, &token, "1", "", &[], json!({"is_active": false})).await;
    assert_eq!(off["is_active"], false);
    assert_eq!(
        revisions(&app, &token).await,
        [(1, false), (2, false), (3, false)]
    );
    // Members other than these two: 400.
    for body in [
        json!({"backends": []}),
        json!({"revision": 2}),
        json!({"is_active": "yes"}),
    ] {
        assert_eq!(
            update(&app, &token, "2", "", &[], body.clone()).await.0,
            400,
            "{body}"
        );
    }
}

#[tokio::test]
async fn revisions_in_paths_are_digits_and_if_match_guards_updates() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    create(&app, &token, P, "", &[], &revision("one")).await;
    for bad in ["x", "-1", "1.0", "%201"] {
        let (status, error, _) = update(&app, &token, bad, "", &[], json!({})).await;
        assert_eq!(status, 400, "{bad}: {error}");
        assert_eq!(params(&error), ["revision"], "{bad}");
    }
    for unknown in ["0", "2", "99999999999999999999"] {
        assert_eq!(
            update(&app, &token, unknown, "", &[], json!({})).await.0,
            404,
            "{unknown}"
        );
    }
    let (status, error, _) = update(
        &app,
        &token,
        "1",
        "",
        &[("if-match", "\"v9\"")],
        json!({"description": "x"}),
    )
    .await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (412, Some("precondition_failed"))
    );
    let (_, listing) = app
        .get_json(&format!("/v1/projects/{P}/proxy-settings"), &token)
        .await;
    assert_eq!(listing["data"][0]["description"], "one");
    let (status, _, tag) = update(
        &app,
        &token,
        "1",
        "",
        &[("if-match", "\"v1\"")],
        json!({"description": "x"}),
    )
    .await;
    assert_eq!((status, tag.as_deref()), (200, Some("\"v2\"")));
    assert_eq!(
        update(&app, &token, "1", "", &[("if-match", "\"v1\"")], json!({}))
            .await
            .0,
        412
    );
    // An import that changes the revision moves its version; one that
    // changes nothing does not.
    app.seed(vec![settings(P, 1, true)]).await;
    app.seed(vec![settings(P, 1, true)]).await;
    let (status, _, _) = update(&app, &token, "1", "", &[("if-match", "\"v2\"")], json!({})).await;
    assert_eq!(status, 412);
    let (status, _, tag) =
        update(&app, &token, "1", "", &[("if-match", "\"v3\"")], json!({})).await;
    assert_eq!((status, tag.as_deref()), (200, Some("\"v4\"")));
}

#[tokio::test]
async fn idempotency_keys_replay_a_created_revision() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let key = [("idempotency-key", "rev-1")];
    let (status, first, _) = create(&app, &token, P, "", &key, &revision("one")).await;
    assert_eq!(status, 200);
    let (status, again, tag) = create(&app, &token, P, "", &key, &revision("one")).await;
    assert_eq!(
        (status, &again, tag.as_deref()),
        (200, &first, Some("\"v1\""))
    );
    assert_eq!(revisions(&app, &token).await, [(1, true)]);
    let (status, error, _) = create(&app, &token, P, "", &key, &revision("other")).await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (409, Some("idempotency_key_reused"))
    );
    // Concurrent requests with one key create once.
    let key = [("idempotency-key", "rev-2")];
    let body = revision("two");
    let answers =
        futures_util::future::join_all((0..4).map(|_| create(&app, &token, P, "", &key, &body)))
            .await;
    assert!(
        answers
            .iter()
            .all(|(s, b, _)| *s == 200 && *b == answers[0].1),
        "{answers:?}"
    );
    assert_eq!(revisions(&app, &token).await, [(1, true), (2, false)]);
}

#[tokio::test]
async fn racing_activations_leave_exactly_one_active_revision() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for d in ["a", "b", "c", "d", "e", "f"] {
        create(&app, &token, P, "", &[], &revision(d)).await;
    }
    for round in 0..3 {
        let racers = ["2", "3", "4", "5", "6"].map(|r| r.to_owned());
        let answers = futures_util::future::join_all(
            racers
                .iter()
                .map(|r| update(&app, &token, r, "", &[], json!({"is_active": true}))),
        )
        .await;
        assert!(
            answers.iter().all(|(s, _, _)| *s == 200),
            "round {round}: {answers:?}"
        );
        let active: Vec<u64> = revisions(&app, &token)
            .await
            .into_iter()
            .filter(|(_, a)| *a)
            .map(|(r, _)| r)
            .collect();
        assert_eq!(active.len(), 1, "round {round}: {active:?}");
        // Put revision 1 back for the next round.
        update(&app, &token, "1", "", &[], json!({"is_active": true})).await;
    }
}

#[tokio::test]
async fn proxy_settings_writes_are_audited() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    create(&app, &token, P, "", &[], &revision("one")).await;
    create(&app, &token, P, "", &[], &revision("two")).await;
    update(&app, &token, "2", "", &[], json!({"is_active": true})).await;
    let records = audit_of(&app, None).await;
    let seen: Vec<(&str, &str, Option<i64>, Option<i64>)> = records
        .iter()
        .map(|r| {
            (
                r.operation.as_str(),
                r.object_id.as_str(),
                r.version_before,
                r.version_after,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("updateProjectProxySettings", "p1/2", Some(1), Some(2)),
            ("updateProjectProxySettings", "p1/1", Some(1), Some(2)),
            ("createProjectProxySettings", "p1/2", None, Some(1)),
            ("createProjectProxySettings", "p1/1", None, Some(1)),
        ]
    );
    assert!(
        records
            .iter()
            .all(|r| r.object == "proxy_settings" && r.user_id == "u1")
    );
}

/// [`revision`] as the generated client's types hold it (ranks are
/// strings there).
fn client_revision(description: &str) -> Value {
    let mut body = revision(description);
    body["routes"][1]["rank"] = json!("1");
    body
}

#[tokio::test]
async fn the_generated_client_creates_and_updates_revisions() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let client = generated_client(&app, &token);
    let body: edgee_api_client::types::ProxySettingsCreateInput =
        serde_json::from_value(client_revision("generated")).unwrap();
    let created = client
        .create_project_proxy_settings()
        .id(P.to_owned())
        .body(body)
        .send()
        .await
        .expect("createProjectProxySettings")
        .into_inner();
    assert_eq!(created.revision, Some(1.0));
    assert_eq!(created.is_active, Some(true));
    let second: edgee_api_client::types::ProxySettingsCreateInput =
        serde_json::from_value(client_revision("second")).unwrap();
    client
        .create_project_proxy_settings()
        .id(P.to_owned())
        .body(second)
        .send()
        .await
        .expect("createProjectProxySettings");
    let updated = client
        .update_project_proxy_settings()
        .id(P.to_owned())
        .revision("2".to_owned())
        .body_map(|b| b.is_active(true).description("live".to_owned()))
        .send()
        .await
        .expect("updateProjectProxySettings")
        .into_inner();
    assert_eq!(updated.is_active, Some(true));
    assert_eq!(updated.description.as_deref(), Some("live"));
    assert_eq!(revisions(&app, &token).await, [(1, false), (2, true)]);
}

/// `admin audit --object PROJECT` lists the project's writes and its
/// revisions', and not those of a project whose id merely starts alike.
#[tokio::test]
async fn a_projects_audit_holds_its_revisions_writes() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    app.seed(vec![project("p10", 1, 0)]).await;
    assert_eq!(
        create(&app, &token, P, "", &[], &revision("one")).await.0,
        200
    );
    assert_eq!(
        create(&app, &token, "p10", "", &[], &revision("ten"))
            .await
            .0,
        200
    );
    let description = json!({"description": "audited"});
    for project in [P, "p10"] {
        let path = format!("/v1/projects/{project}");
        let (status, _, _) = send(&app, Method::POST, &path, &token, &[], Some(&description)).await;
        assert_eq!(status, 200);
    }
    let objects = |records: Vec<proxydeck::store::operator::audit::AuditRecord>| {
        records
            .into_iter()
            .map(|record| record.object_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(objects(audit_of(&app, Some(P)).await), ["p1", "p1/1"]);
    assert_eq!(objects(audit_of(&app, Some("p1/1")).await), ["p1/1"]);
    assert_eq!(objects(audit_of(&app, Some("p10")).await), ["p10", "p10/1"]);
}
