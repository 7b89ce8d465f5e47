//! The management API's token operations: createApiToken, getApiToken,
//! deleteApiToken. Any role manages its own tokens; another user's token
//! is a 404; the secret is shown once and recorded nowhere.

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::binary::Sandbox;
use crate::helpers::*;

/// u1 (admin of 1), u2 (member of 1), u3 (admin of 2).
async fn fixture() -> (TestApp, String) {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        org(1),
        org(2),
        user("u1", &[1]),
        user("u2", &[1]),
        user("u3", &[2]),
    ])
    .await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let token = app.token("u1").await;
    (app, token)
}

async fn create(app: &TestApp, token: &str, body: Value) -> (u16, Value, Option<String>) {
    create_with(app, token, &[], body).await
}

async fn create_with(
    app: &TestApp,
    token: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, Value, Option<String>) {
    send(
        app,
        Method::POST,
        "/v1/api_tokens",
        token,
        headers,
        Some(&body),
    )
    .await
}

async fn one(app: &TestApp, method: Method, token: &str, id: &str) -> (u16, Value, Option<String>) {
    send(
        app,
        method,
        &format!("/v1/api_tokens/{id}"),
        token,
        &[],
        None,
    )
    .await
}

fn in_an_hour() -> String {
    let at = proxydeck::domain::time::Timestamp::now()
        .plus_seconds(3600)
        .unwrap();
    at.to_string()
}

#[tokio::test]
async fn create_shows_the_secret_once_and_it_authenticates() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let expires = in_an_hour();
    let (status, created, tag) = create(
        &app,
        &token,
        json!({"name": "deploy", "expires_at": expires}),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    assert!(tag.is_some_and(|t| t.starts_with("\"v")));
    assert_eq!(created["object"], "api_token");
    assert_eq!(created["name"], "deploy");
    assert_eq!(created["user_id"], "u1");
    assert_eq!(created["from_browser"], false);
    assert_eq!(created["expires_at"], expires);
    assert!(created.get("last_used_at").is_none());
    let secret = created["token"].as_str().unwrap().to_owned();
    assert!(
        secret.starts_with("pxd_") && !secret.contains('*'),
        "{secret}"
    );
    let id = created["id"].as_str().unwrap();
    // The new secret authenticates at once, as its user.
    let (status, me) = app.get_json("/v1/api_tokens?name=deploy", &secret).await;
    assert_eq!(status, 200);
    assert_eq!(ids(&me), [id]);
    // Read back and listed: the hint, never the secret again.
    let hint = format!("pxd_****{}", &secret[secret.len() - 4..]);
    let (status, got, _) = one(&app, Method::GET, &token, id).await;
    assert_eq!(status, 200);
    assert_eq!(got["token"], hint);
    let (_, listing) = app.get_json("/v1/api_tokens", &token).await;
    let listed = listing["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .expect("listed right after");
    assert_eq!(listed["token"], hint);
    // Without expiry: no expires_at member.
    let (_, forever, _) = create(&app, &token, json!({"name": "forever"})).await;
    assert!(forever.get("expires_at").is_none(), "{forever}");
}

/// getApiToken's strong tag answers `If-None-Match` with a 304 (no body);
/// another tag gets the token.
#[tokio::test]
async fn get_answers_304_to_its_own_tag() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created, _) = create(&app, &token, json!({"name": "tagged"})).await;
    let id = created["id"].as_str().unwrap();
    let (status, got, tag) = one(&app, Method::GET, &token, id).await;
    assert_eq!(status, 200, "{got}");
    let tag = tag.expect("an ETag");
    let conditional = |tag: String| {
        app.client
            .get(app.url(&format!("/v1/api_tokens/{id}")))
            .bearer_auth(&token)
            .header("if-none-match", tag)
            .send()
    };
    let unchanged = conditional(tag).await.unwrap();
    assert_eq!(unchanged.status(), 304);
    assert!(
        unchanged.bytes().await.unwrap().is_empty(),
        "a 304 has no body"
    );
    let other = conditional("\"v1\"".to_owned()).await.unwrap();
    assert_eq!(other.status(), 200);
    assert_eq!(other.json::<Value>().await.unwrap(), got);
}

