//! A Redis the instances share (the rate limit's, `rate_limit/redis.rs`;
//! the replica positions', `store/postgres/replicas.rs`), reached so that
//! it never costs an answer more than one short wait.
//!
//! Each call is bounded by [`CALL_TIMEOUT`]. When Redis fails (down,
//! slow, refusing, dropping packets), the caller goes without it (its
//! fallback) and Redis is tried again by a single call every
//! [`RETRY_INTERVAL`]: an outage adds no latency beyond that one probe.
//! A warning is logged when Redis fails and at most every
//! [`WARN_INTERVAL`] while it stays down, naming the kind of failure
//! only: neither the URL nor the client's error text, which may carry
//! what the server said back.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, RedisError, RedisResult};

use crate::clock::Clock;

/// Longest one Redis call may take before the caller goes without it.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(50);
/// While Redis fails, one call tries it again this often.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// At most one warning this often while Redis stays down.
pub const WARN_INTERVAL: Duration = Duration::from_secs(60);

/// What the log says when the Redis fails and when it answers again.
pub(crate) struct Messages {
    /// Whose Redis it is, for set-up errors: "the rate limit Redis".
    pub name: &'static str,
    pub down: &'static str,
    pub back: &'static str,
}

pub(crate) struct RedisLink {
    connection: ConnectionManager,
    clock: Clock,
    /// When this link was made, on `clock`: its times count from it.
    epoch: Instant,
    /// While Redis fails: when (microseconds since `epoch`) a call may try
    /// it again. 0 while Redis answers.
    retry_at: AtomicU64,
    /// When the last warning was logged (microseconds since `epoch`, 0:
    /// never).
    warned_at: AtomicU64,
    messages: Messages,
}

impl RedisLink {
    /// Makes no connection yet: the first call does, so that an instance
    /// starts and serves while Redis is down.
    pub(crate) fn new(
        url: &str,
        connect_timeout: Duration,
        clock: Clock,
        messages: Messages,
    ) -> anyhow::Result<Self> {
        // The URL is not repeated: it may hold a password.
        let client = Client::open(url)
            .map_err(|_| anyhow::anyhow!("the URL of {} is not valid", messages.name))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(CALL_TIMEOUT))
            // Reconnection is paced by RETRY_INTERVAL, not by the client.
            .set_number_of_retries(0);
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|_| anyhow::anyhow!("cannot set up the client of {}", messages.name))?;
        Ok(Self {
            connection,
            epoch: clock.instant(),
            clock,
            retry_at: AtomicU64::new(0),
            warned_at: AtomicU64::new(0),
            messages,
        })
    }

    /// What `call` answers on a connection, or `None` when Redis cannot
    /// answer now: it failed, or it is failing and this call is not the
    /// one that tries it again.
    pub(crate) async fn call<T, F>(&self, call: impl FnOnce(ConnectionManager) -> F) -> Option<T>
    where
        F: Future<Output = RedisResult<T>>,
    {
        let retry_at = self.retry_at.load(Ordering::Relaxed);
        if retry_at != 0 && !self.take_probe(retry_at) {
            return None;
        }
        let answer = tokio::time::timeout(CALL_TIMEOUT, call(self.connection.clone())).await;
        let problem = match answer {
            Ok(Ok(answer)) => {
                if retry_at != 0 && self.retry_at.swap(0, Ordering::Relaxed) != 0 {
                    tracing::info!("{}", self.messages.back);
                }
                return Some(answer);
            }
            Ok(Err(error)) => problem(&error),
            Err(_) => format!("no answer within {CALL_TIMEOUT:?}"),
        };
        self.retry_at
            .store(self.now() + micros(RETRY_INTERVAL), Ordering::Relaxed);
        self.warn(&problem);
        None
    }

    /// While Redis fails, lets one call through to try it once the retry
    /// time has come; the others go without it.
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
            tracing::warn!(%problem, "{}", self.messages.down);
        }
    }

    fn now(&self) -> u64 {
        self.clock.instant().duration_since(self.epoch).as_micros() as u64
    }
}

/// What kind of failure `error` is, in the client's fixed words and the
/// server's error code: never its text, which may quote what was sent.
fn problem(error: &RedisError) -> String {
    let kind = if error.is_connection_refusal() {
        "connection refused"
    } else if error.is_timeout() {
        "timed out"
    } else if error.is_connection_dropped() {
        "connection dropped"
    } else {
        error.category()
    };
    match error.code() {
        Some(code) if !kind.is_empty() => format!("{kind} ({code})"),
        Some(code) => code.to_owned(),
        None => kind.to_owned(),
    }
}

fn micros(duration: Duration) -> u64 {
    duration.as_micros() as u64
}
