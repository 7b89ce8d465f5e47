//! Per-token rate limiting: GCRA (the generic cell rate algorithm, a token
//! bucket kept as one timestamp per token, with no timer).
//!
//! For each token the limiter keeps its *theoretical arrival time* (TAT):
//! the instant at which its bucket will be full again. A request is let
//! through when, after it, the TAT lies at most `burst` emission intervals
//! ahead of now; it then moves the TAT one interval further. The
//! *backlog* (TAT minus now) gives every figure the response headers need.
//!
//! In memory ([`LocalLimiter`]) by default; shared by every instance
//! through Redis with [`redis::SharedLimiter`], which falls back to the
//! local limiter while Redis cannot answer.

pub mod failures;
pub mod redis;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;

use self::redis::{RedisUrl, SharedLimiter};
use crate::clock::Clock;

const MICROS_PER_SECOND: u64 = 1_000_000;

/// Bounds of `--rate-limit` (requests per second) and `--rate-limit-burst`.
pub const MIN_RATE: f64 = 0.001;
pub const MAX_RATE: f64 = 1_000_000.0;
pub const MAX_BURST: u32 = 10_000_000;
/// Longest an empty bucket may take to fill up (about 11 days): keeps
/// every figure exact in Redis' Lua numbers.
const MAX_WINDOW_SECONDS: f64 = 1_000_000.0;

/// How many requests a token may make: `rate` a second sustained, `burst`
/// at once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    rate: f64,
    burst: u32,
}

impl Default for Policy {
    /// No dashboard or CLI comes near 1000 requests a second; a runaway
    /// script is capped.
    fn default() -> Self {
        Self::new(1000.0, None).expect("the default policy is valid")
    }
}

impl Policy {
    /// `burst` defaults to two seconds' worth of `rate` (at least 1).
    pub fn new(rate: f64, burst: Option<u32>) -> Result<Self, String> {
        if !(MIN_RATE..=MAX_RATE).contains(&rate) {
            return Err(format!(
                "the rate must be between {MIN_RATE} and {MAX_RATE} requests per second"
            ));
        }
        let burst =
            burst.unwrap_or_else(|| (rate * 2.0).round().clamp(1.0, MAX_BURST as f64) as u32);
        if !(1..=MAX_BURST).contains(&burst) {
            return Err(format!("the burst must be between 1 and {MAX_BURST}"));
        }
        if f64::from(burst) / rate > MAX_WINDOW_SECONDS {
            return Err(format!(
                "a burst of {burst} at {rate} requests per second takes more than {MAX_WINDOW_SECONDS} s to refill"
            ));
        }
        Ok(Self { rate, burst })
    }

    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// Time between two requests at the sustained rate, to the
    /// microsecond (so at most 0.5% off below 10 000 requests a second).
    fn interval_us(&self) -> u64 {
        (MICROS_PER_SECOND as f64 / self.rate).round() as u64
    }

    /// Seconds for an empty bucket to fill up again.
    pub fn window_seconds(&self) -> u64 {
        (f64::from(self.burst) / self.rate).ceil() as u64
    }
}

/// `--rate-limit`: `off` or `0` turns limiting off (`None`); otherwise
/// requests per second, a positive decimal number.
pub fn parse_rate(text: &str) -> Result<Option<f64>, String> {
    if text.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let rate: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of requests per second (or off)"))?;
    if rate == 0.0 {
        return Ok(None);
    }
    Policy::new(rate, Some(1)).map(|_| Some(rate))
}

/// The verdict on one request, with what the response headers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    /// Requests the token may still make at once.
    pub remaining: u64,
    /// Whole seconds until the bucket is full again.
    pub reset_seconds: u64,
    /// Whole seconds until a request would be let through (0 when allowed).
    pub retry_after_seconds: u64,
}

/// The GCRA arithmetic of a policy, in whole microseconds. Both limiters
/// use it, so that they answer the same figures.
#[derive(Clone, Copy, Debug)]
pub struct Gcra {
    /// Emission interval: one request's worth of time.
    interval: u64,
    /// `burst` intervals: the longest backlog a request may leave.
    capacity: u64,
}

impl Gcra {
    pub fn new(policy: &Policy) -> Self {
        let interval = policy.interval_us();
        Self {
            interval,
            // At most MAX_WINDOW_SECONDS: no overflow.
            capacity: interval * u64::from(policy.burst),
        }
    }

    /// One request at `now` against a token whose TAT is `tat`: the new
    /// TAT when it is let through (`None` when refused).
    fn step(&self, tat: u64, now: u64) -> Option<u64> {
        let backlog = tat.saturating_sub(now) + self.interval;
        (backlog <= self.capacity).then_some(now + backlog)
    }