#[tokio::test]
async fn bodies_are_checked_and_idempotency_keys_refused() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let long = "x".repeat(201);
    for (body, param) in [
        (json!({}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": long}), "name"),
        (json!({"name": 3}), "name"),
        (
            json!({"name": "a", "expires_at": "2020-01-01T00:00:00Z"}),
            "expires_at",
        ),
        (json!({"name": "a", "expires_at": "tomorrow"}), "expires_at"),
        (json!({"name": "a", "expires_at": null}), "expires_at"),
        (json!({"name": "a", "scope": "all"}), "scope"),
    ] {
        let (status, error, _) = create(&app, &token, body.clone()).await;
        assert_eq!(status, 400, "{body}: {error}");
        assert!(
            params(&error).contains(&param.to_owned()),
            "{body}: {error}"
        );
    }
    // 200 characters, an offset and microseconds: accepted, stored in UTC
    // with milliseconds.
    let name = "n".repeat(200);
    let later = proxydeck::domain::time::Timestamp::now()
        .plus_seconds(7200)
        .unwrap()
        .to_string();
    let offset = format!("{}.123456+00:00", &later[..19]);
    let (status, created, _) =
        create(&app, &token, json!({"name": name, "expires_at": offset})).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["expires_at"], format!("{}.123Z", &later[..19]));
    // Read-only members are ignored.
    let (status, created, _) = create(
        &app,
        &token,
        json!({"name": "ro", "id": "mine", "token": "pxd_x", "user_id": "u3"}),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    assert_ne!(created["id"], "mine");
    assert_eq!(created["user_id"], "u1");
    // The header is refused: the answer could not be replayed.
    let (status, error, _) = create_with(
        &app,
        &token,
        &[("idempotency-key", "k1")],
        json!({"name": "k"}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(params(&error), ["Idempotency-Key"]);
    let (_, listing) = app.get_json("/v1/api_tokens?name=k", &token).await;
    assert_eq!(ids(&listing).len(), 0);
}

#[tokio::test]
async fn each_user_sees_and_deletes_only_its_own_tokens() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    // A member manages its own tokens.
    let member = app.token("u2").await;
    let (status, mine, _) = create(&app, &member, json!({"name": "member's"})).await;
    assert_eq!(status, 200, "{mine}");
    let id = mine["id"].as_str().unwrap();
    assert_eq!(one(&app, Method::GET, &member, id).await.0, 200);
    // Another user's token, an unknown one: the same 404.
    for (caller, id) in [(&token, id), (&member, "no-such-token")] {
        let (status, error, _) = one(&app, Method::GET, caller, id).await;
        assert_eq!(
            (status, error["error"]["type"].as_str()),
            (404, Some("not_found_error"))
        );
        assert_eq!(one(&app, Method::DELETE, caller, id).await.0, 404);
    }
    // Still there for its owner.
    assert_eq!(one(&app, Method::GET, &member, id).await.0, 200);
    // Other methods: 405.
    let (status, _, _) = one(&app, Method::PUT, &member, id).await;
    assert_eq!(status, 405);
}

#[tokio::test]
async fn a_deleted_token_leaves_the_listing_and_stops_working_here_at_once() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created, _) = create(&app, &token, json!({"name": "short-lived"})).await;
    let id = created["id"].as_str().unwrap();
    let secret = created["token"].as_str().unwrap();
    // Used on this instance and on another: both cache it.
    let other = app.another_instance().await;
    assert_eq!(app.get_json("/v1/api_tokens", secret).await.0, 200);
    assert_eq!(other.get_json("/v1/api_tokens", secret).await.0, 200);
    let (status, deleted, _) = one(&app, Method::DELETE, &token, id).await;
    assert_eq!(status, 200);
    assert_eq!(
        deleted,
        json!({"object": "api_token", "id": id, "deleted": true})
    );
    // This instance forgot it: 401 at once, though its cache would trust
    // it for an hour (CACHE_TTL).
    assert_eq!(app.get_json("/v1/api_tokens", secret).await.0, 401);
    let (_, listing) = app.get_json("/v1/api_tokens", &token).await;
    assert!(!ids(&listing).contains(&id.to_owned()));
    assert_eq!(one(&app, Method::GET, &token, id).await.0, 404);
    assert_eq!(one(&app, Method::DELETE, &token, id).await.0, 404);
    // Another instance trusts its token cache for the documented time
    // (without the cache, not at all), then not.
    let cached = if suite_caches().token { 200 } else { 401 };
    assert_eq!(other.get_json("/v1/api_tokens", secret).await.0, cached);
    other.clock.advance(CACHE_TTL);
    assert_eq!(other.get_json("/v1/api_tokens", secret).await.0, 401);
    // A token may delete itself.
    let (_, own, _) = create(&app, &token, json!({"name": "self"})).await;
    let own_secret = own["token"].as_str().unwrap();
    let own_id = own["id"].as_str().unwrap();
    assert_eq!(one(&app, Method::DELETE, own_secret, own_id).await.0, 200);
    assert_eq!(app.get_json("/v1/api_tokens", own_secret).await.0, 401);
}

#[tokio::test]
async fn token_writes_are_audited_without_the_secret() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created, _) = create(&app, &token, json!({"name": "audited"})).await;
    let id = created["id"].as_str().unwrap();
    let secret = created["token"].as_str().unwrap();
    assert_eq!(one(&app, Method::DELETE, &token, id).await.0, 200);
    let records = audit_of(&app, Some(id)).await;
    let seen: Vec<&str> = records.iter().map(|r| r.operation.as_str()).collect();
    assert_eq!(seen, ["deleteApiToken", "createApiToken"]);
    assert!(
        records
            .iter()
            .all(|r| r.object == "api_token" && r.user_id == "u1")
    );
    assert!(records[0].version_before < records[0].version_after);
    let all = serde_json::to_string(&records).unwrap();
    assert!(!all.contains(secret) && !all.contains(&secret[4..]));
}

