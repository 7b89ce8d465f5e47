//! Authentication (`decisions.md` section 4) over HTTP.

use std::time::Duration;

use proxydeck::domain::time::Timestamp;
use reqwest::StatusCode;
use serde_json::Value;

use super::BACKEND;
use crate::helpers::*;

const LISTINGS: [&str; 3] = [
    "/v1/projects",
    "/v1/api_tokens",
    "/v1/projects/p1/proxy-settings",
];

async fn fixture() -> (TestApp, String) {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let token = app.token("u1").await;
    (app, token)
}

async fn with_header(
    app: &TestApp,
    path: &str,
    value: Option<&str>,
) -> (StatusCode, Value, Option<String>) {
    let mut request = app.client.get(app.url(path));
    if let Some(value) = value {
        request = request.header("authorization", value);
    }
    let response = request.send().await.unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let (status, body) = json_of(response).await;
    (status, body, challenge)
}

fn assert_unauthenticated(status: StatusCode, body: &Value, challenge: Option<String>) {
    assert_eq!(status, 401, "{body}");
    assert_eq!(assert_error_shape(body), "authentication_error");
    assert_eq!(challenge.as_deref(), Some("Bearer"));
    assert!(body["error"].get("params").is_none());
}

#[tokio::test]
async fn every_listing_needs_a_token() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for path in LISTINGS {
        let (status, body, challenge) = with_header(&app, path, None).await;
        assert_unauthenticated(status, &body, challenge);
        let (status, _, _) = with_header(&app, path, Some(&format!("Bearer {token}"))).await;
        assert_eq!(status, 200, "{path}");
    }
}

#[tokio::test]
async fn the_scheme_word_is_case_insensitive_and_the_header_strict() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for good in [
        format!("Bearer {token}"),
        format!("bearer {token}"),
        format!("BEARER {token}"),
    ] {
        let (status, body, _) = with_header(&app, "/v1/projects", Some(&good)).await;
        assert_eq!(status, 200, "{good}: {body}");
    }
    for bad in [
        format!("Basic {token}"),
        format!("Token {token}"),
        format!("Bearer{token}"),
        format!("Bearer {token} extra"),
        token.clone(),
        "Bearer".to_owned(),
        "Bearer ".to_owned(),
        String::new(),
    ] {
        let (status, body, challenge) = with_header(&app, "/v1/projects", Some(&bad)).await;
        assert_unauthenticated(status, &body, challenge);
        assert!(!body.to_string().contains(&token), "the secret was echoed");
    }
    // Two credentials are refused rather than guessed between.
    let response = app
        .client
        .get(app.url("/v1/projects"))
        .header("authorization", format!("Bearer {token}"))
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn unknown_and_mistyped_tokens_are_refused() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let unknown = proxydeck::domain::token::generate();
    let mut mistyped = token.clone().into_bytes();
    mistyped[10] = if mistyped[10] == b'x' { b'y' } else { b'x' };
    let mistyped = String::from_utf8(mistyped).unwrap();
    for bad in [
        unknown,
        mistyped,
        "pxd_short".to_owned(),
        "ghp_123".to_owned(),
    ] {
        let (status, body, challenge) =
            with_header(&app, "/v1/projects", Some(&format!("Bearer {bad}"))).await;
        assert_unauthenticated(status, &body, challenge);
        assert!(!body.to_string().contains(&bad[4..]), "echoed: {body}");
    }
}

#[tokio::test]
async fn a_revoked_token_stops_working_within_the_cache_delay() {
    require!(BACKEND);
    let (app, _) = fixture().await;
    let (token, secret) = app.token_with("u1", "soon revoked", None).await;
    assert_eq!(app.get("/v1/projects", &secret).await.status(), 200);
    app.store.revoke_token(&token.id).await.unwrap();
    tokio::time::sleep(CACHE_TTL + Duration::from_millis(150)).await;
    let (status, body) = app.get_json("/v1/projects", &secret).await;
    assert_eq!(status, 401);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{body}"
    );
}

#[tokio::test]
async fn an_expired_token_stops_working_at_once_even_when_cached() {
    require!(BACKEND);
    let (app, _) = fixture().await;
    let expiry = Timestamp::now().plus_seconds(1).unwrap();
    let (_, secret) = app.token_with("u1", "short-lived", Some(expiry)).await;
    assert_eq!(app.get("/v1/projects", &secret).await.status(), 200);
    while Timestamp::now() < expiry {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, body) = app.get_json("/v1/projects", &secret).await;
    assert_eq!(status, 401);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{body}"
    );
}

#[tokio::test]
async fn membership_decides_visibility() {
    require!(BACKEND);
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        org(1),
        org(2),
        user("member", &[1]),
        user("outsider", &[2]),
        project("p1", 1, 0),
    ])
    .await;
    let member = app.token("member").await;
    let outsider = app.token("outsider").await;
    let (_, body) = app.get_json("/v1/projects", &member).await;
    assert_eq!(ids(&body), ["p1"]);
    let (status, body) = app.get_json("/v1/projects", &outsider).await;
    assert_eq!(status, 200);
    assert_eq!(ids(&body), Vec::<String>::new());
    // Joining the organization shows its projects after the cache delay.
    app.seed(vec![user("outsider", &[1, 2])]).await;
    tokio::time::sleep(CACHE_TTL + Duration::from_millis(150)).await;
    let (_, body) = app.get_json("/v1/projects", &outsider).await;
    assert_eq!(ids(&body), ["p1"]);
}

#[tokio::test]
async fn authentication_comes_before_parameter_checks() {
    require!(BACKEND);
    let (app, _) = fixture().await;
    let (status, body, challenge) = with_header(&app, "/v1/projects?limit=0&bogus=1", None).await;
    assert_unauthenticated(status, &body, challenge);
}
