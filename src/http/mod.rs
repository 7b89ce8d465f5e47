//! The HTTP layer. Its floor: how answers and errors are written
//! (`respond`, `error`, `conditional`), what requests bring (`caller`,
//! `query`, `body`, `schema`, `writes`), how routes are declared
//! (`routes`), what handlers reach (`state`), and the request log and
//! metrics (`observe`). Above it: the API by resource (`api/`, each file
//! with its `routes()`), the operator's endpoints (`operations`), the
//! document (`openapi`), and the transport that carries requests in and
//! answers out (`transport/`). Here, the roof: the routers, assembled.

pub mod api;
pub mod body;
pub mod caller;
pub mod conditional;
pub mod error;
pub mod metering;
pub mod observe;
pub mod openapi;
pub mod operations;
pub mod query;
pub mod respond;
pub mod routes;
pub mod schema;
pub mod state;
pub mod transport;
pub mod writes;

use axum::Router;
use axum::middleware;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{CompressionLayer, CompressionLevel};

pub use metering::Metering;
pub use operations::MetricsRoute;
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
        .merge(api::projects::routes(&state))
        .merge(api::proxy_settings::routes(&state))
        .merge(api::api_tokens::routes(&state))
        .merge(api::organizations::routes(&state))
        .merge(api::users::routes(&state))
        .merge(api::changes::routes(&state))
        .merge(api::edges::routes(&state))
        .merge(operations::routes(metrics))
        .merge(openapi::routes())
        .merge(beside);
    let routes = routes.with_not_found().with_state(state);
    with_middleware(routes, limits)
}

/// The operator's endpoints alone, for `--admin-listen`.
pub fn admin_router(state: AppState, limits: RequestLimits) -> Router {
    let routes = operations::routes(MetricsRoute::Included)
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
