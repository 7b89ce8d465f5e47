//! The authenticated caller. [`authenticate`] runs before every listing
//! handler: it answers 401 when the token is not good, counts the request
//! against the token's rate limit (429 when over it), and puts the
//! `RateLimit-*` headers on whatever the handler answers. A handler that
//! takes [`Caller`] gets the authenticated principal.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::ApiError;
use super::observe::CallerNote;
use crate::auth::{AuthError, Principal};
use crate::rate_limit::{RateLimiter, Verdict};

pub struct Caller(pub Arc<Principal>);

/// Authenticates, then meters, a listing request (see the module doc).
/// Requests that fail authentication are not counted: there is no token
/// to count them against.
pub async fn authenticate(
    State(app): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = match principal(request.headers(), &app).await {
        Ok(principal) => principal,
        Err(error) => return error.into_response(),
    };
    // For the request line: who called, 429s included.
    if let Some(note) = request.extensions().get::<CallerNote>() {
        note.record(&principal);
    }
    let Some(metering) = &app.metering else {
        request.extensions_mut().insert(Authenticated(principal));
        return next.run(request).await;
    };
    let verdict = metering.limiter.check(&principal.token_id).await;
    let mut response = if verdict.allowed {
        request.extensions_mut().insert(Authenticated(principal));
        next.run(request).await
    } else {
        crate::metrics::rate_limit_rejected();
        ApiError::RateLimited {
            retry_after_seconds: verdict.retry_after_seconds,
        }
        .into_response()
    };
    metering.write_headers(response.headers_mut(), &verdict);
    response
}

async fn principal(headers: &HeaderMap, app: &AppState) -> Result<Arc<Principal>, ApiError> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let authorization = match (values.next(), values.next()) {
        (None, _) => None,
        (Some(value), None) => Some(value.as_bytes()),
        // Two credentials: refuse rather than guess which one counts.
        (Some(_), Some(_)) => return Err(AuthError::Malformed.into()),
    };
    Ok(app.auth.authenticate(authorization).await?)
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

/// A rate limiter with the header values that never change made once.
pub struct Metering {
    limiter: Arc<RateLimiter>,
    limit: HeaderValue,
    policy: HeaderValue,
}

/// The fields of the IETF httpapi draft "RateLimit header fields for HTTP"
/// (draft 06, the last with these four separate fields).
const LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
const REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
const RESET: HeaderName = HeaderName::from_static("ratelimit-reset");
const POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

impl Metering {
    pub fn new(limiter: Arc<RateLimiter>) -> Self {
        let policy = limiter.policy();
        let limit = HeaderValue::from(policy.burst());
        // `burst` requests per window of the seconds the bucket takes to
        // fill: the sustained rate, and the burst at once.
        let described = format!("{};w={}", policy.burst(), policy.window_seconds());
        Self {
            limit,
            policy: HeaderValue::try_from(described).expect("digits and ;w= are a header value"),
            limiter,
        }
    }

    fn write_headers(&self, headers: &mut HeaderMap, verdict: &Verdict) {
        headers.insert(LIMIT, self.limit.clone());
        headers.insert(REMAINING, HeaderValue::from(verdict.remaining));
        headers.insert(RESET, HeaderValue::from(verdict.reset_seconds));
        headers.insert(POLICY, self.policy.clone());
    }
}
