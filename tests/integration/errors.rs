//! Every error of `decisions.md` section 3: status, body shape, headers.

use reqwest::Method;

use super::BACKEND;
use crate::helpers::*;

const LISTINGS: [&str; 3] = [
    "/v1/projects",
    "/v1/api_tokens",
    "/v1/projects/p1/proxy-settings",
];

async fn fixture() -> (TestApp, String) {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        org(1),
        user("u1", &[1]),
        project("p1", 1, 0),
        settings("p1", 1, true),
    ])
    .await;
    let token = app.token("u1").await;
    (app, token)
}

#[tokio::test]
async fn unknown_routes_are_404_in_json() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for path in [
        "/",
        "/v1",
        "/v1/projects/",
        "/v2/projects",
        "/v1/project",
        "/v1/projects/p1",
        "/v1/projects/p1/proxy-settings/1",
        "/v1/projects/p1/proxy_settings",
        "/v1/api_tokens/x",
        "/V1/PROJECTS",
    ] {
        for token in [Some(token.as_str()), None] {
            let mut request = app.client.get(app.url(path));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let (status, body) = json_of(request.send().await.unwrap()).await;
            assert_eq!(status, 404, "{path}");
            assert_eq!(assert_error_shape(&body), "not_found_error");
        }
    }
}

#[tokio::test]
async fn other_methods_are_405_with_allow() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let methods = [
        "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PURGE", "FOO",
    ];
    for path in LISTINGS {
        for method in methods {
            let response = app
                .client
                .request(
                    Method::from_bytes(method.as_bytes()).unwrap(),
                    app.url(path),
                )
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            let allow = response
                .headers()
                .get("allow")
                .map(|v| v.to_str().unwrap().to_owned());
            let (status, body) = json_of(response).await;
            assert_eq!(status, 405, "{method} {path}");
            assert_eq!(assert_error_shape(&body), "invalid_request_error");
            let allow = allow.expect("an Allow header");
            assert!(allow.contains("GET") && allow.contains("HEAD"), "{allow}");
        }
    }
}

#[tokio::test]
async fn bad_query_parameters_name_themselves_on_every_listing() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for path in LISTINGS {
        for (query, param) in [
            ("unknown=1", "unknown"),
            ("limit=1&limit=1", "limit"),
            ("limit=", "limit"),
            ("start_key=", "start_key"),
            ("order_direction=", "order_direction"),
            ("limit=1.0", "limit"),
            ("limit=1000", "limit"),
            ("order_direction=sideways", "order_direction"),
        ] {
            let (status, body) = app.get_json(&format!("{path}?{query}"), &token).await;
            assert_eq!(status, 400, "{path}?{query}: {body}");
            assert_eq!(assert_error_shape(&body), "invalid_request_error");
            assert_eq!(error_param(&body), param, "{path}?{query}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.starts_with(param), "{message}");
        }
    }
}

#[tokio::test]
async fn injection_attempts_are_refused_or_harmless() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for value in [
        "'%20OR%201=1--",
        "p1'%3B%20DROP%20TABLE%20projects%3B--",
        "%00",
        "%27",
        "%22%7D",
    ] {
        for path in [
            format!("/v1/projects?start_key={value}"),
            format!("/v1/projects?organization_id={value}"),
            format!("/v1/api_tokens?name={value}"),
            format!("/v1/projects/{value}/proxy-settings"),
        ] {
            let (status, body) = app.get_json(&path, &token).await;
            assert!(
                [200, 400, 404].contains(&status.as_u16()),
                "{path}: {status} {body}"
            );
            if status != 200 {
                assert_error_shape(&body);
            }
        }
    }
    let (status, body) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200);
    assert_eq!(ids(&body), ["p1"], "the data is intact");
}

/// An unexpected fault (here a stored revision number out of its range)
/// is a 500 `api_error` that says nothing of its cause; other requests go
/// on. (Stored JSON itself is trusted, not re-parsed: it was checked when
/// it was written.)
#[tokio::test]
async fn an_unexpected_fault_is_500_without_its_cause() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    app.data
        .execute("UPDATE proxy_settings SET revision = 5000000000 WHERE project_id = 'p1'");
    let (status, body) = app.get_json("/v1/projects/p1/proxy-settings", &token).await;
    assert_eq!(status, 500);
    assert_eq!(assert_error_shape(&body), "api_error");
    let text = body.to_string();
    for leak in [
        "5000000000",
        "revision",
        "SQLite",
        "PostgreSQL",
        "column",
        "p1",
    ] {
        assert!(!text.contains(leak), "{leak} in {text}");
    }
    let (status, _) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200);
}
