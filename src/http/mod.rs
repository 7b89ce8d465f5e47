//! The HTTP layer. Its floor: how answers and errors are written
//! (`respond`, `error`: the status and words of every answer, the store's
//! outcomes included, `conditional`), what requests bring (`caller`,
//! `query`, `body`, `schema`, and a write's headers in
//! `operation_headers`), how routes are declared (`routes`), what handlers
//! reach (`state`), and the request log and metrics (`observe`). Above it:
//! the API's handlers by resource (`handlers/`, each file with its
//! `routes()`), the operator's monitoring endpoints (`monitoring`:
//! `/healthz`, `/readyz`, `/metrics`), the document (`openapi`), and the
//! transport that carries requests in and answers out (`transport/`).
//! Here, the roof: the routers, assembled.

pub mod body;
pub mod caller;
pub mod conditional;
pub mod error;
pub mod handlers;
pub mod metering;
pub mod monitoring;
pub mod observe;
pub mod openapi;
pub mod operation_headers;
pub mod query;
pub mod respond;
pub mod routes;
pub mod schema;
pub mod state;
pub mod transport;

use axum::Router;
use axum::middleware;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{CompressionLayer, CompressionLevel};

pub use metering::Metering;
pub use monitoring::MetricsRoute;
pub use routes::Routes;
pub use state::{AppState, Services};
pub use transport::limits::RequestLimits;
use transport::{limits, unread_body};

/// Responses smaller than this are sent uncompressed: compressing them
/// costs more than it saves.
const COMPRESS_ABOVE_BYTES: u64 = 1024;

/// The public router: the API, `/openapi.json`, the health endpoints,
/// `/metrics` unless `metrics` excludes it, and `beside`: routes served
/// next to them (the web console's, when it is on; `app.rs` decides, so
/// that the HTTP layer imports nothing above it).
pub fn router(
    state: AppState,
    limits: RequestLimits,
    metrics: MetricsRoute,
    beside: Routes,
) -> Router {
    let routes = Routes::new()
        .merge(handlers::projects::routes(&state))
        .merge(handlers::proxy_settings::routes(&state))
        .merge(handlers::api_tokens::routes(&state))
        .merge(handlers::organizations::routes(&state))
        .merge(handlers::members::routes(&state))
        .merge(handlers::users::routes(&state))
        .merge(handlers::changes::routes(&state))
        .merge(handlers::edges::routes(&state))
        .merge(handlers::rollouts::routes(&state))
        .merge(handlers::domains::routes(&state))
        .merge(handlers::invitations::routes(&state))
        .merge(monitoring::routes(metrics))
        .merge(openapi::routes())
        .merge(beside);
    let routes = routes.with_not_found().with_state(state);
    with_middleware(routes, limits)
}

/// The operator's endpoints alone, for `--admin-listen`.
pub fn admin_router(state: AppState, limits: RequestLimits) -> Router {
    let routes = monitoring::routes(MetricsRoute::Included)
        .with_not_found()
        .with_state(state);
    with_middleware(routes, limits)
}

/// The layers every request goes through, outermost first: request id,
/// log line and metrics; `Connection: close` after a body left unread;
/// limits; compression; conditional requests.
/// Public so that the benchmark's ceiling server runs the very same stack.
/// Installs the process's metrics recorder the first time.
pub fn with_middleware(routes: Router, limits: RequestLimits) -> Router {
    crate::metrics::install();
    routes
        .layer(middleware::from_fn(conditional::answer_not_modified))
        .layer(
            CompressionLayer::new()
                .quality(CompressionLevel::Fastest)
                // An event stream goes out event by event, never held
                // back by a compressor's buffer.
                .compress_when(SizeAbove::new(COMPRESS_ABOVE_BYTES).and(NotForContentType::SSE)),
        )
        .layer(middleware::from_fn_with_state(
            limits,
            limits::enforce_limits,
        ))
        .layer(middleware::from_fn(unread_body::close_after_unread_body))
        .layer(middleware::from_fn(observe::observe))
}