    /// The verdict, from the backlog left after the decision.
    pub fn verdict(&self, allowed: bool, backlog: u64) -> Verdict {
        let retry_after = if allowed {
            0
        } else {
            // Until one interval of the backlog has drained below capacity.
            (backlog + self.interval)
                .saturating_sub(self.capacity)
                .div_ceil(MICROS_PER_SECOND)
                .max(1)
        };
        Verdict {
            allowed,
            remaining: self.capacity.saturating_sub(backlog) / self.interval,
            reset_seconds: backlog.div_ceil(MICROS_PER_SECOND),
            retry_after_seconds: retry_after,
        }
    }

    pub fn interval_us(&self) -> u64 {
        self.interval
    }

    pub fn capacity_us(&self) -> u64 {
        self.capacity
    }
}

/// The in-memory limiter: one atomic TAT per token id in a sharded map.
/// A request costs a shard read lock and a compare-and-swap; only a token's
/// first request takes a write lock (and allocates its key).
pub struct LocalLimiter {
    gcra: Gcra,
    /// Microseconds since `epoch`, per token id.
    tats: DashMap<String, AtomicU64>,
    clock: Clock,
    /// When this limiter was made, on `clock`: its times count from it.
    epoch: Instant,
}

impl LocalLimiter {
    pub fn new(policy: &Policy, clock: Clock) -> Self {
        Self {
            gcra: Gcra::new(policy),
            tats: DashMap::new(),
            epoch: clock.instant(),
            clock,
        }
    }

    pub fn check(&self, token_id: &str) -> Verdict {
        let now = self.now();
        match self.tats.get(token_id) {
            Some(tat) => self.update(&tat, now),
            None => {
                let tat = self.tats.entry(token_id.to_owned()).or_default();
                self.update(&tat, now)
            }
        }
    }

    /// The refusal the next request for `key` would get, without counting
    /// one; `None` when it would be let through.
    pub fn refusal(&self, key: &str) -> Option<Verdict> {
        let now = self.now();
        let tat = self.tats.get(key)?.load(Ordering::Relaxed);
        match self.gcra.step(tat, now) {
            Some(_) => None,
            None => Some(self.gcra.verdict(false, tat.saturating_sub(now))),
        }
    }

    fn update(&self, tat: &AtomicU64, now: u64) -> Verdict {
        let mut current = tat.load(Ordering::Relaxed);
        loop {
            let Some(next) = self.gcra.step(current, now) else {
                return self.gcra.verdict(false, current.saturating_sub(now));
            };
            match tat.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return self.gcra.verdict(true, next - now),
                Err(actual) => current = actual,
            }
        }
    }

    fn now(&self) -> u64 {
        self.clock.instant().duration_since(self.epoch).as_micros() as u64
    }

    /// Drops the tokens whose bucket is full again: such an entry says no
    /// more than a missing one. So the map holds only the tokens used
    /// within the last window (plus a sweep period).
    pub fn sweep(&self) {
        let now = self.now();
        self.tats.retain(|_, tat| tat.load(Ordering::Relaxed) > now);
    }

    /// Sweeps every [`SWEEP_INTERVAL`], for ever.
    pub async fn keep_swept(&self) {
        let mut ticker = tokio::time::interval(SWEEP_INTERVAL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            self.sweep();
        }
    }

    /// Tokens currently tracked.
    pub fn tracked(&self) -> usize {
        self.tats.len()
    }
}

/// How often full buckets are dropped from memory.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(10);

/// What `serve` is told about rate limits.
#[derive(Clone, Debug)]
pub struct RateLimitOptions {
    /// `None`: no limit.
    pub policy: Option<Policy>,
    /// Where the limit shared by every instance is kept; `None`: each
    /// instance limits on its own.
    pub redis: Option<RedisUrl>,
    /// Failed authentications each client address may make (`None`: no
    /// limit); see [`failures`].
    pub failures: Option<Policy>,
    /// The request header whose last address is the client's, set by a
    /// trusted proxy in front (`None`: the connection's peer).
    pub client_address_header: Option<axum::http::HeaderName>,
}

impl Default for RateLimitOptions {
    fn default() -> Self {
        Self {
            policy: Some(Policy::default()),
            redis: None,
            failures: Some(failures::default_policy()),
            client_address_header: None,
        }
    }
}

/// The limiter a service runs: shared through Redis when configured, with
/// the in-memory one as its fallback, else in memory only.
pub struct RateLimiter {
    policy: Policy,
    local: LocalLimiter,
    shared: Option<SharedLimiter>,
}

