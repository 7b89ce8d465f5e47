//! Reads from the primary's streaming replicas (`--database-replica`).
//!
//! A monitor checks every replica each [`Replicas::tick`]: it samples how
//! far the primary's log is flushed, then reads each replica's replay
//! position. A replica's lag is the age of the newest sample it has
//! replayed: it holds every commit made before that sample was taken
//! (`lag`). A replica more than `--replica-max-lag` behind (give or take
//! a tick), or that does not answer its check, or that
//! fails a read, is not read from until a check finds it current again;
//! its reads go to another replica or to the primary, never failing for it.
//!
//! Read-your-writes, as GitLab's database load balancer does it: after a
//! caller's write, the primary's log position is kept for that caller,
//! and the caller's reads go only to a replica that has replayed that far
//! (otherwise to the primary). A position is kept `max_lag` and a second
//! long: past it, every replica still read from has replayed it. It is kept in this
//! instance's memory and, given `--replica-positions-redis`, in a Redis
//! every instance shares, so that a caller's next read sees its write
//! whichever instance serves it. Without that Redis, a read that another
//! instance serves may be up to `max_lag` behind the caller's write
//! (docs/deployment.md, "Read replicas").

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use redis::Script;

use super::{Connector, Server, Statements};
use crate::metrics::{PoolUse, ReplicaUse};
use crate::shared_redis::{Messages, RedisLink};
use crate::store::driver::Freshness;
use crate::store::error::StoreError;
use crate::store::options::{self, StoreOptions};

/// The end of the primary's log now (bytes since the log's start): a
/// write that committed is before it.
const PRIMARY_POSITION: &str = "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8";
/// How far the primary's log is flushed, the most a replica can have: the
/// samples a replica's lag is measured against.
const FLUSHED_POSITION: &str = "SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8";
/// How far a replica has replayed the primary's log; NULL on a server
/// that is not a standby.
const REPLAYED_POSITION: &str = "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8";

/// A position that no replica reaches: the caller's reads go to the
/// primary while it is kept (its write's own position could not be read).
const UNKNOWN_POSITION: u64 = u64::MAX;

pub(crate) struct Replicas {
    replicas: Vec<Replica>,
    max_lag: Duration,
    positions: Positions,
    /// Where the next read starts looking (round robin).
    next: AtomicUsize,
    /// Bound on one check of a server, and on reading a write's position.
    check_timeout: Duration,
}

pub(crate) struct Replica {
    server: Arc<Server>,
    /// Its `host:port`, for logs and metrics.
    name: String,
    /// How far it had replayed the primary's log at its last check.
    replayed: AtomicU64,
    /// Whether its last check found it answering and within the lag.
    usable: AtomicBool,
    /// Its lag at its last check, in µs; [`NO_ANSWER`] when it did not
    /// answer.
    lag_us: AtomicU64,
}

const NO_ANSWER: u64 = u64::MAX;

impl Replicas {
    /// The replicas `settings` name, and their monitor started; `None`
    /// when there are none. Nothing is connected yet: a replica down at
    /// start costs nothing but its own reads.
    pub(crate) fn open(
        settings: &options::Replicas,
        options: &StoreOptions,
        statements: Statements,
        primary: &Arc<Server>,
    ) -> anyhow::Result<Option<Arc<Self>>> {
        if settings.urls.is_empty() {
            return Ok(None);
        }
        let mut replicas = Vec::with_capacity(settings.urls.len());
        for url in &settings.urls {
            let server = Server::lazy(Connector::for_replica(url, options, statements)?, options)?;
            replicas.push(Replica {
                name: server.name(),
                server: Arc::new(server),
                replayed: AtomicU64::new(0),
                usable: AtomicBool::new(false),
                lag_us: AtomicU64::new(NO_ANSWER),
            });
        }
        let replicas = Arc::new(Self {
            replicas,
            max_lag: settings.max_lag,
            positions: Positions::new(settings, options)?,
            next: AtomicUsize::new(0),
            check_timeout: options.timeout.min(Duration::from_secs(1)),
        });
        tokio::spawn(watch(Arc::downgrade(&replicas), Arc::downgrade(primary)));
        Ok(Some(replicas))
    }

    /// How often the replicas are checked: a fifth of the allowed lag, so
    /// that a replica is found stale soon after it is, within bounds.
    fn tick(&self) -> Duration {
        (self.max_lag / 5).clamp(Duration::from_millis(50), Duration::from_secs(1))
    }

