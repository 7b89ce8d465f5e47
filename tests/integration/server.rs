//! The HTTP server's production behaviour, over real loopback sockets:
//! keep-alive, compression, slow and oversized clients, HEAD, HTTP/2 by
//! prior knowledge, graceful shutdown (in process and of the real binary on
//! SIGTERM/SIGINT) and secrets staying out of logs and bodies.
//!
//! Raw socket tests read with explicit timeouts, so none can hang.

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use proxydeck::app::ServiceOptions;
use proxydeck::domain::api_token::ApiToken;
use proxydeck::store::{self, DatabaseUrl, StoreOptions};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::binary::{Sandbox, Server, free_port};
use crate::helpers::*;

/// Longest any single socket operation may take before a test fails.
const IO_TIMEOUT: Duration = Duration::from_secs(3);
/// The header read timeout of the slow-client tests.
const HEADER_TIMEOUT: Duration = Duration::from_millis(300);
/// How long after [`HEADER_TIMEOUT`] a connection must be gone.
const CLOSE_WITHIN: Duration = Duration::from_millis(1500);

// ----- Fixtures and options -----

/// One organization, user `u1` in it, `projects` projects (p000, p001, ...)
/// and two proxy-settings revisions of p000.
fn fixture(projects: usize) -> Vec<Value> {
    let mut lines = vec![org(1), user("u1", &[1])];
    for i in 0..projects {
        lines.push(project(&format!("p{i:03}"), 1, i as i64));
    }
    lines.push(settings("p000", 1, false));
    lines.push(settings("p000", 2, true));
    lines
}

async fn seeded_app(options: ServiceOptions, projects: usize) -> (TestApp, String) {
    let app = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    app.seed(fixture(projects)).await;
    let token = app.token("u1").await;
    (app, token)
}

/// Test options with a short header read timeout.
fn slow_client_options() -> ServiceOptions {
    let mut options = test_options();
    options.server.header_read_timeout = HEADER_TIMEOUT;
    options
}

/// A client that neither asks for nor decodes compressed bodies.
fn plain_client() -> reqwest::Client {
    crate::helpers::client_builder()
        .no_proxy()
        .no_gzip()
        .build()
        .expect("an HTTP client")
}

// ----- Raw HTTP/1.1 over TCP -----

async fn connect(address: SocketAddr) -> TcpStream {
    tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(address))
        .await
        .expect("connect in time")
        .expect("the server accepts")
}

fn get_request(path: &str, token: Option<&str>) -> String {
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n");
    if let Some(token) = token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    request.push_str("\r\n");
    request
}

#[derive(Debug)]
struct RawResponse {
    status: u16,
    /// Names in lower case.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads one response framed by Content-Length. `buffer` carries bytes
/// read past a previous response.
async fn read_response(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> RawResponse {
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = find(buffer, b"\r\n\r\n") {
            break at;
        }
        let read = tokio::time::timeout(IO_TIMEOUT, stream.read(&mut chunk))
            .await
            .expect("the response head comes in time")
            .expect("the connection reads");
        assert!(
            read > 0,
            "the connection closed before a full response head; got {:?}",
            String::from_utf8_lossy(buffer)
        );
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).expect("an ASCII head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
    let status: u16 = status_line[9..12].parse().expect("a status code");
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').expect("a header line");
            (name.trim().to_ascii_lowercase(), value.trim().to_owned())
        })
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse().expect("a numeric Content-Length"))
        .unwrap_or_else(|| panic!("no Content-Length in {head}"));
    buffer.drain(..head_end + 4);
    while buffer.len() < length {
        let read = tokio::time::timeout(IO_TIMEOUT, stream.read(&mut chunk))
            .await
            .expect("the body comes in time")
            .expect("the connection reads");
        assert!(read > 0, "the connection closed in the middle of a body");
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = buffer.drain(..length).collect();
    RawResponse {
        status,
        headers,
        body,
    }
}

/// Reads until the peer closes (EOF or reset). Answers what was read, or
/// `None` when the connection is still open after `within`.
async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(seen),
            Ok(Ok(read)) => seen.extend_from_slice(&chunk[..read]),
        }
    }
}

// ----- The real binary -----

/// `proxydeck serve` on the SQLite file at `database`, with `extra` flags
/// and `RUST_LOG=rust_log`.
fn serve_file(database: &Path, extra: &[&str], rust_log: &str) -> Server {
    let folder = database.parent().expect("the file's folder");
    Server::start(|listen| {
        let mut command = crate::binary::proxydeck(folder);
        command
            .arg("serve")
            .arg("--database")
            .arg(format!("sqlite://{}", database.display()))
            .args(["--listen", listen])
            .args(extra)
            .env("RUST_LOG", rust_log);
        command
    })
}

/// A database file seeded through the library (then closed), with a token
/// of `u1`: (folder, file, secret).
async fn seeded_database(projects: usize) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let TestStore {
        store, path, dir, ..
    } = TestStore::new(Backend::Sqlite).await;
    seed(store.as_ref(), fixture(projects))
        .await
        .expect("the fixture imports");
    let (_, secret) = mint(store.as_ref(), "u1", "binary", None).await;
    drop(store);
    (dir, path, secret)
}

/// The tokens of `u1` in the SQLite file at `path`, oldest first, read
/// through a store of their own.
async fn tokens_of_u1(path: &Path) -> Vec<ApiToken> {
    let url = DatabaseUrl::Sqlite(path.to_owned());
    let store = store::open(&url, &StoreOptions::default()).await.unwrap();
    let records = store.list_user_tokens("u1").await.expect("the tokens list");
    records.into_iter().map(|record| record.token).collect()
}

// ----- Load during shutdown -----

#[derive(Default, Debug)]
struct Tally {
    /// 200 with a JSON body.
    ok: usize,
    /// Failed before response headers (refused, reset, closed idle).
    before_headers: usize,
    /// Anything wrong after response headers arrived.
    after_headers: Vec<String>,
}

