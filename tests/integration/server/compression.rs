//! Compression of answers: gzip, brotli and zstd as the client asks, small
//! bodies left alone.

use super::*;

#[tokio::test]
async fn large_listings_are_gzip_compressed_and_decode_to_the_same_json() {
    let (app, token) = seeded_app(test_options(), 120).await;
    let path = "/v1/projects?limit=100";
    let plain = plain_client();

    // Uncompressed: no Accept-Encoding, no Content-Encoding.
    let response = plain
        .get(app.url(path))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers().get("content-encoding"), None);
    let raw = response.bytes().await.unwrap();
    let uncompressed: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(ids(&uncompressed).len(), 100);
    assert!(raw.len() > 10_000, "a large listing: {} bytes", raw.len());

    // Asked for gzip: the raw bytes are a gzip stream, and smaller.
    let response = plain
        .get(app.url(path))
        .bearer_auth(&token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-encoding"], "gzip");
    assert_eq!(response.headers()["content-type"], "application/json");
    let vary = response
        .headers()
        .get_all("vary")
        .iter()
        .map(|v| v.to_str().unwrap().to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(",");
    assert!(vary.contains("accept-encoding"), "Vary: {vary}");
    let gzipped = response.bytes().await.unwrap();
    assert_eq!(&gzipped[..3], &[0x1f, 0x8b, 0x08], "a gzip stream");
    assert!(
        gzipped.len() < raw.len() / 2,
        "{} vs {}",
        gzipped.len(),
        raw.len()
    );

    // Decoded (reqwest's gzip support sends Accept-Encoding: gzip and
    // decodes): the same JSON as the uncompressed answer.
    let decoded = app.get(path, &token).await;
    assert_eq!(decoded.status(), 200);
    let decoded: Value = serde_json::from_slice(&decoded.bytes().await.unwrap()).unwrap();
    assert_eq!(decoded, uncompressed);
}

#[tokio::test]
async fn brotli_and_zstd_are_honoured() {
    let (app, token) = seeded_app(test_options(), 60).await;
    let plain = plain_client();
    let path = "/v1/projects?limit=60";
    let raw_len = plain
        .get(app.url(path))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .len();
    for encoding in ["br", "zstd"] {
        let response = plain
            .get(app.url(path))
            .bearer_auth(&token)
            .header("accept-encoding", encoding)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{encoding}");
        assert_eq!(response.headers()["content-encoding"], encoding);
        let body = response.bytes().await.unwrap();
        assert!(
            body.len() < raw_len / 2,
            "{encoding}: {} of {raw_len} bytes",
            body.len()
        );
        if encoding == "zstd" {
            assert_eq!(&body[..4], &[0x28, 0xb5, 0x2f, 0xfd], "a zstd frame");
        }
    }
}

#[tokio::test]
async fn small_bodies_are_not_compressed() {
    let (app, token) = seeded_app(test_options(), 1).await;
    let plain = plain_client();
    // An error body (401, no token) and a 400 are small.
    for (path, token, status) in [
        ("/v1/projects", None, 401),
        ("/v1/projects?limit=0", Some(token.as_str()), 400),
        ("/v1/nowhere", Some(token.as_str()), 404),
    ] {
        let mut request = plain
            .get(app.url(path))
            .header("accept-encoding", "gzip, br, zstd");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), status, "{path}");
        assert_eq!(response.headers().get("content-encoding"), None, "{path}");
        let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        assert_error_shape(&body);
    }
}
