//! HEAD on the listings: the GET's headers, no body.

use super::*;

#[tokio::test]
async fn head_on_each_listing_answers_the_get_headers_without_a_body() {
    let (app, token) = seeded_app(test_options(), 3).await;
    let plain = plain_client();
    // Let the first use of the token reach the store, so that the token
    // listing does not change between the GET and the HEAD.
    let _ = app.get("/v1/api_tokens", &token).await;
    app.flush_token_uses().await;
    for path in [
        "/v1/projects",
        "/v1/api_tokens",
        "/v1/projects/p000/proxy-settings",
    ] {
        let get = plain
            .get(app.url(path))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), 200, "{path}");
        let get_headers = get.headers().clone();
        let get_body = get.bytes().await.unwrap();
        assert!(!get_body.is_empty());

        let head = plain
            .head(app.url(path))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(head.status(), 200, "{path}");
        let head_headers = head.headers().clone();
        assert!(
            head.bytes().await.unwrap().is_empty(),
            "{path}: HEAD has a body"
        );
        assert!(get_headers.contains_key("etag"), "{path}: no ETag");
        for name in ["content-type", "cache-control", "etag"] {
            assert_eq!(
                head_headers.get(name),
                get_headers.get(name),
                "{path}: {name}"
            );
        }
        assert_eq!(head_headers["content-type"], "application/json");
        if let Some(length) = head_headers.get("content-length") {
            assert_eq!(
                length.to_str().unwrap(),
                get_body.len().to_string(),
                "{path}: HEAD announces another length"
            );
        }
    }
}

#[tokio::test]
async fn head_announces_the_same_content_encoding_as_get() {
    let (app, token) = seeded_app(test_options(), 40).await;
    let plain = plain_client();
    let path = "/v1/projects?limit=40";
    let get = plain
        .get(app.url(path))
        .bearer_auth(&token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    let head = plain
        .head(app.url(path))
        .bearer_auth(&token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(get.headers()["content-encoding"], "gzip");
    assert_eq!(
        head.headers().get("content-encoding"),
        get.headers().get("content-encoding")
    );
    assert!(head.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn head_without_a_token_is_401() {
    let (app, _token) = seeded_app(test_options(), 1).await;
    let plain = plain_client();
    for path in [
        "/v1/projects",
        "/v1/api_tokens",
        "/v1/projects/p000/proxy-settings",
    ] {
        let head = plain.head(app.url(path)).send().await.unwrap();
        assert_eq!(head.status(), 401, "{path}");
        assert_eq!(head.headers()["www-authenticate"], "Bearer", "{path}");
        assert!(head.bytes().await.unwrap().is_empty(), "{path}");
    }
}
