//! How a route is declared: it answers its methods (GET and HEAD, and
//! those it adds), any other with a 405 and `Allow`; an API route
//! authenticates and meters its caller first ([`authenticated`]).

use std::sync::Arc;

use axum::routing::MethodRouter;
use axum::{Router, middleware};

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

/// Routes and the paths they answer: the router is built from them, and
/// so is what the 404 of an unknown path names, so that the list cannot
/// fall behind the routes.
pub struct Routes<S = AppState> {
    router: Router<S>,
    /// The paths a 404 names, in the order they were added.
    listed: Vec<&'static str>,
}

impl<S: Clone + Send + Sync + 'static> Default for Routes<S> {
    fn default() -> Self {
        Self {
            router: Router::new(),
            listed: Vec::new(),
        }
    }
}

impl<S: Clone + Send + Sync + 'static> Routes<S> {
    pub fn new() -> Self {
        Self::default()
    }

    /// `path`, answered by `method_router`, and named by a 404.
    pub fn route(mut self, path: &'static str, method_router: MethodRouter<S>) -> Self {
        self.router = self.router.route(path, method_router);
        self.listed.push(path);
        self
    }

    /// `path`, answered but not named by a 404 (a page's files: a person
    /// looking for a route needs the page's own path, not theirs).
    pub fn unlisted(mut self, path: &'static str, method_router: MethodRouter<S>) -> Self {
        self.router = self.router.route(path, method_router);
        self
    }

    pub fn merge(mut self, other: Routes<S>) -> Self {
        self.router = self.router.merge(other.router);
        self.listed.extend(other.listed);
        self
    }

    /// The paths a 404 names.
    pub fn listed(&self) -> &[&'static str] {
        &self.listed
    }

    /// The router, any other path a 404 that names the listed ones.
    pub fn with_not_found(self) -> Router<S> {
        let message: Arc<str> = not_found_message(&self.listed).into();
        self.router
            .fallback(move || async move { ApiError::NotFound(message.to_string()) })
    }
}

/// `no such route; this address answers /a, /b and /c`.
fn not_found_message(paths: &[&str]) -> String {
    let listed = match paths {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    format!("no such route; this address answers {listed}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_not_found_message_names_each_path() {
        assert_eq!(
            not_found_message(&["/a", "/b/{id}", "/c"]),
            "no such route; this address answers /a, /b/{id} and /c"
        );
        assert_eq!(
            not_found_message(&["/healthz"]),
            "no such route; this address answers /healthz"
        );
    }
}
