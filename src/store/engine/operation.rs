//! An operation of the store: a value that says what to do, run by the
//! engine on a connection of the store's driver. Each operation is
//! declared beside its SQL (`api/` for the API's, `operator/` for the
//! operator's commands) and run with `Store::run`.

use futures_util::future::BoxFuture;

use crate::store::error::StoreError;
use crate::store::sql::db::Db;
use crate::store::sql::dialect::Dialect;

/// How the engine runs an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A request's read: bounded by `--db-timeout`, tried once more on
    /// another connection when the first one was lost.
    Read,
    /// A request's read that must see every commit (a token's look-up,
    /// the change feed, the health check): as `Read`, on the primary when
    /// the store reads from replicas.
    FreshRead,
    /// A request's write: bounded, tried once more when it met a
    /// concurrent one ([`StoreError::Retry`]).
    Write,
    /// An operator's read: unbounded.
    OperatorRead,
    /// An operator's write: unbounded.
    OperatorWrite,
    /// An operator's long read that blocks between statements (an export
    /// waiting for its reader): on a thread of its own.
    OperatorStream,
}

pub trait Operation: Send + Sync + 'static {
    type Output: Send + 'static;
    /// The name the metrics know it by.
    const NAME: &'static str;
    const KIND: Kind;

    /// The work, on a connection; `dialect` for the statements the two
    /// dialects write differently. The engine may run it again (a retry).
    fn run<'a>(
        &'a self,
        db: &'a mut dyn Db,
        dialect: Dialect,
    ) -> BoxFuture<'a, Result<Self::Output, StoreError>>;
}

/// Declares that `$op` is an [`Operation`] run by `$work` (an async
/// function of the connection and the operation, and of the dialect when
/// written `with dialect`), of kind `$kind`, named `$name` in the metrics:
///
/// ```ignore
/// operation!(GetProject => get, Read, "get_project" -> ObjectAnswer);
/// ```
macro_rules! operation {
    ($op:ty => $work:ident, $kind:ident, $name:literal -> $out:ty) => {
        $crate::store::engine::operation::operation!(@impl $op, $kind, $name, $out, db, dialect, op => $work(db, op));
    };
    ($op:ty => $work:ident with dialect, $kind:ident, $name:literal -> $out:ty) => {
        $crate::store::engine::operation::operation!(@impl $op, $kind, $name, $out, db, dialect, op => $work(db, dialect, op));
    };
    // The one impl; the arms above differ only in the call. The names of
    // the connection, the dialect and the operation are the callers' so
    // that the call they write can use them.
    (@impl $op:ty, $kind:ident, $name:literal, $out:ty, $db:ident, $dialect:ident, $self:ident => $call:expr) => {
        impl $crate::store::engine::operation::Operation for $op {
            type Output = $out;
            const NAME: &'static str = $name;
            const KIND: $crate::store::engine::operation::Kind = $crate::store::engine::operation::Kind::$kind;

            #[allow(unused_variables)]
            fn run<'a>(
                &'a self,
                $db: &'a mut dyn $crate::store::sql::db::Db,
                $dialect: $crate::store::sql::dialect::Dialect,
            ) -> futures_util::future::BoxFuture<'a, Result<$out, $crate::store::error::StoreError>>
            {
                let $self = self;
                Box::pin($call)
            }
        }
    };
}
pub(crate) use operation;
