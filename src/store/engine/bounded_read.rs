//! What the engine runs every operation with: the bound on a request's
//! read (its time, and one more try on another connection), and the timer
//! each operation's metric is taken with. Both the engine's `run` and the
//! listings' read path (`reader.rs`) use them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::store::driver::{Access, Driver, Work, within};
use crate::store::error::StoreError;

/// Runs a request's read, bounded in time by `request_timeout`. One that
/// fails as unavailable is tried once more, on another connection, within
/// the same bound: a pooled connection that went stale (the database
/// restarted) fails only once.
pub(crate) async fn bounded_read<D: Driver, Q, T>(
    driver: Arc<D>,
    request_timeout: Duration,
    operation: &'static str,
    read: Access,
    input: Arc<Q>,
    work: Work<Q, T>,
) -> Result<T, StoreError>
where
    Q: Send + Sync + 'static,
    T: Send + 'static,
{
    let started = Instant::now();
    let _timer = OperationTimer::start(operation);
    let attempt = |limit| within(limit, driver.run(read, input.clone(), work));
    match attempt(request_timeout).await {
        Err(StoreError::Unavailable(first)) if started.elapsed() < request_timeout => {
            match attempt(request_timeout.saturating_sub(started.elapsed())).await {
                // The first failure marked the database down: it is what
                // this request met, and what its log line should say.
                Err(StoreError::Down) => Err(StoreError::Unavailable(first)),
                result => result,
            }
        }
        result => result,
    }
}

/// Records how long a store operation took when dropped: on success, on
/// failure, and when the request that awaited it went away.
pub(crate) struct OperationTimer {
    operation: &'static str,
    started: Instant,
}

impl OperationTimer {
    pub(crate) fn start(operation: &'static str) -> Self {
        Self {
            operation,
            started: Instant::now(),
        }
    }
}

impl Drop for OperationTimer {
    fn drop(&mut self) {
        crate::metrics::store_operation(self.operation, self.started.elapsed());
    }
}
