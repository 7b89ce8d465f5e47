//! The caches of the read path change no answer: with every cache on and
//! with none, the same requests get the same bodies and tags; and with
//! every cache on, no page is older than a write that completed before
//! the request began, while writes flow.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use proxydeck::store::{Caches, StoreOptions};
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

fn with_caches(caches: Caches) -> (proxydeck::app::ServiceOptions, StoreOptions) {
    let mut options = test_options();
    options.auth.cache = caches.token;
    // Token use written during the test would change the token listing
    // between the two instances' answers.
    options.auth.usage_flush_interval = std::time::Duration::from_secs(3600);
    let store = StoreOptions {
        caches,
        ..StoreOptions::default()
    };
    (options, store)
}

/// Organizations, a caller in all of them, one in one, one in five; a
/// hundred and fifty projects spread unevenly, revisions, tokens.
fn data() -> Vec<Value> {
    let mut lines: Vec<Value> = (1..=40).map(org).collect();
    lines.push(user("all", &(1..=40).collect::<Vec<_>>()));
    lines.push(user("one", &[1]));
    lines.push(user("five", &[2, 3, 5, 8, 13]));
    for i in 0..150u32 {
        let organization = if i % 3 == 0 { 1 } else { 1 + i % 40 };
        lines.push(project(&format!("p{i:03}"), organization, i64::from(i / 2)));
    }
    for revision in 1..=12 {
        lines.push(settings("p000", revision, revision == 12));
    }
    lines
}

/// A seeded random source (SplitMix64): the same requests every run.
struct Random(u64);

impl Random {
    /// A number in `range`.
    fn random_range(&mut self, range: std::ops::RangeInclusive<u32>) -> u32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let span = u64::from(range.end() - range.start()) + 1;
        range.start() + ((z ^ (z >> 31)) % span) as u32
    }
}

/// Requests of every listing, drawn with `random`, each a few times.
fn requests(random: &mut Random) -> Vec<String> {
    let mut paths = Vec::new();
    for _ in 0..60 {
        let path = match random.random_range(0..=5) {
            0 => "/v1/projects".to_string(),
            1 => format!(
                "/v1/projects?limit={}&start_key=p{:03}",
                random.random_range(1..=30),
                random.random_range(0..=149)
            ),
            2 => format!(
                "/v1/projects?order_direction=ASC&limit={}&start_key=p{:03}",
                random.random_range(1..=30),
                random.random_range(0..=149)
            ),
            3 => format!(
                "/v1/projects?organization_id={}&limit=5",
                org_id(random.random_range(1..=8))
            ),
            4 => format!(
                "/v1/projects/p000/proxy-settings?limit=5&start_key={}",
                random.random_range(2..=12)
            ),
            _ => "/v1/api_tokens?limit=2".to_string(),
        };
        // Seen once, then kept, then answered from memory.
        paths.extend(std::iter::repeat_n(path, 3));
    }
    paths
}

async fn answer(app: &TestApp, path: &str, token: &str) -> (u16, Option<String>, String) {
    let response = app.get(path, token).await;
    let status = response.status().as_u16();
    let tag = response
        .headers()
        .get("etag")
        .map(|tag| tag.to_str().unwrap().to_owned());
    (status, tag, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_on_and_off_give_the_same_answers() {
    require!(BACKEND);
    let (options, store_options) = with_caches(Caches::ALL);
    let on = TestApp::spawn_with(BACKEND, options, store_options).await;
    let (options, store_options) = with_caches(Caches::NONE);
    let off = on.another_instance_on(options, store_options).await;
    on.seed(data()).await;
    let mut tokens = Vec::new();
    for who in ["all", "one", "five"] {
        for name in ["a", "b", "c"] {
            tokens.push(on.token_with(who, name, None).await.1);
        }
    }
    let mut random = Random(17);
    for path in requests(&mut random) {
        let token = &tokens[random.random_range(0..=tokens.len() as u32 - 1) as usize];
        let with = answer(&on, &path, token).await;
        let without = answer(&off, &path, token).await;
        assert_eq!(with, without, "{path}");
    }
}

/// A writer changes a project and makes and revokes tokens through the
/// store; readers, caches on, each note the writes completed before their
/// request and check the answer shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cached_page_is_older_than_a_write_completed_before_the_request() {
    require!(BACKEND);
    let (options, store_options) = with_caches(Caches::ALL);
    let app = Arc::new(TestApp::spawn_with(BACKEND, options, store_options).await);
    let mut lines = data();
    lines.push(project("fresh", 1, 10_000));
    app.seed(lines).await;
    let reader = app.token("all").await;

    // Writes completed: the project's version, and of the token steps
    // (odd: a token made; even: the token of the step before revoked).
    let written = Arc::new(AtomicU64::new(0));
    let churned: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let writer = {
        let (app, written, churned) = (app.clone(), written.clone(), churned.clone());
        tokio::spawn(async move {
            for step in 1..=60u64 {
                let mut fresh = project("fresh", 1, 10_000);
                fresh["description"] = json!(format!("v{step}"));
                app.seed(vec![fresh]).await;
                if step % 2 == 1 {
                    let (token, _) = app.token_with("all", "churn", None).await;
                    churned.lock().unwrap().push(token.id);
                } else {
                    let id = churned.lock().unwrap().last().cloned().unwrap();
                    app.store.run(RevokeToken(String::from(&id))).await.unwrap();
                }
                written.store(step, Ordering::SeqCst);
            }
        })
    };
    let readers: Vec<_> = (0..4)
        .map(|reader_number| {
            let (app, written, churned, reader) = (
                app.clone(),
                written.clone(),
                churned.clone(),
                reader.clone(),
            );
            tokio::spawn(async move {
                let paths = [
                    "/v1/projects?limit=3",
                    "/v1/projects?limit=3&organization_id=00000000-0000-7000-8000-000000000001",
                ];
                let mut checked = 0;
                while written.load(Ordering::SeqCst) < 60 {
                    let floor = written.load(Ordering::SeqCst);
                    let revoked: Vec<String> = {
                        let churned = churned.lock().unwrap();
                        // Tokens of completed even steps: revoked before
                        // this request began.
                        churned.iter().take((floor / 2) as usize).cloned().collect()
                    };
                    let path = paths[(checked + reader_number) % paths.len()];
                    let (status, body) = app.get_json(path, &reader).await;
                    assert_eq!(status, 200, "{body}");
                    let shown = body["data"][0]["description"].as_str().unwrap();
                    let version: u64 = shown.trim_start_matches('v').parse().unwrap_or(0);
                    assert!(
                        version >= floor,
                        "{path}: v{version} after write {floor} completed"
                    );
                    let (status, tokens) = app
                        .get_json("/v1/api_tokens?name=churn&limit=100", &reader)
                        .await;
                    assert_eq!(status, 200, "{tokens}");
                    for id in ids(&tokens) {
                        assert!(
                            !revoked.contains(&id),
                            "{id} was revoked before the request"
                        );
                    }
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
