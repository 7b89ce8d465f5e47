//! Why a round of `follow` ended, and how long it waits before the next:
//! a service that cannot be reached (or fails) is tried again, later each
//! time; a refusal that trying again will not change ends follow.

use std::time::Duration;

use crate::client::http::Refused;

/// The first wait after a failure, and the longest.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const LONGEST_BACKOFF: Duration = Duration::from_secs(30);

/// Why a round ended.
pub enum Ended {
    /// The service is unreachable or failing: try again later.
    Retry(anyhow::Error),
    /// Nothing to try again: the token, the project, the folder, or
    /// `--once`'s `--exec`.
    Fatal(anyhow::Error),
}

/// A refusal that trying again will not change ends the command; anything
/// else (unreachable, 5xx) is tried again.
pub fn classify(error: anyhow::Error) -> Ended {
    match error.downcast_ref::<Refused>() {
        Some(refused) if refused.is_permanent() => Ended::Fatal(error),
        _ => Ended::Retry(error),
    }
}

/// The service answered 404: the project is gone, or this token cannot
/// see it.
pub fn is_not_found(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<Refused>()
        .is_some_and(Refused::is_not_found)
}

/// The wait after `failures` failures in a row: doubling from
/// [`FIRST_BACKOFF`] to [`LONGEST_BACKOFF`], each between half and all of
/// it at random, so that followers restarted together come back apart.
pub fn backoff(failures: u32) -> Duration {
    let full = FIRST_BACKOFF
        .saturating_mul(1 << failures.saturating_sub(1).min(5))
        .min(LONGEST_BACKOFF);
    full.mul_f64(rand::random_range(0.5..=1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_longest_with_jitter() {
        for failures in 1..20 {
            let wait = backoff(failures);
            let full = FIRST_BACKOFF * (1 << (failures - 1).min(5));
            let full = full.min(LONGEST_BACKOFF);
            assert!(wait >= full / 2 && wait <= full, "{failures}: {wait:?}");
        }
    }
}
