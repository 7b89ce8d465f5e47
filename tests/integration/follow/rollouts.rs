//! `proxydeck follow` in a rollout (docs/rollouts.md): `--check` reports
//! the edge's health with the revision it applied, an edge writes its
//! target (a `--canary` the rollout's revision at the first stage, the
//! others the previous one until their stage is reached), and a canary's
//! failing check rolls the rollout back and its files with it. Each on
//! both stores: the service drives rollouts through its store.

use std::path::Path;

use reqwest::Method;
use serde_json::{Value, json};

use super::{Following, active_revision, saved_cursor};
use crate::helpers::*;

/// Fails when the revision written is the one described `bad`.
const CHECK: &str = r#"! grep -q '"description": "bad"' p1/proxy-settings.json"#;

/// `follow --project p1` as the edge `name`, in `work/name`, with `extra`
/// flags; `--exec` appends each revision it finds written to
/// `work/name.runs`.
fn edge(app: &TestApp, token: &str, work: &Path, name: &str, extra: &[&str]) -> Following {
    let dir = work.join(name).display().to_string();
    let exec = format!(r#"grep -o '"revision": [0-9]*' p1/proxy-settings.json >> ../{name}.runs"#);
    let args = [
        &[
            "--project",
            "p1",
            "--name",
            name,
            "--dir",
            &dir,
            "--exec",
            &exec,
        ][..],
        extra,
    ]
    .concat();
    Following::on(app, token, work, &args)
}

/// The revisions `edge`'s `--exec` found written, in order.
fn written(work: &Path, edge: &str) -> Vec<u64> {
    let runs = std::fs::read_to_string(work.join(format!("{edge}.runs"))).unwrap_or_default();
    runs.lines()
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect()
}

/// `edge`'s last report on p1, if it made one.
async fn report(app: &TestApp, token: &str, edge: &str) -> Option<Value> {
    let (_, page) = app.get_json("/v1/projects/p1/edges", token).await;
    let edges = page["data"].as_array()?;
    edges.iter().find(|e| e["name"] == edge).cloned()
}

/// POSTs `body` to `path`: the answer, which must be `expected`.
async fn post(app: &TestApp, token: &str, path: &str, body: Value, expected: u16) -> Value {
    let (status, answer, _) = send(app, Method::POST, path, token, &[], Some(&body)).await;
    assert_eq!(status, expected, "{path}: {answer}");
    answer
}

/// A rollout of `revision` of p1 through `stages`: its number.
async fn start_rollout(app: &TestApp, token: &str, revision: u32, bake_seconds: u32) -> u64 {
    let plan = json!({"revision": revision, "stages": [{"edges": 1}, {"percent": 100}],
                      "bake_seconds": bake_seconds});
    let rollout = post(app, token, "/v1/projects/p1/rollouts", plan, 201).await;
    rollout["number"].as_u64().expect("a rollout number")
}

async fn rollout(app: &TestApp, token: &str, number: u64) -> Value {
    let (status, rollout) = app
        .get_json(&format!("/v1/projects/p1/rollouts/{number}"), token)
        .await;
    assert_eq!(status, 200, "{rollout}");
    rollout
}

/// p1 with revision 1 active and revision 2 described `second`.
async fn project_with_two_revisions(backend: Backend, second: &str) -> (TestApp, String) {
    let (app, token, _) = two_organizations(backend).await;
    app.seed(vec![settings("p1", 1, true)]).await;
    create_revision(&app, &token, "p1", second).await;
    (app, token)
}

async fn check_reports_the_health_of_the_revision_applied(backend: Backend) {
    let (app, token) = project_with_two_revisions(backend, "bad").await;
    let work = tempfile::tempdir().unwrap();
    let _edge = edge(&app, &token, work.path(), "edge-1", &["--check", CHECK]);
    eventually("revision 1 is reported healthy", || async {
        report(&app, &token, "edge-1")
            .await
            .is_some_and(|r| r["revision"] == 1 && r["status"] == "applied" && r["healthy"] == true)
    })
    .await;

    // The bad revision, activated: applied, but unhealthy, and why. The
    // edge reads its target, one read, not the revisions.
    let targets = r#"proxydeck_http_requests_total{route="/v1/projects/{id}/edges/{name}/target",method="GET",status="200"}"#;
    let listings = r#"proxydeck_http_requests_total{route="/v1/projects/{id}/proxy-settings",method="GET",status="200"}"#;
    let before = (metric(targets), metric(listings));
    activate(&app, &token, "p1", 2).await;
    eventually("revision 2 is reported unhealthy", || async {
        report(&app, &token, "edge-1")
            .await
            .is_some_and(|r| r["revision"] == 2 && r["healthy"] == false)
    })
    .await;
    let unhealthy = report(&app, &token, "edge-1").await.unwrap();
    assert_eq!(unhealthy["status"], "applied", "{unhealthy}");
    let error = unhealthy["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("--check exited with status 1"),
        "{unhealthy}"
    );
    assert_eq!(written(work.path(), "edge-1"), [1, 2]);
    let reads = (metric(targets) - before.0, metric(listings) - before.1);
    assert_eq!(reads, (1.0, 0.0), "target reads, listing reads");

    // With --once, a failed check is exit status 4: the files are
    // written, the cursor saved, the edge reported unhealthy.
    let dir = work.path().join("once");
    let dir_arg = dir.display().to_string();
    let once = Following::on(
        &app,
        &token,
        work.path(),
        &[
            "--project",
            "p1",
            "--name",
            "edge-2",
            "--dir",
            &dir_arg,
            "--once",
            "--check",
            CHECK,
        ],
    );
    let log = once.log.clone();
    let (status, _) = once.finish();
    let log = std::fs::read_to_string(log).unwrap();
    assert_eq!(status.code(), Some(4), "{log}");
    assert!(log.contains("--check exited with status 1"), "{log}");
    assert_eq!(active_revision(&dir, "p1"), Some(2));
    assert!(saved_cursor(&dir).is_some());
    let unhealthy = report(&app, &token, "edge-2").await.unwrap();
    assert_eq!(unhealthy["healthy"], false, "{unhealthy}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_check_reports_the_health_of_the_revision_applied_on_sqlite() {
    check_reports_the_health_of_the_revision_applied(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_check_reports_the_health_of_the_revision_applied_on_postgres() {
    require!(Backend::Postgres);
    check_reports_the_health_of_the_revision_applied(Backend::Postgres).await;
}

async fn a_canary_runs_the_rollouts_revision_first(backend: Backend) {
    let (app, token) = project_with_two_revisions(backend, "good").await;
    let work = tempfile::tempdir().unwrap();
    let _canary = edge(&app, &token, work.path(), "edge-a", &["--canary"]);
    let _other = edge(&app, &token, work.path(), "edge-b", &[]);
    for name in ["edge-a", "edge-b"] {
        eventually("each edge reports revision 1", || async {
            report(&app, &token, name)
                .await
                .is_some_and(|r| r["revision"] == 1)
        })
        .await;
    }
    let canary_report = report(&app, &token, "edge-a").await.unwrap();
    assert_eq!(canary_report["canary"], true, "{canary_report}");

    // A bake of a day: the first stage goes on only when promoted.
    let number = start_rollout(&app, &token, 2, 86_400).await;
    let started = head(&app, &token).await;
    let canary_dir = work.path().join("edge-a");
    let other_dir = work.path().join("edge-b");
    until("the canary writes revision 2", || {
        active_revision(&canary_dir, "p1") == Some(2)
    })
    .await;
    until("the other edge has read the rollout's change", || {
        saved_cursor(&other_dir) == Some(started.clone())
    })
    .await;
    assert_eq!(active_revision(&other_dir, "p1"), Some(1));
    assert_eq!(written(work.path(), "edge-b"), [1]);
    eventually("the canary reports revision 2", || async {
        report(&app, &token, "edge-a")
            .await
            .is_some_and(|r| r["revision"] == 2)
    })
    .await;

    // Promoted: the second stage reaches every edge.
    let promote = format!("/v1/projects/p1/rollouts/{number}/promote");
    post(&app, &token, &promote, json!({}), 200).await;
    until("the other edge writes revision 2 and runs --exec", || {
        active_revision(&other_dir, "p1") == Some(2) && written(work.path(), "edge-b") == [1, 2]
    })
    .await;
    assert_eq!(written(work.path(), "edge-a"), [1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_a_canary_runs_the_rollouts_revision_first_on_sqlite() {
    a_canary_runs_the_rollouts_revision_first(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_a_canary_runs_the_rollouts_revision_first_on_postgres() {
    require!(Backend::Postgres);
    a_canary_runs_the_rollouts_revision_first(Backend::Postgres).await;
}

async fn a_failing_check_rolls_back(backend: Backend) {
    let (app, token) = project_with_two_revisions(backend, "bad").await;
    let work = tempfile::tempdir().unwrap();
    let _canary = edge(
        &app,
        &token,
        work.path(),
        "edge-a",
        &["--canary", "--check", CHECK],
    );
    let _other = edge(&app, &token, work.path(), "edge-b", &["--check", CHECK]);
    for name in ["edge-a", "edge-b"] {
        eventually("each edge reports revision 1 healthy", || async {
            report(&app, &token, name)
                .await
                .is_some_and(|r| r["revision"] == 1 && r["healthy"] == true)
        })
        .await;
    }
    let number = start_rollout(&app, &token, 2, 0).await;
    eventually("the rollout rolls back", || async {
        rollout(&app, &token, number).await["state"] == "rolled_back"
    })
    .await;
    let ended = rollout(&app, &token, number).await;
    let failed = ended["failed_edges"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{ended}");
    assert_eq!(failed[0]["name"], "edge-a", "{ended}");
    assert_eq!(failed[0]["revision"], 2, "{ended}");
    assert_eq!(failed[0]["healthy"], false, "{ended}");

    // The canary goes back to revision 1; the other never left it.
    let canary_dir = work.path().join("edge-a");
    until("the canary writes revision 1 again", || {
        active_revision(&canary_dir, "p1") == Some(1) && written(work.path(), "edge-a") == [1, 2, 1]
    })
    .await;
    eventually("the canary reports revision 1 healthy again", || async {
        report(&app, &token, "edge-a")
            .await
            .is_some_and(|r| r["revision"] == 1 && r["healthy"] == true)
    })
    .await;
    assert_eq!(written(work.path(), "edge-b"), [1]);
    assert_eq!(active_revision(&work.path().join("edge-b"), "p1"), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_a_failing_check_on_the_canary_rolls_back_on_sqlite() {
    a_failing_check_rolls_back(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_a_failing_check_on_the_canary_rolls_back_on_postgres() {
    require!(Backend::Postgres);
    a_failing_check_rolls_back(Backend::Postgres).await;
}

/// A service older than rollouts answers the target with 404: an edge
/// with a name says so and follows the active revision, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_with_a_name_follows_the_active_revision_of_a_service_without_targets() {
    let service = super::hostile::serve(&["good"], &[]).await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    let dir_arg = dir.display().to_string();
    let org = org_id(1);
    let args = [
        "--organization",
        &org,
        "--name",
        "edge-1",
        "--dir",
        &dir_arg,
        "--once",
    ];
    let once = Following::start(&service.url, "pxd_any", work.path(), &args);
    let log = once.log.clone();
    let (status, _) = once.finish();
    let log = std::fs::read_to_string(log).unwrap();
    assert!(status.success(), "{log}");
    assert_eq!(active_revision(&dir, "good"), Some(1), "{log}");
    assert_eq!(
        log.matches("the service has no edge targets").count(),
        1,
        "{log}"
    );
}