impl RateLimiter {
    /// `None` when limiting is off.
    pub fn new(options: &RateLimitOptions, clock: &Clock) -> anyhow::Result<Option<Self>> {
        let Some(policy) = options.policy else {
            return Ok(None);
        };
        let shared = match &options.redis {
            Some(url) => Some(SharedLimiter::new(url, &policy, clock.clone())?),
            None => None,
        };
        Ok(Some(Self {
            policy,
            local: LocalLimiter::new(&policy, clock.clone()),
            shared,
        }))
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Counts one request of `token_id`.
    pub async fn check(&self, token_id: &str) -> Verdict {
        if let Some(shared) = &self.shared
            && let Some(verdict) = shared.check(token_id).await
        {
            return verdict;
        }
        self.local.check(token_id)
    }

    /// Drops full buckets from memory every [`SWEEP_INTERVAL`], forever:
    /// abort the task to stop it.
    pub async fn run_sweeper(self: Arc<Self>) {
        self.local.keep_swept().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gcra(rate: f64, burst: u32) -> Gcra {
        Gcra::new(&Policy::new(rate, Some(burst)).unwrap())
    }

    /// Runs `count` requests at `now` from `tat`; answers the verdicts and
    /// the TAT after.
    fn run(gcra: &Gcra, mut tat: u64, now: u64, count: usize) -> (Vec<Verdict>, u64) {
        let mut verdicts = Vec::new();
        for _ in 0..count {
            match gcra.step(tat, now) {
                Some(next) => {
                    verdicts.push(gcra.verdict(true, next - now));
                    tat = next;
                }
                None => verdicts.push(gcra.verdict(false, tat.saturating_sub(now))),
            }
        }
        (verdicts, tat)
    }

    #[test]
    fn a_full_bucket_lets_the_burst_through_then_refuses() {
        let second = MICROS_PER_SECOND;
        let g = gcra(2.0, 3);
        let (verdicts, tat) = run(&g, 0, 10 * second, 4);
        let remaining: Vec<u64> = verdicts.iter().map(|v| v.remaining).collect();
        assert_eq!(remaining, [2, 1, 0, 0]);
        assert!(verdicts[..3].iter().all(|v| v.allowed));
        assert_eq!(
            verdicts[3],
            Verdict {
                allowed: false,
                remaining: 0,
                reset_seconds: 2, // 1.5 s until full, rounded up
                retry_after_seconds: 1,
            }
        );
        // Half a second later one request's worth has come back.
        let (later, _) = run(&g, tat, 10 * second + second / 2, 2);
        assert!(later[0].allowed);
        assert!(!later[1].allowed);
    }

    #[test]
    fn retry_after_is_whole_seconds_and_at_least_one() {
        // One request every 10 s: refused right after the first.
        let g = gcra(0.1, 1);
        let (verdicts, _) = run(&g, 0, 0, 2);
        assert_eq!(verdicts[1].retry_after_seconds, 10);
        assert_eq!(verdicts[1].reset_seconds, 10);
        // A fast rate still says 1, never 0.
        let g = gcra(1000.0, 1);
        let (verdicts, _) = run(&g, 0, 0, 2);
        assert_eq!(verdicts[1].retry_after_seconds, 1);
    }

    #[test]
    fn default_policy_and_burst() {
        let policy = Policy::default();
        assert_eq!(policy.burst(), 2000);
        assert_eq!(policy.window_seconds(), 2);
        assert_eq!(Policy::new(0.001, None).unwrap().burst(), 1);
        assert_eq!(Policy::new(5.0, None).unwrap().burst(), 10);
    }

    #[test]
    fn rates_off_and_nonsense() {
        assert_eq!(parse_rate("off"), Ok(None));
        assert_eq!(parse_rate("OFF"), Ok(None));
        assert_eq!(parse_rate("0"), Ok(None));
        assert_eq!(parse_rate("0.0"), Ok(None));
        assert_eq!(parse_rate("2.5"), Ok(Some(2.5)));
        assert_eq!(parse_rate("1000000"), Ok(Some(1_000_000.0)));
        for bad in [
            "",
            "-1",
            "abc",
            "NaN",
            "inf",
            "0.0000001",
            "1000001",
            "1e400",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        assert!(Policy::new(1.0, Some(0)).is_err());
        assert!(Policy::new(1.0, Some(MAX_BURST + 1)).is_err());
        assert!(
            Policy::new(0.001, Some(10_000)).is_err(),
            "months to refill"
        );
    }

    #[test]
    fn the_local_limiter_keys_by_token_and_forgets_full_buckets() {
        let limiter = LocalLimiter::new(&Policy::new(1.0, Some(2)).unwrap(), Clock::system());
        assert!(limiter.check("a").allowed);
        assert!(limiter.check("a").allowed);
        assert!(!limiter.check("a").allowed);
        assert!(limiter.check("b").allowed);
        assert_eq!(limiter.tracked(), 2);
        limiter.sweep();
        assert_eq!(limiter.tracked(), 2, "buckets still filling are kept");

        let fast = LocalLimiter::new(&Policy::new(MAX_RATE, Some(1)).unwrap(), Clock::system());
        for n in 0..1000 {
            fast.check(&format!("token-{n}"));
        }
        std::thread::sleep(Duration::from_millis(5));
        fast.sweep();
        assert_eq!(fast.tracked(), 0, "full buckets are dropped");
    }
}
