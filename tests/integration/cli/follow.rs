//! `proxydeck follow` (docs/feed.md): the real binary keeps a folder in
//! step with a project's active revision through the change feed, runs
//! `--exec` after each change, resumes from its saved cursor after a
//! restart, and keeps the last files while the service is down.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use reqwest::Method;

use super::*;

/// A `proxydeck follow` child process, killed when dropped; its stderr
/// goes to a file.
struct Following {
    child: Child,
    log: PathBuf,
}

impl Following {
    fn start(app: &TestApp, token: &str, cwd: &Path, args: &[&str]) -> Self {
        let log = cwd.join(format!("follow-{}.log", rand::random::<u32>()));
        let mut command = proxydeck(cwd);
        command
            .arg("follow")
            .args(args)
            .args(["--url", &format!("http://{}", app.address)])
            .env("PROXYDECK_TOKEN", token)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("a log file"));
        Self {
            child: command.spawn().expect("follow starts"),
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
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
        .env("PROXYDECK_URL", format!("http://{}", app.address))
        .env("PROXYDECK_TOKEN", token);
    finish(command, None)
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn active_revision(dir: &Path, project: &str) -> Option<u64> {
    read_json(&dir.join(project).join("proxy-settings.json"))?["revision"].as_u64()
}

async fn write(app: &TestApp, token: &str, method: Method, path: &str, body: Value) {
    let (status, answer, _) = send(app, method, path, token, &[], Some(&body)).await;
    assert_eq!(status, 200, "{path}: {answer}");
}

fn revision(description: &str, address: &str) -> Value {
    json!({"description": description,
           "backends": [{"name": "origin", "address": address, "default": true}],
           "routes": [{"path": "/", "backend_name": "origin", "rank": "1"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_keeps_the_active_revision_and_resumes_from_its_cursor() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![
        org(1),
        user("u1", &[1]),
        project("p1", 1, 0),
        settings("p1", 1, true),
    ])
    .await;
    let token = app.token("u1").await;
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
    let follow = Following::start(&app, &token, work.path(), &args);
    until("revision 1 is written", || {
        active_revision(&dir, "p1") == Some(1)
    })
    .await;
    until("the cursor is saved", || dir.join(".cursor").is_file()).await;

    // A new revision, activated: the file follows, --exec runs.
    let revisions = "/v1/projects/p1/proxy-settings";
    write(
        &app,
        &token,
        Method::POST,
        revisions,
        revision("two", "two.example:443"),
    )
    .await;
    let activate = json!({"is_active": true});
    write(
        &app,
        &token,
        Method::POST,
        &format!("{revisions}/2"),
        activate,
    )
    .await;
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
    let cursor = std::fs::read_to_string(dir.join(".cursor")).unwrap();
    let description = json!({"description": "while stopped"});
    write(&app, &token, Method::POST, "/v1/projects/p1", description).await;
    let follow = Following::start(&app, &token, work.path(), &args);
    until("the project's change is written", || {
        read_json(&dir.join("p1/project.json")).is_some_and(|p| p["description"] == "while stopped")
    })
    .await;
    until("the cursor moves on", || {
        std::fs::read_to_string(dir.join(".cursor")).is_ok_and(|now| now != cursor)
    })
    .await;
    let resumed = format!("resuming after cursor {}", cursor.trim());
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_once_writes_an_organizations_projects_and_ends() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![
        org(1),
        org(2),
        user("u1", &[1, 2]),
        project("p1", 1, 0),
        project("p2", 1, 1),
        project("other", 2, 0),
        settings("p1", 1, false),
        settings("p1", 2, true),
    ])
    .await;
    let token = app.token("u1").await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    // A project the organization no longer has goes from the folder.
    std::fs::create_dir_all(dir.join("gone")).unwrap();
    std::fs::write(dir.join("gone/project.json"), "{}").unwrap();
    let org1 = org_id(1);
    let dir_arg = dir.display().to_string();
    let mut follow = Following::start(
        &app,
        &token,
        work.path(),
        &["--organization", &org1, "--dir", &dir_arg, "--once"],
    );
    let status = follow.child.wait().unwrap();
    assert!(status.success(), "{}", follow.log());
    assert_eq!(active_revision(&dir, "p1"), Some(2));
    assert_eq!(read_json(&dir.join("p2/project.json")).unwrap()["id"], "p2");
    assert!(!dir.join("p2/proxy-settings.json").exists());
    assert!(!dir.join("other").exists());
    assert!(!dir.join("gone").exists());
    assert!(dir.join(".cursor").is_file());

    // A project the token cannot see ends the command with a reason.
    let mut refused = Following::start(
        &app,
        &token,
        work.path(),
        &["--project", "nope", "--dir", &dir_arg, "--once"],
    );
    let status = refused.child.wait().unwrap();
    assert!(!status.success());
    assert!(
        refused.log().contains("no project \"nope\""),
        "{}",
        refused.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_exec_is_reported_and_keeps_the_cursor_back() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![
        org(1),
        user("u1", &[1]),
        project("p1", 1, 0),
        settings("p1", 1, true),
    ])
    .await;
    let token = app.token("u1").await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    let dir_arg = dir.display().to_string();
    let follow = Following::start(
        &app,
        &token,
        work.path(),
        &[
            "--project",
            "p1",
            "--name",
            "edge-9",
            "--dir",
            &dir_arg,
            "--exec",
            "echo 'haproxy: cannot bind' >&2; exit 3",
        ],
    );
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
    // proxy-settings edges says who runs what.
    let out = client(
        &app,
        &token,
        work.path(),
        &["proxy-settings", "edges", "p1"],
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
}
