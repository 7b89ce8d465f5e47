//! The test harness: the real service on a loopback port, on a real SQLite
//! file in a fresh temporary folder or a real PostgreSQL schema of its own,
//! talked to over HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use proxydeck::app::{Service, ServiceOptions};
use proxydeck::auth::AuthOptions;
use proxydeck::domain::api_token::ApiToken;
use proxydeck::domain::import::{ImportBatch, ImportError, ObjectCounts, parse_line};
use proxydeck::domain::organization_set::OrganizationSet;
use proxydeck::domain::time::Timestamp;
use proxydeck::store::{self, Caches, DatabaseUrl, NewToken, Store, StoreOptions};
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
            cache: suite_caches().token,
            cache_ttl: CACHE_TTL,
            usage_flush_interval: FLUSH_INTERVAL,
            ..AuthOptions::default()
        },
        ..ServiceOptions::default()
    }
}

/// The caches the suite's services run with: every one, unless
/// `PROXYDECK_TEST_CACHES` says otherwise (`none`, as in CI's second run:
/// no answer may depend on a cache). Tests of a cache itself set theirs.
pub fn suite_caches() -> Caches {
    match std::env::var("PROXYDECK_TEST_CACHES") {
        Ok(caches) => Caches::parse(&caches).expect("PROXYDECK_TEST_CACHES names caches"),
        Err(_) => Caches::ALL,
    }
}

/// Store options with the suite's caches ([`suite_caches`]).
pub fn suite_store_options() -> StoreOptions {
    StoreOptions {
        caches: suite_caches(),
        ..StoreOptions::default()
    }
}

/// The store backends the behavioural suite runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Ends the test early, after a loud line, when `$backend` cannot be
/// reached here (see [`unavailable`]).
macro_rules! require {
    ($backend:expr) => {
        if crate::helpers::unavailable($backend) {
            return;
        }
    };
}
pub(crate) use require;

/// True when `backend` cannot be reached here: the caller should end the
/// test. PostgreSQL is found through `PROXYDECK_TEST_POSTGRES_URL`, else a
/// throwaway cluster (`initdb`/`pg_ctl`); without either, the test is
/// skipped with a loud line, or fails when `PROXYDECK_REQUIRE_POSTGRES` is
/// set (CI sets it).
pub fn unavailable(backend: Backend) -> bool {
    let Backend::Postgres = backend else {
        return false;
    };
    let Err(why) = postgres_base_url() else {
        return false;
    };
    if std::env::var_os("PROXYDECK_REQUIRE_POSTGRES").is_some() {
        panic!("PostgreSQL is required (PROXYDECK_REQUIRE_POSTGRES) but unavailable: {why}");
    }
    eprintln!(
        "\n######## SKIPPED: no PostgreSQL for this test ({why}).\n######## Set PROXYDECK_TEST_POSTGRES_URL=postgres://user@host:port/db or install initdb/pg_ctl.\n"
    );
    true
}

/// The PostgreSQL server tests use, found once per test process.
pub fn postgres_base_url() -> Result<&'static str, &'static str> {
    static FOUND: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Ok(url) = std::env::var("PROXYDECK_TEST_POSTGRES_URL") {
                return Ok(url);
            }
            shared_cluster()
        })
        .as_deref()
        .map_err(String::as_str)
}

