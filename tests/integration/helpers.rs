//! The test harness: the real service on a loopback port, on a real SQLite
//! file in a fresh temporary folder, talked to over HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use proxydeck::app::{Service, ServiceOptions};
use proxydeck::auth::AuthOptions;
use proxydeck::domain::api_token::ApiToken;
use proxydeck::domain::import::{ImportBatch, ImportError, ObjectCounts, parse_line};
use proxydeck::domain::time::Timestamp;
use proxydeck::store::{self, DatabaseUrl, NewToken, Store, StoreOptions};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Token cache lifetime in tests: revocations show after this.
pub const CACHE_TTL: Duration = Duration::from_millis(200);
/// `last_used_at` flush period in tests.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// A client builder for loopback tests: no proxy, and the TLS provider the
/// crate's reqwest build expects installed.
pub fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy()
}

pub fn test_options() -> ServiceOptions {
    ServiceOptions {
        listen: "127.0.0.1:0".into(),
        auth: AuthOptions {
            cache_ttl: CACHE_TTL,
            usage_flush_interval: FLUSH_INTERVAL,
            ..AuthOptions::default()
        },
        ..ServiceOptions::default()
    }
}

/// A fresh SQLite store in its own temporary folder.
pub struct TestStore {
    pub store: Arc<dyn Store>,
    pub path: PathBuf,
    pub dir: TempDir,
}

impl TestStore {
    pub async fn new() -> Self {
        Self::with_options(StoreOptions::default()).await
    }

    pub async fn with_options(options: StoreOptions) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("proxydeck.db");
        let store = store::open(&DatabaseUrl::Sqlite(path.clone()), &options)
            .await
            .expect("the store opens");
        Self { store, path, dir }
    }
}

pub struct TestApp {
    pub address: SocketAddr,
    pub store: Arc<dyn Store>,
    pub db_path: PathBuf,
    pub client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    _dir: TempDir,
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(test_options(), StoreOptions::default()).await
    }

    pub async fn spawn_with(options: ServiceOptions, store_options: StoreOptions) -> Self {
        let TestStore { store, path, dir } = TestStore::with_options(store_options).await;
        let service = Service::bind(store.clone(), options)
            .await
            .expect("the service binds");
        let address = service.local_addr();
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(service.run(async {
            let _ = stop.await;
        }));
        Self {
            address,
            store,
            db_path: path,
            client: client_builder().build().expect("an HTTP client"),
            shutdown: Some(shutdown),
            task: Some(task),
            _dir: dir,
        }
    }

    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{path_and_query}", self.address)
    }

    /// GET with `Authorization: Bearer <token>`.
    pub async fn get(&self, path_and_query: &str, token: &str) -> reqwest::Response {
        self.client
            .get(self.url(path_and_query))
            .bearer_auth(token)
            .send()
            .await
            .expect("the request is answered")
    }

    /// GET, answering the status and the JSON body (checked to be JSON).
    pub async fn get_json(&self, path_and_query: &str, token: &str) -> (StatusCode, Value) {
        let response = self.get(path_and_query, token).await;
        json_of(response).await
    }

    /// Loads JSON objects through the import path.
    pub async fn seed(&self, lines: Vec<Value>) -> ObjectCounts {
        seed(self.store.as_ref(), lines)
            .await
            .expect("the fixture imports")
    }

    /// A new token for `user_id`; answers its secret.
    pub async fn token(&self, user_id: &str) -> String {
        self.token_with(user_id, "test", None).await.1
    }

    pub async fn token_with(
        &self,
        user_id: &str,
        name: &str,
        expires_at: Option<Timestamp>,
    ) -> (ApiToken, String) {
        mint(self.store.as_ref(), user_id, name, expires_at).await
    }

    /// A service whose store gives up after 300 ms: for outage tests.
    pub async fn spawn_impatient() -> Self {
        let store = StoreOptions {
            timeout: Duration::from_millis(300),
            ..StoreOptions::default()
        };
        Self::spawn_with(test_options(), store).await
    }

    /// Moves the database file away (a volume gone, a restore under way)
    /// and waits until the service's connections have noticed (they check
    /// at most once a second). Answers where the file went.
    pub async fn take_store_away(&self) -> PathBuf {
        let moved = self.db_path.with_extension("moved");
        std::fs::rename(&self.db_path, &moved).expect("the database file moves");
        tokio::time::sleep(Duration::from_millis(1100)).await;
        moved
    }

    pub fn bring_store_back(&self, moved: PathBuf) {
        std::fs::rename(moved, &self.db_path).expect("the database file comes back");
    }

    /// Stops the server and waits until it has finished.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("the service stops cleanly");
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

