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
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use proxydeck::app::ServiceOptions;
use proxydeck::domain::api_token::ApiToken;
use proxydeck::store::{self, DatabaseUrl, StoreOptions};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::binary::{Exit, Sandbox, Server, free_port};
use crate::helpers::*;

mod compression;
mod connections;
mod head;
mod logs;
mod malformed_requests;
mod secrets;
mod shutdown;
mod slow_clients;

/// Longest any single socket operation may take before a test fails.
const IO_TIMEOUT: Duration = Duration::from_secs(3);
/// The header read timeout of the slow-client tests.
const HEADER_TIMEOUT: Duration = Duration::from_millis(300);
/// Their idle timeout: how long a kept-alive connection waits for the
/// first byte of its next request.
const IDLE_TIMEOUT: Duration = Duration::from_millis(1500);
/// How long after [`HEADER_TIMEOUT`] a connection must be gone.
const CLOSE_WITHIN: Duration = Duration::from_millis(1500);

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

/// Test options with short header read and idle timeouts.
fn slow_client_options() -> ServiceOptions {
    let mut options = test_options();
    options.server.header_read_timeout = HEADER_TIMEOUT;
    options.server.idle_timeout = IDLE_TIMEOUT;
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

/// `proxydeck serve` on the SQLite file at `database`, with `extra` flags
/// and `RUST_LOG=rust_log`.
fn serve_file(database: &Path, extra: &[&str], rust_log: &str) -> Server {
    Server::start(|listen| serve_command(database, listen, extra, rust_log))
}

/// The command [`serve_file`] runs, listening on `listen`.
fn serve_command(database: &Path, listen: &str, extra: &[&str], rust_log: &str) -> Command {
    let folder = database.parent().expect("the file's folder");
    let mut command = crate::binary::proxydeck(folder);
    command
        .arg("serve")
        .arg("--database")
        .arg(format!("sqlite://{}", database.display()))
        .args(["--listen", listen])
        .args(extra)
        .env("RUST_LOG", rust_log);
    command
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
    let records = store
        .run(UserTokens(String::from("u1")))
        .await
        .expect("the tokens list");
    records.into_iter().map(|record| record.token).collect()
}

/// `raw` is one answer with `status`, `Connection: close`, and the JSON
/// error body (`docs/decisions.md` section 3) whose length it announces.
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
