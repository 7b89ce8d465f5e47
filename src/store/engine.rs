//! The engine: a driver's connections, the operations run on them as their
//! [`Kind`] says (bounded, retried, timed), and the listings' read path.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use crate::metrics::PoolUse;
use crate::store::api;
use crate::store::cache::recent_pages::CommitMarks;
use crate::store::cache::{self, Reader};
use crate::store::driver::{Access, Driver, Work, within};
use crate::store::error::StoreError;
use crate::store::listing::{Listing, ListingKey};
use crate::store::operation::{Kind, Operation};
use crate::store::operator;
use crate::store::options::StoreOptions;
use crate::store::page::JsonPage;
use crate::store::sql::db::Db;
use crate::store::sql::dialect::Dialect;

pub struct Engine<D: Driver> {
    driver: Arc<D>,
    dialect: Dialect,
    /// Bound on one request's store work (checkout and queries): past it the
    /// request fails as unavailable instead of hanging.
    request_timeout: Duration,
    /// The listings' read path: the caches that are on, then the driver.
    listings: Reader,
}

/// What a driver runs for an operation: the operation with its dialect.
type Input<O> = (Dialect, O);

fn work<'a, O: Operation>(
    db: &'a mut dyn Db,
    (dialect, operation): &'a Input<O>,
) -> BoxFuture<'a, Result<O::Output, StoreError>> {
    operation.run(db, *dialect)
}

impl<D: Driver> Engine<D> {
    pub fn new(driver: D, dialect: Dialect, options: &StoreOptions) -> Self {
        let driver = Arc::new(driver);
        let timeout = options.timeout;
        let statements: Reader = {
            let driver = driver.clone();
            Arc::new(move |key: ListingKey| {
                let operation = key.listing().operation();
                Box::pin(bounded_read(
                    driver.clone(),
                    timeout,
                    operation,
                    Arc::new((dialect, key)),
                    |db, (dialect, key)| Box::pin(api::read_page(db, *dialect, key)),
                ))
            })
        };
        // Commits can be watched when the driver could tell at once.
        let commit_marks = driver.commit_mark().map(|_| {
            let driver = driver.clone();
            Arc::new(move || driver.commit_mark()) as CommitMarks
        });
        Self {
            listings: cache::chain(options.caches.layers(commit_marks, timeout), statements),
            driver,
            dialect,
            request_timeout: timeout,
        }
    }

    /// Runs `operation` as its [`Kind`] says.
    pub async fn run<O: Operation>(&self, operation: O) -> Result<O::Output, StoreError> {
        let input = Arc::new((self.dialect, operation));
        let work: Work<Input<O>, O::Output> = work::<O>;
        let driver = &self.driver;
        if O::KIND == Kind::Read {
            return bounded_read(driver.clone(), self.request_timeout, O::NAME, input, work).await;
        }
        let _timer = OperationTimer::start(O::NAME);
        match O::KIND {
            Kind::Read => unreachable!("run above"),
            Kind::Write => {
                let attempt = || {
                    within(
                        self.request_timeout,
                        driver.run(Access::Write, input.clone(), work),
                    )
                };
                match attempt().await {
                    Err(StoreError::Retry) => attempt().await,
                    result => result,
                }
            }
            Kind::OperatorRead => driver.run(Access::Read, input, work).await,
            Kind::OperatorWrite => driver.run(Access::Write, input, work).await,
            Kind::OperatorStream => driver.read_on_thread(input, work).await,
        }
    }

    /// A page of a listing, through the read path.
    pub async fn list(&self, listing: Listing) -> Result<JsonPage, StoreError> {
        (self.listings)(ListingKey::new(listing)).await
    }

    /// Rewrites the stored bodies of an older shape through the domain
    /// types; run once when the store opens.
    pub async fn upgrade_stored_bodies(&self) -> Result<u64, StoreError> {
        let changed = self.run(operator::shapes::UpgradeStoredBodies).await?;
        if changed > 0 {
            tracing::info!(bodies = changed, "rewrote stored bodies of an older shape");
        }
        Ok(changed)
    }

    pub fn pool_use(&self) -> Vec<PoolUse> {
        self.driver.pool_use()
    }
}

/// Runs a request's read, bounded in time by `request_timeout`. One that
/// fails as unavailable is tried once more, on another connection, within
/// the same bound: a pooled connection that went stale (the database
/// restarted) fails only once.
async fn bounded_read<D: Driver, Q, T>(
    driver: Arc<D>,
    request_timeout: Duration,
    operation: &'static str,
    input: Arc<Q>,
    work: Work<Q, T>,
) -> Result<T, StoreError>
where
    Q: Send + Sync + 'static,
    T: Send + 'static,
{
    let started = Instant::now();
    let _timer = OperationTimer::start(operation);
    let attempt = |limit| within(limit, driver.run(Access::Read, input.clone(), work));
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
struct OperationTimer {
    operation: &'static str,
    started: Instant,
}

impl OperationTimer {
    fn start(operation: &'static str) -> Self {
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