pub async fn mint(
    store: &dyn Store,
    user_id: &str,
    name: &str,
    expires_at: Option<Timestamp>,
) -> (ApiToken, String) {
    let (new_token, secret) = NewToken::mint(user_id.into(), name.into(), expires_at);
    let token = store
        .create_token(new_token)
        .await
        .expect("the token is stored");
    (token, secret)
}

/// Imports `lines` (JSON objects in the NDJSON format) into `store`.
pub async fn seed(store: &dyn Store, lines: Vec<Value>) -> Result<ObjectCounts, ImportError> {
    let (sender, receiver) = mpsc::channel::<ImportBatch>(1);
    let batch = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let number = i as u64 + 1;
            parse_line(&line.to_string())
                .map(|record| (number, record))
                .map_err(|e| ImportError::from_field(number, e))
        })
        .collect();
    sender.send(batch).await.expect("the channel is open");
    drop(sender);
    store.import(receiver).await
}

pub async fn json_of(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.bytes().await.expect("a body");
    let value: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&body)));
    assert_eq!(content_type.as_deref(), Some("application/json"), "{value}");
    (status, value)
}

/// Checks the error body shape of decisions.md section 3 and answers its
/// `type`.
pub fn assert_error_shape(body: &Value) -> String {
    let error = body["error"]
        .as_object()
        .unwrap_or_else(|| panic!("no error object: {body}"));
    let kind = error["type"].as_str().expect("a type").to_owned();
    assert!(
        [
            "invalid_request_error",
            "authentication_error",
            "forbidden_error",
            "not_found_error",
            "api_error"
        ]
        .contains(&kind.as_str()),
        "type off the list: {body}"
    );
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    for (key, value) in error {
        assert!(!value.is_null(), "{key} is null in {body}");
        assert!(
            ["type", "message", "params", "code"].contains(&key.as_str()),
            "unexpected {key}: {body}"
        );
    }
    if let Some(params) = error.get("params") {
        let params = params.as_array().expect("params is an array");
        assert!(!params.is_empty());
        for param in params {
            assert!(
                param["param"].is_string() && param["message"].is_string(),
                "{body}"
            );
        }
    }
    kind
}

/// The parameter a 400 names.
pub fn error_param(body: &Value) -> &str {
    body["error"]["params"][0]["param"]
        .as_str()
        .unwrap_or_else(|| panic!("no param: {body}"))
}

// ----- Fixtures -----

/// A deterministic organization id.
pub fn org_id(n: u32) -> String {
    format!("00000000-0000-7000-8000-{n:012x}")
}

/// A timestamp `seconds` after a fixed instant, as the wire shows it.
pub fn at(seconds: i64) -> String {
    Timestamp::parse("2026-03-01T00:00:00Z")
        .unwrap()
        .plus_seconds(seconds)
        .unwrap()
        .to_string()
}

pub fn org(n: u32) -> Value {
    json!({"object": "organization", "id": org_id(n), "name": format!("Org {n}")})
}

pub fn user(id: &str, orgs: &[u32]) -> Value {
    json!({"object": "user", "id": id, "email": format!("{id}@example.com"),
           "organizations": orgs.iter().map(|n| org_id(*n)).collect::<Vec<_>>()})
}

pub fn project(id: &str, org: u32, created_seconds: i64) -> Value {
    json!({"object": "project", "id": id, "organization_id": org_id(org),
           "slug": id, "created_at": at(created_seconds), "updated_at": at(created_seconds)})
}

pub fn settings(project_id: &str, revision: u32, active: bool) -> Value {
    json!({"object": "proxy_settings", "project_id": project_id, "revision": revision,
           "description": format!("r{revision}"), "is_active": active,
           "backends": [{"name": "origin", "address": "origin.example:443", "default": true}],
           "routes": [{"path": "/", "backend_name": "origin", "rank": "1"}]})
}

/// The ids of a listing's `data`.
pub fn ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {body}"))
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Follows `last_key` from `first` (a path with its query) to the end,
/// checking `has_more`, and answers every id in order.
pub async fn walk(app: &TestApp, path: &str, token: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut next = path.to_owned();
    for _ in 0..10_000 {
        let (status, body) = app.get_json(&next, token).await;
        assert_eq!(status, 200, "{body}");
        let page = ids(&body);
        seen.extend(page.iter().cloned());
        if !body["has_more"].as_bool().unwrap() {
            return seen;
        }
        assert_eq!(body["last_key"].as_str(), page.last().map(String::as_str));
        let separator = if path.contains('?') { '&' } else { '?' };
        next = format!(
            "{path}{separator}start_key={}",
            body["last_key"].as_str().unwrap()
        );
    }
    panic!("the walk did not end");
}
