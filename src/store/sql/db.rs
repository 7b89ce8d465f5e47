//! The interface every SQL driver implements, and what the store's logic
//! writes its statements with.
//!
//! Each operation is an async function over [`Db`], a small interface every
//! driver implements on its own connections: run a statement, read rows
//! through [`Row`], open and close transactions. Statements use numbered
//! placeholders `?1`, `?2`, ...: SQLite's own syntax, which the PostgreSQL
//! driver rewrites to `$1`, `$2`. Where the dialects differ, the SQL keeps
//! to their common part (`CAST(... AS BIGINT)`, booleans bound as
//! parameters, `ON CONFLICT ... DO UPDATE`); what cannot be written in it
//! is the [`Dialect`](super::dialect::Dialect)'s, which lives with its
//! driver.

use std::time::Instant;

use async_trait::async_trait;

use crate::store::error::StoreError;

/// A statement parameter: the few types the schema uses. Nulls are typed,
/// as PostgreSQL needs.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    Int(i64),
    OptInt(Option<i64>),
    Text(&'a str),
    OptText(Option<&'a str>),
    Bool(bool),
    Bytes(&'a [u8]),
    /// A list of texts: PostgreSQL's `text[]` (SQLite has no such type,
    /// and its statements never take one).
    TextList(&'a [&'a str]),
    /// A list of integers: PostgreSQL's `bigint[]` (not SQLite's either).
    IntList(&'a [i64]),
}

/// One result row.
pub trait Row {
    fn int(&self, column: usize) -> Result<i64, StoreError>;
    fn opt_int(&self, column: usize) -> Result<Option<i64>, StoreError>;
    fn text(&self, column: usize) -> Result<String, StoreError>;
    /// A text column, borrowed from the row (checked UTF-8).
    fn str(&self, column: usize) -> Result<&str, StoreError>;
    /// Appends a text column's bytes, as stored (no UTF-8 check).
    fn append_bytes(&self, column: usize, out: &mut Vec<u8>) -> Result<(), StoreError>;
    /// Appends a text column (checked UTF-8).
    fn append_text(&self, column: usize, out: &mut String) -> Result<(), StoreError>;
    fn boolean(&self, column: usize) -> Result<bool, StoreError>;
    fn is_null(&self, column: usize) -> Result<bool, StoreError>;
}

/// What a row callback of [`Db::query`] is: answers whether to go on.
pub type EachRow<'a> = dyn FnMut(&dyn Row) -> Result<bool, StoreError> + Send + 'a;

/// What a row callback of [`Db::query_runs`] is: given the run's index
/// and the row, answers whether to go on with that run.
pub type EachRunRow<'a> = dyn FnMut(usize, &dyn Row) -> Result<bool, StoreError> + Send + 'a;

/// A connection, as the store's logic uses it. Drivers map their errors to
/// [`StoreError`]: lost connections to `Unavailable`, uniqueness
/// violations to `Conflict`.
#[async_trait]
pub trait Db: Send {
    /// Runs `sql` and calls `each` on every row until it answers false.
    async fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut EachRow<'_>,
    ) -> Result<(), StoreError>;
    /// Runs `sql` once for each parameter list of `runs`, in order, and
    /// calls `each` on every row with the run's index, until it answers
    /// false (then the next run begins). A driver may prepare the
    /// statement once for all the runs (SQLite does: a page's bodies,
    /// read by rowid, cost one statement, not one each).
    async fn query_runs(
        &mut self,
        sql: &str,
        runs: &[&[Param<'_>]],
        each: &mut EachRunRow<'_>,
    ) -> Result<(), StoreError> {
        for (run, params) in runs.iter().enumerate() {
            self.query(sql, params, &mut |row| each(run, row)).await?;
        }
        Ok(())
    }

    /// Runs `sql`; answers the number of rows it changed.
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError>;
    /// Opens a transaction whose reads all see one snapshot.
    async fn begin_read(&mut self) -> Result<(), StoreError>;
    /// Opens a write transaction.
    async fn begin_write(&mut self) -> Result<(), StoreError>;
    async fn commit(&mut self) -> Result<(), StoreError>;
    async fn rollback(&mut self) -> Result<(), StoreError>;

    /// Whether a transaction is open on this connection.
    fn in_transaction(&self) -> bool;

    /// From now on, the moment by which this connection's write
    /// transactions must commit, or roll back instead (`engine/deadline.rs`);
    /// `None`: no such moment (reads, the operator's commands).
    fn set_deadline(&mut self, deadline: Option<Instant>);
    fn deadline(&self) -> Option<Instant>;

    /// From now on (`true`) or no more, statements may take milliseconds (a
    /// page merged from hundreds of organizations): the driver keeps them
    /// from holding up cheap ones (SQLite: off the request's worker thread;
    /// PostgreSQL: on a connection of their own, not a shared one).
    fn expect_long_statements(&mut self, long: bool);
}

/// Every row `sql` answers, read with `map`.
pub(crate) async fn query_all<T: Send>(
    db: &mut dyn Db,
    sql: &str,
    params: &[Param<'_>],
    mut map: impl FnMut(&dyn Row) -> Result<T, StoreError> + Send,
) -> Result<Vec<T>, StoreError> {
    let mut all = Vec::new();
    db.query(sql, params, &mut |row| {
        all.push(map(row)?);
        Ok(true)
    })
    .await?;
    Ok(all)
}

/// The first row `sql` answers, if any.
pub(crate) async fn query_opt<T: Send>(
    db: &mut dyn Db,
    sql: &str,
    params: &[Param<'_>],
    mut map: impl FnMut(&dyn Row) -> Result<T, StoreError> + Send,
) -> Result<Option<T>, StoreError> {
    let mut first = None;
    db.query(sql, params, &mut |row| {
        first = Some(map(row)?);
        Ok(false)
    })
    .await?;
    Ok(first)
}

/// Whether `sql` answers any row.
pub(crate) async fn exists(
    db: &mut dyn Db,
    sql: &str,
    params: &[Param<'_>],
) -> Result<bool, StoreError> {
    Ok(query_opt(db, sql, params, |_| Ok(())).await?.is_some())
}

/// Runs a block in a transaction on `db`, committed only when the block
/// succeeds: `transaction!(db, begin_read, { ... })` (one snapshot for
/// every read) or `transaction!(db, begin_write, { ... })`. The block is
/// an async block that may use `db` and `?`.
macro_rules! transaction {
    ($db:ident, $begin:ident, $body:block) => {{
        $db.$begin().await?;
        let result: Result<_, $crate::store::error::StoreError> = async $body.await;
        $crate::store::sql::db::finish($db, result).await
    }};
}
pub(crate) use transaction;

/// Ends the transaction a piece of work ran in: commits its success, rolls
/// back its failure, and rolls back whatever comes after the connection's
/// deadline (its request may be answered 503 by now, and a 503 must have
/// committed nothing).
pub(crate) async fn finish<T>(
    db: &mut dyn Db,
    result: Result<T, StoreError>,
) -> Result<T, StoreError> {
    let result = match db.deadline() {
        Some(deadline) if Instant::now() >= deadline => Err(past_deadline()),
        _ => result,
    };
    match result {
        Ok(value) => {
            db.commit().await?;
            Ok(value)
        }
        Err(error) => {
            let _ = db.rollback().await;
            Err(error)
        }
    }
}

/// A write that did not commit by its deadline, counted.
pub(crate) fn past_deadline() -> StoreError {
    crate::metrics::write_past_deadline();
    StoreError::Unavailable(
        "the write had not committed by its deadline: nothing was written".into(),
    )
}

/// Serialises a value that is ours to write: failing is a fault.
pub(crate) fn to_json(value: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Internal(format!("cannot write JSON: {e}")))
}
