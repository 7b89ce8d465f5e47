//! `GET /v1/api_tokens`: the echo body, the caller's own tokens, the
//! redacted hint, name filter, paging.

use std::time::Duration;

use proxydeck::domain::time::Timestamp;
use serde_json::json;

use super::BACKEND;
use crate::helpers::*;

async fn fixture() -> TestApp {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![org(1), user("u1", &[1]), user("u2", &[1])])
        .await;
    app
}

#[tokio::test]
async fn body_echoes_the_request_and_has_no_envelope() {
    require!(BACKEND);
    let app = fixture().await;
    let (_, secret) = app.token_with("u1", "ci", None).await;
    let (status, body) = app.get_json("/v1/api_tokens", &secret).await;
    assert_eq!(status, 200);
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 3, "{body}");
    assert_eq!(body["limit"], 20);
    assert_eq!(body["order_direction"], "DESC");
    assert!(body.get("start_key").is_none());
    for absent in ["object", "url", "has_more", "last_key"] {
        assert!(body.get(absent).is_none(), "{absent} in {body}");
    }
    let id = body["data"][0]["id"].as_str().unwrap().to_owned();
    let (_, body) = app
        .get_json(
            &format!("/v1/api_tokens?limit=7&order_direction=ASC&start_key={id}"),
            &secret,
        )
        .await;
    assert_eq!(body["limit"], 7);
    assert_eq!(body["order_direction"], "ASC");
    assert_eq!(body["start_key"], id.as_str());
}

#[tokio::test]
async fn token_objects_carry_the_hint_never_the_secret() {
    require!(BACKEND);
    let app = fixture().await;
    let expiry = Timestamp::now().plus_seconds(3600).unwrap();
    let (created, secret) = app.token_with("u1", "deploy", Some(expiry)).await;
    let (_, body) = app.get_json("/v1/api_tokens", &secret).await;
    let token = &body["data"][0];
    assert_eq!(token["object"], "api_token");
    assert_eq!(token["id"], created.id.as_str());
    assert_eq!(token["user_id"], "u1");
    assert_eq!(token["name"], "deploy");
    assert_eq!(token["from_browser"], false);
    assert_eq!(token["expires_at"], expiry.to_string());
    assert!(token["created_at"].is_string() && token["updated_at"].is_string());
    assert_eq!(
        token["token"],
        format!("pxd_****{}", &secret[secret.len() - 4..])
    );
    let text = body.to_string();
    assert!(!text.contains(&secret));
    assert!(!text.contains(&secret[4..36]), "the random part leaked");
}

#[tokio::test]
async fn optional_timestamps_are_omitted_never_null() {
    require!(BACKEND);
    let app = fixture().await;
    app.token_with("u1", "never", None).await;
    let (_, lister) = app.token_with("u1", "lister", None).await;
    let (_, body) = app.get_json("/v1/api_tokens?name=never", &lister).await;
    let token = body["data"][0].as_object().unwrap();
    assert!(!token.contains_key("last_used_at"), "{body}");
    assert!(!token.contains_key("expires_at"), "{body}");
    assert!(token.values().all(|v| !v.is_null()));
}

#[tokio::test]
async fn last_used_at_follows_use_without_a_write_per_request() {
    require!(BACKEND);
    // The flusher does not tick while the test runs: only the flush below
    // writes.
    let mut options = test_options();
    options.auth.usage_flush_interval = Duration::from_secs(3600);
    let app = TestApp::spawn_with(BACKEND, options, suite_store_options()).await;
    app.seed(vec![org(1), user("u1", &[1])]).await;
    let (token, secret) = app.token_with("u1", "busy", None).await;
    let before = Timestamp::now();
    for _ in 0..20 {
        assert_eq!(app.get("/v1/api_tokens", &secret).await.status(), 200);
    }
    let stored = || async {
        let tokens = app.store.run(UserTokens(String::from("u1"))).await.unwrap();
        let record = tokens
            .into_iter()
            .find(|record| record.token.id == token.id);
        record.unwrap().token.last_used_at
    };
    assert_eq!(stored().await, None, "a request wrote its use");
    // Written by the flush, as the flusher does every interval.
    app.flush_token_uses().await;
    assert!(stored().await.is_some());
    let (_, body) = app.get_json("/v1/api_tokens", &secret).await;
    let used = Timestamp::parse(
        body["data"][0]["last_used_at"]
            .as_str()
            .expect("last_used_at is set"),
    )
    .unwrap();
    assert!(used >= before && used <= Timestamp::now(), "{body}");
}