/// A throwaway cluster for every test process of every run, made the first
/// time and started when needed, under a lock file. It is left running for
/// the next run; `pg_ctl -D target/tmp/postgres-cluster/data stop` stops it.
fn shared_cluster() -> Result<String, String> {
    use crate::postgres_cluster::Cluster;
    const PORT: u16 = 54329;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("postgres-cluster");
    let lock = std::fs::File::create(dir.with_extension("lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    let cluster = if Cluster::exists(&dir) {
        Cluster::reuse(&dir, PORT)?
    } else {
        Cluster::create(&dir, PORT)?
    };
    Ok(cluster.url())
}

/// A schema of its own in the test PostgreSQL database, dropped with this
/// guard: tests run in parallel and leave nothing behind.
pub struct Schema {
    base_url: String,
    name: String,
}

impl Schema {
    /// A new, empty schema.
    pub fn create(base_url: &str) -> Self {
        let name = format!("test_{}", uuid::Uuid::new_v4().simple());
        postgres_admin(base_url, &format!("CREATE SCHEMA {name}"));
        Self {
            base_url: base_url.to_owned(),
            name,
        }
    }

    /// A database URL whose connections work in this schema.
    pub fn url(&self) -> String {
        let separator = if self.base_url.contains('?') {
            '&'
        } else {
            '?'
        };
        format!(
            "{}{separator}options=-csearch_path%3D{}",
            self.base_url, self.name
        )
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // A connection of the test's server may still be inside a
        // transaction here (the last_used_at flusher's, say) while the
        // thread that would finish it waits on this drop: the DROP would
        // wait for its locks forever. End such connections first.
        // A connection may also take its first lock between the two
        // statements: the DROP then gives up after a second (lock_timeout)
        // and both run again, rather than waiting for ever.
        let name = &self.name;
        let sql = format!(
            "SET lock_timeout = '1s';
             SELECT pg_terminate_backend(l.pid) FROM pg_locks l
               JOIN pg_class c ON c.oid = l.relation
               JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = '{name}' AND l.pid <> pg_backend_pid();
             DROP SCHEMA IF EXISTS {name} CASCADE"
        );
        let mut failures = 0;
        while let Err(error) = try_postgres_admin(&self.base_url, &sql) {
            failures += 1;
            assert!(failures < 30, "cannot drop schema {name}: {error}");
        }
    }
}

/// Runs `sql` on a connection of its own (on a thread of its own: the
/// blocking client may not run on an async thread).
pub fn postgres_admin(url: &str, sql: &str) {
    try_postgres_admin(url, sql).expect("the statement runs");
}

/// [`postgres_admin`], telling its error.
fn try_postgres_admin(url: &str, sql: &str) -> Result<(), postgres::Error> {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let mut client =
            postgres::Client::connect(&url, postgres::NoTls).expect("PostgreSQL answers");
        client.batch_execute(&sql)
    })
    .join()
    .expect("the admin thread ends")
}

/// The number `sql` (one row, one integer column) answers.
pub fn postgres_count(url: &str, sql: &str) -> i64 {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let mut client =
            postgres::Client::connect(&url, postgres::NoTls).expect("PostgreSQL answers");
        client.query_one(&sql, &[]).expect("the query runs").get(0)
    })
    .join()
    .expect("the admin thread ends")
}

/// A fresh store: a SQLite file in its own temporary folder, or a
/// PostgreSQL schema of its own.
pub struct TestStore {
    pub store: Arc<dyn Store>,
    /// Where the data is: another store, process or command can open it.
    pub url: DatabaseUrl,
    /// The SQLite file (meaningless on PostgreSQL).
    pub path: PathBuf,
    pub dir: TempDir,
    /// Kept for its `Drop`: the PostgreSQL schema goes with the store.
    _schema: Option<Schema>,
}

impl TestStore {
    pub async fn new(backend: Backend) -> Self {
        Self::with_options(backend, StoreOptions::default()).await
    }

