//! Request log lines: every one written before the server exits, with the
//! request's fields, in JSON and in text.

use super::*;

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
