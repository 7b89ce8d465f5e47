//! Several instances of the service on one store, as behind a load
//! balancer: each with its own store connections, token cache and
//! `last_used_at` notes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use proxydeck::domain::time::Timestamp;
use proxydeck::domain::token;
use proxydeck::store::TokenUse;
use serde_json::json;

use super::BACKEND;
use crate::helpers::*;

async fn two_instances(projects: usize) -> (TestApp, TestApp, String) {
    let first = TestApp::spawn(BACKEND).await;
    let mut lines = vec![org(1), user("u1", &[1])];
    for i in 0..projects {
        lines.push(project(&format!("p{i:03}"), 1, (i / 3) as i64));
    }
    first.seed(lines).await;
    let second = first.another_instance().await;
    let token = first.token("u1").await;
    (first, second, token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_alternating_between_instances_is_one_consistent_list() {
    require!(BACKEND);
    let (first, second, token) = two_instances(47).await;
    for direction in ["DESC", "ASC"] {
        let whole = walk(
            &first,
            &format!("/v1/projects?limit=100&order_direction={direction}"),
            &token,
        )
        .await;
        assert_eq!(whole.len(), 47);
        let mut seen = Vec::new();
        let mut start: Option<String> = None;
        for turn in 0.. {
            let app = if turn % 2 == 0 { &first } else { &second };
            let mut path = format!("/v1/projects?limit=6&order_direction={direction}");
            if let Some(key) = &start {
                path.push_str(&format!("&start_key={key}"));
            }
            let (status, body) = app.get_json(&path, &token).await;
            assert_eq!(status, 200, "{body}");
            seen.extend(ids(&body));
            if !body["has_more"].as_bool().unwrap() {
                break;
            }
            start = body["last_key"].as_str().map(str::to_owned);
        }
        assert_eq!(seen, whole, "{direction}");
    }
}

/// A page one instance has served shows, at once, a change written
/// through the other: no instance serves a page from memory of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_shows_at_once_a_change_written_through_the_other_instance() {
    require!(BACKEND);
    let (first, second, token) = two_instances(8).await;
    let path = "/v1/projects?limit=3";
    let descriptions = |body: &serde_json::Value| {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["description"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let (_, before) = first.get_json(path, &token).await;
    let (_, again) = first.get_json(path, &token).await;
    assert_eq!(before, again);
    assert_eq!(ids(&before), ["p007", "p006", "p005"]);

    second
        .seed(vec![serde_json::json!({"object": "project", "id": "p006",
            "organization_id": org_id(1), "description": "written elsewhere"})])
        .await;
    let (status, after) = first.get_json(path, &token).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(ids(&after), ["p007", "p006", "p005"]);
    assert_eq!(descriptions(&after), ["", "written elsewhere", ""]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_through_one_instance_stops_working_on_the_other() {
    require!(BACKEND);
    let (first, second, _) = two_instances(1).await;
    let (revoked, secret) = first.token_with("u1", "leaked", None).await;
    // Both instances have it cached.
    assert_eq!(first.get("/v1/projects", &secret).await.status(), 200);
    assert_eq!(second.get("/v1/projects", &secret).await.status(), 200);
    first
        .store
        .run(RevokeToken(String::from(&revoked.id)))
        .await
        .unwrap();
    for instance in [&first, &second] {
        instance.clock.advance(CACHE_TTL);
    }
    for instance in [&second, &first] {
        let (status, body) = instance.get_json("/v1/projects", &secret).await;
        assert_eq!(status, 401, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("revoked")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_used_at_from_several_instances_never_goes_backwards() {
    require!(BACKEND);
    let (first, second, _) = two_instances(1).await;
    let (used, secret) = first.token_with("u1", "shared", None).await;
    // Reported out of order by the two instances' stores.
    let at = |ms| Timestamp::from_millis(ms).unwrap();
    let report = |ms| {
        vec![TokenUse {
            token_id: used.id.clone(),
            used_at: at(ms),
        }]
    };
    first
        .store
        .run(RecordTokenUses(report(3_000_000)))
        .await
        .unwrap();
    second
        .store
        .run(RecordTokenUses(report(2_000_000)))
        .await
        .unwrap();
    let stored = || async {
        first
            .store
            .run(FindToken(token::digest(&secret)))
            .await
            .unwrap()
            .unwrap()
            .last_used_at
    };
    assert_eq!(stored().await, Some(at(3_000_000)));

    // And through the instances' own flushers: the later use wins, even
    // when the earlier one is written last. The first instance's use is a
    // minute later (its clock moved).
    let before = Timestamp::now();
    assert_eq!(second.get("/v1/projects", &secret).await.status(), 200);
    first.clock.advance(Duration::from_secs(60));
    assert_eq!(first.get("/v1/projects", &secret).await.status(), 200);
    first.flush_token_uses().await;
    second.flush_token_uses().await;
    let last = stored().await.expect("last_used_at is set");
    assert!(
        last >= before.plus_seconds(60).unwrap() && last <= first.clock.timestamp(),
        "{last}"
    );
    let (_, body) = second.get_json("/v1/api_tokens?name=shared", &secret).await;
    assert_eq!(body["data"][0]["last_used_at"], last.to_string());
}

/// Writes through the management API on one instance while readers on the
/// other, caches on, check that every answer shows at least the writes
/// that completed before their request began: the listing and getProject.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_writes_on_one_instance_are_seen_by_every_later_read_on_the_other() {
    require!(BACKEND);
    let (first, second, token) = two_instances(6).await;
    let (first, second) = (Arc::new(first), Arc::new(second));
    const WRITES: u64 = 30;
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (first, written, token) = (first.clone(), written.clone(), token.clone());
        tokio::spawn(async move {
            for step in 1..=WRITES {
                let response = first
                    .client
                    .post(first.url("/v1/projects/p005"))
                    .bearer_auth(&token)
                    .json(&json!({"description": format!("v{step}")}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
                written.store(step, Ordering::SeqCst);
            }
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|reader| {
            let (second, written, token) = (second.clone(), written.clone(), token.clone());
            tokio::spawn(async move {
                let paths = ["/v1/projects?limit=2", "/v1/projects/p005"];
                let mut checked = 0;
                while written.load(Ordering::SeqCst) < WRITES {
                    let floor = written.load(Ordering::SeqCst);
                    let path = paths[(checked + reader) % paths.len()];
                    let (status, body) = second.get_json(path, &token).await;
                    assert_eq!(status, 200, "{body}");
                    let project = if body["object"] == "list" {
                        &body["data"][0]
                    } else {
                        &body
                    };
                    assert_eq!(project["id"], "p005", "{body}");
                    let shown = project["description"].as_str().unwrap();
                    let version: u64 = shown.trim_start_matches('v').parse().unwrap_or(0);
                    assert!(
                        version >= floor,
                        "{path}: v{version} after write {floor} completed"
                    );
                    checked += 1;
                }
                checked
            })
        })
        .collect();
    writer.await.unwrap();
    for reader in readers {
        assert!(reader.await.unwrap() > 0, "a reader checked nothing");
    }
}

/// Three instances flushing the uses of the same tokens at once, each in
/// its own order (the flusher's order is a hash map's): every flush is
/// written, none meets a deadlock, and every token keeps its latest use.
/// Before the flush took its row locks in one order, PostgreSQL found a
/// deadlock (40P01) in the first round and refused one of the flushes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_flushing_the_same_tokens_at_once_never_deadlock() {
    require!(BACKEND);
    const TOKENS: usize = 150;
    const ROUNDS: i64 = 4;
    let (first, second, _) = two_instances(0).await;
    let third = first.another_instance().await;
    let mut tokens = Vec::new();
    for n in 0..TOKENS {
        tokens.push(first.token_with("u1", &format!("t{n:03}"), None).await);
    }
    let at = |ms| Timestamp::from_millis(ms).unwrap();
    for round in 0..ROUNDS {
        let barrier = Arc::new(tokio::sync::Barrier::new(3));
        let flushes: Vec<_> = [&first, &second, &third]
            .into_iter()
            .enumerate()
            .map(|(instance, app)| {
                // Ascending, descending, and from the middle outwards.
                let mut order: Vec<usize> = (0..TOKENS).collect();
                match instance {
                    0 => {}
                    1 => order.reverse(),
                    _ => order.rotate_left(TOKENS / 2),
                }
                let uses: Vec<TokenUse> = order
                    .into_iter()
                    .map(|n| TokenUse {
                        token_id: tokens[n].0.id.clone(),
                        used_at: at(1_000_000 + round * 1_000 + instance as i64),
                    })
                    .collect();
                let (store, barrier) = (app.store.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store.run(RecordTokenUses(uses)).await
                })
            })
            .collect();
        let mut results = Vec::new();
        for flush in flushes {
            results.push(flush.await.unwrap());
        }
        assert!(
            results.iter().all(Result::is_ok),
            "round {round}: {results:?}"
        );
    }
    let latest = at(1_000_000 + (ROUNDS - 1) * 1_000 + 2);
    for (token, secret) in &tokens {
        let stored = first
            .store
            .run(FindToken(token::digest(secret)))
            .await
            .unwrap()
            .unwrap()
            .last_used_at;
        assert_eq!(stored, Some(latest), "{}", token.name);
    }
}

/// A restarted instance opens its store with the options it was opened
/// with (here a pool size other than the default), not the suite's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_opens_the_store_with_its_own_options() {
    require!(BACKEND);
    let store_options = proxydeck::store::StoreOptions {
        pool_size: 3,
        ..suite_store_options()
    };
    assert_ne!(suite_store_options().pool_size, 3);
    let app = TestApp::spawn_with(BACKEND, test_options(), store_options).await;
    let sizes = |app: &TestApp| -> Vec<(&'static str, usize)> {
        let pools = app.store.pool_use();
        pools
            .iter()
            .map(|pool| (pool.pool, pool.max_size))
            .collect()
    };
    let before = sizes(&app);
    let app = app.restart().await;
    assert_eq!(sizes(&app), before);
    assert_eq!(app.store_options.pool_size, 3);
}