    /// A replica current enough for a read that must see `freshness`, if
    /// one is; `None`: the read goes to the primary.
    pub(crate) fn choose(&self, freshness: Freshness) -> Option<&Replica> {
        let least = match freshness {
            Freshness::Any => 0,
            Freshness::After(position) => position,
            Freshness::Latest => return None,
        };
        let count = self.replicas.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..count)
            .map(|i| &self.replicas[(start + i) % count])
            .find(|replica| {
                replica.usable.load(Ordering::Relaxed)
                    && replica.replayed.load(Ordering::Relaxed) >= least
            })
    }

    /// What the reads of `caller` must see: its last write, if it is
    /// still kept; the primary when the shared positions cannot tell.
    pub(crate) async fn freshness_for(&self, caller: &str) -> Freshness {
        match self.positions.of(caller).await {
            Some(Some(position)) => Freshness::After(position),
            Some(None) => Freshness::Any,
            None => Freshness::Latest,
        }
    }

    /// How each replica's connection pools are used now.
    pub(crate) fn pool_use(&self) -> impl Iterator<Item = PoolUse> + '_ {
        self.replicas
            .iter()
            .flat_map(|replica| replica.server.pool_use(Some(&replica.name)))
    }

    /// Each replica as its last check found it.
    pub(crate) fn in_use(&self) -> Vec<ReplicaUse> {
        self.replicas
            .iter()
            .map(|replica| {
                let lag_us = replica.lag_us.load(Ordering::Relaxed);
                ReplicaUse {
                    replica: replica.name.clone(),
                    lag: (lag_us != NO_ANSWER).then(|| Duration::from_micros(lag_us)),
                    usable: replica.usable.load(Ordering::Relaxed),
                }
            })
            .collect()
    }

    /// Keeps the position of the write `caller` just made on `primary`.
    pub(crate) async fn wrote(&self, caller: Arc<str>, primary: &Server) {
        let position =
            match tokio::time::timeout(self.max_lag, primary.number(PRIMARY_POSITION)).await {
                Ok(Ok(Some(position))) => position as u64,
                _ => UNKNOWN_POSITION,
            };
        self.positions.record(caller, position).await;
    }
}

impl Replica {
    pub(crate) fn server(&self) -> &Arc<Server> {
        &self.server
    }

    /// A read on the replica failed: it is not read from until a check
    /// finds it answering again.
    pub(crate) fn failed(&self, failure: &StoreError) {
        if self.usable.swap(false, Ordering::Relaxed) {
            tracing::warn!(replica = %self.name, error = %failure, "a read replica failed a read: its reads go elsewhere until it answers its check");
        }
    }

    /// Notes a check's finding: `replayed` (`None`: it did not answer)
    /// and `lag`; logs a change of state.
    fn checked(&self, replayed: Option<u64>, lag: Option<Duration>, max_lag: Duration) {
        let usable = lag.is_some_and(|lag| lag <= max_lag);
        if let Some(replayed) = replayed {
            self.replayed.store(replayed, Ordering::Relaxed);
        }
        let lag_us = lag.map_or(NO_ANSWER, |lag| lag.as_micros() as u64);
        self.lag_us.store(lag_us, Ordering::Relaxed);
        let was = self.usable.swap(usable, Ordering::Relaxed);
        match (was, usable, lag) {
            (false, true, _) => tracing::info!(replica = %self.name, "a read replica is read from"),
            (true, false, Some(lag)) => tracing::warn!(
                replica = %self.name,
                lag_ms = lag.as_millis() as u64,
                max_lag_ms = max_lag.as_millis() as u64,
                "a read replica is behind: its reads go elsewhere until it catches up"
            ),
            (true, false, None) => tracing::warn!(
                replica = %self.name,
                "a read replica does not answer: its reads go elsewhere until it does"
            ),
            _ => {}
        }
    }
}

/// Checks the replicas each tick while the store is open.
async fn watch(replicas: Weak<Replicas>, primary: Weak<Server>) {
    // Samples of the primary's position, oldest first, as far back as a
    // usable replica can be behind.
    let mut samples: VecDeque<(Instant, u64)> = VecDeque::new();
    let mut not_standby_said = false;
    loop {
        let (Some(replicas), Some(primary)) = (replicas.upgrade(), primary.upgrade()) else {
            return;
        };
        let (tick, check_timeout) = (replicas.tick(), replicas.check_timeout);
        // Taken before asking: the position answered is at least the one
        // the primary had at this instant.
        let sampled = Instant::now();
        if let Ok(Ok(Some(position))) =
            tokio::time::timeout(check_timeout, primary.number(FLUSHED_POSITION)).await
        {
            samples.push_back((sampled, position as u64));
        }
        drop(primary);
        let keep = replicas.max_lag + 2 * tick;
        while samples.len() > 1 && samples[0].0.elapsed() > keep {
            samples.pop_front();
        }
        for replica in &replicas.replicas {
            let answer =
                tokio::time::timeout(check_timeout, replica.server.number(REPLAYED_POSITION)).await;
            match answer {
                Ok(Ok(Some(replayed))) => {
                    let replayed = replayed as u64;
                    replica.checked(Some(replayed), lag(&samples, replayed), replicas.max_lag);
                }
                Ok(Ok(None)) => {
                    if !not_standby_said {
                        not_standby_said = true;
                        tracing::warn!(replica = %replica.name, "a --database-replica is not a standby (it replays no log): it is not read from");
                    }
                    replica.checked(None, None, replicas.max_lag);
                }
                _ => replica.checked(None, None, replicas.max_lag),
            }
        }
        drop(replicas);
        tokio::time::sleep(tick).await;
    }
}

