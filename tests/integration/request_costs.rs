//! What one request may cost (docs/security.md): a write learns whether
//! its caller may make it before it compiles any regex of its body; the
//! regexes of one request compile to at most a budget (64 MiB) in all,
//! identical ones once; the checks stop when the caller goes away; and
//! they run off the runtime's workers, outside the store's transactions,
//! so that other organizations are served meanwhile.
//!
//! These run the real binary on `BACKEND` and read its own `/metrics`:
//! the counters are the server process's alone.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::BACKEND;
use crate::binary::{Sandbox, Server};
use crate::helpers::*;

const COMPILED: &str = "proxydeck_regexes_compiled_total";
const GIVEN_UP: &str = "proxydeck_checks_given_up_total";
/// Longest a test waits for the server to show what it waits for.
const DEADLINE: Duration = Duration::from_secs(60);

/// A regex of about 10.7 MiB compiled in all (Unicode `\w` repeated 200
/// times; the regex crate's 10 MiB limit counts one of its parts, under
/// it), made distinct by `n` so that each one compiles: the sixth is over
/// the 64 MiB budget.
fn heavy(n: usize) -> String {
    format!("^/\\w{{200}}/{n}$")
}

/// A revision whose routes' paths are `paths`, each a regex.
fn revision_with(paths: &[String]) -> Value {
    let routes: Vec<Value> = paths
        .iter()
        .map(|path| json!({"path": path, "regex": true, "backend_name": "origin"}))
        .collect();
    json!({"description": "regexes",
           "backends": [{"name": "origin", "address": "origin.example.com", "default": true}],
           "routes": routes})
}

/// A project's change with one cache rule per path, each a regex.
fn cache_rules(paths: &[String]) -> Value {
    let rules: Vec<Value> = paths
        .iter()
        .map(|path| json!({"path": path, "regex": true, "ttl": 60}))
        .collect();
    json!({"override_cache": rules})
}

/// A sandbox on `BACKEND`: organization 1 with `writer` (admin) and
/// `reader` (member), organization 2 with `stranger` (admin) and its
/// project `q1`; p1 in organization 1 with revision 1 active and revision
/// 2, inactive, holding `inactive` regex routes (stored by the import,
/// which compiles nothing). Answers the sandbox, the server and the
/// secrets of writer, reader and stranger.
fn costs_server(inactive: &[String]) -> (Sandbox, Server, [String; 3]) {
    let sandbox = Sandbox::on(BACKEND);
    let writer = sandbox.directory(1, "writer");
    let stranger = sandbox.directory(2, "stranger");
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "reader@example.com",
        "--org",
        &format!("{}:member", org_id(1)),
        "--id",
        "reader",
    ]);
    let reader = sandbox.token("reader", "cli");
    let mut heavy_revision = settings("p1", 2, false);
    heavy_revision["routes"] = revision_with(inactive)["routes"].clone();
    heavy_revision["backends"] =
        json!([{"name": "origin", "address": "origin.example.com", "default": true}]);
    sandbox.import(&[
        project("p1", 1, 0),
        project("q1", 2, 0),
        settings("p1", 1, true),
        heavy_revision,
    ]);
    let server = sandbox.serve(&[]);
    (sandbox, server, [writer, reader, stranger])
}

