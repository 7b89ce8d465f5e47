//! What a caller sends stays where it belongs (issue 33): no request value
//! in any log line at any level, and a token sent by mistake (as a body
//! member's name, a query parameter, an `Idempotency-Key`, a path id) is
//! neither repeated in an answer nor stored.

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::binary::{Sandbox, Server};
use crate::helpers::*;

/// The served binary at the most verbose level, asked for three ways
/// (`--log-level trace`; `RUST_LOG=trace`; `RUST_LOG` naming the
/// drivers' statement targets, with JSON lines), gets a marker in each
/// place a request carries a value: `start_key`, `name`, a body, an
/// `Idempotency-Key`, a path id, the method. No marker is in anything it
/// printed. (Before: `tokio_postgres` logged each statement's parameters
/// at `debug`, and the request line an unusual method as sent.)
#[tokio::test]
async fn no_request_value_reaches_a_log_line_at_any_level() {
    require!(BACKEND);
    let sandbox = Sandbox::on(BACKEND);
    let token = sandbox.directory(1, "u1");
    let levels: [(&[&str], Option<&str>); 3] = [
        (&["--log-level", "trace"], None),
        (&[], Some("trace")),
        (
            &["--log-format", "json"],
            Some("trace,tokio_postgres::query=trace,tokio_postgres=trace,rusqlite=trace"),
        ),
    ];
    for (run, (flags, rust_log)) in levels.into_iter().enumerate() {
        let marker = |place: &str| format!("qzv{run}{place}mark");
        let mut server = Server::start(|listen| {
            let mut command = sandbox.command(&["serve", "--listen", listen]);
            command.args(flags);
            if let Some(filter) = rust_log {
                command.env("RUST_LOG", filter);
            }
            command
        });
        let client = reqwest::Client::new();
        let body = json!({
            "organization_id": org_id(1),
            "slug": format!("slug-{}", marker("slug")),
            "description": marker("body"),
        });
        let id = marker("pathid");
        let made_up = Method::from_bytes(marker("method").as_bytes()).unwrap();
        // An unknown start_key is looked up, then refused; the create keeps
        // its key; the ids are looked up.
        let requests = [
            (
                Method::GET,
                format!("/v1/projects?start_key={}", marker("startkey")),
                None,
                400,
            ),
            (
                Method::GET,
                format!("/v1/api_tokens?name={}", marker("name")),
                None,
                200,
            ),
            (Method::POST, "/v1/projects".into(), Some(&body), 200),
            (Method::GET, format!("/v1/projects/{id}"), None, 404),
            (
                Method::GET,
                format!("/v1/projects/{id}/proxy-settings"),
                None,
                404,
            ),
            (Method::GET, format!("/v1/api_tokens/{id}"), None, 404),
            (made_up, "/v1/projects".into(), None, 405),
        ];
        for (method, path, body, expected) in requests {
            let mut request = client
                .request(method.clone(), server.url(&path))
                .bearer_auth(&token);
            if let Some(body) = body {
                request = request
                    .header("idempotency-key", marker("idempotencykey"))
                    .json(body);
            }
            let (status, answer) = json_of(request.send().await.unwrap()).await;
            assert_eq!(status, expected, "{method} {path}: {answer}");
        }
        // A probe's line is logged at debug: the level asked for is on.
        let probe = client.get(server.url("/healthz")).send().await.unwrap();
        assert_eq!(probe.status(), 200);
        drop(client);
        let (_, status, stdout, stderr) = server.stop_with("TERM").await;
        assert!(status.success(), "{stderr}");
        assert!(
            stderr.contains("/healthz"),
            "debug lines are logged: {stderr}"
        );
        let request_lines = stderr.lines().filter(|line| line.contains("route")).count();
        assert_eq!(request_lines, 8, "every request has its line: {stderr}");
        for (place, text) in [("stderr", &stderr), ("stdout", &stdout)] {
            let leaked: Vec<&str> = text.lines().filter(|line| line.contains("qzv")).collect();
            assert!(
                leaked.is_empty(),
                "request values in {place} ({flags:?}, RUST_LOG={rust_log:?}):\n{}",
                leaked.join("\n")
            );
        }
    }
}

