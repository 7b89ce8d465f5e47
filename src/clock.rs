//! Where the service reads the time for its lifetimes and limits (token
//! expiry and the token cache, rate limits, the embedded store's file
//! checks). A running service reads the system's clocks; a test gives the
//! service a clock it moves forward itself ([`Clock::adjustable`]), so that
//! it never waits for a lifetime to run out.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::domain::time::Timestamp;

/// The system's clocks, plus whatever a test moved them forward by.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// Microseconds added to the system's clocks; only an adjustable clock
    /// has them (the system clock costs no atomic read).
    ahead: Option<Arc<AtomicU64>>,
}

impl Clock {
    /// The system's clocks.
    pub fn system() -> Self {
        Self::default()
    }

    /// A clock that runs with the system's and that [`Clock::advance`]
    /// moves forward (every clone with it).
    pub fn adjustable() -> Self {
        Self {
            ahead: Some(Arc::new(AtomicU64::new(0))),
        }
    }

    /// Moves an adjustable clock forward by `by`: what waits for time sees
    /// it pass at once.
    ///
    /// # Panics
    /// On the system clock, which only time moves.
    pub fn advance(&self, by: Duration) {
        let ahead = self
            .ahead
            .as_ref()
            .expect("only an adjustable clock can be moved");
        ahead.fetch_add(micros(by), Ordering::SeqCst);
    }

    /// Now, on the monotonic clock: for lifetimes and intervals.
    pub fn instant(&self) -> Instant {
        Instant::now() + self.ahead()
    }

    /// Now, on the wall clock: for what is compared with stored times
    /// (a token's `expires_at`).
    pub fn timestamp(&self) -> Timestamp {
        let now = Timestamp::now();
        let ahead = self.ahead().as_millis() as i64;
        Timestamp::from_millis(now.as_millis().saturating_add(ahead)).unwrap_or(now)
    }

    fn ahead(&self) -> Duration {
        self.ahead.as_ref().map_or(Duration::ZERO, |ahead| {
            Duration::from_micros(ahead.load(Ordering::SeqCst))
        })
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adjustable_clock_and_its_clones_move_together() {
        let clock = Clock::adjustable();
        let clone = clock.clone();
        let (instant, timestamp) = (clone.instant(), clone.timestamp());
        clock.advance(Duration::from_secs(3600));
        assert!(clone.instant() >= instant + Duration::from_secs(3600));
        assert!(clone.timestamp() >= timestamp.plus_seconds(3600).unwrap());
    }

    #[test]
    #[should_panic(expected = "only an adjustable clock")]
    fn the_system_clock_cannot_be_moved() {
        Clock::system().advance(Duration::from_secs(1));
    }
}
