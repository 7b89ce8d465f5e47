//! The HTTP layer: routes, the error body, request limits and logging.
//! [`server`] runs the router on sockets.

mod caller;
pub mod error;
mod listings;
mod query;
pub mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use serde::Serialize;
use tower_http::compression::predicate::SizeAbove;
use tower_http::compression::{CompressionLayer, CompressionLevel};

use crate::auth::Authenticator;
use crate::store::Store;
use error::ApiError;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub auth: Arc<Authenticator>,
}

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

/// Responses smaller than this are sent uncompressed: compressing them
/// costs more than it saves.
const COMPRESS_ABOVE_BYTES: u64 = 1024;

pub fn router(state: AppState, limits: RequestLimits) -> Router {
    Router::new()
        .route("/v1/projects", listing(get(listings::projects)))
        .route("/v1/api_tokens", listing(get(listings::api_tokens)))
        .route(
            "/v1/projects/{id}/proxy-settings",
            listing(get(listings::proxy_settings)),
        )
        .fallback(not_found)
        .with_state(state)
        .layer(middleware::from_fn(log_request))
        .layer(
            CompressionLayer::new()
                .quality(CompressionLevel::Fastest)
                .compress_when(SizeAbove::new(COMPRESS_ABOVE_BYTES)),
        )
        .layer(middleware::from_fn_with_state(limits, enforce_limits))
}

/// A listing answers GET and HEAD; anything else is a 405 with `Allow`.
fn listing(route: MethodRouter<AppState>) -> MethodRouter<AppState> {
    route.fallback(|| async { ApiError::MethodNotAllowed })
}

async fn not_found() -> ApiError {
    ApiError::NotFound(
        "no such route; see /v1/projects, /v1/api_tokens and /v1/projects/{id}/proxy-settings"
            .into(),
    )
}

/// Serialises `body` as the JSON answer. Listings are never stored by
/// shared caches.
pub fn json_response(status: StatusCode, body: &impl Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (
            status,
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                ),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("private, no-cache"),
                ),
            ],
            Body::from(bytes),
        )
            .into_response(),
        Err(error) => {
            tracing::error!(%error, "cannot serialise a response");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

async fn enforce_limits(
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
    match tokio::time::timeout(limits.timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(timeout = ?limits.timeout, "request timed out");
            ApiError::Unavailable.into_response()
        }
    }
}

/// One line per request. Neither headers nor the query string are logged:
/// they may carry a token.
async fn log_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("(unmatched)", |p| p.as_str())
        .to_owned();
    let response = next.run(request).await;
    tracing::info!(
        %method,
        route,
        status = response.status().as_u16(),
        latency_us = started.elapsed().as_micros() as u64,
        "request"
    );
    response
}
