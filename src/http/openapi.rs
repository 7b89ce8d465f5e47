//! `GET /openapi.json`: the OpenAPI 3.1 document of the three listings.
//!
//! The document is written by hand in `openapi.json` beside this file and
//! compiled into the binary. Tests keep it true: real responses validate
//! against it, its objects' members are the ones the Rust types write, and
//! schemathesis runs it against the service in CI (docs/choices.md).

use std::sync::LazyLock;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The document, as served.
pub const DOCUMENT: &str = include_str!("openapi.json");

/// Clients may reuse the document for this long before they revalidate it
/// with `If-None-Match`; an upgrade shows within it.
const CACHE_CONTROL: &str = "public, max-age=300";

/// A weak validator: the same document may go out compressed or not.
static ETAG: LazyLock<HeaderValue> = LazyLock::new(|| {
    let digest = Sha256::digest(DOCUMENT.as_bytes());
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    HeaderValue::from_str(&format!("W/\"{hex}\"")).expect("hex digits make a header value")
});

/// Needs no token: the document describes the API, it holds no data.
pub async fn document(request_headers: HeaderMap) -> Response {
    let headers = [
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static(CACHE_CONTROL),
        ),
        (header::ETAG, ETAG.clone()),
    ];
    if request_headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .any(|value| matches_etag(value.as_bytes()))
    {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (
        headers,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        DOCUMENT,
    )
        .into_response()
}

/// `If-None-Match` compares weakly (RFC 9110 section 13.1.2): `*`, or any
/// listed tag whose opaque part is ours, with or without `W/`.
fn matches_etag(if_none_match: &[u8]) -> bool {
    let ours = ETAG.as_bytes().strip_prefix(b"W/").unwrap_or_default();
    if_none_match.split(|b| *b == b',').any(|tag| {
        let tag = tag.trim_ascii();
        tag == b"*" || tag.strip_prefix(b"W/").unwrap_or(tag) == ours
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_compares_weakly_and_takes_lists() {
        let ours = ETAG.to_str().unwrap().to_owned();
        let opaque = ours.strip_prefix("W/").unwrap();
        for matching in [
            ours.clone(),
            opaque.to_owned(),
            "*".into(),
            format!("\"other\", {ours}"),
            format!("W/\"other\",{opaque} "),
        ] {
            assert!(matches_etag(matching.as_bytes()), "{matching}");
        }
        for other in [
            "",
            "\"other\"",
            "W/\"other\"",
            "W/",
            &opaque[..opaque.len() - 2],
        ] {
            assert!(!matches_etag(other.as_bytes()), "{other}");
        }
    }
}
