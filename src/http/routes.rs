//! How a route is declared: it answers its methods (GET and HEAD, and
//! those it adds), any other with a 405 and `Allow`; an API route
//! authenticates and meters its caller first ([`authenticated`]).

use axum::middleware;
use axum::routing::MethodRouter;

use crate::http::caller;
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// A listing (or an operation of the management API) answers its methods
/// (GET and HEAD, and those `route` adds) to an authenticated caller
/// within its rate limit; any other method is a 405 with `Allow`, before
/// authentication.
pub fn authenticated(route: MethodRouter<AppState>, state: &AppState) -> MethodRouter<AppState> {
    get_only(route.route_layer(middleware::from_fn_with_state(
        state.clone(),
        caller::authenticate,
    )))
}

/// A route that answers its methods; anything else is a 405 with `Allow`.
pub fn get_only<S: Clone + Send + Sync + 'static>(route: MethodRouter<S>) -> MethodRouter<S> {
    route.fallback(|| async { ApiError::MethodNotAllowed })
}

pub async fn not_found() -> ApiError {
    ApiError::NotFound(
        "no such route; see /v1/projects, /v1/projects/{id}, /v1/api_tokens, /v1/projects/{id}/proxy-settings, /v1/users/me and /v1/organizations; the console is at /console"
            .into(),
    )
}
