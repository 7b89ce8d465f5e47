//! Authentication: from an `Authorization` header to the caller, with a
//! short-lived cache of authenticated tokens and `last_used_at` kept in
//! memory and written in batches (`docs/decisions.md` section 4).
//!
//! Cache delay: a token revoked, or a membership changed, by another process
//! (the `admin` command, another instance) is seen within
//! [`AuthOptions::cache_ttl`]. Expiry needs no delay: it is checked on every
//! request against the cached `expires_at`. Both read the service's
//! [`Clock`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::domain::access::TokenState;
use crate::domain::organization_set::OrganizationSet;
use crate::domain::time::Timestamp;
use crate::domain::token::{self, TokenDigest};
use crate::metrics;
use crate::store::operations::auth::{FindToken, RecordTokenUses};
use crate::store::{Store, StoreError, TokenGrant, TokenUse};

#[derive(Clone, Debug)]
pub struct AuthOptions {
    /// Whether authenticated tokens are cached at all (`--caches`); without
    /// the cache every request looks its token up in the store.
    pub cache: bool,
    /// How long an authenticated token is trusted without asking the store.
    pub cache_ttl: Duration,
    /// A token's use is noted at most once per this span...
    pub usage_granularity: Duration,
    /// ...and noted uses are written to the store this often.
    pub usage_flush_interval: Duration,
}

impl Default for AuthOptions {
    fn default() -> Self {
        Self {
            cache: true,
            cache_ttl: Duration::from_secs(5),
            usage_granularity: Duration::from_secs(10),
            usage_flush_interval: Duration::from_secs(15),
        }
    }
}

/// Who is calling.
#[derive(Debug)]
pub struct Principal {
    pub token_id: String,
    pub user_id: String,
    /// The caller's organizations.
    pub organizations: OrganizationSet,
    expires_at: Option<Timestamp>,
    revoked: bool,
    /// Milliseconds of the last use noted for the store.
    last_noted: AtomicI64,
}