#[tokio::test]
async fn only_the_callers_own_unrevoked_tokens_are_listed() {
    require!(BACKEND);
    let app = fixture().await;
    let (_, mine) = app.token_with("u1", "mine", None).await;
    let (revoked, _) = app.token_with("u1", "old", None).await;
    let (theirs, their_secret) = app.token_with("u2", "theirs", None).await;
    let expired_at = Timestamp::now().plus_seconds(-60).unwrap();
    let (expired, _) = app.token_with("u1", "expired", Some(expired_at)).await;
    app.store
        .run(RevokeToken(String::from(&revoked.id)))
        .await
        .unwrap();

    let (_, body) = app.get_json("/v1/api_tokens", &mine).await;
    let listed = ids(&body);
    assert_eq!(listed.len(), 2, "{body}");
    assert!(listed.contains(&expired.id), "expired tokens stay listed");
    assert!(!listed.contains(&revoked.id), "revoked tokens disappear");
    assert!(!listed.contains(&theirs.id));
    let expired_item = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == expired.id.as_str())
        .unwrap();
    assert_eq!(expired_item["expires_at"], expired_at.to_string());

    let (_, body) = app.get_json("/v1/api_tokens", &their_secret).await;
    assert_eq!(ids(&body), std::slice::from_ref(&theirs.id));

    // Another user's token is never an item of my list.
    let (status, body) = app
        .get_json(&format!("/v1/api_tokens?start_key={}", theirs.id), &mine)
        .await;
    assert_eq!(status, 400);
    assert_eq!(error_param(&body), "start_key");
}

#[tokio::test]
async fn name_filter_matches_exactly() {
    require!(BACKEND);
    let app = fixture().await;
    let (_, secret) = app.token_with("u1", "ci", None).await;
    for name in ["ci", "ci ", "CI", "deploy bot", "ci"] {
        app.token_with("u1", name, None).await;
    }
    let count = |body: &serde_json::Value| body["data"].as_array().unwrap().len();
    let (_, body) = app.get_json("/v1/api_tokens?name=ci", &secret).await;
    assert_eq!(count(&body), 3);
    assert!(
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] == "ci")
    );
    let (_, body) = app
        .get_json("/v1/api_tokens?name=deploy%20bot", &secret)
        .await;
    assert_eq!(count(&body), 1);
    let (_, body) = app
        .get_json("/v1/api_tokens?name=deploy+bot", &secret)
        .await;
    assert_eq!(count(&body), 1);
    let (_, body) = app.get_json("/v1/api_tokens?name=nobody", &secret).await;
    assert_eq!(body["data"], json!([]));
    let (status, body) = app.get_json("/v1/api_tokens?name=", &secret).await;
    assert_eq!(status, 400);
    assert_eq!(error_param(&body), "name");
    // A start_key whose token has another name is not an item of the filtered list.
    let (_, all) = app.get_json("/v1/api_tokens?name=CI", &secret).await;
    let other = all["data"][0]["id"].as_str().unwrap();
    let (status, _) = app
        .get_json(
            &format!("/v1/api_tokens?name=ci&start_key={other}"),
            &secret,
        )
        .await;
    assert_eq!(status, 400);
}

/// Pages with the id of the last item and stops on a short page, as a
/// client of this body must; a revoked token's id still works as the key.
#[tokio::test]
async fn paging_by_last_id_in_both_directions() {
    require!(BACKEND);
    let app = fixture().await;
    let (_, secret) = app.token_with("u1", "lister", None).await;
    for i in 0..24 {
        app.token_with("u1", &format!("t{i}"), None).await;
    }
    for direction in ["DESC", "ASC"] {
        let mut seen: Vec<String> = Vec::new();
        let mut query = format!("/v1/api_tokens?limit=5&order_direction={direction}");
        loop {
            let (status, body) = app.get_json(&query, &secret).await;
            assert_eq!(status, 200, "{body}");
            let page = ids(&body);
            seen.extend(page.iter().cloned());
            if page.len() < 5 {
                break;
            }
            let last = page.last().unwrap();
            if seen.len() == 10 && direction == "DESC" {
                // Revoked after it was returned: the walk goes on from it.
                app.store
                    .run(RevokeToken(String::from(last)))
                    .await
                    .unwrap();
            }
            query = format!("/v1/api_tokens?limit=5&order_direction={direction}&start_key={last}");
        }
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), seen.len(), "{direction}: repeated");
        let expected = if direction == "DESC" { 25 } else { 24 };
        assert_eq!(seen.len(), expected, "{direction}: {seen:?}");
        // Creation order: UUIDv7 ids made one after another sort like their creation.
        let mut ordered = seen.clone();
        ordered.sort();
        if direction == "DESC" {
            ordered.reverse();
        }
        assert_eq!(seen, ordered, "{direction}");
    }
}

#[tokio::test]
async fn unknown_start_key_and_parameters_are_refused() {
    require!(BACKEND);
    let app = fixture().await;
    let secret = app.token("u1").await;
    for (query, param) in [
        ("start_key=unknown", "start_key"),
        (
            "organization_id=00000000-0000-7000-8000-000000000001",
            "organization_id",
        ),
        ("limit=0", "limit"),
        ("order_direction=up", "order_direction"),
        ("name=a&name=b", "name"),
    ] {
        let (status, body) = app
            .get_json(&format!("/v1/api_tokens?{query}"), &secret)
            .await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(error_param(&body), param);
    }
}
