//! Secrets stay out of logs and bodies.

use super::*;

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
    store
        .run(RevokeToken(String::from(&revoked_token.id)))
        .await
        .unwrap();
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

/// docs/decisions.md section 3: no error body holds any part of a secret token.
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
