//! Connections, and where the store's work runs on them: the interface
//! each driver (`sqlite/`, `postgres/`) implements for the engine, with
//! where a database's commits are ([`CommitMark`]), what a driver knows of
//! its database being down (`outage.rs`), and whose request the work is
//! for (`caller.rs`).

pub mod caller;
pub mod outage;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::metrics::{PoolUse, ReplicaUse};
use crate::store::error::StoreError;
use crate::store::sql::db::Db;

/// An operation of the store's logic on a connection and its input (a
/// function, so a driver may run it wherever it sees fit, and again).
pub type Work<Q, T> = for<'a> fn(&'a mut dyn Db, &'a Q) -> BoxFuture<'a, Result<T, StoreError>>;

/// Whether an operation only reads, and what its read must see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read(Freshness),
    Write,
}

/// What a read must see, for a driver that has copies of the database
/// behind its own (PostgreSQL's read replicas, `postgres/replicas.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Any copy within the allowed lag.
    Any,
    /// A copy that has every commit up to this position of the primary's
    /// log: the caller's own last write (read-your-writes).
    After(u64),
    /// Every commit: the primary itself (a token's look-up, the change
    /// feed, a write's own reads).
    Latest,
}

/// The state of a database's commits at one moment: equal marks, no
/// commit in between (SQLite: `sqlite/commit_watch.rs`), told by [`Driver::commit_mark`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitMark(i64);

impl CommitMark {
    pub fn new(version: i64) -> Self {
        Self(version)
    }

    /// The mark as a number, for a cache that keeps the newest it saw.
    pub fn version(self) -> i64 {
        self.0
    }
}

/// Connections for the store, and where the store's operations run on
/// them.
pub trait Driver: Send + Sync + 'static {
    /// Runs a request's `work` on a connection for `access`.
    fn run<Q, T>(
        self: &Arc<Self>,
        access: Access,
        input: Arc<Q>,
        work: Work<Q, T>,
    ) -> impl Future<Output = Result<T, StoreError>> + Send
    where
        Q: Send + Sync + 'static,
        T: Send + 'static;

    /// Runs a read's `work` on a thread of its own, for a long job that
    /// blocks between statements (an export waiting for its reader).
    fn read_on_thread<Q, T>(
        self: &Arc<Self>,
        input: Arc<Q>,
        work: Work<Q, T>,
    ) -> impl Future<Output = Result<T, StoreError>> + Send
    where
        Q: Send + Sync + 'static,
        T: Send + 'static;

    /// How the driver's connection pools are used now (for the metrics).
    fn pool_use(&self) -> Vec<PoolUse>;

    /// The copies of the database the driver reads from, as last checked.
    fn replica_use(&self) -> Vec<ReplicaUse> {
        Vec::new()
    }

    /// Whether the driver keeps each caller's last write for its reads
    /// (`caller.rs`): only then does a request run as its caller's.
    fn follows_callers(&self) -> bool {
        false
    }

    /// What the current request's reads must see (`caller.rs`): `Any`
    /// unless the driver keeps copies and the caller wrote lately.
    fn freshness(self: &Arc<Self>) -> impl Future<Output = Freshness> + Send {
        std::future::ready(Freshness::Any)
    }

    /// Where the database's commits are now, told without a transaction;
    /// `None` when the driver cannot tell (then pages are always read).
    fn commit_mark(&self) -> Option<CommitMark> {
        None
    }
}

/// Runs `work` to its end on a thread of tokio's blocking pool, on the
/// connection `connect` gives there.
pub(crate) async fn on_blocking_thread<C, Q, T>(
    connect: impl FnOnce() -> Result<C, StoreError> + Send + 'static,
    input: Arc<Q>,
    work: Work<Q, T>,
) -> Result<T, StoreError>
where
    C: Db + 'static,
    Q: Send + Sync + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let mut connection = connect()?;
        futures_executor::block_on(work(&mut connection, &input))
    })
    .await
    .map_err(|_| StoreError::Internal("a store task panicked".into()))?
}

/// The result of `work`, or unavailable once `bound` has passed.
pub(crate) async fn within<T>(
    bound: Duration,
    work: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(bound, work)
        .await
        .map_err(|_| StoreError::Unavailable("the store did not answer in time".into()))?
}
