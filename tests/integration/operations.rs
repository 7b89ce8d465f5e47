//! The operator's side of the service, over real HTTP: health and
//! readiness, Prometheus metrics, request ids, the admin listener, and
//! settings that are refused by name. (JSON logs and secrets in logs are
//! in `server.rs`, which runs the real binary.)
//!
//! Metrics are per process, and nextest runs each test in a process of
//! its own: the exact counts below hold there.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use proxydeck::rate_limit::Policy;
use proxydeck::store::StoreOptions;
use reqwest::StatusCode;
use serde_json::json;

use crate::binary::{Sandbox, checkout_commit, commit_of_build};
use crate::helpers::*;

// ----- A Prometheus exposition, parsed -----

/// One sample: a metric name, its labels and its value.
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

struct Exposition {
    samples: Vec<Sample>,
    /// `# TYPE` of each metric family.
    types: BTreeMap<String, String>,
    /// Families that have a `# HELP` line.
    helped: Vec<String>,
}

impl Exposition {
    fn parse(text: &str) -> Self {
        let mut exposition = Self {
            samples: Vec::new(),
            types: BTreeMap::new(),
            helped: Vec::new(),
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
                exposition.types.insert(name.into(), kind.into());
            } else if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, _) = rest.split_once(' ').expect("# HELP name text");
                exposition.helped.push(name.into());
            } else {
                assert!(!line.starts_with('#'), "an unknown comment: {line}");
                exposition.samples.push(parse_sample(line));
            }
        }
        exposition
    }

    /// The sum of the samples of `name` whose labels include `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels).map(|s| s.value).sum()
    }

    fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&str, &str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |sample| {
            sample.name == name
                && labels
                    .iter()
                    .all(|(k, v)| sample.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }
}

/// `name{key="value",...} number` or `name number`.
fn parse_sample(line: &str) -> Sample {
    let (series, value) = line.rsplit_once(' ').expect("a series and a value");
    let value: f64 = value
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {line}"));
    let (name, mut rest) = match series.split_once('{') {
        Some((name, rest)) => (name, rest.strip_suffix('}').expect("closing brace")),
        None => (series, ""),
    };
    let mut labels = BTreeMap::new();
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").expect("key=\"value\"");
        let mut text = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().expect("a closing quote") {
                (_, '\\') => text.push(chars.next().expect("an escaped character").1),
                (at, '"') => break at,
                (_, c) => text.push(c),
            }
        };
        labels.insert(key.to_owned(), text);
        rest = after[end + 1..].trim_start_matches(',');
    }
    Sample {
        name: name.to_owned(),
        labels,
        value,
    }
}

async fn scrape(client: &reqwest::Client, address: SocketAddr) -> Exposition {
    let response = client
        .get(format!("http://{address}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    Exposition::parse(&response.text().await.unwrap())
}

// ----- Health and readiness -----

#[tokio::test]
async fn health_and_readiness_answer_without_a_token() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    for path in ["/healthz", "/readyz"] {
        let (status, body) = json_of(app.client.get(app.url(path)).send().await.unwrap()).await;
        assert_eq!(
            (status, body),
            (StatusCode::OK, json!({"status": "ok"})),
            "{path}"
        );
        let head = app.client.head(app.url(path)).send().await.unwrap();
        assert_eq!(head.status(), 200, "{path}");
        // A wrong token is not even looked at.
        let response = app.get(path, "pxd_not_a_token").await;
        assert_eq!(response.status(), 200, "{path}");
        let (status, body) = json_of(app.client.post(app.url(path)).send().await.unwrap()).await;
        assert_eq!(status, 405, "{path}: {body}");
        assert_error_shape(&body);
    }
}

#[tokio::test]
async fn readiness_fails_with_503_when_the_store_does_not_answer_and_health_stays_ok() {
    let app = TestApp::spawn_impatient().await;
    let moved = app.take_store_away();

    let started = Instant::now();
    let response = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "bounded by the store timeout: {:?}",
        started.elapsed()
    );
    assert_eq!(response.headers()["retry-after"], "1");
    let (status, body) = json_of(response).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(assert_error_shape(&body), "api_error");
    let response = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(response.status(), 200, "the process is up all the same");

    app.bring_store_back(moved);
    let response = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(response.status(), 200, "ready again without a restart");
}

