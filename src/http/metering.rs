//! The per-token rate limit's answer headers (`RateLimit-*`), with the
//! values that never change made once.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, HeaderValue};

use crate::rate_limit::{RateLimiter, Verdict};

/// A rate limiter with the header values that never change made once.
pub struct Metering {
    pub(crate) limiter: Arc<RateLimiter>,
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

    pub(crate) fn write_headers(&self, headers: &mut HeaderMap, verdict: &Verdict) {
        headers.insert(LIMIT, self.limit.clone());
        headers.insert(REMAINING, HeaderValue::from(verdict.remaining));
        headers.insert(RESET, HeaderValue::from(verdict.reset_seconds));
        headers.insert(POLICY, self.policy.clone());
    }
}