impl Principal {
    fn from_grant(grant: TokenGrant) -> Self {
        Self {
            token_id: grant.token_id,
            user_id: grant.user_id,
            organizations: grant.organizations,
            expires_at: grant.expires_at,
            revoked: grant.revoked,
            last_noted: AtomicI64::new(grant.last_used_at.map_or(i64::MIN, Timestamp::as_millis)),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("the Authorization header is missing; send Authorization: Bearer <API token>")]
    Missing,
    #[error("the Authorization header must be Bearer followed by an API token")]
    Malformed,
    /// A token that is not (or no longer) good: unknown, revoked, expired.
    #[error("{}", .0.refusal())]
    Refused(TokenState),
    /// The token would need a store look-up, and the client may not make
    /// one now (too many failed authentications from its address).
    #[error("too many failed authentications")]
    Throttled { retry_after_seconds: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A cache of the token look-ups' answers, each trusted until the instant
/// it holds (on the service's clock). moka drops an entry after the same
/// lifetime on the system's clock, which bounds the memory; the instant is
/// what decides, so that a test can move the clock instead of waiting.
type Remembered<T> = moka::sync::Cache<TokenDigest, (T, Instant)>;

pub struct Authenticator {
    store: Arc<Store>,
    /// `None` when the token cache is off.
    cache: Option<Remembered<Arc<Principal>>>,
    /// Well-formed tokens the store did not know, for as long as the cache
    /// trusts a token (`None` when the token cache is off). No secret can
    /// be asked before it exists, so remembering a miss never refuses a
    /// token that was just made; it spares the store a flood of one made-up
    /// token. Its own capacity: a flood of many cannot push real tokens
    /// out of the cache.
    misses: Option<Remembered<()>>,
    usage: UsageTracker,
    /// Held by a flush from taking the noted uses to their commit, so that
    /// a flush that finds nothing left to take returns only once the one
    /// that took them has written them.
    flushing: tokio::sync::Mutex<()>,
    options: AuthOptions,
    clock: Clock,
}

impl Authenticator {
    /// How long a token is trusted without asking the store: the delay
    /// before a revocation made elsewhere takes effect.
    pub fn cache_ttl(&self) -> Duration {
        self.options.cache_ttl
    }

    pub fn new(store: Arc<Store>, options: AuthOptions, clock: Clock) -> Self {
        Self {
            store,
            cache: remembered(&options, 100_000),
            misses: remembered(&options, 10_000),
            usage: UsageTracker::default(),
            flushing: tokio::sync::Mutex::new(()),
            options,
            clock,
        }
    }

    /// What `cache` holds for `digest` and still trusts now.
    fn recall<T: Clone + Send + Sync + 'static>(
        &self,
        cache: Option<&Remembered<T>>,
        digest: &TokenDigest,
    ) -> Option<T> {
        let (value, until) = cache?.get(digest)?;
        (self.clock.instant() < until).then_some(value)
    }

    /// Puts `value` in `cache` for the cache's lifetime.
    fn remember<T: Clone + Send + Sync + 'static>(
        &self,
        cache: Option<&Remembered<T>>,
        digest: TokenDigest,
        value: T,
    ) {
        if let Some(cache) = cache {
            cache.insert(
                digest,
                (value, self.clock.instant() + self.options.cache_ttl),
            );
        }
    }

    /// The caller named by an `Authorization` header value.
    /// `before_lookup` runs when the answer needs the store (the token is
    /// neither cached nor a remembered miss) and may refuse the look-up.
    pub async fn authenticate(
        &self,
        authorization: Option<&[u8]>,
        before_lookup: impl FnOnce() -> Result<(), AuthError>,
    ) -> Result<Arc<Principal>, AuthError> {
        let secret = bearer_token(authorization.ok_or(AuthError::Missing)?)?;
        // A mistyped or forged token fails here, before any store look-up.
        if !token::is_well_formed(secret) {
            return Err(AuthError::Refused(TokenState::Unknown));
        }
        let digest = token::digest(secret);
        let principal = match self.recall(self.cache.as_ref(), &digest) {
            Some(principal) => {
                metrics::token_cache_hit();
                principal
            }
            None => {
                if self.recall(self.misses.as_ref(), &digest).is_some() {
                    metrics::token_miss_remembered();
                    return Err(AuthError::Refused(TokenState::Unknown));
                }
                before_lookup()?;
                metrics::token_cache_miss();
                let Some(grant) = self.store.run(FindToken(digest)).await? else {
                    self.remember(self.misses.as_ref(), digest, ());
                    return Err(AuthError::Refused(TokenState::Unknown));
                };
                let principal = Arc::new(Principal::from_grant(grant));
                self.remember(self.cache.as_ref(), digest, principal.clone());
                principal
            }
        };
        let now = self.clock.timestamp();
        match TokenState::at(principal.revoked, principal.expires_at, now) {
            TokenState::Live => {}
            refused => return Err(AuthError::Refused(refused)),
        }
        self.usage
            .note(&principal, now, self.options.usage_granularity);
        Ok(principal)
    }

    /// Stops trusting the cached answer for a token (revoked on this
    /// instance): its next use looks it up again. One pass over the cache,
    /// paid by the rare revocation rather than by every request.
    pub fn forget_token(&self, token_id: &str) {
        self.forget_where(|principal| principal.token_id == token_id);
    }

    /// Stops trusting the cached answers for every token of a user whose
    /// organizations a write on this instance just changed (it joined,
    /// left, was removed or demoted, its organization was made or
    /// deleted): on this instance the change holds at once, on the others
    /// within [`Self::cache_ttl`] (docs/teams.md, "Losing access").
    pub fn forget_user(&self, user_id: &str) {
        self.forget_where(|principal| principal.user_id == user_id);
    }

    /// [`Self::forget_user`] for every member of an organization (deleted).
    pub fn forget_members_of(&self, organization_id: &str) {
        self.forget_where(|principal| {
            principal
                .organizations
                .ids()
                .any(|id| id == organization_id)
        });
    }

    fn forget_where(&self, stale: impl Fn(&Principal) -> bool) {
        let Some(cache) = &self.cache else { return };
        for (digest, (principal, _)) in cache.iter() {
            if stale(&principal) {
                cache.invalidate(&*digest);
            }
        }
    }

    /// Writes the uses noted since the last flush: when it returns, every
    /// use noted before the call is written (or, on failure, kept for the
    /// next attempt).
    pub async fn flush_usage(&self) -> Result<(), StoreError> {
        // Without it, a flush called while the periodic one is writing
        // found nothing to take and returned before those uses were written
        // (a test reading `last_used_at` right after its flush failed so).
        let _one_at_a_time = self.flushing.lock().await;
        let uses = self.usage.take();
        if uses.is_empty() {
            return Ok(());
        }
        let result = self.store.run(RecordTokenUses(uses.clone())).await;
        if result.is_err() {
            self.usage.restore(uses);
        }
        result
    }

    /// Flushes noted uses every `usage_flush_interval` until `shutdown`
    /// resolves, then once more.
    pub async fn run_usage_flusher(self: Arc<Self>, shutdown: impl Future<Output = ()>) {
        // The first flush comes one interval after start, not at once:
        // there is nothing to write yet, and a write at start would compete
        // with whatever else opens the store then (an import, say).
        let period = self.options.usage_flush_interval;
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = &mut shutdown => break,
            }
            match self.flush_usage().await {
                Ok(()) => {}
                Err(error) if error.is_outage() => {
                    tracing::debug!(%error, "token use waits for the store")
                }
                Err(error) => tracing::warn!(%error, "could not record token use; will retry"),
            }
        }
        if let Err(error) = self.flush_usage().await {
            tracing::warn!(%error, "could not record token use at shutdown");
        }
    }
}

