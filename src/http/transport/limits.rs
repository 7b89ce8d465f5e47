//! Limits checked on every request before routing: the request target's
//! and the header section's sizes, and the time a request may take.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::error::ApiError;
use crate::http::observe;
use crate::store::engine::deadline;

/// Limits checked on every request before routing.
#[derive(Clone, Debug)]
pub struct RequestLimits {
    /// Longest request target (path and query), in bytes: beyond, 414.
    pub max_uri_bytes: usize,
    /// Largest header section, in bytes: beyond, 431.
    pub max_header_bytes: usize,
    /// Longest a request may take to answer: beyond, 503.
    pub timeout: Duration,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            max_uri_bytes: 8 * 1024,
            max_header_bytes: 16 * 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

pub async fn enforce_limits(
    State(limits): State<RequestLimits>,
    request: Request,
    next: Next,
) -> Response {
    let uri_bytes = request
        .uri()
        .path_and_query()
        .map_or(0, |pq| pq.as_str().len());
    if uri_bytes > limits.max_uri_bytes {
        return ApiError::UriTooLong.into_response();
    }
    let header_bytes: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if header_bytes > limits.max_header_bytes {
        return ApiError::HeadersTooLarge.into_response();
    }
    // The request's writes roll back rather than commit after this
    // answers 503 for them (`store::engine::deadline`).
    let deadline = std::time::Instant::now() + limits.timeout;
    let answer = deadline::for_request(deadline, next.run(request));
    match tokio::time::timeout_at(deadline.into(), answer).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(
                timeout = ?limits.timeout,
                request_id = observe::current_request_id(),
                "request timed out"
            );
            ApiError::Unavailable.into_response()
        }
    }
}