/// `loops` concurrent request loops on GET `url` until `stop` is set.
fn hammer(url: String, token: &str, loops: usize, stop: Arc<AtomicBool>) -> JoinSet<Tally> {
    // A bound on each request: once the server has stopped, a request that
    // neither fails nor finishes must not hold the test forever (the
    // in-process server's runtime outlives it; a real process exits).
    let client = crate::helpers::client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("an HTTP client");
    let mut set = JoinSet::new();
    for _ in 0..loops {
        let (client, url, token, stop) =
            (client.clone(), url.clone(), token.to_owned(), stop.clone());
        set.spawn(async move {
            let mut tally = Tally::default();
            while !stop.load(Ordering::Relaxed) {
                let response = match client.get(&url).bearer_auth(&token).send().await {
                    Ok(response) => response,
                    Err(_) => {
                        tally.before_headers += 1;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                };
                let status = response.status();
                match response.bytes().await {
                    Err(error) => tally
                        .after_headers
                        .push(format!("{status}, body failed: {error:?}")),
                    Ok(body) if status != 200 => tally
                        .after_headers
                        .push(format!("{status}: {}", String::from_utf8_lossy(&body))),
                    Ok(body) => match serde_json::from_slice::<Value>(&body) {
                        Ok(_) => tally.ok += 1,
                        Err(error) => tally
                            .after_headers
                            .push(format!("200 but not JSON ({error}), {} bytes", body.len())),
                    },
                }
            }
            tally
        });
    }
    set
}

async fn total(mut set: JoinSet<Tally>) -> Tally {
    let mut sum = Tally::default();
    while let Some(tally) = set.join_next().await {
        let tally = tally.expect("a request loop ends");
        sum.ok += tally.ok;
        sum.before_headers += tally.before_headers;
        sum.after_headers.extend(tally.after_headers);
    }
    sum
}

// ===== 1. Keep-alive =====

#[tokio::test]
async fn two_requests_are_answered_on_one_kept_alive_connection() {
    let (app, token) = seeded_app(test_options(), 3).await;
    let mut stream = connect(app.address).await;
    let mut buffer = Vec::new();

    stream
        .write_all(get_request("/v1/projects", Some(&token)).as_bytes())
        .await
        .unwrap();
    let first = read_response(&mut stream, &mut buffer).await;
    assert_eq!(first.status, 200, "{first:?}");
    assert_ne!(first.header("connection"), Some("close"));
    let first_body: Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(ids(&first_body), ["p002", "p001", "p000"]);

    stream
        .write_all(get_request("/v1/api_tokens", Some(&token)).as_bytes())
        .await
        .expect("the kept-alive connection takes a second request");
    let second = read_response(&mut stream, &mut buffer).await;
    assert_eq!(second.status, 200, "{second:?}");
    let second_body: Value = serde_json::from_slice(&second.body).unwrap();
    assert_eq!(second_body["data"].as_array().unwrap().len(), 1);
    assert!(buffer.is_empty(), "stray bytes after the second response");
}

// ===== 2. Compression =====

#[tokio::test]
async fn large_listings_are_gzip_compressed_and_decode_to_the_same_json() {
    let (app, token) = seeded_app(test_options(), 120).await;
    let path = "/v1/projects?limit=100";
    let plain = plain_client();

    // Uncompressed: no Accept-Encoding, no Content-Encoding.
    let response = plain
        .get(app.url(path))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers().get("content-encoding"), None);
    let raw = response.bytes().await.unwrap();
    let uncompressed: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(ids(&uncompressed).len(), 100);
    assert!(raw.len() > 10_000, "a large listing: {} bytes", raw.len());

    // Asked for gzip: the raw bytes are a gzip stream, and smaller.
    let response = plain
        .get(app.url(path))
        .bearer_auth(&token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-encoding"], "gzip");
    assert_eq!(response.headers()["content-type"], "application/json");
    let vary = response
        .headers()
        .get_all("vary")
        .iter()
        .map(|v| v.to_str().unwrap().to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(",");
    assert!(vary.contains("accept-encoding"), "Vary: {vary}");
    let gzipped = response.bytes().await.unwrap();
    assert_eq!(&gzipped[..3], &[0x1f, 0x8b, 0x08], "a gzip stream");
    assert!(
        gzipped.len() < raw.len() / 2,
        "{} vs {}",
        gzipped.len(),
        raw.len()
    );

    // Decoded (reqwest's gzip support sends Accept-Encoding: gzip and
    // decodes): the same JSON as the uncompressed answer.
    let decoded = app.get(path, &token).await;
    assert_eq!(decoded.status(), 200);
    let decoded: Value = serde_json::from_slice(&decoded.bytes().await.unwrap()).unwrap();
    assert_eq!(decoded, uncompressed);
}

#[tokio::test]
async fn brotli_and_zstd_are_honoured() {
    let (app, token) = seeded_app(test_options(), 60).await;
    let plain = plain_client();
    let path = "/v1/projects?limit=60";
    let raw_len = plain
        .get(app.url(path))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .len();
    for encoding in ["br", "zstd"] {
        let response = plain
            .get(app.url(path))
            .bearer_auth(&token)
            .header("accept-encoding", encoding)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{encoding}");
        assert_eq!(response.headers()["content-encoding"], encoding);
        let body = response.bytes().await.unwrap();
        assert!(
            body.len() < raw_len / 2,
            "{encoding}: {} of {raw_len} bytes",
            body.len()
        );
        if encoding == "zstd" {
            assert_eq!(&body[..4], &[0x28, 0xb5, 0x2f, 0xfd], "a zstd frame");
        }
    }
}

#[tokio::test]
async fn small_bodies_are_not_compressed() {
    let (app, token) = seeded_app(test_options(), 1).await;
    let plain = plain_client();
    // An error body (401, no token) and a 400 are small.
    for (path, token, status) in [
        ("/v1/projects", None, 401),
        ("/v1/projects?limit=0", Some(token.as_str()), 400),
        ("/v1/nowhere", Some(token.as_str()), 404),
    ] {
        let mut request = plain
            .get(app.url(path))
            .header("accept-encoding", "gzip, br, zstd");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), status, "{path}");
        assert_eq!(response.headers().get("content-encoding"), None, "{path}");
        let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        assert_error_shape(&body);
    }
}

