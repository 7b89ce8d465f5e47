//! Graceful shutdown, in process and of the real binary on SIGTERM and
//! SIGINT: answered requests finish, queued ones are answered, token use is
//! written.

use super::*;

#[derive(Default, Debug)]
struct Tally {
    /// 200 with a JSON body.
    ok: usize,
    /// Failed before response headers (refused, reset, closed idle).
    before_headers: usize,
    /// Anything wrong after response headers arrived.
    after_headers: Vec<String>,
}

/// Concurrent request loops on one URL, until [`Hammer::finish`].
struct Hammer {
    loops: JoinSet<Tally>,
    stop: tokio::sync::watch::Sender<bool>,
    /// How many requests have been answered 200 so far.
    answered: tokio::sync::watch::Receiver<usize>,
}

impl Hammer {
    /// `loops` request loops on GET `url`.
    fn start(url: String, token: &str, loops: usize) -> Self {
        // A bound on each request: once the server has stopped, a request
        // that neither fails nor finishes must not hold the test forever
        // (the in-process server's runtime outlives it; a real process
        // exits).
        let client = crate::helpers::client_builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("an HTTP client");
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let (count, answered) = tokio::sync::watch::channel(0);
        let count = Arc::new(count);
        let mut set = JoinSet::new();
        for _ in 0..loops {
            let (client, url, token, mut stopped, count) = (
                client.clone(),
                url.clone(),
                token.to_owned(),
                stopped.clone(),
                count.clone(),
            );
            set.spawn(async move {
                let mut tally = Tally::default();
                while !*stopped.borrow() {
                    let response = match client.get(&url).bearer_auth(&token).send().await {
                        Ok(response) => response,
                        Err(_) => {
                            // The server no longer takes requests: it is
                            // stopping. Nothing more to send.
                            tally.before_headers += 1;
                            let _ = stopped.wait_for(|stopped| *stopped).await;
                            break;
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
                            Ok(_) => {
                                tally.ok += 1;
                                count.send_modify(|count| *count += 1);
                            }
                            Err(error) => tally
                                .after_headers
                                .push(format!("200 but not JSON ({error}), {} bytes", body.len())),
                        },
                    }
                }
                tally
            });
        }
        Self {
            loops: set,
            stop,
            answered,
        }
    }

    /// Waits until `count` requests have been answered 200: the loops are
    /// under way.
    async fn until_answered(&self, count: usize) {
        let mut answered = self.answered.clone();
        tokio::time::timeout(Duration::from_secs(10), answered.wait_for(|n| *n >= count))
            .await
            .expect("requests are answered within 10 s")
            .expect("the loops run");
    }

    /// Stops the loops; answers what they saw.
    async fn finish(mut self) -> Tally {
        self.stop.send_replace(true);
        let mut sum = Tally::default();
        while let Some(tally) = self.loops.join_next().await {
            let tally = tally.expect("a request loop ends");
            sum.ok += tally.ok;
            sum.before_headers += tally.before_headers;
            sum.after_headers.extend(tally.after_headers);
        }
        sum
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stop_lets_every_answered_request_finish() {
    let mut options = test_options();
    options.server.shutdown_grace = Duration::from_secs(2);
    // Bounds the wait for spare pooled connections that never send a byte.
    options.server.header_read_timeout = Duration::from_secs(1);
    let (app, token) = seeded_app(options, 30).await;
    let hammer = Hammer::start(app.url("/v1/projects?limit=30"), &token, 32);
    hammer.until_answered(64).await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(4), app.stop())
        .await
        .expect("stop returns");
    let took = started.elapsed();
    let tally = hammer.finish().await;

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
    until("the server holds the silent connection", || {
        metric("proxydeck_http_connections{listener=\"api\"}") >= 1.0
    })
    .await;
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
    let hammer = Hammer::start(binary.url("/v1/projects?limit=30"), &secret, 16);
    hammer.until_answered(32).await;

    let (took, status, _stdout, stderr) = binary.stop_with("TERM").await;
    let tally = hammer.finish().await;

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
        let response = binary.get_raw("/v1/projects", &secret).await;
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

/// Under systemd (`Type=notify`, `deploy/proxydeck.service`) the binary
/// says `READY=1` on `$NOTIFY_SOCKET` once it listens on an open store, so
/// that it is served from as soon as that arrives, and `STOPPING=1` when a
/// SIGTERM begins its shutdown; then it exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_tells_the_service_manager_when_it_is_ready_and_when_it_stops() {
    let (dir, path, secret) = seeded_database(1).await;
    let socket_path = dir.path().join("notify.sock");
    let manager = tokio::net::UnixDatagram::bind(&socket_path).expect("the notify socket binds");
    let mut binary = Server::start(|listen| {
        let mut command = serve_command(&path, listen, &[], "info");
        command.env("NOTIFY_SOCKET", &socket_path);
        command
    });
    let notice = || async {
        let mut datagram = [0u8; 256];
        let length = tokio::time::timeout(IO_TIMEOUT, manager.recv(&mut datagram))
            .await
            .expect("a notice within 3s")
            .expect("the notify socket reads");
        String::from_utf8_lossy(&datagram[..length]).into_owned()
    };
    assert_eq!(notice().await, "READY=1\n");
    let response = binary.get_raw("/v1/projects", &secret).await;
    assert_eq!(response.status(), 200);
    drop(response);

    binary.signal("TERM");
    assert_eq!(notice().await, "STOPPING=1\n");
    let status = binary.wait_exit(Duration::from_secs(5)).await;
    assert!(
        status.is_some_and(|status| status.success()),
        "exit {status:?}; stderr:\n{}",
        binary.log()
    );
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
    let mut stdout = shell.stdout.take().expect("a stdout pipe");
    let exit = Exit::of(shell);
    exit.within_async(Duration::from_secs(20))
        .await
        .expect("the script finishes");
    let mut out = String::new();
    stdout.read_to_string(&mut out).unwrap();
    let exits: Vec<&str> = out.lines().collect();
    assert_eq!(exits.len(), 20, "{out}");
    let killed = exits.iter().filter(|e| **e != "exit=0").count();
    assert_eq!(
        killed, 0,
        "{killed} of 20 SIGTERMs right after `serving` were not handled: {exits:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_used_at_is_written_at_shutdown() {
    let (_dir, path, secret) = seeded_database(1).await;
    // The flusher's first tick comes an interval after start: the only
    // write can be the one at shutdown.
    let mut binary = serve_file(&path, &["--last-used-flush-interval", "1h"], "info");
    let response = binary.get_raw("/v1/projects", &secret).await;
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
