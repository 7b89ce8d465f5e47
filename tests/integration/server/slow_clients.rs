//! Slow clients: a silent or trickling request head, an idle kept-alive
//! connection, a stalled HTTP/2 preface, a client that stops reading.

use super::*;

/// A connection's first request head is timed from connecting: one that
/// never sends a byte is closed after the header read timeout, long
/// before the idle timeout.
#[tokio::test]
async fn a_silent_connection_is_closed_after_the_header_read_timeout() {
    let (app, _token) = seeded_app(slow_client_options(), 1).await;
    let mut stream = connect(app.address).await;
    let started = Instant::now();
    let seen = read_until_closed(&mut stream, CLOSE_WITHIN)
        .await
        .expect("the silent connection is closed within 1.5s");
    let took = started.elapsed();
    assert!(seen.is_empty(), "{:?}", String::from_utf8_lossy(&seen));
    assert!(
        took >= HEADER_TIMEOUT - Duration::from_millis(50) && took < IDLE_TIMEOUT,
        "closed after {took:?}, not after the header read timeout"
    );
}

/// Sends `request` on `stream` a byte every 100 ms while reading what
/// comes back; answers what was read, and how long after the first byte
/// the server closed the connection (`None`: still open after
/// [`CLOSE_WITHIN`]).
async fn trickle(stream: TcpStream, request: String) -> (String, Option<Duration>) {
    let (mut reader, mut writer) = stream.into_split();
    let started = Instant::now();
    let sending = tokio::spawn(async move {
        for byte in request.into_bytes() {
            if writer.write_all(&[byte]).await.is_err() {
                return;
            }
            // The slowness is what is tested: a byte every 100 ms of
            // real time, as the server's header timer counts it.
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
            Err(_) => break None,
            Ok(Ok(0)) | Ok(Err(_)) => break Some(started.elapsed()),
            Ok(Ok(read)) => seen.extend_from_slice(&chunk[..read]),
        }
    };
    sending.abort();
    (String::from_utf8_lossy(&seen).into_owned(), closed)
}

#[tokio::test]
async fn a_client_trickling_its_request_head_is_cut_off() {
    let (app, token) = seeded_app(slow_client_options(), 1).await;
    let stream = connect(app.address).await;
    let (seen, closed) = trickle(stream, get_request("/v1/projects", Some(&token))).await;
    assert!(
        !seen.contains(" 200 "),
        "the trickled request was served: {seen}"
    );
    assert!(
        closed.is_some(),
        "still connected after {CLOSE_WITHIN:?}; got {seen:?}"
    );
}

/// A connection answered once, then left idle for twice the header read
/// timeout; asserts the server kept it open meanwhile.
async fn kept_alive_and_idle(app: &TestApp, token: &str) -> TcpStream {
    let mut stream = connect(app.address).await;
    stream
        .write_all(get_request("/v1/projects", Some(token)).as_bytes())
        .await
        .unwrap();
    let response = read_response(&mut stream, &mut Vec::new()).await;
    assert_eq!(response.status, 200);
    let early = read_until_closed(&mut stream, 2 * HEADER_TIMEOUT).await;
    assert!(
        early.is_none(),
        "an idle kept-alive connection was closed within twice the header read timeout"
    );
    stream
}

/// A kept-alive connection waits for its next request for the idle
/// timeout, not the header read timeout: it is still served after the
/// latter has passed, and closed (without a byte) after the former.
#[tokio::test]
async fn an_idle_kept_alive_connection_is_served_past_the_header_read_timeout_until_the_idle_timeout()
 {
    let (app, token) = seeded_app(slow_client_options(), 1).await;
    let mut stream = kept_alive_and_idle(&app, &token).await;
    stream
        .write_all(get_request("/v1/projects", Some(&token)).as_bytes())
        .await
        .expect("the idle connection takes a second request");
    let response = read_response(&mut stream, &mut Vec::new()).await;
    assert_eq!(response.status, 200, "{response:?}");
    let answered = Instant::now();
    let seen = read_until_closed(&mut stream, IDLE_TIMEOUT + CLOSE_WITHIN)
        .await
        .expect("the idle connection is closed after the idle timeout");
    assert!(seen.is_empty(), "{:?}", String::from_utf8_lossy(&seen));
    assert!(
        answered.elapsed() >= IDLE_TIMEOUT - Duration::from_millis(50),
        "closed after {:?}, before the idle timeout",
        answered.elapsed()
    );
}

/// On a kept-alive connection the header read timeout runs from the next
/// request's first byte: a head trickled after an idle spell is cut off
/// a header read timeout after that byte, long before the idle timeout
/// would end (and never served).
#[tokio::test]
async fn a_head_trickled_on_a_kept_alive_connection_is_cut_off_a_header_timeout_after_its_first_byte()
 {
    let (app, token) = seeded_app(slow_client_options(), 1).await;
    let stream = kept_alive_and_idle(&app, &token).await;
    let (seen, closed) = trickle(stream, get_request("/v1/projects", Some(&token))).await;
    assert!(
        !seen.contains(" 200 "),
        "the trickled request was served: {seen}"
    );
    let closed = closed.expect("the trickling connection is closed");
    assert!(
        closed >= HEADER_TIMEOUT - Duration::from_millis(50) && closed < 2 * HEADER_TIMEOUT,
        "closed {closed:?} after the head's first byte, not a header read timeout after it"
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