// ===== 3. Slow clients =====

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_header_read_timeout() {
    let (app, _token) = seeded_app(slow_client_options(), 1).await;
    let mut stream = connect(app.address).await;
    let started = Instant::now();
    let seen = read_until_closed(&mut stream, CLOSE_WITHIN)
        .await
        .expect("the silent connection is closed within 1.5s");
    assert!(seen.is_empty(), "{:?}", String::from_utf8_lossy(&seen));
    assert!(
        started.elapsed() >= HEADER_TIMEOUT - Duration::from_millis(50),
        "closed after {:?}, before the timeout",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_client_trickling_its_request_head_is_cut_off() {
    let (app, token) = seeded_app(slow_client_options(), 1).await;
    let stream = connect(app.address).await;
    let (mut reader, mut writer) = stream.into_split();
    let request = get_request("/v1/projects", Some(&token)).into_bytes();
    let started = Instant::now();
    let trickle = tokio::spawn(async move {
        for byte in request {
            if writer.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    let closed = loop {
        match tokio::time::timeout_at(
            tokio::time::Instant::from_std(started + CLOSE_WITHIN),
            reader.read(&mut chunk),
        )
        .await
        {
            Err(_) => break false,
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(read)) => seen.extend_from_slice(&chunk[..read]),
        }
    };
    trickle.abort();
    let seen = String::from_utf8_lossy(&seen);
    assert!(
        !seen.contains(" 200 "),
        "the trickled request was served: {seen}"
    );
    assert!(
        closed,
        "still connected after {CLOSE_WITHIN:?}; got {seen:?}"
    );
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_after_the_timeout() {
    let (app, token) = seeded_app(slow_client_options(), 1).await;
    let mut stream = connect(app.address).await;
    stream
        .write_all(get_request("/v1/projects", Some(&token)).as_bytes())
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let response = read_response(&mut stream, &mut buffer).await;
    assert_eq!(response.status, 200);
    let answered = Instant::now();
    let seen = read_until_closed(&mut stream, CLOSE_WITHIN)
        .await
        .expect("the idle connection is closed within 1.5s");
    assert!(seen.is_empty(), "{:?}", String::from_utf8_lossy(&seen));
    assert!(
        answered.elapsed() >= HEADER_TIMEOUT - Duration::from_millis(50),
        "closed after {:?}",
        answered.elapsed()
    );
}

/// A client that sends a fragment (the start of an HTTP/2 preface, one
/// byte) and then stalls is cut off like any slow request head.
#[tokio::test]
async fn a_client_stalling_inside_the_http2_preface_is_cut_off() {
    let (app, _token) = seeded_app(slow_client_options(), 1).await;
    for partial in [&b"PRI * HTTP/2.0\r\n"[..], b"P"] {
        let mut stream = connect(app.address).await;
        stream.write_all(partial).await.unwrap();
        let closed = read_until_closed(&mut stream, CLOSE_WITHIN).await;
        assert!(
            closed.is_some(),
            "{:?} then silence holds the connection open past {CLOSE_WITHIN:?}",
            String::from_utf8_lossy(partial)
        );
    }
}

// ===== 4. Oversized requests =====

#[tokio::test]
async fn headers_over_16_kib_get_a_json_431() {
    let (app, token) = seeded_app(test_options(), 1).await;
    let filler = "x".repeat(9 * 1024);
    let response = app
        .client
        .get(app.url("/v1/projects"))
        .bearer_auth(&token)
        .header("x-filler-one", &filler)
        .header("x-filler-two", &filler)
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, 431, "{body}");
    assert_eq!(assert_error_shape(&body), "invalid_request_error");

    // Just under the limit is served.
    let response = app
        .client
        .get(app.url("/v1/projects"))
        .bearer_auth(&token)
        .header("x-filler-one", "x".repeat(15 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_uri_over_8_kib_gets_a_json_414() {
    let (app, token) = seeded_app(test_options(), 1).await;
    let path = format!("/v1/projects?start_key={}", "a".repeat(9 * 1024));
    let (status, body) = app.get_json(&path, &token).await;
    assert_eq!(status, 414, "{body}");
    assert_eq!(assert_error_shape(&body), "invalid_request_error");
    // Also without a token: the limit is checked first.
    let response = app.client.get(app.url(&path)).send().await.unwrap();
    assert_eq!(response.status(), 414);
}

#[tokio::test]
async fn headers_over_64_kib_are_refused_and_the_server_goes_on() {
    let (app, token) = seeded_app(test_options(), 1).await;
    let mut stream = connect(app.address).await;
    let mut request = format!(
        "GET /v1/projects HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n"
    );
    for i in 0..8 {
        request.push_str(&format!("x-filler-{i}: {}\r\n", "y".repeat(9 * 1024)));
    }
    request.push_str("\r\n");
    assert!(request.len() > 70 * 1024);
    // The server may close while we still write: that is an acceptable end.
    let _ = stream.write_all(request.as_bytes()).await;
    let seen = read_until_closed(&mut stream, IO_TIMEOUT)
        .await
        .expect("the connection is closed after an oversized head");
    // Closed while the client still sent, the answer may be lost to the
    // reset (TCP discards what was unread); when it arrives, it is the
    // JSON 431.
    if !seen.is_empty() {
        assert_json_error_answer(&seen, 431);
    }

    let (status, body) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200, "{body}");
}

// ===== 5. HEAD =====

#[tokio::test]
async fn head_on_each_listing_answers_the_get_headers_without_a_body() {
    let (app, token) = seeded_app(test_options(), 3).await;
    let plain = plain_client();
    // Let the first use of the token reach the store, so that the token
    // listing does not change between the GET and the HEAD.
    let _ = app.get("/v1/api_tokens", &token).await;
    tokio::time::sleep(FLUSH_INTERVAL * 3).await;
    for path in [
        "/v1/projects",
        "/v1/api_tokens",
        "/v1/projects/p000/proxy-settings",
    ] {
        let get = plain
            .get(app.url(path))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), 200, "{path}");
        let get_headers = get.headers().clone();
        let get_body = get.bytes().await.unwrap();
        assert!(!get_body.is_empty());

        let head = plain
            .head(app.url(path))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(head.status(), 200, "{path}");
        let head_headers = head.headers().clone();
        assert!(
            head.bytes().await.unwrap().is_empty(),
            "{path}: HEAD has a body"
        );
        assert!(get_headers.contains_key("etag"), "{path}: no ETag");
        for name in ["content-type", "cache-control", "etag"] {
            assert_eq!(
                head_headers.get(name),
                get_headers.get(name),
                "{path}: {name}"
            );
        }
        assert_eq!(head_headers["content-type"], "application/json");
        if let Some(length) = head_headers.get("content-length") {
            assert_eq!(
                length.to_str().unwrap(),
                get_body.len().to_string(),
                "{path}: HEAD announces another length"
            );
        }
    }
}

#[tokio::test]
async fn head_announces_the_same_content_encoding_as_get() {
    let (app, token) = seeded_app(test_options(), 40).await;
    let plain = plain_client();
    let path = "/v1/projects?limit=40";
    let get = plain
        .get(app.url(path))
        .bearer_auth(&token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    let head = plain
        .head(app.url(path))
        .bearer_auth(&token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(get.headers()["content-encoding"], "gzip");
    assert_eq!(
        head.headers().get("content-encoding"),
        get.headers().get("content-encoding")
    );
    assert!(head.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn head_without_a_token_is_401() {
    let (app, _token) = seeded_app(test_options(), 1).await;
    let plain = plain_client();
    for path in [
        "/v1/projects",
        "/v1/api_tokens",
        "/v1/projects/p000/proxy-settings",
    ] {
        let head = plain.head(app.url(path)).send().await.unwrap();
        assert_eq!(head.status(), 401, "{path}");
        assert_eq!(head.headers()["www-authenticate"], "Bearer", "{path}");
        assert!(head.bytes().await.unwrap().is_empty(), "{path}");
    }
}

// ===== 6. Graceful shutdown =====

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stop_lets_every_answered_request_finish() {
    let mut options = test_options();
    options.server.shutdown_grace = Duration::from_secs(2);
    // Bounds the wait for spare pooled connections that never send a byte.
    options.server.header_read_timeout = Duration::from_secs(1);
    let (app, token) = seeded_app(options, 30).await;
    let stop = Arc::new(AtomicBool::new(false));
    let loops = hammer(app.url("/v1/projects?limit=30"), &token, 32, stop.clone());

    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(4), app.stop())
        .await
        .expect("stop returns");
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    let tally = total(loops).await;

    assert!(tally.ok > 0, "{tally:?}");
    assert!(
        tally.after_headers.is_empty(),
        "requests failed after their headers: {:?}",
        tally.after_headers
    );
    assert!(took < Duration::from_millis(2500), "stop took {took:?}");
}

/// A connection that never sent a byte has no request in flight: shutdown
/// need not wait for it.
#[tokio::test]
async fn stop_does_not_wait_for_a_silent_connection() {
    let mut options = test_options();
    options.server.header_read_timeout = Duration::from_secs(2);
    options.server.shutdown_grace = Duration::from_secs(4);
    let (app, _token) = seeded_app(options, 1).await;
    let mut silent = connect(app.address).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), app.stop())
        .await
        .expect("stop returns");
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(1000),
        "stop waited {took:?} for a connection that never sent a byte"
    );
    assert!(read_until_closed(&mut silent, IO_TIMEOUT).await.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_binary_exits_cleanly_on_sigterm_while_requests_flow() {
    let (_dir, path, secret) = seeded_database(30).await;
    let mut binary = serve_file(&path, &["--header-read-timeout", "2s"], "info");
    let stop = Arc::new(AtomicBool::new(false));
    let loops = hammer(
        binary.url("/v1/projects?limit=30"),
        &secret,
        16,
        stop.clone(),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;

    let (took, status, _stdout, stderr) = binary.stop_with("TERM").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);
    let tally = total(loops).await;

    assert!(status.success(), "exit {status:?}; stderr:\n{stderr}");
    assert!(took < Duration::from_secs(3), "exit took {took:?}");
    assert!(stderr.contains("shutting down"), "{stderr}");
    assert!(stderr.contains("stopped"), "{stderr}");
    assert!(tally.ok > 0, "{tally:?}");
    assert!(
        tally.after_headers.is_empty(),
        "requests failed after their headers: {:?}",
        tally.after_headers
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exits_cleanly_on_sigterm_and_sigint() {
    for signal in ["TERM", "INT"] {
        let (_dir, path, secret) = seeded_database(1).await;
        let mut binary = serve_file(&path, &[], "info");
        let response = crate::helpers::client_builder()
            .build()
            .unwrap()
            .get(binary.url("/v1/projects"))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        drop(response);

        let (took, status, _stdout, stderr) = binary.stop_with(signal).await;
        assert!(
            status.success(),
            "SIG{signal}: exit {status:?}; stderr:\n{stderr}"
        );
        assert!(
            took < Duration::from_secs(3),
            "SIG{signal}: exit took {took:?}"
        );
        assert!(stderr.contains("shutting down"), "SIG{signal}: {stderr}");
        assert!(stderr.contains("stopped"), "SIG{signal}: {stderr}");
    }
}

/// The `serving` line is the operator's (and a supervisor's) sign of
/// readiness; a SIGTERM after it must take the graceful path, not the
/// default action of the signal. A shell sends the signal (its builtin
/// `kill`) the moment it reads that line, twenty times over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_right_after_the_serving_line_is_handled_gracefully() {
    const SCRIPT: &str = r#"
        bin="$1"; db="$2"; fifo="$3"
        for attempt in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
            rm -f "$fifo"; mkfifo "$fifo"
            RUST_LOG=info "$bin" serve --database "sqlite://$db" --listen 127.0.0.1:0 \
                >/dev/null 2>"$fifo" &
            pid=$!
            exec 3<"$fifo"
            while IFS= read -r line <&3; do
                case "$line" in *serving*) kill -TERM "$pid"; break;; esac
            done
            cat <&3 >/dev/null
            exec 3<&-
            wait "$pid"
            echo "exit=$?"
        done
    "#;
    let (dir, path, _secret) = seeded_database(1).await;
    let mut shell = Command::new("sh")
        .arg("-c")
        .arg(SCRIPT)
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_proxydeck"))
        .arg(&path)
        .arg(dir.path().join("stderr.fifo"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("sh starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while shell.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            let _ = shell.kill();
            let _ = shell.wait();
            panic!("the script did not finish");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut out = String::new();
    shell
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let exits: Vec<&str> = out.lines().collect();
    assert_eq!(exits.len(), 20, "{out}");
    let killed = exits.iter().filter(|e| **e != "exit=0").count();
    assert_eq!(
        killed, 0,
        "{killed} of 20 SIGTERMs right after `serving` were not handled: {exits:?}"
    );
}

// ===== 7. last_used_at at shutdown =====

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_used_at_is_written_at_shutdown() {
    let (_dir, path, secret) = seeded_database(1).await;
    let mut binary = serve_file(&path, &["--last-used-flush-interval", "1h"], "info");
    // The flusher's first tick comes at once; let it pass, so that the next
    // write can only be the one at shutdown.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let response = crate::helpers::client_builder()
        .build()
        .unwrap()
        .get(binary.url("/v1/projects"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let before = tokens_of_u1(&path).await;
    assert_eq!(before.len(), 1);
    assert!(
        before[0].last_used_at.is_none(),
        "written before shutdown, with a 1h flush interval"
    );

    let (_, status, _, stderr) = binary.stop_with("TERM").await;
    assert!(status.success(), "{stderr}");
    let after = tokens_of_u1(&path).await;
    assert!(
        after[0].last_used_at.is_some(),
        "last_used_at was not written at shutdown: {:?}",
        after[0]
    );
}

// ===== 8. Secrets stay out of logs and bodies =====

/// Every log line at every level, as text and as JSON, and every body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_logs_or_bodies() {
    for format in ["text", "json"] {
        secrets_never_reach_logs_or_bodies_in(format).await;
    }
}

async fn secrets_never_reach_logs_or_bodies_in(log_format: &str) {
    let TestStore {
        store,
        path,
        dir: _dir,
        ..
    } = TestStore::new(Backend::Sqlite).await;
    seed(store.as_ref(), fixture(2)).await.unwrap();
    let (_, valid) = mint(store.as_ref(), "u1", "valid", None).await;
    let (revoked_token, revoked) = mint(store.as_ref(), "u1", "revoked", None).await;
    store.revoke_token(&revoked_token.id).await.unwrap();
    drop(store);
    // One character of the random part changed.
    let mut mistyped = valid.clone().into_bytes();
    mistyped[10] = if mistyped[10] == b'a' { b'b' } else { b'a' };
    let mistyped = String::from_utf8(mistyped).unwrap();

    let mut binary = serve_file(&path, &["--log-format", log_format], "trace");
    let client = plain_client();
    let mut bodies = Vec::new();
    let bearer = |secret: &str| Some(format!("Bearer {secret}"));
    let requests = [
        ("/v1/projects".to_owned(), bearer(&valid), 200),
        ("/v1/api_tokens".to_owned(), bearer(&valid), 200),
        (
            "/v1/projects/p000/proxy-settings".to_owned(),
            bearer(&valid),
            200,
        ),
        ("/v1/projects".to_owned(), bearer(&revoked), 401),
        ("/v1/projects".to_owned(), bearer(&mistyped), 401),
        (
            format!("/v1/projects?start_key={valid}"),
            bearer(&valid),
            400,
        ),
        (
            format!("/v1/api_tokens?start_key={valid}"),
            bearer(&valid),
            400,
        ),
        (format!("/v1/projects?token={valid}"), bearer(&valid), 400),
        (format!("/v1/projects?token={valid}"), None, 401),
        (
            "/v1/projects".to_owned(),
            Some(format!("Basic {valid}")),
            401,
        ),
    ];
    for (path, authorization, expected) in requests {
        let mut request = client.get(binary.url(&path));
        if let Some(authorization) = authorization {
            // A caller that sends its token as its request id, too.
            let bare = authorization.rsplit(' ').next().unwrap_or_default();
            request = request
                .header("x-request-id", bare)
                .header("authorization", &authorization);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let body = String::from_utf8_lossy(&response.bytes().await.unwrap()).into_owned();
        assert_eq!(status, expected, "{path}: {body}");
        bodies.push(body);
    }
    drop(client);
    let (_, status, stdout, stderr) = binary.stop_with("TERM").await;
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("request"), "trace logging ran: {stderr}");
    if log_format == "json" {
        for line in stderr.lines() {
            serde_json::from_str::<Value>(line)
                .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
        }
    }
    for secret in [&valid, &revoked, &mistyped] {
        let middle = &secret[4..36];
        for (place, text) in [("stderr", &stderr), ("stdout", &stdout)] {
            assert!(
                !text.contains(middle),
                "a secret's random part is in {place}"
            );
        }
        for body in &bodies {
            assert!(
                !body.contains(middle),
                "a secret's random part is in a body: {body}"
            );
        }
    }
}

/// The request log is written by a thread of its own: a burst of
/// concurrent requests, then SIGTERM at once, and every request has its one
/// line on stderr, whole, before the process ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_line_is_written_out_before_the_server_exits() {
    use futures_util::StreamExt;
    const REQUESTS: usize = 2000;
    let (_dir, path, secret) = seeded_database(1).await;
    let mut binary = serve_file(
        &path,
        &["--log-format", "json", "--rate-limit", "off"],
        "info",
    );
    let client = plain_client();
    let answers: Vec<_> = futures_util::stream::iter(0..REQUESTS)
        .map(|n| {
            let request = client
                .get(binary.url("/v1/projects?limit=2"))
                .bearer_auth(&secret)
                .header("x-request-id", format!("burst-{n}"));
            async move { request.send().await.unwrap().status() }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    assert!(answers.iter().all(|status| *status == 200), "{answers:?}");
    drop(client);
    let (_, status, _, stderr) = binary.stop_with("TERM").await;
    assert!(status.success(), "{stderr}");
    let mut seen = vec![0usize; REQUESTS];
    for line in stderr.lines() {
        let line: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("a broken line ({e}): {line}"));
        if let Some(n) = line["request_id"]
            .as_str()
            .and_then(|id| id.strip_prefix("burst-"))
        {
            seen[n.parse::<usize>().unwrap()] += 1;
        }
    }
    let wrong: Vec<(usize, usize)> = seen
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, lines)| *lines != 1)
        .collect();
    assert!(
        wrong.is_empty(),
        "requests without exactly one line: {wrong:?}"
    );
}

/// Runs the binary on `path` with `extra` arguments and `RUST_LOG`, makes
/// a few requests with known request ids (`log-ok`, `log-anon`,
/// `log-route`, `log-probe`), stops it and answers its stderr.
async fn logged_requests(path: &Path, secret: &str, extra: &[&str], rust_log: &str) -> String {
    let mut binary = serve_file(path, extra, rust_log);
    let client = plain_client();
    for (id, target, token, expected) in [
        ("log-ok", "/v1/projects?limit=1", Some(secret), 200),
        ("log-anon", "/v1/projects", None, 401),
        (
            "log-route",
            "/v1/projects/p000/proxy-settings",
            Some(secret),
            200,
        ),
        ("log-probe", "/healthz", None, 200),
    ] {
        let mut request = client.get(binary.url(target)).header("x-request-id", id);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), expected, "{target}");
        assert_eq!(response.headers()["x-request-id"], id);
    }
    drop(client);
    let (_, status, _, stderr) = binary.stop_with("TERM").await;
    assert!(status.success(), "{stderr}");
    stderr
}

/// One request line per request, with its method, route template, status,
/// latency, request id and the caller's token id (none without a valid
/// token), as JSON objects or as text; probes only at debug; RUST_LOG
/// before --log-level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_lines_hold_the_request_fields_in_json_and_in_text() {
    let (_dir, path, secret) = seeded_database(1).await;
    let token_id = tokens_of_u1(&path).await[0].id.clone();

    let stderr = logged_requests(&path, &secret, &["--log-format", "json"], "info").await;
    let lines: Vec<Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let line_of = |id: &str| {
        let found: Vec<&Value> = lines
            .iter()
            .filter(|line| line["request_id"] == id)
            .collect();
        assert_eq!(found.len(), 1, "{id}: {stderr}");
        found[0].clone()
    };
    let ok = line_of("log-ok");
    assert_eq!(ok["message"], "request");
    assert_eq!(ok["level"], "INFO");
    assert!(ok["timestamp"].is_string(), "{ok}");
    assert_eq!(ok["method"], "GET");
    assert_eq!(ok["route"], "/v1/projects");
    assert_eq!(ok["status"], 200);
    assert!(ok["latency_us"].is_u64(), "{ok}");
    assert_eq!(ok["token_id"], token_id.as_str());
    let anonymous = line_of("log-anon");
    assert_eq!(anonymous["status"], 401);
    assert!(anonymous.get("token_id").is_none(), "{anonymous}");
    assert_eq!(
        line_of("log-route")["route"],
        "/v1/projects/{id}/proxy-settings",
        "the route template, not the path"
    );
    assert!(
        !stderr.contains("log-probe"),
        "probes are not logged at info"
    );

    let stderr = logged_requests(&path, &secret, &[], "info").await;
    let ok = stderr
        .lines()
        .find(|line| line.contains("request_id=\"log-ok\""))
        .unwrap_or_else(|| panic!("no text line for log-ok: {stderr}"));
    for part in [
        " INFO ",
        "method=GET",
        "route=\"/v1/projects\"",
        "status=200",
        "latency_us=",
        &format!("token_id=\"{token_id}\""),
    ] {
        assert!(ok.contains(part), "{part} is not in {ok}");
    }
    let anonymous = stderr
        .lines()
        .find(|line| line.contains("request_id=\"log-anon\""))
        .expect("a line for log-anon");
    assert!(!anonymous.contains("token_id"), "{anonymous}");

    // An empty RUST_LOG is no filter: --log-level decides, and at debug the
    // probe is logged.
    let stderr = logged_requests(&path, &secret, &["--log-level", "debug"], "").await;
    assert!(stderr.contains("log-probe"), "{stderr}");
    // RUST_LOG wins over --log-level (it lets the `serving` line through,
    // which the test harness waits for).
    let stderr = logged_requests(
        &path,
        &secret,
        &["--log-level", "debug"],
        "warn,proxydeck::app=info",
    )
    .await;
    assert!(!stderr.contains("log-ok"), "{stderr}");
}

/// decisions.md section 3: no error body holds any part of a secret token.
/// A token pasted as the query string becomes an unknown parameter name.
#[tokio::test]
async fn a_secret_pasted_as_the_query_string_is_not_echoed() {
    let (app, token) = seeded_app(test_options(), 1).await;
    for query in [token.clone(), format!("{token}=1")] {
        let (status, body) = app.get_json(&format!("/v1/projects?{query}"), &token).await;
        assert_eq!(status, 400, "{body}");
        assert_error_shape(&body);
        assert!(
            !body.to_string().contains(&token[4..36]),
            "the secret is echoed: {body}"
        );
    }
}

// ===== 9. HTTP/2 with prior knowledge is not spoken =====

/// The server speaks HTTP/1.1 only (src/http/server.rs says why): an h2c
/// client gets an HTTP/1.1 refusal or a closed connection, never an
/// HTTP/2 frame, and the server goes on serving.
#[tokio::test]
async fn http2_prior_knowledge_is_refused_cleanly() {
    let (app, token) = seeded_app(slow_client_options(), 2).await;
    let mut stream = connect(app.address).await;
    stream
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    // An empty SETTINGS frame.
    stream
        .write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0])
        .await
        .unwrap();
    let answer = read_until_closed(&mut stream, Duration::from_secs(2))
        .await
        .expect("the connection is closed");
    // hyper closes on the HTTP/2 preface without an answer: an h2 client
    // could not read an HTTP/1.1 one. Any answer would be the JSON 400.
    if !answer.is_empty() {
        assert_json_error_answer(&answer, 400);
    }
    let (status, body) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200);
    assert_eq!(ids(&body), ["p001", "p000"]);
}

// ===== 10. Many idle connections =====

/// Dot segments, which URL parsers remove before sending (so the fuzz
/// tests cannot send them), sent raw: a 400 naming `id`, like any id out
/// of shape.
#[tokio::test]
async fn dot_segments_sent_raw_are_refused_as_ids() {
    let (app, token) = seeded_app(test_options(), 1).await;
    for id in [".", "..", "%2E", "%2e%2E"] {
        let mut stream = connect(app.address).await;
        let request = get_request(&format!("/v1/projects/{id}/proxy-settings"), Some(&token));
        stream.write_all(request.as_bytes()).await.unwrap();
        let answer = read_response(&mut stream, &mut Vec::new()).await;
        assert_eq!(answer.status, 400, "{id}: {answer:?}");
        let body: Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(assert_error_shape(&body), "invalid_request_error");
        assert_eq!(error_param(&body), "id", "{id}");
    }
    app.stop().await;
}

/// At `max_connections` the server stops accepting: one more connection
/// is queued by the kernel, unanswered, until an open one closes; then it
/// is served like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_wait_until_one_closes() {
    let mut options = test_options();
    options.server.max_connections = 2;
    let (app, token) = seeded_app(options, 1).await;
    let mut open = vec![connect(app.address).await, connect(app.address).await];
    // Both are the server's: each answers.
    for stream in &mut open {
        stream
            .write_all(get_request("/v1/projects", Some(&token)).as_bytes())
            .await
            .unwrap();
        let answer = read_response(stream, &mut Vec::new()).await;
        assert_eq!(answer.status, 200, "{answer:?}");
    }
    // The third connects (the kernel's queue takes it) but is not served.
    let mut waiting = connect(app.address).await;
    waiting
        .write_all(get_request("/v1/projects", Some(&token)).as_bytes())
        .await
        .unwrap();
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(500), waiting.read(&mut byte)).await;
    assert!(early.is_err(), "answered beyond the limit: {early:?}");
    // One closes: the waiting one is accepted and answered.
    drop(open.pop());
    let answer = read_response(&mut waiting, &mut Vec::new()).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    // The one still open is still served.
    open[0]
        .write_all(get_request("/v1/projects", Some(&token)).as_bytes())
        .await
        .unwrap();
    assert_eq!(
        read_response(&mut open[0], &mut Vec::new()).await.status,
        200
    );
    app.stop().await;
}

