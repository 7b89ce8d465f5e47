//! What only the embedded store does: its file can disappear from under
//! the service (a volume unmounted, a restore under way). Requests then get
//! 503 promptly and the service serves again once the file is back. And a
//! page read again while nothing committed comes from memory.

use std::time::{Duration, Instant};

use crate::helpers::*;

const LISTINGS: [&str; 3] = [
    "/v1/projects",
    "/v1/api_tokens",
    "/v1/projects/p1/proxy-settings",
];

/// A store that cannot be reached answers 503 `api_error` promptly, with
/// nothing of the cause, and the service recovers by itself. Requests flow
/// the whole time: while the file is away, each is served (from the file
/// still open) or a prompt 503; once it is back, each is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_outage_is_503_and_recovers() {
    let app = TestApp::spawn_impatient().await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let token = app.token("u1").await;
    assert_eq!(app.get("/v1/projects", &token).await.status(), 200);
    let started = Instant::now();
    let load = RequestLoad::start(&app, "/v1/projects", &token, 4);
    load.until("requests flow", |seen| seen.count(200, started) >= 8)
        .await;

    let outage_began = Instant::now();
    let moved = app.take_store_away();
    for path in LISTINGS {
        let started = Instant::now();
        let response = app.get(path, &token).await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "not prompt: {:?}",
            started.elapsed()
        );
        assert_eq!(response.headers().get("retry-after").unwrap(), "1");
        let (status, body) = json_of(response).await;
        assert_eq!(status, 503, "{path}: {body}");
        assert_eq!(assert_error_shape(&body), "api_error");
        let text = body.to_string();
        for leak in ["SQLite", "sqlite", "SELECT", ".db", "/tmp", "panicked"] {
            assert!(!text.contains(leak), "{leak} in {text}");
        }
    }

    // The file is back: the service serves again without a restart.
    app.bring_store_back(moved);
    let back = Instant::now();
    let (status, body) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), ["p1"]);
    // The pool may take a retry (at most half the store timeout) to open
    // its connections again; every request sent after that is answered.
    let recovered_by = back + Duration::from_millis(300);
    load.until("answers to requests sent after the recovery", |seen| {
        seen.answered_after(recovered_by) >= 8
    })
    .await;
    let answers = load.finish().await;
    assert_outage_answers(&answers, outage_began, recovered_by, Duration::from_secs(2));
}

/// The checksum refuses a mistyped token with no store look-up: it is
/// refused even while the store is unreachable.
#[tokio::test]
async fn a_mistyped_token_is_refused_without_asking_the_store() {
    let app = TestApp::spawn_impatient().await;
    app.seed(vec![org(1), user("u1", &[1])]).await;
    let token = app.token("u1").await;
    let moved = app.take_store_away();

    let (status, body) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 503, "a real token needs the store: {body}");
    let mut mistyped = token.clone().into_bytes();
    mistyped[20] = if mistyped[20] == b'A' { b'B' } else { b'A' };
    let (status, body) = app
        .get_json("/v1/projects", &String::from_utf8(mistyped).unwrap())
        .await;
    assert_eq!(status, 401, "{body}");
    app.bring_store_back(moved);
}

/// A page read again while nothing committed comes from memory; a commit
/// by anyone else (here a plain SQLite connection, as the `sqlite3` shell
/// would make) is seen by the next read, and so is one in the middle of
/// a walk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_comes_from_memory_until_anything_commits() {
    let store = TestStore::new(Backend::Sqlite).await;
    let mut lines = vec![org(1), user("u1", &[1])];
    lines.extend((0..5).map(|i| project(&format!("p{i}"), 1, i)));
    seed(store.store.as_ref(), lines).await.unwrap();
    let org_1 = organizations(store.store.as_ref(), &[1]).await;
    let read = || async {
        first_page_of(store.store.as_ref(), &org_1, 3)
            .await
            .unwrap()
    };
    // First sighting, then kept, then from memory.
    let first = read().await;
    read().await;
    let memory = page_bodies("memory");
    assert_eq!(read().await, first);
    assert_eq!(page_bodies("memory") - memory, 3.0, "not from memory");

    let by_hand = rusqlite::Connection::open(&store.path).unwrap();
    let changed = by_hand
        .execute(
            "UPDATE projects SET body = replace(body, '\"description\":\"\"', \
             '\"description\":\"by hand\"') WHERE id = 'p3'",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let (memory, file) = (page_bodies("memory"), page_bodies("database"));
    let after = read().await;
    assert!(after.contains("by hand"), "{after}");
    assert_eq!(
        page_bodies("memory"),
        memory,
        "a page from before the commit"
    );
    assert_eq!(page_bodies("database") - file, 3.0);
    // Nothing committed since: from memory again, with the change.
    assert_eq!(read().await, after);
    assert_eq!(page_bodies("memory") - memory, 3.0);

    // A commit that touches no project still counts: pages are read again.
    by_hand
        .execute(
            "UPDATE users SET email = 'new@example.com' WHERE id = 'u1'",
            [],
        )
        .unwrap();
    let file = page_bodies("database");
    assert_eq!(read().await, after);
    assert_eq!(page_bodies("database") - file, 3.0);
}

/// A create refused by an outage (503) does not use its Idempotency-Key
/// up: the client's retries with the same key, once the store is back,
/// create the project once, and a retry after that gets the first answer
/// again.
#[tokio::test]
async fn a_create_retried_after_a_503_with_its_key_creates_once() {
    let app = TestApp::spawn_impatient().await;
    app.seed(vec![org(1), user("u1", &[1])]).await;
    let token = app.token("u1").await;
    let body = serde_json::json!({"organization_id": org_id(1), "slug": "retried"});
    let key = [("idempotency-key", "create-retried-1")];
    let create = || {
        send(
            &app,
            reqwest::Method::POST,
            "/v1/projects",
            &token,
            &key,
            Some(&body),
        )
    };

    // Used once, the token is known to the token cache (when it is on):
    // the outage then meets the write itself, past authentication.
    assert_eq!(app.get("/v1/projects", &token).await.status(), 200);
    let moved = app.take_store_away();
    let (status, refused, _) = create().await;
    assert_eq!(status, 503, "{refused}");
    app.bring_store_back(moved);
    // Retried as a client does on 503 (the pool may need one retry to
    // open its connections again).
    let mut answer = create().await;
    for _ in 0..20 {
        if answer.0 != 503 {
            break;
        }
        answer = create().await;
    }
    let (status, created, tag) = answer;
    assert_eq!(status, 200, "{created}");
    let (status, replayed, replayed_tag) = create().await;
    assert_eq!((status, &replayed, &replayed_tag), (200, &created, &tag));
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(ids(&listing), [created["id"].as_str().unwrap()]);
}
