//! Safe rollouts (docs/rollouts.md, issue 49): a revision reaches the
//! first stage's edges, goes on when they report healthy after the bake
//! time, and activates at its end; a failure sends every edge back to the
//! previous revision at once and says why; one rollout at a time; a
//! person pauses, resumes, promotes and aborts; instances side by side
//! never take a step twice, and a restart loses none.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

/// Project p1 (organization 1, user u1 its admin) with revisions 1 to 4,
/// 4 active, and 5 not; p3 of organization 3 (u3). Answers the service
/// and the tokens of u1 and u3.
async fn fixture() -> (TestApp, String, String) {
    let (app, u1, u3) = two_organizations(BACKEND).await;
    let revisions: Vec<Value> = (1..=5).map(|r| settings("p1", r, r == 4)).collect();
    app.seed(revisions).await;
    (app, u1, u3)
}

async fn report(app: &TestApp, token: &str, body: Value) {
    let (status, answer, _) = send(
        app,
        Method::POST,
        "/v1/projects/p1/edges",
        token,
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
}

/// Each edge reports `revision` applied (and healthy as said).
async fn edges_run(app: &TestApp, token: &str, edges: &[&str], revision: u32, healthy: bool) {
    for name in edges {
        let mut body = json!({"name": name, "revision": revision, "status": "applied",
                              "healthy": healthy, "canary": name.starts_with("canary")});
        if !healthy {
            body["error"] = json!("check exited with status 22: curl: (22) 502 Bad Gateway");
        }
        report(app, token, body).await;
    }
}

async fn start(app: &TestApp, token: &str, plan: Value) -> (u16, Value) {
    let (status, answer, _) = send(
        app,
        Method::POST,
        "/v1/projects/p1/rollouts",
        token,
        &[],
        Some(&plan),
    )
    .await;
    (status, answer)
}

async fn target(app: &TestApp, token: &str, edge: &str) -> Value {
    let (status, answer) = app
        .get_json(&format!("/v1/projects/p1/edges/{edge}/target"), token)
        .await;
    assert_eq!(status, 200, "{answer}");
    answer
}

async fn rollout(app: &TestApp, token: &str, number: u64) -> Value {
    let (status, answer) = app
        .get_json(&format!("/v1/projects/p1/rollouts/{number}"), token)
        .await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// The rollout once `done` holds of it (the service steps it once a
/// second): fails after 20 s, showing where it stood.
async fn rollout_when(
    app: &TestApp,
    token: &str,
    number: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = rollout(app, token, number).await;
        if done(&now) {
            return now;
        }
        assert!(tokio::time::Instant::now() < deadline, "still: {now:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn active_revision(app: &TestApp, token: &str) -> u64 {
    let (status, page) = app
        .get_json("/v1/projects/p1/proxy-settings?limit=100", token)
        .await;
    assert_eq!(status, 200, "{page}");
    let active: Vec<u64> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["is_active"] == true)
        .map(|r| r["revision"].as_u64().unwrap())
        .collect();
    assert_eq!(active.len(), 1, "{page}");
    active[0]
}

fn stage_edges(rollout: &Value, stage: usize) -> Vec<String> {
    rollout["stages"][stage]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The kinds of the feed's changes after `cursor`, for p1.
async fn changes_after(app: &TestApp, token: &str, cursor: &str) -> Vec<String> {
    let body = poll(
        app,
        token,
        &format!("?project_id=p1&after={cursor}&limit=1000"),
    )
    .await;
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_reaches_its_canary_first_goes_on_when_healthy_and_activates_at_its_end() {
    require!(BACKEND);
    let (app, u1, _) = fixture().await;
    let edges = ["canary-a", "edge-1", "edge-2", "edge-3"];
    edges_run(&app, &u1, &edges, 4, true).await;
    let cursor = head(&app, &u1).await;
    let plan =
        json!({"revision": 5, "stages": [{"edges": 1}, {"percent": 100}], "bake_seconds": 1});
    let (status, begun) = start(&app, &u1, plan).await;
    assert_eq!(status, 201, "{begun}");
    assert_eq!(begun["object"], "rollout");
    assert_eq!(
        (begun["number"].as_u64(), begun["state"].as_str()),
        (Some(1), Some("running"))
    );
    assert_eq!(
        (
            begun["revision"].as_u64(),
            begun["previous_revision"].as_u64()
        ),
        (Some(5), Some(4))
    );
    assert_eq!(begun["stage"], 1);
    // The canary goes first, the rest wait on the previous revision.
    assert_eq!(stage_edges(&begun, 0), ["canary-a"]);
    assert_eq!(stage_edges(&begun, 1).len(), 3);
    assert_eq!(begun["stages"][1]["edges"][0]["health"], "waiting");
    let canary = target(&app, &u1, "canary-a").await;
    assert_eq!(
        (
            canary["revision"].as_u64(),
            canary["rollout"].as_u64(),
            canary["stage"].as_u64()
        ),
        (Some(5), Some(1), Some(1))
    );
    assert_eq!(canary["proxy_settings"]["revision"], 5);
    assert_eq!(target(&app, &u1, "edge-1").await["revision"], 4);
    // An edge never seen before takes a stage by the order: here the last.
    assert_eq!(target(&app, &u1, "newcomer").await["revision"], 4);
    // Nothing is active but 4 until the end.
    assert_eq!(active_revision(&app, &u1).await, 4);
    // The canary healthy on 5: past the bake, the next stage.
    edges_run(&app, &u1, &["canary-a"], 5, true).await;
    let second = rollout_when(&app, &u1, 1, |r| r["stage"] == 2).await;
    assert_eq!(second["stages"][0]["state"], "passed");
    assert_eq!(second["stages"][1]["state"], "current");
    assert_eq!(target(&app, &u1, "edge-1").await["revision"], 5);
    assert_eq!(active_revision(&app, &u1).await, 4, "not before its end");
    // Every edge healthy on 5: succeeded, 5 is the active revision.
    edges_run(&app, &u1, &edges[1..], 5, true).await;
    let done = rollout_when(&app, &u1, 1, |r| r["state"] != "running").await;
    assert_eq!(done["state"], "succeeded", "{done:#}");
    assert!(
        done["ended_at"].is_string() && done["bake_ends_at"].is_null(),
        "{done}"
    );
    assert_eq!(active_revision(&app, &u1).await, 5);
    let after = target(&app, &u1, "edge-3").await;
    assert_eq!(
        (after["revision"].as_u64(), after["rollout"].as_u64()),
        (Some(5), None)
    );
    // The feed told each step, the activation's own changes included.
    assert_eq!(
        changes_after(&app, &u1, &cursor).await,
        [
            "rollout.created",
            "rollout.updated",
            "proxy_settings.deactivated",
            "proxy_settings.activated",
            "rollout.updated"
        ]
    );
    // The audit: started by u1, stepped by the service.
    let audit = audit_of(&app, Some("p1/rollouts/1")).await;
    let steps: Vec<(&str, &str)> = audit
        .iter()
        .rev()
        .map(|r| (r.operation.as_str(), r.user_id.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("createRollout", "u1"),
            ("advanceRollout", ""),
            ("completeRollout", "")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unhealthy_edge_sends_every_edge_back_at_once_and_the_rollout_says_why() {
    require!(BACKEND);
    let (app, u1, _) = fixture().await;
    let edges = ["canary-a", "canary-b", "edge-1", "edge-2"];
    edges_run(&app, &u1, &edges, 4, true).await;
    // A long bake: the rollback must not wait for it.
    let plan =
        json!({"revision": 5, "stages": [{"edges": 2}, {"percent": 100}], "bake_seconds": 3600});
    let (status, begun) = start(&app, &u1, plan).await;
    assert_eq!(status, 201, "{begun}");
    assert_eq!(stage_edges(&begun, 0), ["canary-a", "canary-b"]);
    edges_run(&app, &u1, &["canary-a"], 5, true).await;
    edges_run(&app, &u1, &["canary-b"], 5, false).await;
    let ended = rollout_when(&app, &u1, 1, |r| r["state"] != "running").await;
    assert_eq!(ended["state"], "rolled_back", "{ended:#}");
    let reason = ended["reason"].as_str().unwrap();
    assert!(
        reason.contains("canary-b") && reason.contains("stage 1"),
        "{reason}"
    );
    let failed = ended["failed_edges"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{ended}");
    assert_eq!(
        (failed[0]["name"].as_str(), failed[0]["healthy"].as_bool()),
        (Some("canary-b"), Some(false))
    );
    assert!(
        failed[0]["error"].as_str().unwrap().contains("502"),
        "{ended}"
    );
    assert_eq!(ended["stages"][0]["state"], "stopped");
    assert_eq!(ended["stages"][1]["state"], "skipped");
    for edge in edges {
        assert_eq!(target(&app, &u1, edge).await["revision"], 4, "{edge}");
    }
    assert_eq!(active_revision(&app, &u1).await, 4);
    let audit = audit_of(&app, Some("p1/rollouts/1")).await;
    assert_eq!(audit[0].operation, "rollBackRollout");
    // Its record stays readable, and the list has it.
    let (status, page) = app.get_json("/v1/projects/p1/rollouts", &u1).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["data"][0]["state"], "rolled_back");
    assert!(
        page["data"][0]["stages"][0].get("edges").is_none(),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_rollout_at_a_time_and_a_person_pauses_resumes_promotes_and_aborts() {
    require!(BACKEND);
    let (app, u1, u3) = fixture().await;
    let plan =
        json!({"revision": 5, "stages": [{"percent": 50}, {"percent": 100}], "bake_seconds": 3600});
    assert_eq!(start(&app, &u1, plan.clone()).await.0, 201);
    // A second rollout, and an activation, wait for this one to end.
    let (status, refused) = start(&app, &u1, json!({"revision": 3})).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("rollout_in_progress")),
        "{refused}"
    );
    let (status, refused, _) = send(
        &app,
        Method::POST,
        "/v1/projects/p1/proxy-settings/3",
        &u1,
        &[],
        Some(&json!({"is_active": true})),
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("rollout_in_progress")),
        "{refused}"
    );
    // A description still changes.
    let (status, _, _) = send(
        &app,
        Method::POST,
        "/v1/projects/p1/proxy-settings/3",
        &u1,
        &[],
        Some(&json!({"description": "kept"})),
    )
    .await;
    assert_eq!(status, 200);
    let act = |action: &'static str, headers: Vec<(&'static str, String)>| {
        let (app, u1) = (&app, &u1);
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let path = format!("/v1/projects/p1/rollouts/1/{action}");
            send(app, Method::POST, &path, u1, &headers, None).await
        }
    };
    let (status, paused, tag) = act("pause", vec![]).await;
    assert_eq!(
        (status, paused["state"].as_str()),
        (200, Some("paused")),
        "{paused}"
    );
    assert_eq!(
        act("pause", vec![]).await.1["error"]["code"],
        "rollout_paused"
    );
    // If-Match: a stale tag changes nothing.
    assert_eq!(
        act("resume", vec![("if-match", "\"v1\"".into())]).await.0,
        412
    );
    let (status, resumed, _) = act("resume", vec![("if-match", tag.unwrap())]).await;
    assert_eq!(
        (status, resumed["state"].as_str()),
        (200, Some("running")),
        "{resumed}"
    );
    assert_eq!(
        act("resume", vec![]).await.1["error"]["code"],
        "rollout_not_paused"
    );
    let (_, promoted, _) = act("promote", vec![]).await;
    assert_eq!(
        (promoted["stage"].as_u64(), promoted["state"].as_str()),
        (Some(2), Some("running"))
    );
    let (_, aborted, _) = act("abort", vec![]).await;
    assert_eq!(aborted["state"], "aborted");
    assert!(
        aborted["reason"].as_str().unwrap().contains("revision 4"),
        "{aborted}"
    );
    assert_eq!(
        act("promote", vec![]).await.1["error"]["code"],
        "rollout_ended"
    );
    assert_eq!(active_revision(&app, &u1).await, 4);
    assert_eq!(act("dance", vec![]).await.0, 404);
    // Ended: a new one begins; one of the active revision is refused.
    let (status, refused) = start(&app, &u1, json!({"revision": 4})).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("already_active"))
    );
    let (status, second) = start(&app, &u1, json!({"revision": 5, "bake_seconds": 0})).await;
    assert_eq!(
        (status, second["number"].as_u64()),
        (201, Some(2)),
        "{second}"
    );
    // With no edge, a stage without bake time passes at once.
    rollout_when(&app, &u1, 2, |r| r["state"] == "succeeded").await;
    assert_eq!(active_revision(&app, &u1).await, 5);
    // Without an active revision, nothing to go back to.
    let (status, _, _) = send(
        &app,
        Method::POST,
        "/v1/projects/p1/proxy-settings/5",
        &u1,
        &[],
        Some(&json!({"is_active": false})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, refused) = start(&app, &u1, json!({"revision": 3})).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("no_active_revision")),
        "{refused}"
    );
    // Bad plans are named member by member.
    let (status, bad) = start(&app, &u1, json!({"revision": 3, "stages": [{"edges": 0}, {"percent": 5, "edges": 1}], "max_failures": -1})).await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(
        params(&bad),
        ["max_failures", "stages[0].edges", "stages[1]"],
        "{bad}"
    );
    assert_eq!(start(&app, &u1, json!({"revision": 99})).await.0, 404);
    // Another organization's user sees nothing, and starts nothing.
    assert_eq!(app.get_json("/v1/projects/p1/rollouts/1", &u3).await.0, 404);
    assert_eq!(
        app.get_json("/v1/projects/p1/edges/e/target", &u3).await.0,
        404
    );
    assert_eq!(start(&app, &u3, json!({"revision": 3})).await.0, 404);
    // A member reads, and may not start.
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u1'");
    assert_eq!(app.get_json("/v1/projects/p1/rollouts/2", &u1).await.0, 200);
    assert_eq!(start(&app, &u1, json!({"revision": 3})).await.0, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_and_a_restart_take_each_step_once() {
    require!(BACKEND);
    let (first, u1, _) = fixture().await;
    let second = first.another_instance().await;
    let cursor = head(&first, &u1).await;
    // No edge: each stage passes by its bake time alone, on whichever
    // instance looks first.
    let plan = json!({"revision": 5, "stages": [{"percent": 10}, {"percent": 50}, {"percent": 100}], "bake_seconds": 1});
    assert_eq!(start(&first, &u1, plan).await.0, 201);
    rollout_when(&second, &u1, 1, |r| r["stage"] == 2).await;
    // The instance that began it stops; another comes up on the same data.
    let restarted = first.restart().await;
    let done = rollout_when(&restarted, &u1, 1, |r| r["state"] == "succeeded").await;
    assert_eq!(done["stage"], 3, "{done}");
    let kinds = changes_after(&second, &u1, &cursor).await;
    assert_eq!(
        kinds,
        [
            "rollout.created",
            "rollout.updated",
            "rollout.updated",
            "proxy_settings.deactivated",
            "proxy_settings.activated",
            "rollout.updated"
        ],
        "each step once"
    );
    let audit = audit_of(&second, Some("p1/rollouts/1")).await;
    let operations: Vec<&str> = audit.iter().rev().map(|r| r.operation.as_str()).collect();
    assert_eq!(
        operations,
        [
            "createRollout",
            "advanceRollout",
            "advanceRollout",
            "completeRollout"
        ]
    );
}
