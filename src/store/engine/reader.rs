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
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::store::cache::recent_pages::{CommitMarks, RecentPages};
use crate::store::cache::shared_reads::SharedReads;
use crate::store::driver::{Access, Driver, Freshness};
use crate::store::engine::bounded_read::bounded_read;
use crate::store::error::StoreError;
use crate::store::listing::{Listing, ListingKey};
use crate::store::page::JsonPage;
use crate::store::sql::db::Db;
use crate::store::sql::dialect::Dialect;

/// How a store's read path reads: the caches it keeps, and the operation
/// that reads a page from the database (`operations::read_page`, handed
/// in by `store::open` so that the engine imports no operation).
#[derive(Clone, Copy)]
pub struct ReadPath {
    pub recent_pages: bool,
    pub shared_reads: bool,
    pub read_page: ReadPage,
}

/// A page of a listing, read on a connection in a dialect.
pub type ReadPage = for<'a> fn(
    &'a mut dyn Db,
    Dialect,
    &'a ListingKey,
) -> BoxFuture<'a, Result<JsonPage, StoreError>>;

pub struct Reader<D: Driver> {
    driver: Arc<D>,
    dialect: Dialect,
    /// Bound on one read (checkout and statements).
    timeout: Duration,
    /// Pages read again while nothing committed (SQLite).
    recent: Option<RecentPages>,
    /// Identical reads at the same time share a statement (PostgreSQL).
    shared: Option<SharedReads>,
    read_page: ReadPage,
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
            read_page: path.read_page,
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
        let read_page = self.read_page;
        let statement = move |key: ListingKey| {
            let operation = key.listing().operation();
            let input = Arc::new((dialect, key, read_page));
            bounded_read(
                driver.clone(),
                timeout,
                operation,
                Access::Read(freshness),
                input,
                |db, (dialect, key, read_page)| read_page(db, *dialect, key),
            )
        };
        match &self.shared {
            Some(shared) if freshness == Freshness::Any => shared.read(key, statement),
            _ => Box::pin(statement(key)),
        }
    }
}