/// Open file descriptors and resident memory (KiB) of process `pid`, from
/// `/proc`.
fn process_usage(pid: u32) -> (usize, u64) {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the server's descriptors are readable")
        .count();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    let rss_kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line");
    (fds, rss_kib)
}

/// Polls the server's descriptor count until `done` holds; answers the
/// last usage seen.
async fn usage_when(pid: u32, within: Duration, done: impl Fn(usize) -> bool) -> (usize, u64) {
    let deadline = Instant::now() + within;
    loop {
        let usage = process_usage(pid);
        if done(usage.0) || Instant::now() >= deadline {
            return usage;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Opens `count` connections that send nothing, in batches that the
/// server has accepted before the next (so the listen backlog never
/// overflows, which would delay connections by SYN-ACK retries); answers
/// them and the server's usage with them open.
async fn open_idle(
    address: SocketAddr,
    pid: u32,
    base_fds: usize,
    count: usize,
) -> (Vec<TcpStream>, (usize, u64)) {
    let mut idle = Vec::with_capacity(count);
    while idle.len() < count {
        for _ in 0..(count - idle.len()).min(256) {
            idle.push(connect(address).await);
        }
        let (fds, _) = usage_when(pid, IO_TIMEOUT, |fds| fds >= base_fds + idle.len()).await;
        assert!(
            fds >= base_fds + idle.len(),
            "the server accepted {} of {}",
            fds - base_fds,
            idle.len()
        );
    }
    let usage = process_usage(pid);
    (idle, usage)
}

/// Waits until every one of `idle` is closed by the server; answers how
/// many are still open after `within`.
async fn still_open_after(idle: Vec<TcpStream>, within: Duration) -> usize {
    let mut checks = JoinSet::new();
    for mut stream in idle {
        checks.spawn(async move { read_until_closed(&mut stream, within).await.is_none() });
    }
    let mut still_open = 0;
    while let Some(open) = checks.join_next().await {
        still_open += usize::from(open.unwrap());
    }
    still_open
}

/// Thousands of connections that never send a byte, twice over (the real
/// binary): the service answers at once meanwhile, each costs little
/// memory, all are closed after the header read timeout, the server's
/// descriptors come back to where they were, and the second thousands
/// reuse the first ones' memory instead of adding to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_idle_connections_neither_block_service_nor_leak() {
    const IDLE: usize = 3000;
    // Long enough to open and count them all, even beside the rest of the
    // test suite on two cores (4 s was not, once); then the server closes
    // them.
    const TIMEOUT: Duration = Duration::from_secs(8);
    // This process holds one end of each connection, the server (which
    // inherits the limit) the other.
    let limit = rlimit::increase_nofile_limit(IDLE as u64 + 1024).expect("the fd limit is read");
    assert!(
        limit >= IDLE as u64 + 256,
        "RLIMIT_NOFILE is {limit}; this test needs {IDLE} and more"
    );
    let (_dir, path, secret) = seeded_database(1).await;
    let header_read_timeout = format!("{}s", TIMEOUT.as_secs());
    let binary = serve_file(
        &path,
        &["--header-read-timeout", &header_read_timeout],
        "info",
    );
    let pid = binary.child.id();
    // No connection kept by the client between requests.
    let client = crate::helpers::client_builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let served = || async {
        let started = Instant::now();
        let response = tokio::time::timeout(
            Duration::from_secs(1),
            client
                .get(binary.url("/v1/projects"))
                .bearer_auth(&secret)
                .send(),
        )
        .await
        .expect("answered within 1s")
        .unwrap();
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap();
        started.elapsed()
    };
    served().await;
    // Let the server see that connection end.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (base_fds, base_rss) = process_usage(pid);

    let mut peaks = Vec::new();
    for round in 1..=2 {
        let opened = Instant::now();
        let (idle, (open_fds, open_rss)) = open_idle(binary.address, pid, base_fds, IDLE).await;
        let took = served().await;
        assert!(
            opened.elapsed() < TIMEOUT,
            "too slow to count them before the timeout"
        );
        let per_connection = open_rss.saturating_sub(base_rss) * 1024 / IDLE as u64;
        eprintln!(
            "round {round}: {IDLE} idle connections: fds {base_fds} -> {open_fds}, \
             RSS {base_rss} -> {open_rss} KiB ({per_connection} bytes each); \
             a request meanwhile took {took:?}"
        );
        assert!(
            per_connection < 64 * 1024,
            "{per_connection} bytes of memory per idle connection"
        );
        assert_eq!(
            still_open_after(idle, TIMEOUT + CLOSE_WITHIN).await,
            0,
            "idle connections left open"
        );
        let (end_fds, end_rss) = usage_when(pid, IO_TIMEOUT, |fds| fds <= base_fds).await;
        eprintln!("round {round}: after they closed: fds {end_fds}, RSS {end_rss} KiB");
        assert!(
            end_fds <= base_fds,
            "descriptors left: {base_fds} -> {end_fds}"
        );
        served().await;
        peaks.push(open_rss);
    }
    // Memory of closed connections is reused (the allocator may keep it
    // from the system): a leak would add the whole first growth again, while
    // the allocator's per-thread heaps, which cannot always hand one
    // thread's freed pages to another, have been seen to add 27% of it (CI
    // beside the rest of the suite, 2026-11). Half tells the two apart.
    let growth = peaks[0].saturating_sub(base_rss);
    assert!(
        peaks[1] <= peaks[0] + growth / 2,
        "memory grew again: peaks {peaks:?} KiB from {base_rss} KiB"
    );
}

/// A client that sends requests and never reads the answers cannot hold
/// its connection: once the socket takes no byte of an answer for
/// `write_timeout`, the server closes it. Meanwhile the admin listener
/// (`--admin-listen`, its own connection limit) answers health checks
/// though the API listener is full; afterwards the API serves again.
/// Before the write timeout existed, such connections stayed open for as
/// long as their clients did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_cut_off_and_health_answers_meanwhile() {
    let sandbox = Sandbox::new();
    let token = sandbox.directory(1, "u1");
    let projects: Vec<Value> = (0..100)
        .map(|i| project(&format!("p{i:03}"), 1, i))
        .collect();
    sandbox.import(&projects);
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let admin_listen = admin.to_string();
    let server = sandbox.serve(&[
        "--max-connections",
        "2",
        "--write-timeout",
        "500ms",
        "--admin-listen",
        &admin_listen,
    ]);
    let address = server.address;
    let page = get_request("/v1/projects?limit=100", Some(&token));
    // Two connections that ask and ask and never read, their receive
    // buffers small: the server's writes soon wait.
    let mut stuck = Vec::new();
    for _ in 0..2 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let stream = socket.connect(address).await.unwrap();
        let (_reader, mut writer) = stream.into_split();
        let page = page.clone();
        stuck.push((
            _reader,
            tokio::spawn(async move {
                for _ in 0..5_000 {
                    if writer.write_all(page.as_bytes()).await.is_err() {
                        break; // closed by the server: what is expected
                    }
                }
            }),
        ));
    }
    // Health answers on the admin listener while the API's is full.
    let health = server
        .client
        .get(format!("http://{admin}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    // A third API client waits in the listen queue until the server cuts
    // a stuck one off, then is served.
    let mut waiting = connect(address).await;
    waiting
        .write_all(get_request("/v1/projects", Some(&token)).as_bytes())
        .await
        .unwrap();
    let answer = tokio::time::timeout(
        Duration::from_secs(15),
        read_response(&mut waiting, &mut Vec::new()),
    )
    .await
    .expect("a connection that did not read was closed within the write timeout");
    assert_eq!(answer.status, 200, "{answer:?}");
    for (_reader, writer) in stuck {
        tokio::time::timeout(Duration::from_secs(15), writer)
            .await
            .expect("the stuck connection was closed")
            .unwrap();
    }
}

/// `raw` is one answer with `status`, `Connection: close`, and the JSON
/// error body (`decisions.md` section 3) whose length it announces.
#[track_caller]
fn assert_json_error_answer(raw: &[u8], status: u16) {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{text:?}"));
    assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
    let head = head.to_ascii_lowercase();
    assert!(
        head.contains("\r\ncontent-type: application/json\r\n"),
        "{head}"
    );
    assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())),
        "{head}"
    );
    let body: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    assert_eq!(assert_error_shape(&body), "invalid_request_error", "{body}");
}

