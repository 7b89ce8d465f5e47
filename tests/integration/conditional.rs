//! Conditional requests on the listings: a weak `ETag` on every listing,
//! and `If-None-Match` answered 304 exactly when the listing did not
//! change.

use std::time::Duration;

use proxydeck::store::StoreOptions;
use reqwest::header::{ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, ETAG, IF_NONE_MATCH};
use reqwest::{Method, StatusCode};

use super::BACKEND;
use crate::helpers::*;

const LISTINGS: [&str; 3] = [
    "/v1/projects",
    "/v1/api_tokens",
    "/v1/projects/p0/proxy-settings",
];

/// Organization 1 with user u1 and `projects` projects (p0, p1, ...), two
/// revisions of p0's proxy settings; a token of u1 whose use has been
/// written, so that the token listing holds still.
async fn fixture(projects: usize) -> (TestApp, String) {
    // A token's use is noted once: `last_used_at`, which the token listing
    // shows, then stays put for the whole test.
    let mut options = test_options();
    options.auth.usage_granularity = Duration::from_secs(3600);
    let app = TestApp::spawn_with(BACKEND, options, StoreOptions::default()).await;
    let mut lines = vec![org(1), user("u1", &[1])];
    for i in 0..projects {
        lines.push(project(&format!("p{i}"), 1, i as i64));
    }
    lines.push(settings("p0", 1, false));
    lines.push(settings("p0", 2, true));
    app.seed(lines).await;
    let token = app.token("u1").await;
    let _ = app.get("/v1/api_tokens", &token).await;
    app.flush_token_uses().await;
    (app, token)
}

/// A conditional request: (status, ETag, body).
async fn fetch(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    if_none_match: Option<&str>,
) -> (StatusCode, Option<String>, reqwest::Response) {
    let mut request = app.client.request(method, app.url(path)).bearer_auth(token);
    if let Some(tags) = if_none_match {
        request = request.header(IF_NONE_MATCH, tags);
    }
    let response = request.send().await.expect("an answer");
    let tag = response
        .headers()
        .get(ETAG)
        .map(|t| t.to_str().unwrap().to_owned());
    (response.status(), tag, response)
}

/// The current tag of a listing (a plain GET, checked to be 200).
async fn tag_of(app: &TestApp, path: &str, token: &str) -> String {
    let (status, tag, _) = fetch(app, Method::GET, path, token, None).await;
    assert_eq!(status, 200, "{path}");
    tag.unwrap_or_else(|| panic!("{path}: no ETag"))
}

