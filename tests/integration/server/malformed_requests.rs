//! Requests the connection layer refuses (oversized heads and URIs,
//! malformed request lines and headers, raw dot segments): each gets the
//! JSON error body.

use super::*;

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
