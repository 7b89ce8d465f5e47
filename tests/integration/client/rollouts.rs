//! `proxy-settings rollout start|status|list|pause|resume|promote|abort`
//! (`docs/rollouts.md`, `docs/cli.md`): the real binary against an
//! in-process service whose edges the test reports for (reportEdge), so
//! that rollouts go on, succeed or roll back as the service drives them.
//! A watch ends 0 on success, 5 on a rollback, 6 on an abort.

use std::process::Command;

use reqwest::Method;

use super::*;

/// `site` (ada's, admin of org-1; bob is a member there) with revision 1
/// active and 2 and 3 inactive, and two edges running 1 that reported
/// just now: `edge-a`, a canary (it goes first), and `edge-b`.
async fn served() -> (TestApp, String, TempDir) {
    let app = TestApp::spawn_with(Backend::Sqlite, test_options(), StoreOptions::default()).await;
    app.seed(vec![
        org(1),
        json!({"object": "user", "id": "ada", "email": "ada@example.com",
               "roles": {org_id(1): "admin"}}),
        json!({"object": "user", "id": "bob", "email": "bob@example.com",
               "roles": {org_id(1): "member"}}),
        project("site", 1, 1),
        settings("site", 1, true),
        settings("site", 2, false),
        settings("site", 3, false),
    ])
    .await;
    let token = app.token("ada").await;
    report(&app, &token, "edge-a", 1, "applied", true).await;
    report(&app, &token, "edge-b", 1, "applied", false).await;
    (app, token, tempfile::tempdir().expect("a temporary folder"))
}

