//! What every handler can reach: the service's parts, shared.

use std::sync::Arc;

use crate::auth::Authenticator;
use crate::feed::Feed;
use crate::http::metering::Metering;
use crate::rate_limit::failures::FailureLimiter;
use crate::store::Store;

/// What every handler can reach. Cloned for every request (by each
/// extractor and middleware that takes it), so it is one reference count.
#[derive(Clone)]
pub struct AppState(Arc<Services>);

pub struct Services {
    pub store: Arc<Store>,
    pub auth: Arc<Authenticator>,
    /// The change feed's tail and followers.
    pub feed: Arc<Feed>,
    /// Per-token rate limits; `None` when they are off.
    pub metering: Option<Arc<Metering>>,
    /// Failed authentications per client address; `None` when unlimited.
    pub failures: Option<Arc<FailureLimiter>>,
    /// The trusted proxy's header naming the client's address, if any.
    pub client_address_header: Option<axum::http::HeaderName>,
    /// The change feed's open streams and long polls, by token and user.
    pub follows: crate::quotas::Follows,
    /// What one caller may hold at once.
    pub quotas: crate::quotas::QuotaOptions,
    /// The custom domains' DNS checks, and their options.
    pub domain_checks: Arc<crate::domain_checks::DomainChecks>,
    /// Invitations' options and their mailer (`mail.rs`).
    pub invitations: Arc<crate::mail::Invitations>,
    /// Rollouts' driver, woken when one begins (`rollouts.rs`).
    pub rollouts: Arc<crate::rollouts::Rollouts>,
}

impl AppState {
    pub fn new(services: Services) -> Self {
        Self(Arc::new(services))
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}
