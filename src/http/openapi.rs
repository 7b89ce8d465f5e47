//! `GET /openapi.json`: the OpenAPI 3.1 document of every operation
//! proxydeck serves (docs/interface.md).
//!
//! The document is written by hand in `openapi.json` beside this file and
//! compiled into the binary. Tests keep it true: real responses validate
//! against it, its objects' members are the ones the Rust types write, and
//! schemathesis runs it against the service in CI (docs/choices.md).

use std::sync::LazyLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

use crate::http::routes::{Routes, get_only};

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

pub fn routes<S: Clone + Send + Sync + 'static>() -> Routes<S> {
    Routes::new().route("/openapi.json", get_only(get(document)))
}

/// Needs no token: the document describes the API, it holds no data. A
/// request whose `If-None-Match` holds the tag is answered 304 by the
/// conditional layer every route goes through.
async fn document() -> Response {
    (
        [
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static(CACHE_CONTROL),
            ),
            (header::ETAG, ETAG.clone()),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        ],
        DOCUMENT,
    )
        .into_response()
}
