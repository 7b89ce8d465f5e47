//! The limit shared by every instance: the same GCRA step, done in Redis by
//! one Lua script (one round trip per request).
//!
//! Redis must never cost an answer. Each call is bounded by
//! [`CALL_TIMEOUT`]; when Redis fails (down, slow, refusing), requests
//! are limited by the instance's own [`LocalLimiter`](super::LocalLimiter)
//! and Redis is tried again by a single request every [`RETRY_INTERVAL`],
//! so an outage adds no latency beyond that one probe. A warning is logged
//! when Redis fails and at most every [`WARN_INTERVAL`] while it stays
//! down; the URL is never logged (it may hold a password).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};

use super::{Gcra, Policy, Verdict};
use crate::clock::Clock;

/// Longest one Redis call may take before the request is limited locally.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(50);
/// While Redis fails, one request tries it again this often.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// At most one warning this often while Redis stays down.
pub const WARN_INTERVAL: Duration = Duration::from_secs(60);
/// Every key is this prefix and a token id.
pub const KEY_PREFIX: &str = "proxydeck:rate:";

/// A Redis URL. Its `Debug` form hides it: it may hold a password (shown,
/// when it must be, through [`crate::domain::url_password::masked`]).
#[derive(Clone)]
pub struct RedisUrl(String);

impl RedisUrl {
    /// A URL the Redis client accepts (`redis://[[user]:password@]host[:port][/db]`).
    /// The error does not repeat the text.
    pub fn parse(text: &str) -> Result<Self, &'static str> {
        match Client::open(text) {
            Ok(_) => Ok(Self(text.to_owned())),
            Err(_) => Err("must be a Redis URL: redis://[[user]:password@]host[:port][/db]"),
        }
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RedisUrl(<hidden>)")
    }
}

pub struct SharedLimiter {
    connection: ConnectionManager,
    script: Script,
    gcra: Gcra,
    clock: Clock,
    /// When this limiter was made, on `clock`: its times count from it.
    epoch: Instant,
    /// While Redis fails: when (microseconds since `epoch`) a request may
    /// try it again. 0 while Redis answers.
    retry_at: AtomicU64,
    /// When the last warning was logged (microseconds since `epoch`, 0:
    /// never).
    warned_at: AtomicU64,
}

impl SharedLimiter {
    /// Makes no connection yet: the first request does, so that an
    /// instance starts and serves while Redis is down.
    pub fn new(url: &RedisUrl, policy: &Policy, clock: Clock) -> anyhow::Result<Self> {
        let client = Client::open(url.0.as_str())
            .map_err(|_| anyhow::anyhow!("the rate limit Redis URL is not valid"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_response_timeout(Some(CALL_TIMEOUT))
            // Reconnection is paced by RETRY_INTERVAL, not by the client.
            .set_number_of_retries(0);
        let connection =
            ConnectionManager::new_lazy_with_config(client, config).map_err(|error| {
                anyhow::anyhow!("cannot set up the rate limit Redis client: {error}")
            })?;
        Ok(Self {
            connection,
            script: Script::new(include_str!("gcra.lua")),
            gcra: Gcra::new(policy),
            epoch: clock.instant(),
            clock,
            retry_at: AtomicU64::new(0),
            warned_at: AtomicU64::new(0),
        })
    }

    /// The verdict from Redis, or `None` when Redis cannot give one now:
    /// the caller then limits locally.
    pub async fn check(&self, token_id: &str) -> Option<Verdict> {
        let retry_at = self.retry_at.load(Ordering::Relaxed);
        if retry_at != 0 && !self.take_probe(retry_at) {
            return None;
        }
        match self.call(token_id).await {
            Ok(verdict) => {
                if retry_at != 0 && self.retry_at.swap(0, Ordering::Relaxed) != 0 {
                    tracing::info!("rate limit Redis answers again; limits are shared again");
                }
                Some(verdict)
            }
            Err(problem) => {
                self.retry_at
                    .store(self.now() + micros(RETRY_INTERVAL), Ordering::Relaxed);
                self.warn(&problem);
                None
            }
        }
    }

    /// While Redis fails, lets one request through to try it once the
    /// retry time has come; the others stay local.
    fn take_probe(&self, retry_at: u64) -> bool {
        let now = self.now();
        now >= retry_at
            && self
                .retry_at
                .compare_exchange(
                    retry_at,
                    now + micros(RETRY_INTERVAL),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    async fn call(&self, token_id: &str) -> Result<Verdict, String> {
        let mut connection = self.connection.clone();
        let mut invocation = self.script.key(format!("{KEY_PREFIX}{token_id}"));
        invocation
            .arg(self.gcra.interval_us())
            .arg(self.gcra.capacity_us());
        let answer = tokio::time::timeout(CALL_TIMEOUT, invocation.invoke_async(&mut connection));
        let (allowed, backlog): (u8, u64) = match answer.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => return Err(error.to_string()),
            Err(_) => return Err(format!("no answer within {CALL_TIMEOUT:?}")),
        };
        Ok(self.gcra.verdict(allowed == 1, backlog))
    }

    fn warn(&self, problem: &str) {
        let now = self.now();
        let warned_at = self.warned_at.load(Ordering::Relaxed);
        let due = warned_at == 0 || now >= warned_at + micros(WARN_INTERVAL);
        if due
            && self
                .warned_at
                .compare_exchange(warned_at, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                %problem,
                "rate limit Redis unavailable; limiting per instance until it answers again"
            );
        }
    }

    fn now(&self) -> u64 {
        self.clock.instant().duration_since(self.epoch).as_micros() as u64
    }
}

fn micros(duration: Duration) -> u64 {
    duration.as_micros() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_urls_are_checked_and_never_shown() {
        for good in [
            "redis://127.0.0.1:6379",
            "redis://:secret@cache.internal:6380/2",
            "redis://user:secret@cache",
        ] {
            let url = RedisUrl::parse(good).unwrap();
            assert!(!format!("{url:?}").contains("secret"));
        }
        for bad in [
            "",
            "cache:6379",
            "http://cache",
            "rediss://cache",
            "redis://[::1",
        ] {
            assert!(RedisUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
