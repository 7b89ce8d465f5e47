//! Authentication (`docs/decisions.md` section 4) over HTTP.

use proxydeck::domain::time::Timestamp;
use reqwest::StatusCode;
use serde_json::Value;

use super::BACKEND;
use crate::binary::{Sandbox, Server};
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
    app.store
        .run(RevokeToken(String::from(&token.id)))
        .await
        .unwrap();
    if suite_caches().token {
        // Cached: the revocation is not seen yet...
        assert_eq!(app.get("/v1/projects", &secret).await.status(), 200);
    }
    // ...until the cache's lifetime has passed.
    app.clock.advance(CACHE_TTL);
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
    // Expires within the cache's lifetime: the cached entry must be checked.
    let lifetime = CACHE_TTL / 2;
    let expiry = Timestamp::now()
        .plus_seconds(lifetime.as_secs() as i64)
        .unwrap();
    let (_, secret) = app.token_with("u1", "short-lived", Some(expiry)).await;
    assert_eq!(app.get("/v1/projects", &secret).await.status(), 200);
    app.clock.advance(lifetime);
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
    app.clock.advance(CACHE_TTL);
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

// ----- Floods of made-up tokens -----
//
// These run the real binary on `BACKEND` and read its own `/metrics`:
// the counters are the server process's.

/// `proxydeck serve` on a sandbox on `BACKEND` holding `u1` (in org 1)
/// and one project, with `flags`; answers the sandbox (which must outlive
/// the server), the server and `u1`'s secret.
fn flood_server(flags: &[&str]) -> (Sandbox, Server, String) {
    let sandbox = Sandbox::on(BACKEND);
    let token = sandbox.directory(1, "u1");
    sandbox.import(&[project("p1", 1, 0)]);
    let server = sandbox.serve(flags);
    (sandbox, server, token)
}

/// The status and body of `GET /v1/projects` with `secret`, from the
/// address `forwarded_for` says (when given); a 429 has `Retry-After`.
async fn status_from(
    server: &Server,
    secret: &str,
    forwarded_for: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = server
        .client
        .get(format!("{}/v1/projects", server.base))
        .bearer_auth(secret);
    if let Some(address) = forwarded_for {
        request = request.header("x-forwarded-for", address);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let retry_after = response.headers().get("retry-after").cloned();
    let body: Value = response.json().await.unwrap();
    if status == 429 {
        let seconds: u64 = retry_after
            .expect("Retry-After")
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(seconds >= 1, "{seconds}");
    }
    (status, body)
}

const LOOKUPS: &str = "proxydeck_token_cache_misses_total";
const REMEMBERED: &str = "proxydeck_token_misses_remembered_total";
const REFUSED: &str = "proxydeck_auth_failure_rejections_total";

/// The same made-up token asked over and over is looked up in the store
/// once while the token cache remembers the miss; with the token cache
/// off (`--caches none`), every time.
#[tokio::test]
async fn a_made_up_token_is_looked_up_once_while_its_miss_is_remembered() {
    require!(BACKEND);
    let (sandbox, server, token) =
        flood_server(&["--token-cache-ttl", "10m", "--auth-failure-limit", "off"]);
    assert_eq!(status_from(&server, &token, None).await.0, 200);
    let made_up = proxydeck::domain::token::generate();
    let lookups = server.metric(LOOKUPS).await;
    let remembered = server.metric(REMEMBERED).await;
    for _ in 0..30 {
        let (status, body) = status_from(&server, &made_up, None).await;
        assert_eq!(status, 401, "{body}");
    }
    assert_eq!(server.metric(LOOKUPS).await - lookups, 1.0);
    assert_eq!(server.metric(REMEMBERED).await - remembered, 29.0);
    // The real token is still answered.
    assert_eq!(status_from(&server, &token, None).await.0, 200);
    drop(server);

    let uncached = sandbox.serve(&["--caches", "none", "--auth-failure-limit", "off"]);
    let lookups = uncached.metric(LOOKUPS).await;
    for _ in 0..10 {
        assert_eq!(status_from(&uncached, &made_up, None).await.0, 401);
    }
    assert_eq!(uncached.metric(LOOKUPS).await - lookups, 10.0);
    assert_eq!(uncached.metric(REMEMBERED).await, 0.0);
}

/// An address that failed to authenticate more than its limit allows gets
/// 429, with the rate limit's error body and `Retry-After`, instead of a
/// token look-up; a token the service remembers still works from it, and a
/// malformed one is still a 401 (it costs no look-up). The limit is one
/// failure per 100 s, so that nothing refills while the test runs.
#[tokio::test]
async fn an_address_failing_too_often_gets_429_before_any_look_up() {
    require!(BACKEND);
    let (sandbox, server, token) =
        flood_server(&["--token-cache-ttl", "10m", "--auth-failure-limit", "0.01"]);
    assert_eq!(status_from(&server, &token, None).await.0, 200);
    let other_token = sandbox.token("u1", "never used"); // not cached
    let first = proxydeck::domain::token::generate();
    assert_eq!(status_from(&server, &first, None).await.0, 401);
    let lookups = server.metric(LOOKUPS).await;
    let refused = server.metric(REFUSED).await;
    for _ in 0..20 {
        let made_up = proxydeck::domain::token::generate();
        let (status, body) = status_from(&server, &made_up, None).await;
        assert_eq!(status, 429, "{body}");
        assert_eq!(assert_error_shape(&body), "invalid_request_error");
        assert_eq!(body["error"]["code"], "rate_limit", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("failed authentications"), "{message}");
        assert!(!message.contains(&made_up[4..]), "{message}");
    }
    assert_eq!(server.metric(LOOKUPS).await, lookups, "no look-up");
    assert_eq!(server.metric(REFUSED).await - refused, 20.0);
    assert_eq!(
        status_from(&server, &token, None).await.0,
        200,
        "remembered"
    );
    assert_eq!(status_from(&server, "pxd_short", None).await.0, 401);
    assert_eq!(
        status_from(&server, &other_token, None).await.0,
        429,
        "needs a look-up"
    );
}

/// The client's address is the last one of the trusted proxy's header when
/// `--client-address-header` names it, and the connection's otherwise
/// (then the header changes nothing).
#[tokio::test]
async fn the_client_address_comes_from_the_trusted_header_only_when_configured() {
    require!(BACKEND);
    let (sandbox, server, _) = flood_server(&[
        "--auth-failure-limit",
        "0.01",
        "--client-address-header",
        "X-Forwarded-For",
    ]);
    let first = proxydeck::domain::token::generate();
    assert_eq!(
        status_from(&server, &first, Some("198.51.100.7")).await.0,
        401
    );
    let made_up = proxydeck::domain::token::generate();
    for (forwarded, expected) in [
        ("198.51.100.7", 429),
        ("203.0.113.1, 198.51.100.7", 429),
        ("198.51.100.8", 401),
        ("198.51.100.7, 198.51.100.9", 401),
    ] {
        let (status, body) = status_from(&server, &made_up, Some(forwarded)).await;
        assert_eq!(status, expected, "{forwarded}: {body}");
    }
    drop(server);

    let server = sandbox.serve(&["--auth-failure-limit", "0.01"]);
    assert_eq!(
        status_from(&server, &first, Some("198.51.100.1")).await.0,
        401
    );
    assert_eq!(
        status_from(&server, &made_up, Some("198.51.100.2")).await.0,
        429
    );
}