#[tokio::test]
async fn every_listing_has_a_weak_tag_and_a_repeat_is_304_without_a_body() {
    require!(BACKEND);
    let (app, token) = fixture(3).await;
    for path in LISTINGS {
        let tag = tag_of(&app, path, &token).await;
        assert!(
            tag.starts_with("W/\"") && tag.ends_with('"'),
            "{path}: {tag}"
        );
        assert_eq!(tag, tag_of(&app, path, &token).await, "{path}: stable");

        let strong = tag.trim_start_matches("W/");
        let list = format!("\"other\", {tag}");
        for held in [tag.as_str(), strong, "*", &list] {
            for method in [Method::GET, Method::HEAD] {
                let (status, again, response) =
                    fetch(&app, method.clone(), path, &token, Some(held)).await;
                assert_eq!(status, 304, "{method} {path} If-None-Match: {held}");
                assert_eq!(again.as_deref(), Some(tag.as_str()), "{path}");
                assert_eq!(
                    response.headers()[CACHE_CONTROL],
                    "private, no-cache",
                    "{path}"
                );
                assert!(response.headers().contains_key("x-request-id"));
                assert!(
                    response.bytes().await.unwrap().is_empty(),
                    "{path}: a 304 has no body"
                );
            }
        }

        let (status, again, response) = fetch(
            &app,
            Method::GET,
            path,
            &token,
            Some("W/\"0123456789abcdef\""),
        )
        .await;
        assert_eq!(status, 200, "{path}: a tag that does not match");
        assert_eq!(again.as_deref(), Some(tag.as_str()));
        assert!(!response.bytes().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_change_through_the_store_gives_a_200_with_a_new_tag() {
    require!(BACKEND);
    let (app, token) = fixture(3).await;
    let [projects, tokens, revisions] = LISTINGS;

    let before = tag_of(&app, projects, &token).await;
    app.seed(vec![project("p9", 1, 100)]).await;
    let (status, after, _) = fetch(&app, Method::GET, projects, &token, Some(&before)).await;
    assert_eq!(status, 200, "a project was added");
    assert_ne!(after.as_deref(), Some(before.as_str()));
    let before = after.unwrap();
    app.store
        .run(RemoveProject(String::from("p9")))
        .await
        .unwrap();
    let (status, after, _) = fetch(&app, Method::GET, projects, &token, Some(&before)).await;
    assert_eq!(status, 200, "a project was deleted");
    assert_ne!(after.as_deref(), Some(before.as_str()));

    let before = tag_of(&app, revisions, &token).await;
    app.seed(vec![settings("p0", 3, false)]).await;
    let (status, after, _) = fetch(&app, Method::GET, revisions, &token, Some(&before)).await;
    assert_eq!(status, 200, "a revision was added");
    assert_ne!(after.as_deref(), Some(before.as_str()));

    // A token minted, then revoked: the listing changes twice, and is then
    // what it was before, so the first tag matches again.
    let first = tag_of(&app, tokens, &token).await;
    let (minted, _) = app.token_with("u1", "second", None).await;
    let (status, with_second, _) = fetch(&app, Method::GET, tokens, &token, Some(&first)).await;
    assert_eq!(status, 200, "a token was minted");
    let with_second = with_second.unwrap();
    assert_ne!(with_second, first);
    app.store
        .run(RevokeToken(String::from(&minted.id)))
        .await
        .unwrap();
    let (status, _, _) = fetch(&app, Method::GET, tokens, &token, Some(&with_second)).await;
    assert_eq!(status, 200, "a token was revoked");
    let (status, _, _) = fetch(&app, Method::GET, tokens, &token, Some(&first)).await;
    assert_eq!(status, 304, "the listing is as it was at first");
}

#[tokio::test]
async fn different_queries_have_different_tags() {
    require!(BACKEND);
    let (app, token) = fixture(3).await;
    let queries = [
        "/v1/projects",
        "/v1/projects?limit=2",
        "/v1/projects?order_direction=ASC",
        "/v1/projects?limit=2&start_key=p1",
        "/v1/api_tokens",
        "/v1/api_tokens?limit=5",
        "/v1/projects/p0/proxy-settings",
        "/v1/projects/p0/proxy-settings?order_direction=ASC",
    ];
    let mut tags = Vec::new();
    for path in queries {
        tags.push(tag_of(&app, path, &token).await);
    }
    for (i, tag) in tags.iter().enumerate() {
        for (j, other) in tags.iter().enumerate().skip(i + 1) {
            assert_ne!(tag, other, "{} and {}", queries[i], queries[j]);
        }
    }
    // One query's tag does not hold for another.
    let (status, _, _) = fetch(&app, Method::GET, queries[1], &token, Some(&tags[0])).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn compressed_listings_keep_their_tag_and_answer_304_uncompressed() {
    require!(BACKEND);
    let (app, token) = fixture(40).await;
    let path = "/v1/projects?limit=40";
    let plain = client_builder().no_gzip().build().unwrap();
    let get = |held: Option<String>| {
        let mut request = plain
            .get(app.url(path))
            .bearer_auth(&token)
            .header(ACCEPT_ENCODING, "gzip");
        if let Some(held) = held {
            request = request.header(IF_NONE_MATCH, held);
        }
        request.send()
    };
    let compressed = get(None).await.unwrap();
    assert_eq!(compressed.status(), 200);
    assert_eq!(compressed.headers()[CONTENT_ENCODING], "gzip");
    let tag = compressed.headers()[ETAG].to_str().unwrap().to_owned();
    assert_eq!(
        tag,
        tag_of(&app, path, &token).await,
        "the tag names the content, whatever its encoding"
    );

    let not_modified = get(Some(tag.clone())).await.unwrap();
    assert_eq!(not_modified.status(), 304);
    assert_eq!(not_modified.headers()[ETAG], tag.as_str());
    assert!(!not_modified.headers().contains_key(CONTENT_ENCODING));
    assert!(not_modified.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn errors_have_no_tag_and_are_never_304() {
    require!(BACKEND);
    let (app, token) = fixture(1).await;
    for (path, token, expected) in [
        ("/v1/projects?limit=0", token.as_str(), 400),
        ("/v1/projects/nope/proxy-settings", token.as_str(), 404),
        ("/v1/projects", "pxd_not_a_token", 401),
    ] {
        let (status, tag, _) = fetch(&app, Method::GET, path, token, Some("*")).await;
        assert_eq!(status, expected, "{path}");
        assert_eq!(tag, None, "{path}");
    }
}
