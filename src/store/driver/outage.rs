//! What a driver knows of its database being down, so that an outage costs
//! neither the database nor the logs one thing per request.
//!
//! A failed connection attempt marks the store down. While it is down,
//! connection attempts are refused at once ([`StoreError::Down`]: the
//! request gets its 503 without waiting or logging), except one attempt
//! at a time after a backoff that doubles from 100 ms to 2 s. The state is
//! logged when it changes: down (with the cause), still down (once a
//! minute), back up (with how long it lasted).

use std::fmt::Display;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::store::error::StoreError;

const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const LONGEST_BACKOFF: Duration = Duration::from_secs(2);
const STILL_DOWN_EVERY: Duration = Duration::from_secs(60);

#[derive(Default)]
pub struct Outage {
    state: Mutex<Option<Down>>,
    /// The read replica this outage is of (its `host:port`); `None`: the
    /// primary, whose outage requests meet.
    replica: Option<String>,
}

/// An outage under way.
struct Down {
    since: Instant,
    /// No attempt before this.
    next_attempt: Instant,
    backoff: Duration,
    failed_attempts: u64,
    /// When the outage was last logged.
    said_at: Instant,
}

/// What a change of state has to say in the log.
#[derive(Debug, PartialEq, Eq)]
enum Said {
    Down,
    StillDown {
        for_seconds: u64,
        failed_attempts: u64,
    },
    BackUp {
        after_ms: u128,
        failed_attempts: u64,
    },
}

impl Outage {
    /// The outage of the read replica `name`: reads go to the primary
    /// meanwhile, so its log lines say so.
    pub fn of_replica(name: String) -> Self {
        Self {
            replica: Some(name),
            ..Self::default()
        }
    }

    /// Whether a connection attempt may be made now; while the store is
    /// down, one caller at a time gets `Ok`, after the backoff.
    pub fn may_try(&self) -> Result<(), StoreError> {
        self.may_try_at(Instant::now())
    }

    /// A connection attempt failed with `cause`.
    pub fn failed(&self, cause: &dyn Display) {
        let said = self.failed_at(Instant::now());
        if let Some(replica) = &self.replica {
            match said {
                Some(Said::Down) => {
                    tracing::warn!(%cause, %replica, "a read replica is down: its reads go elsewhere; reconnecting with backoff")
                }
                Some(Said::StillDown {
                    for_seconds,
                    failed_attempts,
                }) => {
                    tracing::warn!(%cause, %replica, for_seconds, failed_attempts, "a read replica is still down")
                }
                _ => {}
            }
            return;
        }
        match said {
            Some(Said::Down) => {
                tracing::warn!(%cause, "the database is down: requests get 503 at once; reconnecting with backoff")
            }
            Some(Said::StillDown {
                for_seconds,
                failed_attempts,
            }) => {
                tracing::warn!(%cause, for_seconds, failed_attempts, "the database is still down")
            }
            _ => {}
        }
    }

    /// A connection attempt succeeded.
    pub fn reached(&self) {
        if let Some(Said::BackUp {
            after_ms,
            failed_attempts,
        }) = self.reached_at(Instant::now())
        {
            let down_ms = after_ms as u64;
            match &self.replica {
                Some(replica) => {
                    tracing::info!(%replica, down_ms, failed_attempts, "a read replica is back up")
                }
                None => tracing::info!(down_ms, failed_attempts, "the database is back up"),
            }
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Option<Down>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn may_try_at(&self, now: Instant) -> Result<(), StoreError> {
        let mut state = self.state();
        let Some(down) = state.as_mut() else {
            return Ok(());
        };
        if now < down.next_attempt {
            return Err(StoreError::Down);
        }
        // This caller's attempt: the next one waits at least a backoff more
        // (and its outcome decides the next backoff).
        down.next_attempt = now + down.backoff;
        Ok(())
    }

    fn failed_at(&self, now: Instant) -> Option<Said> {
        let mut state = self.state();
        match state.as_mut() {
            None => {
                *state = Some(Down {
                    since: now,
                    next_attempt: now + FIRST_BACKOFF,
                    backoff: FIRST_BACKOFF,
                    failed_attempts: 1,
                    said_at: now,
                });
                Some(Said::Down)
            }
            Some(down) => {
                down.failed_attempts += 1;
                down.backoff = (down.backoff * 2).min(LONGEST_BACKOFF);
                down.next_attempt = now + down.backoff;
                (now.duration_since(down.said_at) >= STILL_DOWN_EVERY).then(|| {
                    down.said_at = now;
                    Said::StillDown {
                        for_seconds: now.duration_since(down.since).as_secs(),
                        failed_attempts: down.failed_attempts,
                    }
                })
            }
        }
    }

    fn reached_at(&self, now: Instant) -> Option<Said> {
        let down = self.state().take()?;
        Some(Said::BackUp {
            after_ms: now.duration_since(down.since).as_millis(),
            failed_attempts: down.failed_attempts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_said_once_tried_with_backoff_and_said_over_once_a_minute() {
        let outage = Outage::default();
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        assert!(outage.may_try_at(at(0)).is_ok(), "up: every attempt may go");
        assert_eq!(outage.failed_at(at(0)), Some(Said::Down));
        // Refused at once until the backoff has passed; then one caller.
        assert!(matches!(outage.may_try_at(at(50)), Err(StoreError::Down)));
        assert!(outage.may_try_at(at(100)).is_ok());
        assert!(matches!(outage.may_try_at(at(101)), Err(StoreError::Down)));
        assert_eq!(outage.failed_at(at(110)), None, "still down: nothing said");
        // The backoff doubled: 200 ms after that failure.
        assert!(outage.may_try_at(at(300)).is_err());
        assert!(outage.may_try_at(at(310)).is_ok());
        // It doubles up to 2 s, never more.
        let mut now = 310;
        for _ in 0..10 {
            assert_eq!(outage.failed_at(at(now)), None);
            now += 2_000;
        }
        // The last failure was 2 s ago: the backoff is 2 s, not more.
        assert!(outage.may_try_at(at(now - 1)).is_err());
        assert!(outage.may_try_at(at(now)).is_ok(), "2 s at most");
        // Once a minute, still down.
        assert_eq!(
            outage.failed_at(at(60_000)),
            Some(Said::StillDown {
                for_seconds: 60,
                failed_attempts: 13
            })
        );
        assert_eq!(outage.failed_at(at(61_000)), None);
        assert_eq!(
            outage.reached_at(at(62_500)),
            Some(Said::BackUp {
                after_ms: 62_500,
                failed_attempts: 14
            })
        );
        assert_eq!(outage.reached_at(at(63_000)), None, "said once");
        assert!(outage.may_try_at(at(63_000)).is_ok());
    }
}
