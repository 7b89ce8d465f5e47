//! The engine: a driver's connections, the operations run on them as their
//! [`Kind`] says (`operation.rs`; bounded, retried and timed:
//! `bounded_read.rs`; a write carrying its deadline: `deadline.rs`), and
//! the listings' read path (`reader.rs`).

mod bounded_read;
pub mod deadline;
pub mod operation;
pub(crate) mod reader;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use crate::metrics::{PoolUse, ReplicaUse};
use crate::store::driver::{Access, Driver, Freshness, Work};
use crate::store::error::StoreError;
use crate::store::listing::Listing;
use crate::store::options::StoreOptions;
use crate::store::page::JsonPage;
use crate::store::sql::db::{Db, past_deadline};
use crate::store::sql::dialect::Dialect;
use bounded_read::{OperationTimer, bounded_read};
use operation::{Kind, Operation};
use reader::{ReadPath, Reader};

pub struct Engine<D: Driver> {
    driver: Arc<D>,
    dialect: Dialect,
    /// Bound on one request's store work (checkout and queries): past it a
    /// read fails as unavailable instead of hanging, and a write rolls
    /// back (`deadline.rs`).
    request_timeout: Duration,
    /// The listings' read path.
    reader: Reader<D>,
    /// Told after every write that committed through this engine: the
    /// change feed reads the changes at once rather than at its next poll.
    written: tokio::sync::Notify,
}

/// What a driver runs for an operation: the operation with its dialect,
/// and the moment a request's write must have committed by (`deadline.rs`).
type Input<O> = (Dialect, O, Option<Instant>);

fn work<'a, O: Operation>(
    db: &'a mut dyn Db,
    (dialect, operation, deadline): &'a Input<O>,
) -> BoxFuture<'a, Result<O::Output, StoreError>> {
    if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
        // The connection came too late: nothing begun, nothing to undo.
        return Box::pin(std::future::ready(Err(past_deadline())));
    }
    db.set_deadline(*deadline);
    operation.run(db, *dialect)
}

impl<D: Driver> Engine<D> {
    pub fn new(driver: D, dialect: Dialect, options: &StoreOptions, read_path: ReadPath) -> Self {
        let driver = Arc::new(driver);
        Self {
            reader: Reader::new(driver.clone(), dialect, options.timeout, read_path),
            driver,
            dialect,
            request_timeout: options.timeout,
            written: tokio::sync::Notify::new(),
        }
    }

    /// Runs `operation` as its [`Kind`] says.
    pub async fn run<O: Operation>(&self, operation: O) -> Result<O::Output, StoreError> {
        let deadline = (O::KIND == Kind::Write).then(|| deadline::for_write(self.request_timeout));
        let input = Arc::new((self.dialect, operation, deadline));
        let work: Work<Input<O>, O::Output> = work::<O>;
        let driver = &self.driver;
        if matches!(O::KIND, Kind::Read | Kind::FreshRead) {
            let freshness = match O::KIND {
                Kind::FreshRead => Freshness::Latest,
                _ => driver.freshness().await,
            };
            let read = Access::Read(freshness);
            let timeout = self.request_timeout;
            return bounded_read(driver.clone(), timeout, O::NAME, read, input, work).await;
        }
        let _timer = OperationTimer::start(O::NAME);
        let result = match O::KIND {
            Kind::Read | Kind::FreshRead => unreachable!("run above"),
            // Not abandoned at the timeout (it would commit after its 503
            // went out): it rolls back by itself at its deadline.
            Kind::Write => {
                let attempt = || driver.run(Access::Write, input.clone(), work);
                match attempt().await {
                    Err(StoreError::Retry) => attempt().await,
                    result => result,
                }
            }
            // The operator's commands never read from a replica.
            Kind::OperatorRead => {
                let read = Access::Read(Freshness::Latest);
                driver.run(read, input, work).await
            }
            Kind::OperatorWrite => driver.run(Access::Write, input, work).await,
            Kind::OperatorStream => driver.read_on_thread(input, work).await,
        };
        if result.is_ok() && matches!(O::KIND, Kind::Write | Kind::OperatorWrite) {
            self.written.notify_one();
        }
        result
    }

    /// Resolves after a write commits through this engine (at once when
    /// one did since the last call returned): one waiter, the feed's.
    pub async fn written(&self) {
        self.written.notified().await;
    }

    /// A page of a listing, through the read path.
    pub async fn list(&self, listing: Listing) -> Result<JsonPage, StoreError> {
        self.reader.page(listing).await
    }

    pub fn pool_use(&self) -> Vec<PoolUse> {
        self.driver.pool_use()
    }

    pub fn replica_use(&self) -> Vec<ReplicaUse> {
        self.driver.replica_use()
    }

    pub fn follows_callers(&self) -> bool {
        self.driver.follows_callers()
    }
}
