//! What every request leaves behind: a request id (the caller's, or one
//! made here) returned in `X-Request-Id`, one line in the request log, and
//! the HTTP metrics.
//!
//! This is the outermost layer, so that answers made by the other layers
//! (414, 431, a timeout's 503) are counted, logged and carry the id too.
//! It is shared with the benchmark's ceiling server: what it costs, the
//! ceiling pays as well.

use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use rand::RngExt as _;
use tracing::Level;

use crate::auth::Principal;
use crate::domain::token;
use crate::metrics;

/// The operator's endpoints (`monitoring.rs`), which probes and scrapers
/// call every few seconds.
pub const HEALTHZ: &str = "/healthz";
pub const READYZ: &str = "/readyz";
pub const METRICS: &str = "/metrics";

/// Whether `route` is one that probes and scrapers call every few seconds:
/// its requests are logged at debug, not info.
fn is_probe(route: &str) -> bool {
    [HEALTHZ, READYZ, METRICS].contains(&route)
}

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Longest request id taken from a caller.
const MAX_REQUEST_ID_LEN: usize = 128;

/// Where the `Caller` extractor notes who the request was authenticated
/// as, for the request log. Put in the request's extensions here: the
/// handler's answer is built far from the extractor, and this keeps the
/// handlers as they are.
#[derive(Clone, Default)]
pub(super) struct CallerNote(Arc<OnceLock<Arc<Principal>>>);

impl CallerNote {
    pub(super) fn record(&self, principal: &Arc<Principal>) {
        let _ = self.0.set(principal.clone());
    }

    fn token_id(&self) -> Option<&str> {
        self.0.get().map(|principal| principal.token_id.as_str())
    }
}

tokio::task_local! {
    /// The id of the request the current task answers.
    static CURRENT_REQUEST_ID: HeaderValue;
}

/// The id of the request being answered, for a log line written on its
/// way; `None` outside a request (a background task).
pub(crate) fn current_request_id() -> Option<String> {
    CURRENT_REQUEST_ID
        .try_with(|id| id.to_str().unwrap_or_default().to_owned())
        .ok()
}

pub(super) async fn observe(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = request_id(request.headers());
    let method = request.method().clone();
    // A clone is a reference count: the route outlives the request.
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let route = matched.as_ref().map(MatchedPath::as_str);
    let caller = CallerNote::default();
    request.extensions_mut().insert(caller.clone());

    // Warnings logged on the request's way (a store fault, a timeout)
    // name it too.
    let mut response = CURRENT_REQUEST_ID
        .scope(request_id.clone(), next.run(request))
        .await;

    let took = started.elapsed();
    let status = response.status();
    metrics::request_answered(route, &method, status, took);
    // Neither headers nor the query string are logged: they may carry a
    // token. The token's id is not secret: listings show it. A method
    // other than the standard ones is `other`: the client chose it.
    macro_rules! request_line {
        ($level:expr) => {
            tracing::event!(
                $level,
                method = %metrics::method_label(&method),
                route = route.unwrap_or(metrics::UNMATCHED_ROUTE),
                status = status.as_u16(),
                latency_us = took.as_micros() as u64,
                request_id = request_id.to_str().unwrap_or_default(),
                token_id = caller.token_id(),
                "request"
            )
        };
    }
    // Load balancers and scrapers call these every few seconds: their
    // lines would drown the others.
    if route.is_some_and(is_probe) {
        request_line!(Level::DEBUG);
    } else {
        request_line!(Level::INFO);
    }
    response.headers_mut().insert(REQUEST_ID, request_id);
    response
}

/// The caller's `X-Request-Id` when it is safe to log and send back: 1 to
/// 128 visible ASCII characters, and nothing like a token. Otherwise a new
/// one.
fn request_id(headers: &HeaderMap) -> HeaderValue {
    match headers.get(REQUEST_ID) {
        Some(given) if is_acceptable_request_id(given.as_bytes()) => given.clone(),
        _ => new_request_id(),
    }
}

fn is_acceptable_request_id(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID_LEN).contains(&id.len())
        && id.iter().all(u8::is_ascii_graphic)
        && !token::may_hold_a_token(id)
}

/// A UUIDv7 (time-ordered, so ids sort by arrival), from the thread's
/// random generator: `Uuid::now_v7` would take a process-wide lock.
fn new_request_id() -> HeaderValue {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    let random: [u8; 10] = rand::rng().random();
    let id = uuid::Builder::from_unix_timestamp_millis(millis, &random).into_uuid();
    let text = id.hyphenated().to_string();
    HeaderValue::from_maybe_shared(Bytes::from(text)).expect("a UUID is a valid header value")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_from_callers_are_taken_only_when_harmless() {
        for good in [
            "a",
            "req-42",
            "0190b7a4-0000-7000-8000-000000000002",
            "~!{}",
        ] {
            assert!(is_acceptable_request_id(good.as_bytes()), "{good}");
        }
        let too_long = "x".repeat(MAX_REQUEST_ID_LEN + 1);
        let token = crate::domain::token::generate();
        for bad in ["", "a b", "tab\there", "é", &too_long, &token] {
            assert!(!is_acceptable_request_id(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn new_request_ids_are_distinct_uuids() {
        let (a, b) = (new_request_id(), new_request_id());
        assert_ne!(a, b);
        let parsed = uuid::Uuid::parse_str(a.to_str().unwrap()).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
    }
}