/// The served binary's log, the audit it keeps and the operator's
/// listing of that audit (`admin audit`, table and JSON) never hold the
/// secret a createApiToken answered.
#[tokio::test]
async fn the_secret_is_in_no_log_line() {
    require!(BACKEND);
    let sandbox = Sandbox::on(BACKEND);
    let cli_token = sandbox.directory(1, "u1");
    let server = sandbox.serve(&["--log-format", "json"]);
    let response = reqwest::Client::new()
        .post(server.url("/v1/api_tokens"))
        .bearer_auth(&cli_token)
        .header("content-type", "application/json")
        .body(r#"{"name":"logged"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let created: Value = response.json().await.unwrap();
    let secret = created["token"].as_str().unwrap().to_owned();
    let (status, _) = server.get("/v1/api_tokens", &secret).await;
    assert_eq!(status, 200);
    let log = server
        .log_once(|log| log.matches("/v1/api_tokens").count() >= 2)
        .await;
    assert!(log.matches("/v1/api_tokens").count() >= 2, "{log}");
    assert!(
        !log.contains(&secret) && !log.contains(&secret[4..]),
        "{log}"
    );
    let table = sandbox.run(&["admin", "audit"]).stdout;
    assert!(table.contains("createApiToken"), "{table}");
    let listed = sandbox.json(&[
        "admin",
        "audit",
        "--object",
        created["id"].as_str().unwrap(),
    ]);
    assert_eq!(listed[0]["operation"], "createApiToken", "{listed}");
    for shown in [table, listed.to_string()] {
        assert!(
            !shown.contains(&secret) && !shown.contains(&secret[4..]),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn the_generated_client_creates_reads_and_deletes_tokens() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let client = generated_client(&app, &token);
    let created = client
        .create_api_token()
        .body_map(|b| b.name("from the client".to_owned()))
        .send()
        .await
        .expect("createApiToken")
        .into_inner();
    let id = created.id.clone().expect("an id");
    let secret = created.token.clone().expect("the secret");
    assert_eq!(app.get_json("/v1/api_tokens", &secret).await.0, 200);
    let got = client
        .get_api_token()
        .id(id.clone())
        .send()
        .await
        .expect("getApiToken")
        .into_inner();
    assert_eq!(got.name.as_deref(), Some("from the client"));
    assert_ne!(got.token, Some(secret.clone()));
    let deleted = client
        .delete_api_token()
        .id(id.clone())
        .send()
        .await
        .expect("deleteApiToken")
        .into_inner();
    assert_eq!(deleted.deleted, Some(true));
    assert_eq!(app.get_json("/v1/api_tokens", &secret).await.0, 401);
}

/// createApiToken is bounded per user per hour (issue 44: 300 in 0.2 s
/// all succeeded, each a fresh rate-limit bucket): requests at once pass
/// the bound no further (PostgreSQL runs them side by side), revoking
/// does not free a place, the refusal is a 429 with `Retry-After`, and
/// another user is not held by it.
#[tokio::test]
async fn a_user_creates_a_bounded_number_of_tokens_an_hour() {
    require!(BACKEND);
    let mut options = test_options();
    options.quotas.tokens_per_user_per_hour = 5;
    let app = TestApp::spawn_with(BACKEND, options, suite_store_options()).await;
    app.seed(vec![org(1), user("u1", &[1]), user("u3", &[1])])
        .await;
    // Minted now: the first of the hour's five.
    let token = app.token("u1").await;
    let attempts = (0..12).map(|i| {
        let app = &app;
        let token = &token;
        async move {
            app.client
                .post(app.url("/v1/api_tokens"))
                .bearer_auth(token)
                .json(&json!({"name": format!("t{i}")}))
                .send()
                .await
                .expect("answered")
        }
    });
    let answers = futures_util::future::join_all(attempts).await;
    let created: Vec<&reqwest::Response> = answers.iter().filter(|a| a.status() == 200).collect();
    assert_eq!(
        created.len(),
        4,
        "{:?}",
        answers.iter().map(|a| a.status()).collect::<Vec<_>>()
    );
    let refused = answers
        .into_iter()
        .find(|a| a.status() == 429)
        .expect("a refusal");
    let retry_after: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3600).contains(&retry_after), "{retry_after}");
    let body: Value = refused.json().await.unwrap();
    assert_error_shape(&body);
    assert_eq!(body["error"]["code"], "rate_limit", "{body}");
    assert_eq!(
        app.data
            .count("SELECT COUNT(*) FROM api_tokens WHERE user_id = 'u1'"),
        5
    );
    // Revoking one does not make room: the hour counts what was created.
    let (_, listed) = app.get_json("/v1/api_tokens", &token).await;
    let id = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] != "test")
        .expect("a token it created")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _, _) = one(&app, Method::DELETE, &token, &id).await;
    assert_eq!(status, 200);
    let (status, body, _) = create(&app, &token, json!({"name": "again"})).await;
    assert_eq!(status, 429, "{body}");
    // Another user creates.
    let other = app.token("u3").await;
    let (status, body, _) = create(&app, &other, json!({"name": "mine"})).await;
    assert_eq!(status, 200, "{body}");
}