/// A token sent by mistake where a caller's text is repeated or kept: as
/// a body member's name (at the top and nested), as an unknown query
/// parameter's name, as a parameter's value, as an `Idempotency-Key`
/// (both creates), inside a path id. No answer holds any of its random
/// part; the key is refused (400 naming it) and not stored; an answer
/// that names a member names it redacted. (Before: the member's name came
/// back whole in `message` and `params`, and the key was stored as sent.)
#[tokio::test]
async fn a_token_sent_by_mistake_is_neither_repeated_nor_stored() {
    require!(BACKEND);
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let token = app.token("u1").await;
    // A real token of the caller's, and a copy of it with a typo.
    let pasted = app.token("u1").await;
    let mut typo = pasted.clone().into_bytes();
    typo[20] = if typo[20] == b'a' { b'b' } else { b'a' };
    let typo = String::from_utf8(typo).unwrap();
    let mut answers: Vec<(String, Value)> = Vec::new();

    let project = |extra: Value| {
        let mut body = json!({"organization_id": org_id(1), "slug": "shop"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let revision = json!({"description": "r",
        "backends": [{"name": "origin", "address": "origin.example:443", "default": true}]});

    for secret in [&pasted, &typo] {
        // A body member named with it, at the top and nested.
        for body in [
            project(json!({ secret.as_str(): 1 })),
            project(json!({"override_cache": [{"path": "/", secret.as_str(): true}]})),
        ] {
            let (status, error, _) =
                send(&app, Method::POST, "/v1/projects", &token, &[], Some(&body)).await;
            assert_eq!(status, 400, "{error}");
            let named = params(&error);
            assert!(
                named.iter().any(|param| param.contains("pxd_…(redacted)")),
                "the member is named, redacted: {error}"
            );
            answers.push((format!("member {body}"), error));
        }
        // The query: an unknown parameter named with it, and it as values.
        for query in [
            format!("{secret}=1"),
            secret.to_string(),
            format!("limit={secret}"),
            format!("start_key={secret}"),
            format!("organization_id={secret}"),
        ] {
            let (status, error) = app.get_json(&format!("/v1/projects?{query}"), &token).await;
            assert!([400, 404].contains(&status.as_u16()), "{query}: {error}");
            answers.push((format!("query {query}"), error));
        }
        let (status, error) = app
            .get_json(&format!("/v1/api_tokens?name={secret}"), &token)
            .await;
        assert_eq!(status, 200);
        answers.push(("name".into(), error));
        // As an Idempotency-Key, on both creates: refused, by name.
        let key = [("Idempotency-Key", secret.as_str())];
        for (path, body) in [
            ("/v1/projects", project(json!({}))),
            ("/v1/projects/p1/proxy-settings", revision.clone()),
        ] {
            let (status, error, _) =
                send(&app, Method::POST, path, &token, &key, Some(&body)).await;
            assert_eq!(status, 400, "{path}: {error}");
            assert_eq!(error_param(&error), "Idempotency-Key", "{error}");
            answers.push((format!("key on {path}"), error));
        }
        // Inside a path id.
        for path in [
            format!("/v1/projects/{secret}"),
            format!("/v1/projects/{secret}/proxy-settings"),
            format!("/v1/projects/p1/proxy-settings/{secret}"),
            format!("/v1/api_tokens/{secret}"),
            format!("/v1/organizations/{secret}"),
            format!("/v1/projects/x.{secret}/proxy-settings"),
        ] {
            for method in [Method::GET, Method::POST, Method::DELETE] {
                let (status, error, _) =
                    send(&app, method.clone(), &path, &token, &[], Some(&json!({}))).await;
                assert!(status >= 400, "{method} {path}: {error}");
                answers.push((format!("{method} {path}"), error));
            }
        }
    }
    // A key of another shape is kept: the table is where keys go.
    let fine = [("Idempotency-Key", "order-42")];
    let body = project(json!({}));
    let (status, created, _) = send(
        &app,
        Method::POST,
        "/v1/projects",
        &token,
        &fine,
        Some(&body),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(
        app.data.count("SELECT count(*) FROM idempotency_keys"),
        1,
        "only the fine key is stored"
    );
    assert_eq!(
        app.data
            .count("SELECT count(*) FROM idempotency_keys WHERE key = 'order-42'"),
        1
    );
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(ids(&listing).len(), 2, "a refused key created nothing");

    for (what, answer) in &answers {
        let text = answer.to_string();
        for secret in [&pasted, &typo] {
            assert!(
                !text.contains(&secret[4..36]) && !text.contains(&secret[20..]),
                "{what}: the token is in the answer: {text}"
            );
        }
    }
}
