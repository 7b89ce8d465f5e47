//! When a request's write must have committed, or else roll back.
//!
//! A write's answer must say what happened: a write answered 503 committed
//! nothing. So the engine never abandons a write it started (a write on
//! SQLite runs on a blocking thread, which would commit after the answer
//! went out); instead the write carries its deadline into the
//! transaction, which rolls back rather than commit once the deadline has
//! passed (`sql::db::finish`), and PostgreSQL cancels a statement that
//! would outlast it (`statement_timeout`). The deadline is the store's
//! timeout (`--db-timeout`) from the write's start, and never later than
//! the request's own deadline (`--request-timeout`, set by the HTTP layer
//! with [`for_request`]) less [`ANSWER_MARGIN`]: a write that commits is
//! answered before the request's timeout could answer 503 for it.

use std::future::Future;
use std::time::{Duration, Instant};

tokio::task_local! {
    static REQUEST_DEADLINE: Instant;
}

/// Time kept between a write's last moment to commit and the moment its
/// request is answered 503 for taking too long: a commit takes
/// milliseconds.
pub const ANSWER_MARGIN: Duration = Duration::from_millis(500);

/// Runs `work` as a request that is answered, whatever happens, by
/// `deadline`.
pub async fn for_request<F: Future>(deadline: Instant, work: F) -> F::Output {
    REQUEST_DEADLINE.scope(deadline, work).await
}

/// The deadline of a write that starts now and may take `store_timeout`.
pub(crate) fn for_write(store_timeout: Duration) -> Instant {
    let own = Instant::now() + store_timeout;
    match REQUEST_DEADLINE.try_with(|deadline| *deadline) {
        Ok(request) => own.min(request.checked_sub(ANSWER_MARGIN).unwrap_or(request)),
        Err(_) => own,
    }
}

/// Whole milliseconds left until `deadline`, rounded up (a statement
/// cancelled then is past it) and at least 1 (PostgreSQL's
/// `statement_timeout` takes milliseconds; 0 would turn it off).
pub(crate) fn millis_left(deadline: Instant) -> u128 {
    deadline
        .saturating_duration_since(Instant::now())
        .as_millis()
        + 1
}
