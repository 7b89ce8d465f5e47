//! The operator's endpoints: `/healthz` (the process is up), `/readyz`
//! (the store answers) and `/metrics` (Prometheus). None needs a token, and
//! none is rate limited (the limit is per token). docs/operations.md tells
//! how to use them.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::error::ApiError;
use crate::http::observe::{HEALTHZ, METRICS, READYZ};
use crate::http::respond::json_body;
use crate::http::routes::{Routes, get_only};
use crate::http::state::AppState;
use crate::store::operator::health::Ping;

/// Whether this listener serves `/metrics` too; health is served on every
/// listener, since load balancers probe the port they send traffic to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsRoute {
    Included,
    Excluded,
}

/// The operator's routes.
pub fn routes(metrics: MetricsRoute) -> Routes {
    let health = Routes::new()
        .route(HEALTHZ, get_only(get(healthz)))
        .route(READYZ, get_only(get(readyz)));
    match metrics {
        MetricsRoute::Included => health.route(METRICS, get_only(get(metrics_text))),
        MetricsRoute::Excluded => health,
    }
}

fn status_ok() -> Response {
    json_body(StatusCode::OK, Body::from(&br#"{"status":"ok"}"#[..]))
}

/// The process is up and serving HTTP; says nothing of the store.
async fn healthz() -> Response {
    status_ok()
}

/// The store answers a trivial query within `--db-timeout`; otherwise 503
/// with the API's error body.
async fn readyz(State(app): State<AppState>) -> Result<Response, ApiError> {
    match app.store.run(Ping).await {
        Ok(()) => Ok(status_ok()),
        Err(error) => {
            tracing::warn!(%error, "not ready: the store does not answer");
            Err(ApiError::Unavailable)
        }
    }
}

async fn metrics_text(State(app): State<AppState>) -> Response {
    let text = crate::metrics::render(&app.store.pool_use(), &app.store.replica_use());
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}