/// A cache of `capacity` entries, `None` when the token cache is off.
fn remembered<T: Clone + Send + Sync + 'static>(
    options: &AuthOptions,
    capacity: u64,
) -> Option<Remembered<T>> {
    options.cache.then(|| {
        moka::sync::Cache::builder()
            .max_capacity(capacity)
            .time_to_live(options.cache_ttl)
            .build()
    })
}

/// Splits `Bearer <token>`; the scheme is case-insensitive.
fn bearer_token(header: &[u8]) -> Result<&str, AuthError> {
    let text = std::str::from_utf8(header).map_err(|_| AuthError::Malformed)?;
    let (scheme, rest) = text.split_once(' ').ok_or(AuthError::Malformed)?;
    let secret = rest.trim_matches(' ');
    if !scheme.eq_ignore_ascii_case("bearer") || secret.is_empty() || secret.contains(' ') {
        return Err(AuthError::Malformed);
    }
    Ok(secret)
}

/// Uses of tokens not yet written to the store, at most one per token per
/// granularity span, so that a busy token costs no store write per request.
#[derive(Default)]
struct UsageTracker {
    pending: Mutex<HashMap<String, Timestamp>>,
}

impl UsageTracker {
    fn note(&self, principal: &Principal, now: Timestamp, granularity: Duration) {
        let now_ms = now.as_millis();
        let last = principal.last_noted.load(Ordering::Relaxed);
        if now_ms.saturating_sub(last) < granularity.as_millis() as i64 {
            return;
        }
        if principal
            .last_noted
            .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            let mut pending = self.pending.lock().expect("usage lock");
            let entry = pending.entry(principal.token_id.clone()).or_insert(now);
            *entry = (*entry).max(now);
        }
    }

    fn take(&self) -> Vec<TokenUse> {
        let pending = std::mem::take(&mut *self.pending.lock().expect("usage lock"));
        pending
            .into_iter()
            .map(|(token_id, used_at)| TokenUse { token_id, used_at })
            .collect()
    }

    fn restore(&self, uses: Vec<TokenUse>) {
        let mut pending = self.pending.lock().expect("usage lock");
        for TokenUse { token_id, used_at } in uses {
            let entry = pending.entry(token_id).or_insert(used_at);
            *entry = (*entry).max(used_at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive_and_strict() {
        assert_eq!(bearer_token(b"Bearer abc").unwrap(), "abc");
        assert_eq!(bearer_token(b"bearer abc").unwrap(), "abc");
        assert_eq!(bearer_token(b"BEARER  abc").unwrap(), "abc");
        for bad in [
            &b"Basic abc"[..],
            b"Bearer",
            b"Bearer ",
            b"Bearerabc",
            b"Bearer a b",
            b"\xff",
        ] {
            assert!(bearer_token(bad).is_err(), "{bad:?}");
        }
    }

    fn principal(last_used: Option<i64>) -> Principal {
        Principal::from_grant(TokenGrant {
            token_id: "t1".into(),
            user_id: "u1".into(),
            organizations: OrganizationSet::new(vec![("a".into(), 1), ("b".into(), 2)]),
            expires_at: None,
            revoked: false,
            last_used_at: last_used.and_then(Timestamp::from_millis),
        })
    }

    #[test]
    fn uses_are_noted_once_per_granularity() {
        let tracker = UsageTracker::default();
        let p = principal(None);
        let granularity = Duration::from_secs(10);
        let at = |ms| Timestamp::from_millis(ms).unwrap();
        tracker.note(&p, at(100_000), granularity);
        tracker.note(&p, at(105_000), granularity);
        assert_eq!(
            tracker.take(),
            vec![TokenUse {
                token_id: "t1".into(),
                used_at: at(100_000)
            }]
        );
        assert!(tracker.take().is_empty());
        tracker.note(&p, at(111_000), granularity);
        assert_eq!(tracker.take()[0].used_at, at(111_000));
    }

    #[test]
    fn restored_uses_keep_the_latest() {
        let tracker = UsageTracker::default();
        let at = |ms| Timestamp::from_millis(ms).unwrap();
        tracker.note(&principal(None), at(50_000), Duration::from_secs(10));
        tracker.restore(vec![TokenUse {
            token_id: "t1".into(),
            used_at: at(10_000),
        }]);
        assert_eq!(tracker.take()[0].used_at, at(50_000));
    }

    #[test]
    fn membership_is_a_sorted_lookup() {
        let p = principal(None);
        assert!(p.organizations.contains_id("a"));
        assert!(p.organizations.contains_id("b"));
        assert!(!p.organizations.contains_id("c"));
    }

    /// Fuzz-style, bounded by `PROPTEST_CASES` (proptest's default, 256).
    mod properties {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            /// Any header bytes: never a panic; what passes is a non-empty
            /// secret without spaces that followed a `Bearer` scheme word.
            #[test]
            fn any_header_is_split_or_refused(
                header in prop_oneof![
                    proptest::collection::vec(any::<u8>(), 0..64),
                    "([Bb][Ee][Aa][Rr][Ee][Rr])? {0,3}[ -~]{0,50}".prop_map(String::into_bytes),
                ]
            ) {
                if let Ok(secret) = bearer_token(&header) {
                    let text = std::str::from_utf8(&header).unwrap();
                    prop_assert!(!secret.is_empty() && !secret.contains(' '));
                    prop_assert!(text[..6].eq_ignore_ascii_case("bearer"));
                    prop_assert_eq!(text[6..].trim_matches(' '), secret);
                }
            }

            /// Any spelling of the scheme word and any spacing carry the
            /// secret through unchanged.
            #[test]
            fn bearer_in_any_case_carries_the_secret(
                scheme in "[Bb][Ee][Aa][Rr][Ee][Rr]",
                before in " {1,3}",
                after in " {0,3}",
                secret in "[!-~]{1,60}",
            ) {
                let header = format!("{scheme}{before}{secret}{after}");
                prop_assert_eq!(bearer_token(header.as_bytes()).ok(), Some(secret.as_str()));
            }
        }
    }
}