/// Requests hyper cannot parse never reach the router: their answers are
/// still the JSON error body (rewritten on the way out, see
/// `src/http/client_stream.rs`), and the connection closes after them.
/// Before, a malformed request line or header got an empty 400 and more
/// than 100 headers an empty 431.
#[tokio::test]
async fn answers_of_the_connection_layer_have_the_json_error_body() {
    let sandbox = Sandbox::new();
    let token = sandbox.directory(1, "u1");
    let server = sandbox.serve(&[]);
    let address = server.address;
    let many_headers: String = (0..120).map(|i| format!("x-h{i}: y\r\n")).collect();
    let cases: [(String, u16); 6] = [
        (
            "GET /v1/projects HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n".into(),
            400,
        ),
        ("GARBAGE\r\n\r\n".into(), 400),
        (
            "GET /v1/projects HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n".into(),
            400,
        ),
        ("GET /v1/projects HTTP/9.9\r\nHost: x\r\n\r\n".into(), 400),
        ("GET /v1/pro jects HTTP/1.1\r\nHost: x\r\n\r\n".into(), 400),
        (
            format!("GET /v1/projects HTTP/1.1\r\nHost: x\r\n{many_headers}\r\n"),
            431,
        ),
    ];
    for (request, status) in cases {
        let mut stream = connect(address).await;
        stream.write_all(request.as_bytes()).await.unwrap();
        let answer = read_until_closed(&mut stream, IO_TIMEOUT)
            .await
            .expect("the connection is closed after the answer");
        assert_json_error_answer(&answer, status);
    }
    // After a good request on a kept-alive connection too.
    let mut stream = connect(address).await;
    let good = get_request("/v1/projects", Some(&token));
    stream
        .write_all(format!("{good}GARBAGE\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let both = read_until_closed(&mut stream, IO_TIMEOUT).await.unwrap();
    let text = String::from_utf8_lossy(&both);
    let second = text
        .find("HTTP/1.1 400")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert_json_error_answer(&both[second..], 400);
}

/// One keep-alive connection of `a_sigterm_under_load_loses_no_request`:
/// it keeps `depth` requests in flight (pipelined when more than one)
/// until an answer says `Connection: close`, then reads what it is owed
/// and ends. Answers the requests answered; any request left without an
/// answer panics the task (a read or a write fails).
async fn until_told_to_close(
    address: SocketAddr,
    request: String,
    depth: usize,
    answered_total: Arc<std::sync::atomic::AtomicUsize>,
) -> usize {
    let mut stream = connect(address).await;
    let mut buffer = Vec::new();
    let (mut in_flight, mut answered, mut closing) = (0, 0, false);
    loop {
        while !closing && in_flight < depth {
            stream
                .write_all(request.as_bytes())
                .await
                .expect("a request is sent on an open connection");
            in_flight += 1;
        }
        if in_flight == 0 {
            return answered;
        }
        let answer = read_response(&mut stream, &mut buffer).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        in_flight -= 1;
        answered += 1;
        answered_total.fetch_add(1, Ordering::Relaxed);
        closing |= answer.header("connection") == Some("close");
    }
}

/// SIGTERM under keep-alive load, plain and pipelined: every request a
/// client sent gets its answer; from shutdown on the answers say
/// `Connection: close`, so clients stop sending, and the server exits
/// cleanly. Before, every connection lost the request it had sent when
/// shutdown began (hyper closes a connection between requests at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigterm_under_load_loses_no_request() {
    let (_dir, path, secret) = seeded_database(30).await;
    let mut binary = serve_file(&path, &[], "info");
    let request = get_request("/v1/projects?limit=30", Some(&secret));
    let answered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut clients = JoinSet::new();
    for connection in 0..16 {
        let depth = if connection % 2 == 0 { 1 } else { 3 };
        clients.spawn(until_told_to_close(
            binary.address,
            request.clone(),
            depth,
            answered.clone(),
        ));
    }
    // Under way on every connection before the signal.
    while answered.load(Ordering::Relaxed) < 2_000 {
        tokio::task::yield_now().await;
    }
    let (took, status, _stdout, stderr) = binary.stop_with("TERM").await;
    assert!(status.success(), "exit {status:?}; stderr:\n{stderr}");
    assert!(took < Duration::from_secs(3), "exit took {took:?}");
    let mut per_connection = Vec::new();
    while let Some(joined) = clients.join_next().await {
        per_connection.push(joined.expect("no request of the connection was lost"));
    }
    assert_eq!(per_connection.len(), 16);
    assert!(per_connection.iter().all(|&n| n > 0), "{per_connection:?}");
}
