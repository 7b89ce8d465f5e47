//! The authenticated caller. [`authenticate`] runs before every listing
//! handler: it answers 401 when the token is not good, counts the request
//! against the token's rate limit (429 when over it), and puts the
//! `RateLimit-*` headers on whatever the handler answers. A handler that
//! takes [`Caller`] gets the authenticated principal. Failed
//! authentications are counted per client address; an address over its
//! limit gets 429 instead of a store look-up (`rate_limit::failures`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::{AuthError, Principal};
use crate::http::error::{ApiError, Throttle};
use crate::http::observe::CallerNote;
use crate::http::state::AppState;
use crate::rate_limit::failures::FailureLimiter;
use crate::store;

pub struct Caller(pub Arc<Principal>);

/// Authenticates, then meters, a listing request (see the module doc).
/// Requests that fail authentication are not counted: there is no token
/// to count them against.
pub async fn authenticate(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let address = app
        .failures
        .as_ref()
        .and_then(|_| client_address(&request, app.client_address_header.as_ref()));
    let principal = match principal(request.headers(), &app, address).await {
        Ok(principal) => principal,
        Err(error) => return error.into_response(),
    };
    // For the request line: who called, 429s included.
    if let Some(note) = request.extensions().get::<CallerNote>() {
        note.record(&principal);
    }
    let Some(metering) = &app.metering else {
        return run_as(principal, &app, request, next).await;
    };
    let verdict = metering.limiter.check(&principal.token_id).await;
    let mut response = if verdict.allowed {
        run_as(principal, &app, request, next).await
    } else {
        crate::metrics::rate_limit_rejected();
        ApiError::RateLimited {
            retry_after_seconds: verdict.retry_after_seconds,
            by: Throttle::Token,
        }
        .into_response()
    };
    metering.write_headers(response.headers_mut(), &verdict);
    response
}

/// Runs the request's handler for `principal`; when the store reads from
/// replicas, its work as the caller's, so that its reads see its own
/// writes (store/driver/caller.rs). Without them nothing is kept per caller.
async fn run_as(
    principal: Arc<Principal>,
    app: &AppState,
    mut request: Request,
    next: Next,
) -> Response {
    let caller: Option<Arc<str>> = app
        .store
        .follows_callers()
        .then(|| principal.user_id.as_str().into());
    request.extensions_mut().insert(Authenticated(principal));
    match caller {
        Some(caller) => store::for_caller(caller, next.run(request)).await,
        None => next.run(request).await,
    }
}

async fn principal(
    headers: &HeaderMap,
    app: &AppState,
    address: Option<IpAddr>,
) -> Result<Arc<Principal>, ApiError> {
    let failures = app.failures.as_deref().zip(address);
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let authorization = match (values.next(), values.next()) {
        (None, _) => None,
        (Some(value), None) => Some(value.as_bytes()),
        // Two credentials: refuse rather than guess which one counts.
        (Some(_), Some(_)) => return Err(failed(AuthError::Malformed, failures)),
    };
    let may_look_up = || match failures.and_then(|(limiter, address)| limiter.refusal(address)) {
        Some(refusal) => Err(AuthError::Throttled {
            retry_after_seconds: refusal.retry_after_seconds,
        }),
        None => Ok(()),
    };
    app.auth
        .authenticate(authorization, may_look_up)
        .await
        .map_err(|error| failed(error, failures))
}

/// The answer to a failed authentication, counted against the client's
/// address when it is the caller's fault.
fn failed(error: AuthError, failures: Option<(&FailureLimiter, IpAddr)>) -> ApiError {
    match error {
        AuthError::Throttled { .. } => {
            crate::metrics::auth_failure_rejected();
            error.into()
        }
        AuthError::Store(_) => error.into(),
        _ => {
            if let Some((limiter, address)) = failures {
                limiter.record(address);
            }
            error.into()
        }
    }
}

/// The client's address: the last one in the trusted proxy's header when
/// one is configured and holds an address, else the connection's peer.
fn client_address(request: &Request, header: Option<&HeaderName>) -> Option<IpAddr> {
    let forwarded = header.and_then(|name| {
        let value = request.headers().get_all(name).iter().next_back()?;
        let last = value.to_str().ok()?.rsplit(',').next()?;
        last.trim().parse::<IpAddr>().ok()
    });
    forwarded.or_else(|| {
        request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(peer)| peer.ip())
    })
}

/// acceptInvitation's gate (docs/teams.md, "Accepting one"): with
/// `Authorization`, [`authenticate`] as every route; without, the request
/// goes on unauthenticated, unless its client's address failed too often
/// (429, as a failed authentication would be). Either way the handler
/// gets a [`MaybeCaller`], which counts a failed acceptance against the
/// address.
pub async fn authenticate_if_given(
    State(app): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let address = app
        .failures
        .as_ref()
        .and_then(|_| client_address(&request, app.client_address_header.as_ref()));
    request.extensions_mut().insert(ClientAddress(address));
    if request.headers().contains_key(AUTHORIZATION) {
        return authenticate(State(app), request, next).await;
    }
    if let Some(refusal) = app
        .failures
        .as_deref()
        .zip(address)
        .and_then(|(limiter, address)| limiter.refusal(address))
    {
        crate::metrics::auth_failure_rejected();
        return ApiError::RateLimited {
            retry_after_seconds: refusal.retry_after_seconds,
            by: Throttle::FailedAuthentications,
        }
        .into_response();
    }
    next.run(request).await
}

#[derive(Clone, Copy)]
struct ClientAddress(Option<IpAddr>);

/// The caller of a route behind [`authenticate_if_given`]: authenticated
/// when it sent `Authorization`, and its client's address.
pub struct MaybeCaller {
    pub caller: Option<Caller>,
    address: Option<IpAddr>,
}

impl MaybeCaller {
    /// Counts a failed attempt against the client's address, as a failed
    /// authentication is counted.
    pub fn record_failure(&self, app: &AppState) {
        if let Some((limiter, address)) = app.failures.as_deref().zip(self.address) {
            limiter.record(address);
        }
    }
}

impl FromRequestParts<AppState> for MaybeCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        let address = parts
            .extensions
            .get::<ClientAddress>()
            .and_then(|ClientAddress(address)| *address);
        let caller = parts
            .extensions
            .remove::<Authenticated>()
            .map(|Authenticated(principal)| Caller(principal));
        Ok(Self { caller, address })
    }
}

/// The principal [`authenticate`] found, handed to the handler.
#[derive(Clone)]
struct Authenticated(Arc<Principal>);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        match parts.extensions.remove::<Authenticated>() {
            Some(Authenticated(principal)) => Ok(Self(principal)),
            None => {
                tracing::error!("a handler takes Caller on a route without authenticate");
                Err(ApiError::Internal)
            }
        }
    }
}