// ----- Request ids -----

#[tokio::test]
async fn request_ids_round_trip_on_every_answer() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let token = app.token("u1").await;
    let tag = app.get("/v1/projects", &token).await.headers()["etag"].clone();
    let long_path = format!("/v1/projects?start_key={}", "a".repeat(9000));
    let get = |path: &str| app.client.get(app.url(path));
    let cases = [
        (200, get("/v1/projects").bearer_auth(&token)),
        (
            304,
            get("/v1/projects")
                .bearer_auth(&token)
                .header("if-none-match", tag),
        ),
        (
            200,
            app.client.head(app.url("/v1/projects")).bearer_auth(&token),
        ),
        (400, get("/v1/projects?limit=0").bearer_auth(&token)),
        (401, get("/v1/projects")),
        (404, get("/nope")),
        (405, app.client.delete(app.url("/v1/projects"))),
        (414, get(&long_path)),
        (200, get("/healthz")),
    ];
    for (case, (expected, request)) in cases.into_iter().enumerate() {
        let shown = format!("case {case}, {expected}");
        let send = |id: Option<&str>| {
            let request = request.try_clone().expect("a request without a body");
            match id {
                Some(id) => request.header("x-request-id", id),
                None => request,
            }
            .send()
        };
        let id_of = |response: &reqwest::Response| {
            response.headers()["x-request-id"]
                .to_str()
                .unwrap()
                .to_owned()
        };

        let given = "trace-4f9c/abc_123:xyz";
        let response = send(Some(given)).await.unwrap();
        assert_eq!(response.status(), expected, "{shown}");
        assert_eq!(
            id_of(&response),
            given,
            "{shown}: the caller's id comes back"
        );

        let first = id_of(&send(None).await.unwrap());
        let second = id_of(&send(None).await.unwrap());
        assert_ne!(first, second, "{shown}");
        let uuid = uuid::Uuid::parse_str(&first).expect("a generated id is a UUID");
        assert_eq!(uuid.get_version_num(), 7, "{shown}");
    }
}

#[tokio::test]
async fn unfit_request_ids_are_replaced_not_repeated() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let answered = |given: String| {
        let request = app
            .client
            .get(app.url("/healthz"))
            .header("x-request-id", given);
        async move {
            let response = request.send().await.unwrap();
            response.headers()["x-request-id"]
                .to_str()
                .unwrap()
                .to_owned()
        }
    };
    let token_shaped = proxydeck::domain::token::generate();
    for unfit in [
        "x".repeat(129),
        "two words".to_owned(),
        format!("req-{token_shaped}"),
    ] {
        let id = answered(unfit.clone()).await;
        assert_ne!(id, unfit);
        uuid::Uuid::parse_str(&id).expect("a generated id instead");
    }
    let longest = "y".repeat(128);
    assert_eq!(answered(longest.clone()).await, longest);
}

// ----- Metrics -----