    pub async fn with_options(backend: Backend, options: StoreOptions) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("proxydeck.db");
        let (url, schema) = match backend {
            Backend::Sqlite => (DatabaseUrl::Sqlite(path.clone()), None),
            Backend::Postgres => {
                let base =
                    postgres_base_url().expect("PostgreSQL is available (require! it first)");
                let schema = Schema::create(base);
                (DatabaseUrl::Postgres(schema.url()), Some(schema))
            }
        };
        let store = store::open(&url, &options).await.expect("the store opens");
        Self {
            store,
            url,
            path,
            dir,
            _schema: schema,
        }
    }

    /// A store on data that already exists somewhere (no clean-up).
    pub async fn at(url: DatabaseUrl, options: StoreOptions) -> Self {
        let store = store::open(&url, &options).await.expect("the store opens");
        Self {
            store,
            url,
            path: PathBuf::new(),
            dir: tempfile::tempdir().expect("a temporary folder"),
            _schema: None,
        }
    }

    /// The URL as `--database` takes it.
    pub fn database_arg(&self) -> String {
        match &self.url {
            DatabaseUrl::Sqlite(path) => format!("sqlite://{}", path.display()),
            DatabaseUrl::Postgres(url) => url.clone(),
        }
    }

    /// Whether a transaction holds the right to write the projects: SQLite's
    /// write lock (another connection cannot begin an immediate
    /// transaction), PostgreSQL's row-exclusive lock on `projects`, seen
    /// from a connection of the test's own.
    pub fn projects_write_locked(&self) -> bool {
        match &self.url {
            DatabaseUrl::Sqlite(path) => {
                let connection = rusqlite::Connection::open(path).expect("the file opens");
                connection
                    .busy_timeout(Duration::ZERO)
                    .expect("no busy wait");
                match connection.execute_batch("BEGIN IMMEDIATE; ROLLBACK") {
                    Ok(()) => false,
                    Err(error) => {
                        assert_eq!(
                            error.sqlite_error_code(),
                            Some(rusqlite::ErrorCode::DatabaseBusy),
                            "{error}"
                        );
                        true
                    }
                }
            }
            DatabaseUrl::Postgres(url) => {
                postgres_count(
                    url,
                    "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                      WHERE c.relname = 'projects'
                        AND c.relnamespace = current_schema()::regnamespace
                        AND l.mode = 'RowExclusiveLock' AND l.pid <> pg_backend_pid()",
                ) > 0
            }
        }
    }

    /// Runs raw SQL on the store's data, beside the service: to break
    /// things on purpose.
    pub fn execute(&self, sql: &str) {
        match &self.url {
            DatabaseUrl::Sqlite(path) => {
                rusqlite::Connection::open(path)
                    .expect("the file opens")
                    .execute_batch(sql)
                    .expect("the statement runs");
            }
            DatabaseUrl::Postgres(url) => postgres_admin(url, sql),
        }
    }
}