async fn post_to(client: reqwest::Client, url: String, token: &str, body: &Value) -> (u16, Value) {
    let response = client
        .post(url)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("an answer");
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

async fn post(server: &Server, path: &str, token: &str, body: &Value) -> (u16, Value) {
    post_to(server.client.clone(), server.url(path), token, body).await
}

/// Polls `series` in the server's `/metrics` until `done` holds of it;
/// fails after [`DEADLINE`].
async fn metric_until(server: &Server, series: &str, done: impl Fn(f64) -> bool) -> f64 {
    let started = Instant::now();
    loop {
        let value = server.metric(series).await;
        if done(value) {
            return value;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "{series} is still {value} after {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A caller who may not write gets its refusal (404 for what it cannot
/// see or what does not exist, 403 for a member) without the server
/// compiling a single regex of its body, on every write that checks
/// regexes; the same bodies from a writer are compiled (the metric
/// moves).
#[tokio::test]
async fn a_caller_who_may_not_write_is_refused_before_any_regex_is_compiled() {
    require!(BACKEND);
    let paths: Vec<String> = (0..1000).map(|n| format!("^/\\w{{20}}/{n}$")).collect();
    let (_sandbox, server, [writer, reader, stranger]) = costs_server(&paths[..3]);
    let revision = revision_with(&paths);
    let rules = cache_rules(&paths);
    let mut new_project = rules.clone();
    new_project["organization_id"] = json!(org_id(1));
    new_project["slug"] = json!("new");
    let activate = json!({"is_active": true});
    let writes: [(&str, &Value); 7] = [
        ("/v1/projects/p1/proxy-settings", &revision),
        ("/v1/projects/p1/proxy-settings?dry_run=true", &revision),
        ("/v1/projects/nope/proxy-settings", &revision),
        ("/v1/projects", &new_project),
        ("/v1/projects/p1", &rules),
        ("/v1/projects/p1/proxy-settings/2", &activate),
        ("/v1/projects/p1/proxy-settings/2?dry_run=true", &activate),
    ];
    for (path, body) in writes {
        let (status, answer) = post(&server, path, &stranger, body).await;
        assert_eq!(status, 404, "{path}: {answer}");
        assert_error_shape(&answer);
        if !path.contains("nope") {
            let (status, answer) = post(&server, path, &reader, body).await;
            assert_eq!(status, 403, "{path}: {answer}");
        }
    }
    assert_eq!(server.metric(COMPILED).await, 0.0, "compiled for a refusal");
    // The writer's request is checked: its regexes are compiled.
    let (status, answer) = post(
        &server,
        "/v1/projects/p1/proxy-settings/2?dry_run=true",
        &writer,
        &activate,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(server.metric(COMPILED).await, 3.0);
}

/// A body whose regexes compile to more than the budget is refused with a
/// 400 naming the first member over it, and nothing is stored; identical
/// patterns compile once, so 1,000 copies of one cost what one does.
#[tokio::test]
async fn a_body_over_the_budget_is_refused_and_nothing_is_stored() {
    require!(BACKEND);
    let (_sandbox, server, [writer, _, _]) = costs_server(&[]);
    let paths: Vec<String> = (0..8).map(heavy).collect();
    let (status, answer) = create_revision(&server, &writer, &paths).await;
    assert_over_budget(status, &answer, "routes[5].path");
    // Compiled up to the member over budget, not past it.
    assert_eq!(server.metric(COMPILED).await, 6.0);
    assert_eq!(server.revisions("p1", &writer).await.len(), 2);

    let (status, before) = server.get("/v1/projects/p1", &writer).await;
    assert_eq!(status, 200);
    let (status, answer) = post(&server, "/v1/projects/p1", &writer, &cache_rules(&paths)).await;
    assert_over_budget(status, &answer, "override_cache[5].path");
    assert_eq!(server.get("/v1/projects/p1", &writer).await.1, before);

    // 1,000 routes of one pattern: one compile, accepted.
    let compiled = server.metric(COMPILED).await;
    let same: Vec<String> = vec!["^/\\w{20}$".to_owned(); 1000];
    let (status, answer) = create_revision(&server, &writer, &same).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(server.metric(COMPILED).await - compiled, 1.0);
}

async fn create_revision(server: &Server, token: &str, paths: &[String]) -> (u16, Value) {
    let path = "/v1/projects/p1/proxy-settings";
    post(server, path, token, &revision_with(paths)).await
}

/// A 400 naming `member` as the first one over the budget.
fn assert_over_budget(status: u16, answer: &Value, member: &str) {
    assert_eq!(status, 400, "{answer}");
    assert_error_shape(answer);
    assert_eq!(error_param(answer), member, "{answer}");
    let message = answer["error"]["params"][0]["message"].as_str().unwrap();
    assert!(message.contains("at most 64 MiB in all"), "{answer}");
}

/// A caller who closes its connection while its body's regexes are being
/// compiled stops the compiling: the checks are given up before their
/// next regex (the metric rises; they would otherwise go on for seconds).
#[tokio::test]
async fn a_caller_gone_stops_its_checks() {
    require!(BACKEND);
    let (_sandbox, server, [writer, _, _]) = costs_server(&[]);
    let paths: Vec<String> = (0..5).map(heavy).collect();
    let body = revision_with(&paths).to_string();
    let request = format!(
        "POST /v1/projects/p1/proxy-settings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {writer}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut connection = tokio::net::TcpStream::connect(server.address)
        .await
        .unwrap();
    connection.write_all(request.as_bytes()).await.unwrap();
    metric_until(&server, COMPILED, |compiled| compiled >= 1.0).await;
    drop(connection);
    metric_until(&server, GIVEN_UP, |given_up| given_up >= 1.0).await;
    assert!(server.metric(COMPILED).await < 5.0);
    assert_eq!(server.revisions("p1", &writer).await.len(), 2);
}

/// Dry runs of an activation whose regexes take seconds to compile, more
/// of them than the server has cores (and so runtime workers), leave
/// another organization served: its read and its write are answered
/// while every dry run is still being checked. Checks run on the runtime's
/// workers would hold them all, and nothing else would be answered until
/// a dry run was.
#[tokio::test]
async fn checks_in_progress_leave_other_organizations_served() {
    require!(BACKEND);
    let paths: Vec<String> = (0..2).map(heavy).collect();
    let (_sandbox, server, [writer, _, stranger]) = costs_server(&paths);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let answered = Arc::new(AtomicUsize::new(0));
    let mut dry_runs = Vec::new();
    for _ in 0..=cores {
        let (client, writer, answered) = (server.client.clone(), writer.clone(), answered.clone());
        let url = server.url("/v1/projects/p1/proxy-settings/2?dry_run=true");
        dry_runs.push(tokio::spawn(async move {
            let answer = post_to(client, url, &writer, &json!({"is_active": true})).await;
            answered.fetch_add(1, Ordering::SeqCst);
            answer
        }));
    }
    metric_until(&server, COMPILED, |compiled| compiled >= 1.0).await;
    let (status, listing) = server.get("/v1/projects", &stranger).await;
    assert_eq!(status, 200, "{listing}");
    write_meanwhile(&server, &stranger).await;
    assert_eq!(
        answered.load(Ordering::SeqCst),
        0,
        "another organization waited for a dry run"
    );
    for dry_run in dry_runs {
        let (status, answer) = dry_run.await.unwrap();
        assert_eq!(status, 200, "{answer}: {}", server.log());
    }
}

/// An activation whose regexes take seconds to compile checks them before
/// its write transaction: another organization's write is answered while
/// the check goes on (SQLite has one writer; a check inside the
/// transaction held it), and the activation then succeeds.
#[tokio::test]
async fn an_activation_checks_outside_its_transaction() {
    require!(BACKEND);
    let paths: Vec<String> = (0..3).map(heavy).collect();
    let (_sandbox, server, [writer, _, stranger]) = costs_server(&paths);
    let activation = {
        let (client, writer) = (server.client.clone(), writer.clone());
        let url = server.url("/v1/projects/p1/proxy-settings/2");
        tokio::spawn(
            async move { post_to(client, url, &writer, &json!({"is_active": true})).await },
        )
    };
    metric_until(&server, COMPILED, |compiled| compiled >= 1.0).await;
    write_meanwhile(&server, &stranger).await;
    assert!(!activation.is_finished(), "the write waited for the check");
    let (status, answer) = activation.await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["is_active"], json!(true));
}

/// Another organization's project changed (q1, by `stranger`): a 200.
async fn write_meanwhile(server: &Server, stranger: &str) {
    let change = json!({"description": "meanwhile"});
    let (status, written) = post(server, "/v1/projects/q1", stranger, &change).await;
    assert_eq!(status, 200, "{written}");
}