#[tokio::test]
async fn metrics_move_when_requests_are_made() {
    let mut options = test_options();
    // Every request after the first finds the token in the cache (on, as
    // every cache here, whatever the suite's).
    options.auth.cache = true;
    options.auth.cache_ttl = Duration::from_secs(600);
    // No token-use flush while it counts: a flush is a commit, and a commit
    // lets the kept pages go (one more read of the file than counted below,
    // seen under CI's load when the requests were 100 ms apart).
    options.auth.usage_flush_interval = Duration::from_secs(3600);
    let app = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let token = app.token("u1").await;
    let before = scrape(&app.client, app.address).await;

    for _ in 0..3 {
        assert_eq!(app.get("/v1/projects", &token).await.status(), 200);
    }
    let head = app
        .client
        .head(app.url("/v1/projects"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(
        app.get("/v1/api_tokens?limit=0", &token).await.status(),
        400
    );
    let anonymous = app
        .client
        .get(app.url("/v1/projects"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    for raw in ["/nope", "/nope/12345", "/v1/projectz"] {
        let response = app.client.get(app.url(raw)).send().await.unwrap();
        assert_eq!(response.status(), 404);
    }

    let after = scrape(&app.client, app.address).await;
    let moved = |name: &str, labels: &[(&str, &str)]| {
        after.value(name, labels) - before.value(name, labels)
    };
    let requests = "proxydeck_http_requests_total";
    let projects = ("route", "/v1/projects");
    let (get, ok) = (("method", "GET"), ("status", "200"));
    assert_eq!(moved(requests, &[projects, get, ok]), 3.0);
    assert_eq!(moved(requests, &[projects, ("method", "HEAD"), ok]), 1.0);
    assert_eq!(moved(requests, &[projects, get, ("status", "401")]), 1.0);
    assert_eq!(
        moved(requests, &[("route", "/v1/api_tokens"), ("status", "400")]),
        1.0
    );
    assert_eq!(
        moved(requests, &[("route", "unmatched"), get, ("status", "404")]),
        3.0,
        "every unknown path counts under one route label"
    );
    for sample in &after.samples {
        if let Some(route) = sample.labels.get("route") {
            assert!(
                route == "unmatched" || !route.starts_with("/nope") && route != "/v1/projectz",
                "a raw path became a label: {route}"
            );
        }
    }

    let latency = "proxydeck_http_request_duration_seconds";
    assert_eq!(moved(&format!("{latency}_count"), &[projects, get]), 4.0);
    assert!(moved(&format!("{latency}_sum"), &[projects, get]) > 0.0);
    assert_eq!(
        moved(
            &format!("{latency}_bucket"),
            &[projects, get, ("le", "+Inf")]
        ),
        4.0
    );
    let store = "proxydeck_store_query_duration_seconds_count";
    // Three GETs and a HEAD of one page: the first two read the file (the
    // second keeps the page), the last two are answered from memory.
    assert_eq!(moved(store, &[("operation", "list_projects")]), 2.0);
    let bodies = "proxydeck_db_page_bodies_total";
    assert_eq!(moved(bodies, &[("from", "database")]), 1.0);
    assert_eq!(moved(bodies, &[("from", "memory")]), 2.0);
    assert_eq!(moved(store, &[("operation", "find_token")]), 1.0);
    assert_eq!(moved("proxydeck_token_cache_misses_total", &[]), 1.0);
    assert_eq!(moved("proxydeck_token_cache_hits_total", &[]), 4.0);

    // The metrics that count nothing yet are there, and the rest.
    assert_eq!(
        after.value("proxydeck_rate_limit_rejections_total", &[]),
        0.0
    );
    for from in ["memory", "database"] {
        assert_eq!(
            after
                .matching("proxydeck_db_page_bodies_total", &[("from", from)])
                .count(),
            1,
            "{from}"
        );
    }
    // Four reads one after the other: none shared a statement (and SQLite
    // shares none: only PostgreSQL's read path does).
    assert!(
        after
            .matching("proxydeck_db_shared_reads_total", &[])
            .all(|series| series.value == 0.0)
    );
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        after.value("proxydeck_build_info", &[("version", version)]),
        1.0
    );
    assert_eq!(
        after.value("proxydeck_db_pool_size", &[("pool", "reader")]),
        f64::from(StoreOptions::default().pool_size)
    );
    for state in ["idle", "in_use"] {
        assert_eq!(
            after
                .matching(
                    "proxydeck_db_pool_connections",
                    &[("pool", "reader"), ("state", state)]
                )
                .count(),
            1,
            "{state}"
        );
    }
    // Prometheus conventions: a type and a help text for each family,
    // counters end in _total, durations are in seconds; the service's own
    // are named proxydeck_, the process's process_ (as every exporter's).
    for (family, kind) in &after.types {
        assert!(
            family.starts_with("proxydeck_") || family.starts_with("process_"),
            "{family}"
        );
        assert!(after.helped.contains(family), "{family} has no help");
        match kind.as_str() {
            "counter" => assert!(family.ends_with("_total"), "{family}"),
            "histogram" => assert!(family.ends_with("_seconds"), "{family}"),
            "gauge" => assert!(!family.ends_with("_total"), "{family}"),
            other => panic!("{family}: unexpected type {other}"),
        }
    }
}

/// The process's own figures, read at the scrape, beside the service's;
/// the build's labels name the commit of this checkout.
#[tokio::test]
async fn metrics_show_the_process_and_the_commit_of_the_build() {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let sandbox = Sandbox::new();
    let server = sandbox.serve(&[]);
    let first = scrape(&server.client, server.address).await;
    let one = |exposition: &Exposition, name: &str| {
        let samples: Vec<&Sample> = exposition.matching(name, &[]).collect();
        assert_eq!(samples.len(), 1, "{name}");
        assert!(samples[0].labels.is_empty(), "{name}");
        samples[0].value
    };
    assert!(one(&first, "process_resident_memory_bytes") > 1e6);
    assert!(
        one(&first, "process_virtual_memory_bytes") >= one(&first, "process_resident_memory_bytes")
    );
    // stdin, stdout, stderr, the listener, the database file at least.
    let open = one(&first, "process_open_fds");
    assert!(open >= 5.0, "{open}");
    assert!(one(&first, "process_max_fds") >= open);
    assert!(one(&first, "process_threads") >= 2.0);
    assert!(one(&first, "process_cpu_seconds_total") >= 0.0);
    // Started by this test: whole seconds, from the boot time's whole
    // seconds and the clock's ticks, hence a second or two either way.
    let start = one(&first, "process_start_time_seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        start >= started - 2.0 && start <= now + 2.0,
        "started at {start}, the test between {started} and {now}"
    );
    for (family, kind) in [
        ("process_cpu_seconds_total", "counter"),
        ("process_resident_memory_bytes", "gauge"),
        ("process_open_fds", "gauge"),
        ("process_start_time_seconds", "gauge"),
    ] {
        assert_eq!(first.types.get(family).map(String::as_str), Some(kind));
        assert!(first.helped.iter().any(|f| f == family), "{family}");
    }

    // Read at each scrape: 20 more connections are 20 more descriptors.
    let held: Vec<std::net::TcpStream> = (0..20)
        .map(|_| std::net::TcpStream::connect(server.address).unwrap())
        .collect();
    eventually("the server accepts the 20 connections", || async {
        let exposition = scrape(&server.client, server.address).await;
        exposition.value("proxydeck_http_connections", &[("listener", "api")]) >= 21.0
    })
    .await;
    let more = scrape(&server.client, server.address).await;
    assert!(one(&more, "process_open_fds") >= open + 20.0);
    drop(held);

    let build: Vec<&Sample> = first.matching("proxydeck_build_info", &[]).collect();
    assert_eq!(build.len(), 1);
    assert_eq!(build[0].value, 1.0);
    let commit = &build[0].labels["commit"];
    assert_eq!(commit_of_build(commit), checkout_commit(), "{commit}");
    assert_eq!(build[0].labels["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(build[0].labels["profile"], "debug");
}

/// A 429 counts as a rejection; the operator's endpoints are never
/// limited, even for a caller whose token is over its limit.
#[tokio::test]
async fn rate_limit_rejections_are_counted_and_probes_are_never_limited() {
    let mut options = test_options();
    options.rate_limit.policy = Some(Policy::new(0.01, Some(2)).unwrap());
    let app = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    app.seed(vec![org(1), user("u1", &[1])]).await;
    let token = app.token("u1").await;
    let before = scrape(&app.client, app.address).await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(app.get("/v1/projects", &token).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 429, 429, 429]);
    for _ in 0..10 {
        for path in ["/healthz", "/readyz", "/metrics"] {
            assert_eq!(app.get(path, &token).await.status(), 200, "{path}");
        }
    }
    let after = scrape(&app.client, app.address).await;
    let rejections = "proxydeck_rate_limit_rejections_total";
    assert_eq!(
        after.value(rejections, &[]) - before.value(rejections, &[]),
        3.0
    );
    let refused = [("route", "/v1/projects"), ("status", "429")];
    let requests = "proxydeck_http_requests_total";
    assert_eq!(
        after.value(requests, &refused) - before.value(requests, &refused),
        3.0
    );
}

#[tokio::test]
async fn the_admin_listener_serves_metrics_and_health_and_the_main_port_keeps_health() {
    let mut options = test_options();
    options.admin_listen = Some("127.0.0.1:0".into());
    let app = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    let admin = app.admin_address.expect("an admin address");
    assert_ne!(admin, app.address);
    let status_at = |address: SocketAddr, path: &str| {
        let request = app.client.get(format!("http://{address}{path}"));
        async move { request.send().await.unwrap().status() }
    };

    let exposition = scrape(&app.client, admin).await;
    assert!(!exposition.samples.is_empty());
    assert_eq!(status_at(app.address, "/metrics").await, 404);
    for path in ["/healthz", "/readyz"] {
        assert_eq!(
            status_at(app.address, path).await,
            200,
            "{path} on the main port"
        );
        assert_eq!(
            status_at(admin, path).await,
            200,
            "{path} on the admin port"
        );
    }
    assert_eq!(
        status_at(admin, "/v1/projects").await,
        404,
        "the API is not on the admin port"
    );
    let response = app
        .client
        .get(format!("http://{admin}/healthz"))
        .header("x-request-id", "admin-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "admin-1");
}

// ----- Settings refused by name -----

#[test]
fn bad_logging_and_listening_settings_are_refused_with_their_names() {
    let sandbox = Sandbox::new();
    let out = sandbox.run(&["serve", "--log-format", "yaml"]);
    assert_eq!(out.status.code(), Some(2), "{out:#?}");
    assert!(out.stderr.contains("--log-format"), "{out:#?}");

    let mut command = sandbox.command(&["serve"]);
    command.env("PROXYDECK_LOG_LEVEL", "loud");
    let out = crate::binary::finish(command, None);
    assert_eq!(out.status.code(), Some(2), "{out:#?}");
    assert!(out.stderr.contains("--log-level"), "{out:#?}");

    let mut command = sandbox.command(&["serve"]);
    command.env("RUST_LOG", "info,proxydeck=[");
    let out = crate::binary::finish(command, None);
    assert_eq!(out.status.code(), Some(2), "{out:#?}");
    assert!(out.stderr.starts_with("error: RUST_LOG"), "{out:#?}");

    let out = sandbox.run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "not-an-address",
    ]);
    out.error_after_logs(&["--admin-listen", "not-an-address"]);
}

/// Open connections, the limit and the times it was reached are counted
/// per listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_counted_per_listener_with_their_limit_and_its_episodes() {
    const LIMIT: usize = 3;
    let mut options = test_options();
    options.server.max_connections = LIMIT;
    options.admin_listen = Some("127.0.0.1:0".into());
    let app = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    let admin = app.admin_address.expect("an admin address");
    let api = [("listener", "api")];
    let before = scrape(&app.client, admin).await;
    assert_eq!(
        before.value("proxydeck_http_connections_limit", &api),
        LIMIT as f64
    );
    assert_eq!(
        before.value("proxydeck_http_connections_limit", &[("listener", "admin")]),
        LIMIT as f64
    );
    // The scraping client's own connection is open on the admin listener.
    assert!(before.value("proxydeck_http_connections", &[("listener", "admin")]) >= 1.0);
    let open_before = before.value("proxydeck_http_connections", &api);
    let reached_before = before.value("proxydeck_http_connection_limit_reached_total", &api);
    // Scrapes the exposition until `done` holds for it (the server counts a
    // connection a moment after the client's connect returns).
    let until = |done: &'static (dyn Fn(&Exposition, f64, f64) -> bool + Sync)| {
        let client = app.client.clone();
        async move {
            eventually("the metrics move", || {
                let client = client.clone();
                async move { done(&scrape(&client, admin).await, open_before, reached_before) }
            })
            .await;
        }
    };

    let free = LIMIT - open_before as usize;
    let mut held = Vec::new();
    for _ in 0..free {
        held.push(tokio::net::TcpStream::connect(app.address).await.unwrap());
    }
    // Every place under the limit is taken.
    until(&|now, _, _| {
        now.value("proxydeck_http_connections", &[("listener", "api")]) == LIMIT as f64
    })
    .await;
    // The listener is at its limit: counted once. One more connection
    // waits in the listen queue, and changes nothing.
    held.push(tokio::net::TcpStream::connect(app.address).await.unwrap());
    until(&|now, _, reached| {
        now.value(
            "proxydeck_http_connection_limit_reached_total",
            &[("listener", "api")],
        ) == reached + 1.0
    })
    .await;
    // All closed: back to where it was.
    drop(held);
    until(&|now, open, _| now.value("proxydeck_http_connections", &[("listener", "api")]) == open)
        .await;
}
