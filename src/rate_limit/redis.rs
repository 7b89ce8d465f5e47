//! The limit shared by every instance: the same GCRA step, done in Redis by
//! one Lua script (one round trip per request).
//!
//! Redis must never cost an answer: it is reached through
//! [`RedisLink`](crate::shared_redis), each call bounded by
//! [`CALL_TIMEOUT`]; while Redis fails, requests are limited by the
//! instance's own [`LocalLimiter`](super::LocalLimiter) and Redis is tried
//! again by a single request every [`RETRY_INTERVAL`]. The URL is never
//! logged (it may hold a password).

use std::fmt;
use std::time::Duration;

use redis::{Client, Script};

use super::{Gcra, Policy, Verdict};
use crate::clock::Clock;
pub use crate::shared_redis::{CALL_TIMEOUT, RETRY_INTERVAL, WARN_INTERVAL};
use crate::shared_redis::{Messages, RedisLink};

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
    redis: RedisLink,
    script: Script,
    gcra: Gcra,
}

impl SharedLimiter {
    /// Makes no connection yet: the first request does, so that an
    /// instance starts and serves while Redis is down.
    pub fn new(url: &RedisUrl, policy: &Policy, clock: Clock) -> anyhow::Result<Self> {
        let messages = Messages {
            name: "the rate limit Redis",
            down: "rate limit Redis unavailable; limiting per instance until it answers again",
            back: "rate limit Redis answers again; limits are shared again",
        };
        Ok(Self {
            redis: RedisLink::new(url.0.as_str(), Duration::from_secs(1), clock, messages)?,
            script: Script::new(include_str!("gcra.lua")),
            gcra: Gcra::new(policy),
        })
    }

    /// The verdict from Redis, or `None` when Redis cannot give one now:
    /// the caller then limits locally.
    pub async fn check(&self, token_id: &str) -> Option<Verdict> {
        let mut invocation = self.script.key(format!("{KEY_PREFIX}{token_id}"));
        invocation
            .arg(self.gcra.interval_us())
            .arg(self.gcra.capacity_us());
        let (allowed, backlog): (u8, u64) = self
            .redis
            .call(|mut connection| async move { invocation.invoke_async(&mut connection).await })
            .await?;
        Some(self.gcra.verdict(allowed == 1, backlog))
    }
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
