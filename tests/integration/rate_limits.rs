//! Per-token rate limits over HTTP: in memory, shared by two instances
//! through the local Redis (127.0.0.1:6379), and with Redis refusing,
//! silent, or going away and coming back. Every token id is a fresh UUIDv7,
//! so tests never share a Redis key.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use proxydeck::app::ServiceOptions;
use proxydeck::rate_limit::Policy;
use proxydeck::rate_limit::redis::{CALL_TIMEOUT, KEY_PREFIX, RETRY_INTERVAL, RedisUrl};
use proxydeck::store::StoreOptions;
use reqwest::StatusCode;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinSet;

use crate::binary::*;
use crate::helpers::*;

const REDIS: &str = "redis://127.0.0.1:6379";
const REDIS_ADDRESS: &str = "127.0.0.1:6379";

/// True when no Redis answers on 127.0.0.1:6379: the test should end. It is
/// skipped with a loud line, or fails when `PROXYDECK_REQUIRE_REDIS` is set
/// (CI sets it).
pub(crate) fn redis_unavailable() -> bool {
    let address = REDIS_ADDRESS.parse().unwrap();
    let Err(why) = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(1)) else {
        return false;
    };
    if std::env::var_os("PROXYDECK_REQUIRE_REDIS").is_some() {
        panic!(
            "Redis is required (PROXYDECK_REQUIRE_REDIS) but {REDIS_ADDRESS} does not answer: {why}"
        );
    }
    eprintln!("\n######## SKIPPED: no Redis on {REDIS_ADDRESS} for this test ({why}).\n");
    true
}

fn limited(rate: f64, burst: u32, redis: Option<&str>) -> ServiceOptions {
    let mut options = test_options();
    options.rate_limit.policy = Some(Policy::new(rate, Some(burst)).unwrap());
    options.rate_limit.redis = redis.map(|url| RedisUrl::parse(url).unwrap());
    options
}

/// A service with `options` on a store holding one user and one project.
async fn app_with(options: ServiceOptions) -> TestApp {
    let app = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    app
}

/// What a response says about the limit.
#[derive(Debug, PartialEq)]
struct Seen {
    status: StatusCode,
    remaining: Option<u64>,
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response
        .headers()
        .get(name)
        .map(|value| value.to_str().unwrap())
}

fn number(response: &reqwest::Response, name: &str) -> Option<u64> {
    header(response, name).map(|value| value.parse().unwrap())
}

async fn hit(app: &TestApp, token: &str) -> Seen {
    let response = app.get("/v1/projects", token).await;
    Seen {
        status: response.status(),
        remaining: number(&response, "ratelimit-remaining"),
    }
}

fn ok(remaining: u64) -> Seen {
    Seen {
        status: StatusCode::OK,
        remaining: Some(remaining),
    }
}

fn refused() -> Seen {
    Seen {
        status: StatusCode::TOO_MANY_REQUESTS,
        remaining: Some(0),
    }
}

// ----- In memory -----

#[tokio::test]
async fn a_burst_then_429_with_retry_after_and_the_error_body() {
    let app = app_with(limited(1.0, 3, None)).await;
    let token = app.token("u1").await;
    for remaining in [2, 1, 0] {
        let response = app.get("/v1/projects", &token).await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "ratelimit-limit"), Some("3"));
        assert_eq!(number(&response, "ratelimit-remaining"), Some(remaining));
        // 1 s per request to refill: whole seconds, rounded up.
        assert_eq!(number(&response, "ratelimit-reset"), Some(3 - remaining));
        assert_eq!(header(&response, "ratelimit-policy"), Some("3;w=3"));
        assert!(header(&response, "retry-after").is_none());
    }
    let response = app.get("/v1/projects", &token).await;
    assert_eq!(response.status(), 429);
    assert_eq!(header(&response, "retry-after"), Some("1"));
    assert_eq!(header(&response, "ratelimit-limit"), Some("3"));
    assert_eq!(number(&response, "ratelimit-remaining"), Some(0));
    assert_eq!(number(&response, "ratelimit-reset"), Some(3));
    let (_, body) = json_of(response).await;
    assert_eq!(assert_error_shape(&body), "invalid_request_error");
    assert_eq!(body["error"]["code"], "rate_limit");
    assert!(body["error"].get("params").is_none(), "{body}");
    // A refused request costs nothing: still refused, not further behind.
    let again = app.get("/v1/projects", &token).await;
    assert_eq!(again.status(), 429);
    assert_eq!(number(&again, "ratelimit-reset"), Some(3));
}

