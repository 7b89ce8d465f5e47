//! `proxydeck follow` (docs/feed.md): the real binary keeps a folder in
//! step with a project's active revision through the change feed, runs
//! `--exec` when what the files hold changed, resumes from its saved
//! cursor after a restart, keeps the last files while the service is down,
//! and keeps what a hostile service sends inside its folder; its routing
//! index in `routing.rs`, the answer to an edge's `ask` in `ask.rs`, the
//! certificates' probe in `certificates.rs`, `--check`, `--canary` and
//! the edge's target in a rollout in `rollouts.rs`.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use reqwest::Method;

use serde_json::Value;

use crate::binary::*;
use crate::helpers::*;

mod ask;
mod certificates;
mod rollouts;
mod routing;

/// A `proxydeck follow` child process, killed when dropped; its stderr
/// goes to a file.
struct Following {
    child: Child,
    log: PathBuf,
}

impl Following {
    /// `follow ARGS --url URL` with the token in PROXYDECK_TOKEN.
    fn start(url: &str, token: &str, cwd: &Path, args: &[&str]) -> Self {
        let log = cwd.join(format!("follow-{}.log", rand::random::<u32>()));
        let mut command = proxydeck(cwd);
        command
            .arg("follow")
            .args(args)
            .args(["--url", url])
            .env("PROXYDECK_TOKEN", token)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("a log file"));
        Self {
            child: command.spawn().expect("follow starts"),
            log,
        }
    }

    /// [`Following::start`] against `app`.
    fn on(app: &TestApp, token: &str, cwd: &Path, args: &[&str]) -> Self {
        Self::start(&app.url(""), token, cwd, args)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for a `--once` run's end: its exit status and stdout.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        let mut stdout = String::new();
        std::io::Read::read_to_string(&mut self.child.stdout.take().unwrap(), &mut stdout).unwrap();
        (self.child.wait().unwrap(), stdout)
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client command against the service, run to its end.
fn client(app: &TestApp, token: &str, cwd: &Path, args: &[&str]) -> Out {
    let mut command = proxydeck(cwd);
    command
        .args(args)
        .env("PROXYDECK_URL", app.url(""))
        .env("PROXYDECK_TOKEN", token);
    finish(command, None)
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn active_revision(dir: &Path, project: &str) -> Option<u64> {
    read_json(&dir.join(project).join("proxy-settings.json"))?["revision"].as_u64()
}

fn saved_cursor(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cursor")).ok()?;
    Some(text.trim().to_owned())
}

/// The lines `--exec` appended to `file`: one a run.
fn runs(file: &Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |text| text.lines().count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_keeps_the_active_revision_and_resumes_from_its_cursor() {
    let (app, token, _) = two_organizations(Backend::Sqlite).await;
    app.seed(vec![settings("p1", 1, true)]).await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    let dir_arg = dir.display().to_string();
    let args = [
        "--project",
        "p1",
        "--name",
        "edge-1",
        "--dir",
        &dir_arg,
        "--exec",
        "cat p1/proxy-settings.json >> ../applied.ndjson; echo >> ../applied.ndjson",
    ];
    let follow = Following::on(&app, &token, work.path(), &args);
    until("revision 1 is written", || {
        active_revision(&dir, "p1") == Some(1)
    })
    .await;
    until("the cursor is saved", || dir.join(".cursor").is_file()).await;

    // A new revision, activated: the file follows, --exec runs.
    let revisions = "/v1/projects/p1/proxy-settings";
    let body = revision_body("two", "two.example:443");
    write(&app, &token, Method::POST, revisions, Some(body)).await;
    activate(&app, &token, "p1", 2).await;
    until("revision 2 is written", || {
        active_revision(&dir, "p1") == Some(2)
    })
    .await;
    let settings = read_json(&dir.join("p1/proxy-settings.json")).unwrap();
    assert_eq!(settings["backends"][0]["address"], "two.example:443");
    assert_eq!(settings["is_active"], true);
    until("--exec runs after the file is written", || {
        std::fs::read_to_string(work.path().join("applied.ndjson"))
            .is_ok_and(|applied| applied.contains("two.example:443"))
    })
    .await;
    // The edge told the service what it runs.
    eventually("the edge reports revision 2", || async {
        let (_, page) = app.get_json("/v1/projects/p1/edges", &token).await;
        page["data"][0]["name"] == "edge-1"
            && page["data"][0]["revision"] == 2
            && page["data"][0]["status"] == "applied"
    })
    .await;
    // No temporary file is left beside the files.
    let names: Vec<String> = std::fs::read_dir(dir.join("p1"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        names.iter().filter(|n| n.ends_with(".json")).count(),
        names.len(),
        "{names:?}"
    );
    drop(follow);

    // Changes made while it is stopped reach it when it starts again,
    // from its cursor.
    let cursor = saved_cursor(&dir).unwrap();
    describe(&app, &token, "p1", "while stopped").await;
    let follow = Following::on(&app, &token, work.path(), &args);
    until("the project's change is written", || {
        read_json(&dir.join("p1/project.json")).is_some_and(|p| p["description"] == "while stopped")
    })
    .await;
    until("the cursor moves on", || {
        saved_cursor(&dir).is_some_and(|now| now != cursor)
    })
    .await;
    let resumed = format!("resuming after cursor {cursor}");
    assert!(follow.log().contains(&resumed), "{}", follow.log());

    // The service stops: the files stay as they were.
    app.stop().await;
    until("follow says it tries again", || {
        follow.log().contains("trying again")
    })
    .await;
    assert_eq!(active_revision(&dir, "p1"), Some(2));
    assert_eq!(
        read_json(&dir.join("p1/project.json")).unwrap()["description"],
        "while stopped"
    );
}

/// A change that leaves the files as they were (an inactive revision
/// created) runs no --exec; an activation is read from what its change
/// names, not by walking the revisions' pages (without a name: an edge
/// with one reads its target, `rollouts.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_runs_exec_only_when_what_the_edge_serves_changed() {
    let (app, token, _) = two_organizations(Backend::Sqlite).await;
    // More revisions than a page holds: revision 2 is on the listing's
    // second page, newest first.
    let revisions: Vec<Value> = (1..=102).map(|n| settings("p1", n, n == 1)).collect();
    app.seed(revisions).await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    let dir_arg = dir.display().to_string();
    let ran = work.path().join("runs.log");
    let args = [
        "--project",
        "p1",
        "--dir",
        &dir_arg,
        "--no-report",
        "--exec",
        "echo ran >> ../runs.log",
    ];
    let _follow = Following::on(&app, &token, work.path(), &args);
    let start = head(&app, &token).await;
    until("the first --exec ran", || runs(&ran) == 1).await;
    until("the cursor is saved", || {
        saved_cursor(&dir) == Some(start.clone())
    })
    .await;

    // An inactive revision: the cursor moves on, nothing is run.
    create_revision(&app, &token, "p1", "r103, inactive").await;
    let created = head(&app, &token).await;
    until("follow has applied the creation", || {
        saved_cursor(&dir) == Some(created.clone())
    })
    .await;
    assert_eq!(
        runs(&ran),
        1,
        "--exec ran for a change that changed no file"
    );
    assert_eq!(active_revision(&dir, "p1"), Some(1));

    // An activation: revision 2 read alone (one short page), not found by
    // walking two pages of 100.
    let listings = r#"proxydeck_http_requests_total{route="/v1/projects/{id}/proxy-settings",method="GET",status="200"}"#;
    let before = metric(listings);
    activate(&app, &token, "p1", 2).await;
    let activated = head(&app, &token).await;
    until("follow has applied the activation", || {
        saved_cursor(&dir) == Some(activated.clone())
    })
    .await;
    assert_eq!(active_revision(&dir, "p1"), Some(2));
    assert_eq!(runs(&ran), 2);
    assert_eq!(metric(listings) - before, 1.0, "listing reads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_once_writes_an_organizations_projects_and_ends() {
    let (app, token, _) = two_organizations(Backend::Sqlite).await;
    app.seed(vec![
        // u1 in organization 3 too: its project p3 is not followed.
        user("u1", &[1, 3]),
        project("p2", 1, 1),
        settings("p1", 1, false),
        settings("p1", 2, true),
    ])
    .await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    // A project the organization no longer has goes from the folder.
    std::fs::create_dir_all(dir.join("gone")).unwrap();
    std::fs::write(dir.join("gone/project.json"), "{}").unwrap();
    let org1 = org_id(1);
    let dir_arg = dir.display().to_string();
    let exec = "pwd > ../exec.txt; env >> ../exec.txt";
    let follow = Following::on(
        &app,
        &token,
        work.path(),
        &[
            "--organization",
            &org1,
            "--dir",
            &dir_arg,
            "--once",
            "--exec",
            exec,
        ],
    );
    let log = follow.log.clone();
    let (status, stdout) = follow.finish();
    let log = std::fs::read_to_string(log).unwrap();
    assert!(status.success(), "{log}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    let mut followed: Vec<&str> = summary["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    followed.sort();
    assert_eq!(followed, ["p1", "p2"], "{stdout}");
    assert_eq!(active_revision(&dir, "p1"), Some(2));
    assert_eq!(read_json(&dir.join("p2/project.json")).unwrap()["id"], "p2");
    assert!(!dir.join("p2/proxy-settings.json").exists());
    assert!(!dir.join("p3").exists());
    assert!(!dir.join("gone").exists());
    assert_eq!(
        saved_cursor(&dir),
        summary["cursor"].as_str().map(str::to_owned)
    );
    // --exec ran in the folder, which it finds in PROXYDECK_FOLLOW_DIR,
    // without the token or any other PROXYDECK_* setting of follow's.
    let exec = std::fs::read_to_string(work.path().join("exec.txt")).unwrap();
    let folder = std::fs::canonicalize(&dir).unwrap();
    let mut lines = exec.lines();
    assert_eq!(lines.next(), folder.to_str());
    let ours: Vec<&str> = lines.filter(|l| l.starts_with("PROXYDECK_")).collect();
    assert_eq!(
        ours,
        [format!("PROXYDECK_FOLLOW_DIR={}", folder.display())],
        "{exec}"
    );
    assert!(!exec.contains(&token), "--exec was given the token");

    // A project the token cannot see ends the command with a reason.
    let refused = Following::on(
        &app,
        &token,
        work.path(),
        &["--project", "nope", "--dir", &dir_arg, "--once"],
    );
    let log = refused.log.clone();
    let (status, _) = refused.finish();
    let log = std::fs::read_to_string(log).unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("no project \"nope\""), "{log}");
}

/// `--once` against a service that does not answer ends (exit 1, after
/// its few attempts, saying so) instead of trying for ever; its folder is
/// left as it was.
#[test]
fn follow_once_gives_up_on_an_unreachable_service() {
    let sandbox = tempfile::tempdir().unwrap();
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = sandbox.path().join("edge");
    let dir_arg = dir.to_str().unwrap();
    let following = Following::start(
        &format!("http://127.0.0.1:{port}"),
        "pxd_unused",
        sandbox.path(),
        &["--project", "acme-shop", "--dir", dir_arg, "--once"],
    );
    let log = following.log.clone();
    let (status, stdout) = following.finish();
    let log = std::fs::read_to_string(log).unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(log.contains("--once: giving up after 4 attempts"), "{log}");
    assert_eq!(log.matches("trying again in").count(), 3, "{log}");
    assert!(!dir.join(".cursor").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_exec_is_reported_and_keeps_the_cursor_back() {
    let (app, token, _) = two_organizations(Backend::Sqlite).await;
    app.seed(vec![settings("p1", 1, true)]).await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    let dir_arg = dir.display().to_string();
    let failing = "echo 'haproxy: cannot bind' >&2; exit 3";
    let args = [
        "--project",
        "p1",
        "--name",
        "edge-9",
        "--dir",
        &dir_arg,
        "--exec",
        failing,
    ];
    let follow = Following::on(&app, &token, work.path(), &args);
    eventually("the failure is reported", || async {
        let (_, page) = app.get_json("/v1/projects/p1/edges", &token).await;
        page["data"][0]["status"] == "failed"
    })
    .await;
    let (_, page) = app.get_json("/v1/projects/p1/edges", &token).await;
    let error = page["data"][0]["error"].as_str().unwrap();
    assert!(error.contains("haproxy: cannot bind"), "{error}");
    assert!(error.contains("exit status: 3"), "{error}");
    assert_eq!(active_revision(&dir, "p1"), Some(1));
    until("follow says the cursor is not saved", || {
        follow.log().contains("the cursor is not saved")
    })
    .await;
    assert!(!dir.join(".cursor").exists());
    drop(follow);
    // proxy-settings edges says who runs what.
    let out = client(
        &app,
        &token,
        work.path(),
        &["proxy-settings", "edges", "p1", "-o", "table"],
    );
    assert!(out.status.success(), "{out:#?}");
    let first = out.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("1 failed on 1: --exec exit status: 3: haproxy: cannot bind"),
        "{first}"
    );
    let out = client(
        &app,
        &token,
        work.path(),
        &["proxy-settings", "edges", "p1", "--jq", ".[0].name"],
    );
    assert_eq!(out.stdout.trim(), "edge-9", "{out:#?}");

    // With --once, a failed --exec is exit status 3, and no summary: a
    // script can tell that the reload failed.
    let once = Following::on(
        &app,
        &token,
        work.path(),
        &[&args[..], &["--once"]].concat(),
    );
    let log = once.log.clone();
    let (status, stdout) = once.finish();
    let log = std::fs::read_to_string(log).unwrap();
    assert_eq!(status.code(), Some(3), "{log}");
    assert_eq!(stdout, "");
    let last = log.lines().last().unwrap();
    assert!(
        last.starts_with("error: --exec exit status: 3: haproxy: cannot bind"),
        "{log}"
    );
    assert!(!dir.join(".cursor").exists());
}

/// After a failed --exec, the next one that succeeds applied every file:
/// the projects it failed on are reported applied, not only the one whose
/// change ran it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_that_succeeds_again_reports_every_project_applied() {
    let (app, token, _) = two_organizations(Backend::Sqlite).await;
    app.seed(vec![
        project("p2", 1, 1),
        settings("p1", 1, true),
        settings("p2", 1, true),
    ])
    .await;
    let work = tempfile::tempdir().unwrap();
    let dir_arg = work.path().join("edge").display().to_string();
    let org1 = org_id(1);
    let args = [
        "--organization",
        &org1,
        "--name",
        "edge-1",
        "--dir",
        &dir_arg,
        "--exec",
        "test -f ../reload-works",
    ];
    let _follow = Following::on(&app, &token, work.path(), &args);
    let status = |project: &'static str| {
        let app = &app;
        let token = &token;
        async move {
            let path = format!("/v1/projects/{project}/edges");
            let (_, page) = app.get_json(&path, token).await;
            page["data"][0]["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }
    };
    for project in ["p1", "p2"] {
        eventually("the failure is reported", || async {
            status(project).await == "failed"
        })
        .await;
    }
    std::fs::write(work.path().join("reload-works"), "").unwrap();
    describe(&app, &token, "p2", "runs --exec again").await;
    for project in ["p2", "p1"] {
        eventually("the success is reported", || async {
            status(project).await == "applied"
        })
        .await;
    }
}

/// `follow` without what to follow names both ways to say it.
#[test]
fn follow_without_a_project_names_both_ways_to_choose() {
    let work = tempfile::tempdir().unwrap();
    let mut command = proxydeck(work.path());
    command.args(["follow", "--dir", "edge", "--once"]);
    let out = finish(command, None);
    assert_eq!(out.status.code(), Some(2), "{out:#?}");
    out.error(&["--project", "--organization"]);
}

/// A stand-in for the service that answers what an attacker would (the
/// real service never sends such ids): a listing of projects whose ids
/// are paths out of the folder, and changes naming paths followed by a
/// 404. Only `good` is a project. `good`'s description is `one` at its
/// first read, `two` after; its domains include names that are not host
/// names (a line break, a path).
mod hostile {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Router;
    use axum::extract::{Path, State};
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::{IntoResponse, Response};
    use axum::routing::{get, post};
    use futures_util::StreamExt as _;
    use serde_json::{Value, json};

    pub struct Hostile {
        pub url: String,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Hostile {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    #[derive(Clone)]
    struct Script {
        /// Listed as the organization's projects.
        listed: Vec<String>,
        /// Named by the stream's changes, before `good`'s.
        changed: Vec<String>,
        reads_of_good: Arc<AtomicUsize>,
    }

    /// Serves on loopback until dropped.
    pub async fn serve(listed: &[&str], changed: &[&str]) -> Hostile {
        let script = Script {
            listed: listed.iter().map(|id| (*id).to_owned()).collect(),
            changed: changed.iter().map(|id| (*id).to_owned()).collect(),
            reads_of_good: Arc::default(),
        };
        let router = Router::new()
            .route("/v1/changes", get(changes))
            .route("/v1/projects", get(projects))
            .route("/v1/projects/{id}", get(one_project))
            .route("/v1/projects/{id}/proxy-settings", get(revisions))
            .route("/v1/projects/{id}/domains", get(domains))
            .route(
                "/v1/projects/{id}/edges",
                post(|| async { json_answer(json!({})) }),
            )
            .fallback(|| async { not_found() })
            .with_state(script);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        Hostile { url, task }
    }

    fn json_answer(body: Value) -> Response {
        (
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }

    fn not_found() -> Response {
        let body = json!({"error": {"type": "not_found_error", "message": "no such project"}});
        (StatusCode::NOT_FOUND, json_answer(body)).into_response()
    }

    fn list(data: Vec<Value>) -> Response {
        json_answer(json!({"object": "list", "url": "/v1/x", "has_more": false, "data": data}))
    }

    /// The head at cursor 1; the stream: each of `changed` deleted, then
    /// `good` updated (cursor 2 + their number), then nothing.
    async fn changes(State(script): State<Script>, headers: HeaderMap) -> Response {
        let streaming = headers
            .get(header::ACCEPT)
            .is_some_and(|accept| accept.as_bytes() == b"text/event-stream");
        if !streaming {
            let head = json!({"object": "changes", "data": [], "cursor": "1",
                              "has_more": false, "reset": false});
            return json_answer(head);
        }
        let mut frames = Vec::new();
        let named = script
            .changed
            .iter()
            .map(|id| (id.as_str(), "project.deleted"));
        let all = named.chain([("good", "project.updated")]);
        for (cursor, (project, kind)) in (2..).zip(all) {
            let change = json!({"object": "change", "cursor": cursor.to_string(), "type": kind,
                                "at": "2026-03-01T00:00:00.000Z", "organization_id": "o",
                                "project_id": project, "version": 2});
            frames.push(Ok::<_, std::io::Error>(format!(
                "event: change\nid: {cursor}\ndata: {change}\n\n"
            )));
        }
        let body = futures_util::stream::iter(frames).chain(futures_util::stream::pending());
        (
            [(header::CONTENT_TYPE, "text/event-stream")],
            axum::body::Body::from_stream(body),
        )
            .into_response()
    }

    async fn projects(State(script): State<Script>) -> Response {
        list(
            script
                .listed
                .iter()
                .map(|id| project(id, "listed"))
                .collect(),
        )
    }

    fn project(id: &str, description: &str) -> Value {
        json!({"object": "project", "id": id, "description": description})
    }

    /// Any listed project exists (an attacker wants it written); `good`
    /// changes once; any other is gone.
    async fn one_project(State(script): State<Script>, Path(id): Path<String>) -> Response {
        if id == "good" {
            let reads = script.reads_of_good.fetch_add(1, Ordering::SeqCst);
            return json_answer(project(&id, if reads == 0 { "one" } else { "two" }));
        }
        match script.listed.contains(&id) {
            true => json_answer(project(&id, "listed")),
            false => not_found(),
        }
    }

    /// `good`'s domains: one verified, one pending, and names that would
    /// write lines and keys of their own.
    async fn domains(Path(id): Path<String>) -> Response {
        if id != "good" {
            return list(vec![]);
        }
        let domain = |name: &str, verified: bool| json!({"object": "domain", "name": name, "dns_status": verified});
        list(vec![
            domain("good.example.com", true),
            domain("pending.example.com", false),
            domain("evil.example.com x\nother.example.com", true),
            domain("Upper.Example.com", true),
            domain("../x", true),
        ])
    }

    async fn revisions(State(script): State<Script>, Path(id): Path<String>) -> Response {
        if id != "good" && !script.listed.contains(&id) {
            return not_found();
        }
        list(vec![
            json!({"object": "proxy_settings", "revision": 1, "is_active": true,
                         "backends": [], "routes": []}),
        ])
    }
}

/// A service that lists projects whose ids are paths (`../x`, `/x`), and
/// sends changes naming paths followed by a 404, gets nothing written or
/// removed outside the folder, and no line of its own in the routing
/// index; a link placed in the folder is not followed out of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_keeps_what_a_hostile_service_sends_inside_its_folder() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("a/b");
    let dir_arg = dir.display().to_string();
    // Folders a change's 404 would remove, each with something inside.
    let victim = work.path().join("victim");
    let near = work.path().join("a/near");
    for folder in [&victim, &near] {
        std::fs::create_dir_all(folder).unwrap();
        std::fs::write(folder.join("keep.txt"), "mine").unwrap();
    }
    let listed = ["../outside-write", "../../outside-write", "good"];
    let changed = [victim.to_str().unwrap(), "../near"];
    let service = hostile::serve(&listed, &changed).await;
    let org = org_id(1);
    let args = ["--organization", &org, "--dir", &dir_arg, "--no-report"];
    let follow = Following::start(&service.url, "pxd_any", work.path(), &args);
    until("good's change is applied", || {
        read_json(&dir.join("good/project.json")).is_some_and(|p| p["description"] == "two")
    })
    .await;
    until("the cursor passes the changes", || {
        saved_cursor(&dir).as_deref() == Some("4")
    })
    .await;
    assert!(!work.path().join("a/outside-write").exists());
    assert!(!work.path().join("outside-write").exists());
    for folder in [&victim, &near] {
        let kept = std::fs::read_to_string(folder.join("keep.txt"));
        assert_eq!(kept.ok().as_deref(), Some("mine"), "{}", folder.display());
    }
    assert!(
        follow
            .log()
            .contains("\"../outside-write\", which is no project id"),
        "{}",
        follow.log()
    );
    // Only the verified name in its one form is routed.
    let routing = std::fs::read_to_string(dir.join("routing.map")).unwrap();
    let lines: Vec<&str> = routing.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines, ["good.example.com good"], "{routing}");
    drop(follow);

    // A link in the folder, where good's folder would be, to a folder
    // outside: nothing is written through it; follow stops, saying so.
    let linked = work.path().join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    let second = work.path().join("second");
    std::fs::create_dir_all(&second).unwrap();
    std::os::unix::fs::symlink(&linked, second.join("good")).unwrap();
    let second_arg = second.display().to_string();
    let args = [
        "--organization",
        &org,
        "--dir",
        &second_arg,
        "--no-report",
        "--once",
    ];
    let once = Following::start(&service.url, "pxd_any", work.path(), &args);
    let log = once.log.clone();
    let (status, _) = once.finish();
    let log = std::fs::read_to_string(log).unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("a link out of --dir is not followed"), "{log}");
    assert_eq!(std::fs::read_dir(&linked).unwrap().count(), 0);
}
