//! The listings' read path, one way down: the cache the store's dialect
//! keeps, then the page's statement on a connection of the driver.
//!
//! Which cache a store keeps is chosen once, when it opens
//! ([`ReadPath`], `store::open`), from what each bought on the benchmark's
//! traffic (docs/choices.md, "Caches"): SQLite answers a page read again
//! while nothing committed from memory (`cache/recent_pages.rs`);
//! PostgreSQL lets identical reads at the same time share one statement
//! (`cache/shared_reads.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use crate::store::api;
use crate::store::cache::recent_pages::{CommitMarks, RecentPages};
use crate::store::cache::shared_reads::SharedReads;
use crate::store::driver::{Access, Driver, Freshness, Work, within};
use crate::store::error::StoreError;
use crate::store::listing::{Listing, ListingKey};
use crate::store::page::JsonPage;
use crate::store::sql::dialect::Dialect;

/// The caches a store's read path keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadPath {
    pub recent_pages: bool,
    pub shared_reads: bool,
}

pub struct Reader<D: Driver> {
    driver: Arc<D>,
    dialect: Dialect,
    /// Bound on one read (checkout and statements).
    timeout: Duration,
    /// Pages read again while nothing committed (SQLite).
    recent: Option<RecentPages>,
    /// Identical reads at the same time share a statement (PostgreSQL).
    shared: Option<SharedReads>,
}

impl<D: Driver> Reader<D> {
    pub fn new(driver: Arc<D>, dialect: Dialect, timeout: Duration, path: ReadPath) -> Self {
        // Pages are kept only when the driver can tell commits at once.
        let recent = driver.commit_mark().filter(|_| path.recent_pages).map(|_| {
            let driver = driver.clone();
            RecentPages::new(Arc::new(move || driver.commit_mark()) as CommitMarks)
        });
        Self {
            shared: path.shared_reads.then(|| SharedReads::new(timeout)),
            recent,
            driver,
            dialect,
            timeout,
        }
    }

    /// A page of a listing.
    pub async fn page(&self, listing: Listing) -> Result<JsonPage, StoreError> {
        let key = ListingKey::new(listing);
        let freshness = self.driver.freshness().await;
        match &self.recent {
            Some(recent) => {
                recent
                    .read(key, |key| self.statement_or_shared(key, freshness))
                    .await
            }
            None => self.statement_or_shared(key, freshness).await,
        }
    }

    /// A page read from the store: by a statement of its own, or by one
    /// shared with identical reads at the same time. Only reads that may
    /// see any copy of the database share: one that must see its caller's
    /// last write reads for itself.
    fn statement_or_shared(
        &self,
        key: ListingKey,
        freshness: Freshness,
    ) -> BoxFuture<'static, Result<JsonPage, StoreError>> {
        let (driver, dialect, timeout) = (self.driver.clone(), self.dialect, self.timeout);
        let statement = move |key: ListingKey| {
            let operation = key.listing().operation();
            let input = Arc::new((dialect, key));
            bounded_read(
                driver.clone(),
                timeout,
                operation,
                Access::Read(freshness),
                input,
                |db, (dialect, key)| Box::pin(api::read_page(db, *dialect, key)),
            )
        };
        match &self.shared {
            Some(shared) if freshness == Freshness::Any => shared.read(key, statement),
            _ => Box::pin(statement(key)),
        }
    }
}

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