pub struct TestApp {
    pub address: SocketAddr,
    /// The `admin_listen` address, when the options asked for one.
    pub admin_address: Option<SocketAddr>,
    pub store: Arc<dyn Store>,
    pub client: reqwest::Client,
    /// The data the service runs on (shared by its other instances).
    pub data: Arc<TestStore>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, test_options(), suite_store_options()).await
    }

    pub async fn spawn_with(
        backend: Backend,
        options: ServiceOptions,
        store_options: StoreOptions,
    ) -> Self {
        let data = Arc::new(TestStore::with_options(backend, store_options).await);
        Self::serve(data.store.clone(), data, options).await
    }

    /// The service on `data`.
    pub async fn on(data: TestStore) -> Self {
        let data = Arc::new(data);
        Self::serve(data.store.clone(), data, test_options()).await
    }

    /// Another instance of the service on the same data, with a store
    /// connection of its own, as a second `proxydeck serve` would have.
    pub async fn another_instance(&self) -> Self {
        self.another_instance_with(test_options()).await
    }

    /// [`TestApp::another_instance`] with `options`.
    pub async fn another_instance_with(&self, options: ServiceOptions) -> Self {
        self.another_instance_on(options, suite_store_options())
            .await
    }

    /// [`TestApp::another_instance`] with `options` and a store opened
    /// with `store_options`.
    pub async fn another_instance_on(
        &self,
        options: ServiceOptions,
        store_options: StoreOptions,
    ) -> Self {
        let store = store::open(&self.data.url, &store_options)
            .await
            .expect("the store opens again");
        Self::serve(store, self.data.clone(), options).await
    }

    async fn serve(store: Arc<dyn Store>, data: Arc<TestStore>, options: ServiceOptions) -> Self {
        let service = Service::bind(store.clone(), options)
            .await
            .expect("the service binds");
        let address = service.local_addr();
        let admin_address = service.admin_addr();
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(service.run(async {
            let _ = stop.await;
        }));
        Self {
            address,
            admin_address,
            store,
            client: client_builder().build().expect("an HTTP client"),
            data,
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }

    /// The SQLite file of the service.
    pub fn db_path(&self) -> &std::path::Path {
        &self.data.path
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

    /// A SQLite service whose store gives up after 300 ms: for outage
    /// tests.
    pub async fn spawn_impatient() -> Self {
        let store = StoreOptions {
            timeout: Duration::from_millis(300),
            ..StoreOptions::default()
        };
        Self::spawn_with(Backend::Sqlite, test_options(), store).await
    }

    /// Moves the SQLite file away (a volume gone, a restore under way) and
    /// waits until the service's connections have noticed (they check at
    /// most once a second). Answers where the file went.
    pub async fn take_store_away(&self) -> PathBuf {
        let moved = self.db_path().with_extension("moved");
        std::fs::rename(self.db_path(), &moved).expect("the database file moves");
        tokio::time::sleep(Duration::from_millis(1100)).await;
        moved
    }

    pub fn bring_store_back(&self, moved: PathBuf) {
        std::fs::rename(moved, self.db_path()).expect("the database file comes back");
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

// ----- Property tests -----

/// Cases a property test runs: `PROPTEST_CASES` when set, else `default`
/// (each case talks to a real server, so fewer than proptest's 256).
pub fn property_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(default)
}

/// Runs `test` on `cases` values drawn from `strategy`. A failure (an
/// `Err` or a panic) is shrunk to a small failing value, within a bounded
/// number of tries since each one talks to the server, and reported.
pub fn check_property<S: proptest::strategy::Strategy>(
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> proptest::test_runner::TestCaseResult,
) {
    let config = proptest::test_runner::Config {
        cases,
        max_shrink_iters: 200,
        // The failing value is printed; nothing is written into the tree.
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    if let Err(failure) = runner.run(&strategy, test) {
        panic!("{failure}");
    }
}

/// A runtime for a property test: its cases run one by one with
/// `block_on`, while the server's tasks run on the worker threads.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// `path` with `query` (name, value pairs) form-encoded after `?`.
pub fn with_query(path: &str, query: &[(&str, &str)]) -> String {
    if query.is_empty() {
        return path.to_owned();
    }
    let mut encoded = form_urlencoded::Serializer::new(String::new());
    for (name, value) in query {
        encoded.append_pair(name, value);
    }
    format!("{path}?{}", encoded.finish())
}

// ----- Requests flowing through a fault -----

/// One answer seen by a [`RequestLoad`].
#[derive(Debug)]
pub struct LoadAnswer {
    pub sent: std::time::Instant,
    pub took: Duration,
    pub status: u16,
    pub body: Value,
}

/// Pause between two requests of a [`RequestLoad`] client: a steady flow
/// that stays under a token's rate limit and leaves the shared machine's
/// cores to the server.
const LOAD_PAUSE: Duration = Duration::from_millis(5);

/// Clients sending GET requests one after the other, each on its own,
/// until [`RequestLoad::finish`]: requests flowing while a test breaks
/// something.
pub struct RequestLoad {
    stop: Arc<std::sync::atomic::AtomicBool>,
    clients: Vec<JoinHandle<Vec<LoadAnswer>>>,
}

impl RequestLoad {
    pub fn start(app: &TestApp, path: &str, token: &str, clients: usize) -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let clients = (0..clients)
            .map(|_| {
                let (stop, client, url, token) = (
                    stop.clone(),
                    app.client.clone(),
                    app.url(path),
                    token.to_owned(),
                );
                tokio::spawn(async move {
                    let mut answers = Vec::new();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let sent = std::time::Instant::now();
                        let response = client
                            .get(&url)
                            .bearer_auth(&token)
                            .send()
                            .await
                            .expect("an answer");
                        let status = response.status().as_u16();
                        let body: Value = response.json().await.expect("a JSON body");
                        answers.push(LoadAnswer {
                            sent,
                            took: sent.elapsed(),
                            status,
                            body,
                        });
                        tokio::time::sleep(LOAD_PAUSE).await;
                    }
                    answers
                })
            })
            .collect();
        Self { stop, clients }
    }

    /// Stops the clients; answers everything they saw.
    pub async fn finish(self) -> Vec<LoadAnswer> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut answers = Vec::new();
        for client in self.clients {
            answers.extend(client.await.expect("a client loop ends"));
        }
        answers
    }
}