#[tokio::test]
async fn the_limit_is_per_token() {
    let app = app_with(limited(0.5, 2, None)).await;
    let spent = app.token("u1").await;
    let other = app.token("u1").await;
    assert_eq!(hit(&app, &spent).await, ok(1));
    assert_eq!(hit(&app, &spent).await, ok(0));
    assert_eq!(hit(&app, &spent).await, refused());
    assert_eq!(
        hit(&app, &other).await,
        ok(1),
        "another token of the same user"
    );
}

#[tokio::test]
async fn a_spent_bucket_refills_with_time() {
    // One request every 200 ms.
    let app = app_with(limited(5.0, 2, None)).await;
    let token = app.token("u1").await;
    assert_eq!(hit(&app, &token).await, ok(1));
    assert_eq!(hit(&app, &token).await, ok(0));
    assert_eq!(hit(&app, &token).await, refused());
    app.clock.advance(Duration::from_millis(250));
    assert_eq!(hit(&app, &token).await, ok(0));
    app.clock.advance(Duration::from_millis(450));
    assert_eq!(hit(&app, &token).await, ok(1), "full again after 400 ms");
}

#[tokio::test]
async fn errors_after_authentication_carry_the_headers_and_count() {
    let app = app_with(limited(0.5, 3, None)).await;
    let token = app.token("u1").await;
    for (path, status) in [
        ("/v1/projects?limit=0", 400),
        ("/v1/projects/nope/proxy-settings", 404),
        ("/v1/api_tokens", 200),
    ] {
        let response = app.get(path, &token).await;
        assert_eq!(response.status(), status, "{path}");
        assert!(number(&response, "ratelimit-remaining").is_some(), "{path}");
    }
    assert_eq!(hit(&app, &token).await, refused());

    // Before authentication there is no token to count against.
    let unauthenticated = app.get("/v1/projects", "pxd_not_a_token").await;
    assert_eq!(unauthenticated.status(), 401);
    assert!(header(&unauthenticated, "ratelimit-limit").is_none());
    let not_allowed = app
        .client
        .put(app.url("/v1/projects"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(not_allowed.status(), 405);
    assert!(header(&not_allowed, "ratelimit-limit").is_none());
}

/// Writes spend the same bucket as reads: a create, a refused update and a
/// read use up a burst of three, and the next write is refused.
#[tokio::test]
async fn writes_count_against_the_same_limit() {
    let app = app_with(limited(0.5, 3, None)).await;
    let token = app.token("u1").await;
    let write = |path: &str, body: serde_json::Value| {
        app.client
            .post(app.url(path))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    let created = write(
        "/v1/projects",
        serde_json::json!({"organization_id": org_id(1), "slug": "counted"}),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), 200);
    assert_eq!(number(&created, "ratelimit-remaining"), Some(2));
    let refused_update = write("/v1/projects/p1", serde_json::json!({"nope": 1}))
        .await
        .unwrap();
    assert_eq!(refused_update.status(), 400);
    assert_eq!(number(&refused_update, "ratelimit-remaining"), Some(1));
    assert_eq!(app.get("/v1/projects", &token).await.status(), 200);
    let over = write(
        "/v1/projects",
        serde_json::json!({"organization_id": org_id(1), "slug": "not-made"}),
    )
    .await
    .unwrap();
    assert_eq!(over.status(), 429);
    assert!(header(&over, "retry-after").is_some());
    let (_, listed) = app
        .get_json("/v1/projects?limit=100", &app.token("u1").await)
        .await;
    assert!(
        !listed.to_string().contains("not-made"),
        "a refused write changes nothing"
    );
}

#[tokio::test]
async fn the_default_is_generous_and_off_turns_it_off() {
    let app = app_with(test_options()).await;
    let token = app.token("u1").await;
    let response = app.get("/v1/projects", &token).await;
    assert_eq!(header(&response, "ratelimit-limit"), Some("2000"));
    assert_eq!(header(&response, "ratelimit-policy"), Some("2000;w=2"));
    assert_eq!(number(&response, "ratelimit-remaining"), Some(1999));

    let mut off = test_options();
    off.rate_limit.policy = None;
    let app = app_with(off).await;
    let token = app.token("u1").await;
    for _ in 0..30 {
        let response = app.get("/v1/projects", &token).await;
        assert_eq!(response.status(), 200);
        assert!(header(&response, "ratelimit-limit").is_none());
    }
}

// ----- Shared through Redis -----

/// Sends `PTTL` of `token_id`'s key to the local Redis.
async fn key_ttl_ms(token_id: &str) -> i64 {
    let client = redis::Client::open(REDIS).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("PTTL")
        .arg(format!("{KEY_PREFIX}{token_id}"))
        .query_async(&mut connection)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_limit_through_redis() {
    if redis_unavailable() {
        return;
    }
    let options = limited(0.5, 4, Some(REDIS));
    let first = app_with(options.clone()).await;
    let second = first.another_instance_with(options).await;
    let (token, secret) = first.token_with("u1", "shared", None).await;
    assert_eq!(hit(&first, &secret).await, ok(3));
    assert_eq!(hit(&second, &secret).await, ok(2));
    assert_eq!(hit(&first, &secret).await, ok(1));
    assert_eq!(hit(&second, &secret).await, ok(0));
    assert_eq!(hit(&first, &secret).await, refused());
    assert_eq!(hit(&second, &secret).await, refused());
    // The key vanishes once the bucket would be full: 4 requests at 2 s each.
    let ttl = key_ttl_ms(&token.id).await;
    assert!((1..=8_000).contains(&ttl), "PTTL {ttl}");
    // Another token is not touched.
    let other = first.token("u1").await;
    assert_eq!(hit(&second, &other).await, ok(3));
}

/// A port where nothing listens.
pub(crate) async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

/// Accepts connections and never answers, like a Redis that hangs.
pub(crate) async fn silent_server() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    (port, task)
}

/// Requests at `app` until one is refused, none a 5xx. Answers the
/// remaining counts of the ones let through, and how many took at least
/// the Redis call timeout.
async fn spend_until_refused(app: &TestApp, token: &str) -> (Vec<u64>, usize) {
    let (mut remaining, mut slow) = (Vec::new(), 0);
    for _ in 0..20 {
        let started = Instant::now();
        let seen = hit(app, token).await;
        if started.elapsed() >= CALL_TIMEOUT {
            slow += 1;
        }
        if seen == refused() {
            return (remaining, slow);
        }
        assert_eq!(seen.status, 200, "{seen:?}");
        remaining.push(seen.remaining.unwrap());
    }
    panic!("never refused: {remaining:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_refusing_connections_leaves_the_local_limit() {
    let url = format!("redis://127.0.0.1:{}", closed_port().await);
    let app = app_with(limited(0.5, 3, Some(&url))).await;
    let token = app.token("u1").await;
    assert_eq!(spend_until_refused(&app, &token).await.0, [2, 1, 0]);
    let other = app.token("u1").await;
    assert_eq!(hit(&app, &other).await, ok(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_that_never_answers_costs_one_short_wait() {
    let (port, _server) = silent_server().await;
    let url = format!("redis://127.0.0.1:{port}");
    let app = app_with(limited(0.5, 10, Some(&url))).await;
    let token = app.token("u1").await;
    let (remaining, slow) = spend_until_refused(&app, &token).await;
    assert_eq!(remaining, [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    // One request waited for Redis; the others, within the retry
    // interval, went local at once (a loaded machine may add one more).
    assert!((1..=2).contains(&slow), "{slow} of 11 requests waited");
}

/// A TCP relay to the local Redis that can be cut (listener closed,
/// connections dropped) and restored on the same port.
struct Relay {
    port: u16,
    /// While it relays: dropping the sender cuts it, and the task ends
    /// once its listener and every connection are closed.
    running: Option<(tokio::sync::watch::Sender<()>, tokio::task::JoinHandle<()>)>,
}

impl Relay {
    async fn start() -> Self {
        let port = closed_port().await;
        let mut relay = Self {
            port,
            running: None,
        };
        relay.restore();
        relay
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn restore(&mut self) {
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        socket
            .bind(SocketAddr::from(([127, 0, 0, 1], self.port)))
            .unwrap();
        let listener = socket.listen(16).unwrap();
        let (cut, mut cut_seen) = tokio::sync::watch::channel(());
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = cut_seen.changed() => break,
                    accepted = listener.accept() => {
                        let Ok((mut client, _)) = accepted else { break };
                        connections.spawn(async move {
                            let mut upstream = TcpStream::connect(REDIS_ADDRESS).await.unwrap();
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                        });
                    }
                }
            }
            // Aborts the connections and waits until each has ended (and
            // so closed its sockets).
            connections.shutdown().await;
        });
        self.running = Some((cut, task));
    }

    /// Closes the listener and every connection; returns once they are.
    async fn cut(&mut self) {
        let (cut, task) = self.running.take().expect("the relay runs");
        drop(cut);
        task.await.expect("the relay ends");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_shared_again_when_redis_comes_back() {
    if redis_unavailable() {
        return;
    }
    let mut relay = Relay::start().await;
    // One request every 1,000 s: nothing refills while the test runs and
    // moves the instances' clocks by retry intervals.
    let options = limited(0.001, 4, Some(&relay.url()));
    let first = app_with(options.clone()).await;
    let second = first.another_instance_with(options).await;
    let token = first.token("u1").await;
    assert_eq!(hit(&first, &token).await, ok(3));
    assert_eq!(hit(&second, &token).await, ok(2));

    // Redis gone: the first instance limits on its own, from a full bucket.
    relay.cut().await;
    assert_eq!(spend_until_refused(&first, &token).await.0, [3, 2, 1, 0]);

    // Back: each instance tries Redis again once a RETRY_INTERVAL has
    // passed on its clock, and uses it within a try or two (the client
    // reconnects after the first). The first one's own bucket is spent, so
    // a 200 can only come from the shared one, which has 2 left.
    relay.restore();
    let mut tries = 0;
    loop {
        first.clock.advance(RETRY_INTERVAL);
        let seen = hit(&first, &token).await;
        if seen.status == 200 {
            assert_eq!(seen, ok(1), "the shared bucket");
            break;
        }
        assert_eq!(seen, refused());
        tries += 1;
        assert!(tries < 100, "Redis was not used again");
    }
    assert_eq!(hit(&first, &token).await, ok(0));
    // The second one's own bucket is full (4), so a refusal within 3
    // requests can only come from the shared one, now spent.
    for _ in 0..3 {
        if hit(&second, &token).await == refused() {
            return;
        }
        second.clock.advance(RETRY_INTERVAL);
    }
    panic!("the second instance did not use Redis again");
}

// ----- The binary -----

#[test]
fn bad_rate_limit_flags_are_refused_naming_the_flag() {
    let sandbox = Sandbox::new();
    let cases: [(&[&str], &str); 7] = [
        (&["--rate-limit", "abc"], "--rate-limit"),
        (&["--rate-limit=-5"], "--rate-limit"),
        (&["--rate-limit", "2000000"], "--rate-limit"),
        (&["--rate-limit", "NaN"], "--rate-limit"),
        (&["--rate-limit-burst", "0"], "--rate-limit-burst"),
        (&["--rate-limit-burst", "many"], "--rate-limit-burst"),
        (
            &["--rate-limit", "0.001", "--rate-limit-burst", "5000"],
            "--rate-limit-burst",
        ),
    ];
    for (flags, named) in cases {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        let line = sandbox.run(&args).error(&[named]);
        assert!(!line.contains("hunter2"), "{line}");
    }
    // The same through the environment (a URL with a password given as a
    // flag is also warned of: config.rs tests that).
    for (variable, value, named) in [
        ("PROXYDECK_RATE_LIMIT", "fast", "--rate-limit"),
        (
            "PROXYDECK_RATE_LIMIT_REDIS",
            "http://:hunter2@cache:6379",
            "--rate-limit-redis",
        ),
    ] {
        let mut command = sandbox.command(&["serve", "--listen", "127.0.0.1:0"]);
        command.env(variable, value);
        let line = finish(command, None).error(&[named]);
        assert!(!line.contains("hunter2"), "{line}");
    }
    assert!(!sandbox.db_path().exists(), "nothing was opened");
}

#[tokio::test]
async fn the_binary_serves_with_redis_down_warning_once_without_the_password() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    let url = format!("redis://:hunter2@127.0.0.1:{}", closed_port().await);
    let server = sandbox.serve(&[
        "--rate-limit",
        "0.5",
        "--rate-limit-burst",
        "3",
        "--rate-limit-redis",
        &url,
    ]);
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let response = server.get_raw("/v1/projects", &secret).await;
        statuses.push(response.status().as_u16());
        // Spread over more than one retry interval, so that Redis is tried
        // again (and fails) more than once. No event to wait on: the
        // binary's retries follow the system's clock.
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let log = server
        .log_once(|log| log.contains("rate limit Redis unavailable"))
        .await;
    assert_eq!(
        log.matches("rate limit Redis unavailable").count(),
        1,
        "{log}"
    );
    assert!(!log.contains("hunter2"), "{log}");
    assert!(log.contains("WARN"), "{log}");
}