/// How far behind a replica that has replayed up to `replayed` is: the
/// age of the newest sample of the primary's position it has replayed;
/// `None` when it has replayed none of `samples`, which reach back
/// further than the allowed lag.
fn lag(samples: &VecDeque<(Instant, u64)>, replayed: u64) -> Option<Duration> {
    samples
        .iter()
        .rev()
        .find(|(_, position)| *position <= replayed)
        .map(|(sampled, _)| sampled.elapsed())
}

/// Each caller's last write position, kept `keep` long.
struct Positions {
    local: moka::sync::Cache<Arc<str>, u64>,
    shared: Option<SharedPositions>,
}

impl Positions {
    fn new(settings: &options::Replicas, options: &StoreOptions) -> anyhow::Result<Self> {
        // Past `max_lag` every replica read from holds the write; a
        // margin for the monitor's tick.
        let keep = settings.max_lag + Duration::from_secs(1);
        let shared = match &settings.positions_redis {
            Some(url) => Some(SharedPositions::new(url, keep, options)?),
            None => None,
        };
        Ok(Self {
            local: moka::sync::Cache::builder()
                .max_capacity(1_000_000)
                .time_to_live(keep)
                .build(),
            shared,
        })
    }

    /// The caller's last write position (`Some(None)`: none kept); `None`
    /// when the shared positions could not be read.
    async fn of(&self, caller: &str) -> Option<Option<u64>> {
        let local = self.local.get(caller);
        let Some(shared) = &self.shared else {
            return Some(local);
        };
        let shared = shared.of(caller).await?;
        Some(local.max(shared))
    }

    async fn record(&self, caller: Arc<str>, position: u64) {
        self.local
            .entry(caller.clone())
            .and_upsert_with(|kept| kept.map_or(position, |kept| position.max(*kept.value())));
        if let Some(shared) = &self.shared {
            shared.record(&caller, position).await;
        }
    }
}

/// Every caller's key is this prefix and the user's id.
const KEY_PREFIX: &str = "proxydeck:written:";

/// The positions in a Redis every instance shares, reached as the rate
/// limit's is (`shared_redis.rs`): each call bounded, and while it fails,
/// one read a second tries it again and the others go to the primary at
/// once.
struct SharedPositions {
    redis: RedisLink,
    /// Raises a caller's position (and keeps it `keep` longer).
    raise: Script,
    keep: Duration,
}

impl SharedPositions {
    /// Makes no connection yet: an instance starts while Redis is down.
    fn new(url: &str, keep: Duration, options: &StoreOptions) -> anyhow::Result<Self> {
        let messages = Messages {
            name: "the replica positions' Redis",
            down: "the replica positions' Redis failed: reads that cannot tell their caller's last write go to the primary",
            back: "the replica positions' Redis answers again",
        };
        let connect_timeout = options.timeout.min(Duration::from_secs(1));
        Ok(Self {
            redis: RedisLink::new(url, connect_timeout, options.clock.clone(), messages)?,
            raise: Script::new(include_str!("raise_position.lua")),
            keep,
        })
    }

    async fn of(&self, caller: &str) -> Option<Option<u64>> {
        let mut get = redis::cmd("GET");
        get.arg(format!("{KEY_PREFIX}{caller}"));
        let kept = self
            .redis
            .call(|mut connection| async move {
                get.query_async::<Option<String>>(&mut connection).await
            })
            .await?;
        Some(kept.and_then(|hex| u64::from_str_radix(&hex, 16).ok()))
    }

    async fn record(&self, caller: &str, position: u64) {
        let mut raise = self.raise.key(format!("{KEY_PREFIX}{caller}"));
        // Fixed-width hex: Lua compares the strings, exactly, in order.
        raise
            .arg(format!("{position:016x}"))
            .arg(self.keep.as_millis() as u64);
        self.redis
            .call(|mut connection| async move { raise.invoke_async::<i64>(&mut connection).await })
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_is_as_far_behind_as_the_newest_sample_it_replayed() {
        let now = Instant::now();
        let samples: VecDeque<_> = [
            (now - Duration::from_secs(3), 100),
            (now - Duration::from_secs(1), 200),
        ]
        .into_iter()
        .collect();
        let lag_of = |replayed| lag(&samples, replayed).map(|lag| lag.as_secs());
        assert_eq!(lag_of(250), Some(1));
        assert_eq!(lag_of(200), Some(1));
        assert_eq!(lag_of(150), Some(3));
        assert_eq!(lag_of(99), None);
    }
}