/// An edge's report (reportEdge), as `proxydeck follow` sends it.
async fn report(app: &TestApp, token: &str, name: &str, revision: u32, status: &str, canary: bool) {
    let mut body = json!({"name": name, "revision": revision, "status": status, "canary": canary});
    if status == "failed" {
        body["error"] = json!("no backend answers");
    }
    let (code, answer, _) = send(
        app,
        Method::POST,
        "/v1/projects/site/edges",
        token,
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
}

async fn rollout(app: &TestApp, token: &str, number: u64) -> Value {
    let (status, body) = app
        .get_json(&format!("/v1/projects/site/rollouts/{number}"), token)
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Waits (bounded) until rollout `number` is in `state` at `stage`.
async fn until_at(app: &TestApp, token: &str, number: u64, state: &str, stage: u64) -> Value {
    for _ in 0..200 {
        let now = rollout(app, token, number).await;
        if now["state"] == state && now["stage"] == stage {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "rollout {number} never reached {state} at stage {stage}: {}",
        rollout(app, token, number).await
    );
}

/// The client with `args` as ada, started now and waited for on a thread
/// of its own while the test goes on.
fn started(app: &TestApp, token: &str, cwd: &Path, args: &[&str]) -> tokio::task::JoinHandle<Out> {
    let mut command: Command = proxydeck(cwd);
    command
        .args(args)
        .env("PROXYDECK_URL", app.url(""))
        .env("PROXYDECK_TOKEN", token);
    tokio::task::spawn_blocking(move || finish(command, None))
}

/// The JSON lines a piped watch printed.
fn json_lines(out: &Out) -> Vec<Value> {
    out.stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_is_started_shown_listed_and_steered() {
    let (app, token, cwd) = served().await;
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);

    // No rollout yet: status says how to start one.
    run(&["proxy-settings", "rollout", "status", "site"])
        .error(&["no rollout yet", "rollout start"]);

    // Started, piped: the rollout the API made, with the plan as given.
    let started = run(&[
        "proxy-settings",
        "rollout",
        "start",
        "site",
        "2",
        "--stages",
        "1,100%",
        "--bake",
        "1h",
        "--min-healthy",
        "50",
        "--max-failures",
        "1",
        "--report-timeout",
        "5m",
    ])
    .json();
    assert_eq!(started["number"], json!(1), "{started}");
    assert_eq!(started["revision"], json!(2));
    assert_eq!(started["previous_revision"], json!(1));
    assert_eq!(started["state"], json!("running"));
    assert_eq!(started["stage"], json!(1));
    let plan = &started["plan"];
    assert_eq!(
        plan["stages"],
        json!([{"edges": 1}, {"percent": 100}]),
        "{plan}"
    );
    assert_eq!(plan["bake_seconds"], json!(3600));
    assert_eq!(plan["min_healthy_percent"], json!(50));
    assert_eq!(plan["max_failures"], json!(1));
    assert_eq!(plan["report_timeout_seconds"], json!(300));

    // Status: the newest by default, the API's rollout as it stands.
    let shown = run(&["proxy-settings", "rollout", "status", "site"]).json();
    assert_eq!(shown, rollout(&app, &token, 1).await);
    assert_eq!(
        run(&[
            "proxy-settings",
            "rollout",
            "status",
            "site",
            "1",
            "--jq",
            ".state"
        ])
        .stdout,
        "running\n"
    );

    // The readable view: state, stage 1 of 2, the bake's time left, the
    // canary first with its health.
    let url = app.url("");
    let env = [
        ("PROXYDECK_URL", url.as_str()),
        ("PROXYDECK_TOKEN", token.as_str()),
    ];
    let out = on_terminal(
        cwd.path(),
        &["proxy-settings", "rollout", "status", "site"],
        &env,
        120,
    );
    assert!(out.status.success(), "{out:#?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0], "rollout 1 of revision 2 (from 1): running",
        "{}",
        out.stdout
    );
    assert!(
        lines[1].starts_with("stage 1 of 2: bake 59 m "),
        "{}",
        out.stdout
    );
    assert!(lines[1].ends_with(" left of 1 h 00 m"), "{}", out.stdout);
    assert_eq!(
        lines[2],
        "healthy: 0 of 1 edges so far (needs 1); failures tolerated: 1"
    );
    assert_eq!(lines[3], "stage 1 (1 edge): current");
    assert!(lines[4].starts_with("  edge-a  pending"), "{}", out.stdout);
    assert!(lines[4].ends_with("canary"), "{}", out.stdout);
    assert_eq!(lines[5], "stage 2 (100%): waiting");
    // Not reached: it runs the revision before.
    assert!(lines[6].starts_with("  edge-b  waiting"), "{}", out.stdout);

    // A second rollout, or an activation, is refused while it runs: said
    // in one line, with the way out.
    let refused = run(&["proxy-settings", "rollout", "start", "site", "3"]);
    let line = refused.error(&["rollout abort", "rollout promote"]);
    assert_eq!(refused.status.code(), Some(1), "{line}");
    let (_, listed) = app.get_json("/v1/projects/site/rollouts", &token).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");

    // A member reads but may not steer.
    let bob = app.token("bob").await;
    let as_bob = client(
        &app,
        &bob,
        cwd.path(),
        &["proxy-settings", "rollout", "pause", "site"],
    );
    as_bob.error(&[]);
    assert_eq!(rollout(&app, &token, 1).await["state"], json!("running"));

    // Pause, resume, promote: each the API's answer, each taking effect.
    let paused = run(&["proxy-settings", "rollout", "pause", "site"]).json();
    assert_eq!(paused["state"], json!("paused"), "{paused}");
    assert_eq!(rollout(&app, &token, 1).await["state"], json!("paused"));
    run(&["proxy-settings", "rollout", "pause", "site"]).error(&[]);
    let resumed = run(&["proxy-settings", "rollout", "resume", "site", "1"]).json();
    assert_eq!(resumed["state"], json!("running"), "{resumed}");
    let promoted = run(&["proxy-settings", "rollout", "promote", "site"]).json();
    assert_eq!(promoted["stage"], json!(2), "{promoted}");
    assert_eq!(rollout(&app, &token, 1).await["stage"], json!(2));

    // Abort asks first; no one to ask: refused, nothing done.
    run(&["proxy-settings", "rollout", "abort", "site"]).error(&["--yes"]);
    assert_eq!(rollout(&app, &token, 1).await["state"], json!("running"));
    let aborted = run(&["proxy-settings", "rollout", "abort", "site", "--yes"]).json();
    assert_eq!(aborted["state"], json!("aborted"), "{aborted}");
    // Ended, it takes no more actions.
    run(&["proxy-settings", "rollout", "resume", "site"]).error(&[]);

    // Listed: every rollout, newest first, as the API lists them.
    run(&[
        "proxy-settings",
        "rollout",
        "start",
        "site",
        "3",
        "--stages",
        "100%",
    ])
    .json();
    let (_, page) = app.get_json("/v1/projects/site/rollouts", &token).await;
    let listed = run(&["proxy-settings", "rollout", "list", "site"]).json();
    assert_eq!(listed, page["data"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let fields = run(&[
        "proxy-settings",
        "rollout",
        "list",
        "site",
        "--json",
        "number,state",
    ])
    .json();
    assert_eq!(
        fields,
        json!([{"number": 2, "state": "running"}, {"number": 1, "state": "aborted"}])
    );
    let out = run(&["proxy-settings", "rollout", "list", "site", "-o", "table"]);
    let rows = table(
        &out.stdout,
        &[
            "ROLLOUT",
            "REVISION",
            "STATE",
            "STAGE",
            "FROM",
            "CREATED (UTC)",
            "REASON",
        ],
    );
    assert_eq!(column(&rows, 0), ["2", "1"]);
    assert_eq!(column(&rows, 2), ["running", "aborted"]);
    assert_eq!(column(&rows, 3), ["1 of 1", "2 of 2"]);
}

/// `status --watch`, piped: a JSON line of the rollout each time it
/// changed, until it ends; 0 once it succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_ends_with_success() {
    let (app, token, cwd) = served().await;
    let first = client(
        &app,
        &token,
        cwd.path(),
        &[
            "proxy-settings",
            "rollout",
            "start",
            "site",
            "2",
            "--stages",
            "1,100%",
            "--bake",
            "0s",
        ],
    )
    .json();
    let number = first["number"].as_u64().unwrap();
    let watch = started(
        &app,
        &token,
        cwd.path(),
        &["proxy-settings", "rollout", "status", "site", "--watch"],
    );
    // Unchanged for longer than a redraw: read twice or more, printed once.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // The canary goes first; the other once the canary is healthy.
    report(&app, &token, "edge-a", 2, "applied", true).await;
    until_at(&app, &token, number, "running", 2).await;
    report(&app, &token, "edge-b", 2, "applied", false).await;
    let out = watch.await.unwrap();
    assert!(out.status.success(), "{out:#?}");
    let lines = json_lines(&out);
    assert_eq!(lines.first().unwrap()["stage"], json!(1), "{}", out.stdout);
    let last = lines.last().unwrap();
    assert_eq!(last["state"], json!("succeeded"), "{}", out.stdout);
    assert_eq!(*last, rollout(&app, &token, number).await);
    // Each line is a change: no two alike one after the other.
    assert!(
        lines.windows(2).all(|pair| pair[0] != pair[1]),
        "{}",
        out.stdout
    );
    let (_, revisions) = app
        .get_json("/v1/projects/site/proxy-settings", &token)
        .await;
    let active: Vec<&Value> = revisions["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|revision| revision["is_active"] == json!(true))
        .map(|revision| &revision["revision"])
        .collect();
    assert_eq!(active, [&json!(2)], "{revisions}");
}

/// A failed edge rolls the rollout back: the watch (started with `start
/// --watch`, on a terminal) shows why and ends 5; an aborted one ends 6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_ends_with_the_rollback_or_the_abort() {
    let (app, token, cwd) = served().await;
    let url = app.url("");
    let env = [
        ("PROXYDECK_URL", url.clone()),
        ("PROXYDECK_TOKEN", token.clone()),
    ];
    let dir = cwd.path().to_owned();
    let watch = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let args = [
            "proxy-settings",
            "rollout",
            "start",
            "site",
            "2",
            "--stages",
            "1,100%",
            "--bake",
            "1h",
            "--watch",
        ];
        on_terminal(&dir, &args, &env, 120)
    });
    let number = loop {
        let (_, page) = app.get_json("/v1/projects/site/rollouts", &token).await;
        if let Some(first) = page["data"].as_array().and_then(|d| d.first()) {
            break first["number"].as_u64().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    report(&app, &token, "edge-a", 2, "failed", true).await;
    let out = watch.await.unwrap();
    assert_eq!(out.status.code(), Some(5), "{out:#?}");
    let ended = rollout(&app, &token, number).await;
    assert_eq!(ended["state"], json!("rolled_back"), "{ended}");
    // The last frame: the state, the reason, the failed edge's report,
    // then the one error line.
    let last = out.stdout.rsplit("\x1b[2J").next().unwrap();
    assert!(
        last.starts_with("rollout 1 of revision 2 (from 1): rolled back\n"),
        "{last}"
    );
    assert!(last.contains("every edge is back on revision 1"), "{last}");
    assert!(
        last.contains(&format!("reason: {}", text_of(&ended["reason"]))),
        "{last}"
    );
    assert!(
        last.contains("edge-a on revision 2: failed: no backend answers"),
        "{last}"
    );
    assert!(
        last.trim_end()
            .ends_with("error: rollout 1 was rolled back"),
        "{last}"
    );

    // Aborted while watched: 6.
    let second = client(
        &app,
        &token,
        cwd.path(),
        &[
            "proxy-settings",
            "rollout",
            "start",
            "site",
            "3",
            "--bake",
            "1h",
        ],
    )
    .json();
    let number = second["number"].as_u64().unwrap();
    let watch = started(
        &app,
        &token,
        cwd.path(),
        &[
            "proxy-settings",
            "rollout",
            "status",
            "site",
            &number.to_string(),
            "--watch",
        ],
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, body, _) = send(
        &app,
        Method::POST,
        &format!("/v1/projects/site/rollouts/{number}/abort"),
        &token,
        &[],
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let out = watch.await.unwrap();
    assert_eq!(out.status.code(), Some(6), "{out:#?}");
    assert_eq!(json_lines(&out).last().unwrap()["state"], json!("aborted"));
    assert_eq!(
        out.stderr.trim(),
        format!("error: rollout {number} was aborted")
    );
}