/// Checks the answers of requests that flowed through a store outage:
/// none took `longest` or more; each is a 200, or a 503 `api_error` given
/// after the outage began; some saw it; and every one sent after
/// `recovered_by` is a 200 again.
pub fn assert_outage_answers(
    answers: &[LoadAnswer],
    outage_began: std::time::Instant,
    recovered_by: std::time::Instant,
    longest: Duration,
) {
    let mut unavailable = 0;
    for LoadAnswer {
        sent,
        took,
        status,
        body,
    } in answers
    {
        assert!(*took < longest, "a request took {took:?}");
        match status {
            200 => {}
            503 => {
                unavailable += 1;
                assert_eq!(assert_error_shape(body), "api_error");
                assert!(
                    *sent + *took >= outage_began,
                    "a 503 before the outage began"
                );
            }
            other => panic!("unexpected status {other}: {body}"),
        }
    }
    let timeline: Vec<(u128, u16)> = answers
        .iter()
        .map(|a| {
            (
                a.sent.saturating_duration_since(outage_began).as_millis(),
                a.status,
            )
        })
        .collect();
    assert!(
        unavailable > 0,
        "no request saw the outage: {} answers; {timeline:?}",
        answers.len()
    );
    let after: Vec<&LoadAnswer> = answers.iter().filter(|a| a.sent > recovered_by).collect();
    assert!(!after.is_empty(), "no request after recovery: {timeline:?}");
    assert!(
        after.iter().all(|a| a.status == 200),
        "still failing after recovery: {timeline:?}"
    );
}

/// A project body counter of the page memories, as `/metrics` shows it
/// (the process's own: nextest runs each test in a process of its own).
pub fn page_bodies(from: &str) -> f64 {
    metric(&format!(
        "proxydeck_db_page_bodies_total{{from=\"{from}\"}}"
    ))
}

/// A series of this process's `/metrics` (`name{labels}` as written
/// there); 0 while absent. Only under nextest (see below).
pub fn metric(series: &str) -> f64 {
    // The recorder is global to the process: under `cargo test` every test
    // of the binary records into it at once, and a difference of counts
    // would include other tests' work. nextest gives each test a process.
    assert_eq!(
        std::env::var("NEXTEST_EXECUTION_MODE").as_deref(),
        Ok("process-per-test"),
        "this test counts its process's metrics: run it with `cargo nextest run` \
         (one process per test), not `cargo test`"
    );
    sample(&proxydeck::metrics::render(&[]), series).unwrap_or(0.0)
}

/// The value of `series` (`name{labels}`) in a `/metrics` text.
pub fn sample(metrics: &str, series: &str) -> Option<f64> {
    let series = format!("{series} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&series))
        .map(|value| value.parse().expect("a number"))
}

/// Organizations `numbers` (made with [`org`]), those of them that exist,
/// as a caller in them sees them, with the numbers the store gave them: a
/// user in them is made through the import path (a write), and its token's
/// grant names them.
pub async fn organizations(store: &dyn Store, numbers: &[u32]) -> OrganizationSet {
    let existing = store.list_organizations().await.expect("the store answers");
    let orgs: Vec<String> = numbers
        .iter()
        .map(|n| org_id(*n))
        .filter(|id| existing.iter().any(|o| o.id == *id))
        .collect();
    if orgs.is_empty() {
        return OrganizationSet::new(Vec::new());
    }
    let user = format!("member-{}", uuid::Uuid::new_v4().simple());
    let line =
        json!({"object": "user", "id": user, "email": "member@example.com", "organizations": orgs});
    seed(store, vec![line]).await.expect("the member imports");
    let (_, secret) = mint(store, &user, "member", None).await;
    let grant = store
        .find_token(proxydeck::domain::token::digest(&secret))
        .await
        .expect("the store answers")
        .expect("the token was just made");
    assert_eq!(grant.organizations.len(), orgs.len());
    grant.organizations
}

/// The items of the first page of projects of `organizations` (newest
/// first, `limit` of them), as the JSON text the store joined.
pub async fn first_page_of(
    store: &dyn Store,
    organizations: &OrganizationSet,
    limit: u32,
) -> Result<String, store::StoreError> {
    let page = store
        .list(store::Listing::Projects(store::ProjectsQuery {
            organizations: organizations.clone(),
            page: proxydeck::domain::pagination::PageRequest {
                start_key: None,
                direction: proxydeck::domain::pagination::Direction::Desc,
                limit,
            },
        }))
        .await?;
    Ok(String::from_utf8(page.joined.to_vec()).expect("stored JSON is UTF-8"))
}

/// Waits until `condition` holds (checked every 5 ms, for 10 s at most,
/// then the test fails naming `what`). For state the test can only look
/// at, held by another process or connection (a lock, a file, a log):
/// there is no event to wait on.
pub async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited 10 s for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
