//! The change feed on PostgreSQL, where writes run side by side: a write
//! whose change is numbered first but commits last is never skipped.

use proxydeck::store::StoreOptions;
use serde_json::{Value, json};

use crate::helpers::*;

async fn poll(app: &TestApp, token: &str, after: &str) -> Value {
    let (status, body) = app
        .get_json(&format!("/v1/changes?after={after}"), token)
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

fn projects_of(read: &Value) -> Vec<String> {
    read["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["project_id"].as_str().unwrap().to_owned())
        .collect()
}

/// The classic trap of a change log: a number taken before the commit.
/// Write "slow" takes its change's position, then waits (a trigger on
/// `changes` holds it on an advisory lock the test has); write "fast", in
/// another organization, comes after it. Had "fast" committed a later
/// position first, a follower reading then would move past "slow"'s and
/// never see it. Here "fast" waits for "slow" to commit, and a follower
/// reading before, between and after sees both, in commit order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_numbered_first_and_committed_last_is_not_skipped() {
    require!(Backend::Postgres);
    // Connections enough for two writes held and the follower's reads
    // beside them, and a timeout longer than the test holds a write.
    let store = StoreOptions {
        pool_size: 8,
        timeout: std::time::Duration::from_secs(30),
        ..suite_store_options()
    };
    let app = TestApp::spawn_with(Backend::Postgres, test_options(), store).await;
    app.seed(vec![
        org(1),
        org(2),
        user("u1", &[1, 2]),
        project("slow", 1, 0),
        project("fast", 2, 0),
    ])
    .await;
    let token = app.token("u1").await;
    // Its session keeps the lock: straight to PostgreSQL.
    let url = app.data.sql_url().to_owned();
    // A key no other test holds.
    let key: i64 = rand::random_range(1..i64::from(i32::MAX));
    app.data.execute(&format!(
        "CREATE FUNCTION hold_slow() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF NEW.project_id = 'slow' THEN PERFORM pg_advisory_xact_lock({key}); END IF;
           RETURN NEW;
         END $$;
         CREATE TRIGGER hold_slow BEFORE INSERT ON changes
           FOR EACH ROW EXECUTE FUNCTION hold_slow()"
    ));
    let (held, is_held) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let mut client = postgres_client(&url);
        client
            .execute("SELECT pg_advisory_lock($1)", &[&key])
            .unwrap();
        held.send(()).unwrap();
        let _ = released.recv();
    });
    is_held.recv().unwrap();
    let (status, start) = app.get_json("/v1/changes", &token).await;
    assert_eq!(status, 200);
    let start = start["cursor"].as_str().unwrap().to_owned();

    let describe = |project: &'static str| {
        let request = app
            .client
            .post(app.url(&format!("/v1/projects/{project}")))
            .bearer_auth(&token)
            .json(&json!({"description": project}));
        tokio::spawn(async move { request.send().await.unwrap().status().as_u16() })
    };
    let slow = describe("slow");
    let slow_pid = std::sync::Mutex::new(0);
    eventually("slow waits with its position taken", || async {
        let pid = app.data.count(&format!(
            "SELECT COALESCE(MAX(pid), 0)::bigint FROM pg_locks
              WHERE locktype = 'advisory' AND objid = {key} AND NOT granted"
        ));
        *slow_pid.lock().unwrap() = pid;
        pid != 0
    })
    .await;
    let slow_pid = slow_pid.into_inner().unwrap();
    let fast = describe("fast");
    eventually("fast has committed, or waits for slow", || async {
        fast.is_finished()
            || app.data.count(&format!(
                "SELECT COUNT(*) FROM pg_locks w JOIN pg_locks h
                    ON h.locktype = 'transactionid' AND h.transactionid = w.transactionid
                   AND h.granted AND h.pid = {slow_pid}
                 WHERE w.locktype = 'transactionid' AND NOT w.granted"
            )) > 0
    })
    .await;
    let between = poll(&app, &token, &start).await;
    release.send(()).unwrap();
    holder.join().unwrap();
    assert_eq!(slow.await.unwrap(), 200);
    assert_eq!(fast.await.unwrap(), 200);
    let after = poll(&app, &token, between["cursor"].as_str().unwrap()).await;
    let mut seen = projects_of(&between);
    seen.extend(projects_of(&after));
    assert_eq!(seen, ["slow", "fast"], "between: {between}, after: {after}");
    assert_eq!(
        projects_of(&poll(&app, &token, &start).await),
        ["slow", "fast"]
    );
}
