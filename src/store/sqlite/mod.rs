//! The embedded store's driver: one SQLite file in WAL mode, so reads never
//! wait on a writer.
//!
//! Reads run on a small pool of read-only connections; writes go through a
//! single writer connection (SQLite allows one writer at a time anyway).
//! Statements are prepared once per connection and cached.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_trait::async_trait;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension as _};

use crate::clock::Clock;
use crate::metrics::PoolUse;
use crate::store::driver::CommitMark;
use crate::store::driver::{Access, Driver, Work, on_blocking_thread};
use crate::store::error::{Conflict, StoreError};
use crate::store::options::StoreOptions;
use crate::store::sql::db::{Db, EachRow, EachRunRow, Param, Row};

mod embedded {
    refinery::embed_migrations!("migrations/sqlite");
}

/// Opens (creating if needed) the database at `path` and applies the
/// migrations it lacks.
pub async fn open(path: PathBuf, options: StoreOptions) -> anyhow::Result<SqliteDriver> {
    tokio::task::spawn_blocking(move || SqliteDriver::open(&path, &options)).await?
}

/// Page size of new database files.
const PAGE_SIZE: i64 = 4 * 1024;

mod commit_watch;
pub mod dialect;

use commit_watch::CommitWatch;

pub struct SqliteDriver {
    readers: r2d2::Pool<Connector>,
    writer: r2d2::Pool<Connector>,
    watch: Option<CommitWatch>,
}

impl SqliteDriver {
    fn open(path: &Path, options: &StoreOptions) -> anyhow::Result<Self> {
        let shown = path.display();
        let mut setup = Connection::open(path)
            .with_context(|| format!("cannot open or create the database file {shown}"))?;
        setup.busy_timeout(options.timeout)?;
        // A new file gets 4 KiB pages (SQLite's default). A page of
        // projects reads its rows from all over the file, each from a page
        // of its own, copied from the OS cache: a 4 KiB page copies a
        // quarter of what a 16 KiB one does, and random pages were 45%
        // faster (bench/RESULTS.md; 16 KiB had won on one page read over
        // and over). It must be set before the first write; an existing
        // file keeps its page size.
        setup.pragma_update(None, "page_size", PAGE_SIZE)?;
        let mode: String = setup
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .with_context(|| format!("{shown} is not a usable SQLite database"))?;
        anyhow::ensure!(
            mode.eq_ignore_ascii_case("wal"),
            "{shown}: cannot switch to WAL mode"
        );
        // Migrations that rebuild a table do it as SQLite documents, with
        // the foreign keys off (a table dropped and renamed in would count
        // as violating its children's keys otherwise); when any ran, the
        // keys are checked whole afterwards (seconds on a million
        // projects: not at every start).
        setup.pragma_update(None, "foreign_keys", "OFF")?;
        let report = embedded::migrations::runner()
            .run(&mut setup)
            .with_context(|| format!("cannot apply the schema migrations to {shown}"))?;
        for migration in report.applied_migrations() {
            tracing::info!(
                version = migration.version(),
                name = migration.name(),
                "applied migration"
            );
        }
        if !report.applied_migrations().is_empty() {
            let broken: Option<String> = setup
                .query_row("PRAGMA foreign_key_check", [], |row| row.get(0))
                .optional()?;
            anyhow::ensure!(
                broken.is_none(),
                "{shown}: rows of table {} refer to rows that do not exist",
                broken.unwrap_or_default()
            );
            give_back_free_pages(&setup);
        }
        drop(setup);

        let pool = |role: Role, size: u32| {
            r2d2::Pool::builder()
                .max_size(size)
                .connection_timeout(options.timeout)
                .test_on_check_out(true)
                .error_handler(Box::new(LogConnectErrors))
                .build(Connector {
                    path: path.to_owned(),
                    role,
                    busy_timeout: options.timeout,
                    clock: options.clock.clone(),
                })
                .with_context(|| format!("cannot open connections to {shown}"))
        };
        let watch = CommitWatch::open(path);
        if watch.is_none() {
            tracing::info!("the WAL index cannot be watched: every page is read from the file");
        }
        Ok(Self {
            readers: pool(Role::Reader, options.pool_size.max(1))?,
            writer: pool(Role::Writer, 1)?,
            watch,
        })
    }
}

impl Driver for SqliteDriver {
    /// Reads on a WAL file never wait on a writer, and a page is a few
    /// index and table pages, mostly in memory: a read runs right on the
    /// request's thread when a connection is free at once (a hop to the
    /// blocking pool costs more than the read). `try_get` never waits (a
    /// file gone missing makes it answer `None`, and the read then takes
    /// the blocking path, which reports the failure). Writes may wait for
    /// the write lock: they run on the blocking pool.
    fn run<Q, T>(
        self: &Arc<Self>,
        access: Access,
        input: Arc<Q>,
        work: Work<Q, T>,
    ) -> impl Future<Output = Result<T, StoreError>> + Send
    where
        Q: Send + Sync + 'static,
        T: Send + 'static,
    {
        let driver = self.clone();
        async move {
            if matches!(access, Access::Read(_))
                && let Some(mut connection) = driver.readers.try_get()
            {
                return work(&mut connection, &input).await;
            }
            let pool = match access {
                Access::Read(_) => driver.readers.clone(),
                Access::Write => driver.writer.clone(),
            };
            on_blocking_thread(move || checkout(&pool), input, work).await
        }
    }

    fn read_on_thread<Q, T>(
        self: &Arc<Self>,
        input: Arc<Q>,
        work: Work<Q, T>,
    ) -> impl Future<Output = Result<T, StoreError>> + Send
    where
        Q: Send + Sync + 'static,
        T: Send + 'static,
    {
        let pool = self.readers.clone();
        on_blocking_thread(move || checkout(&pool), input, work)
    }

    fn pool_use(&self) -> Vec<PoolUse> {
        let usage = |pool: &'static str, connections: &r2d2::Pool<Connector>| {
            let state = connections.state();
            PoolUse {
                pool,
                replica: None,
                max_size: connections.max_size() as usize,
                idle: state.idle_connections as usize,
                in_use: state.connections.saturating_sub(state.idle_connections) as usize,
                waiting: None,
            }
        };
        vec![
            usage("reader", &self.readers),
            usage("writer", &self.writer),
        ]
    }

    fn commit_mark(&self) -> Option<CommitMark> {
        self.watch.as_ref()?.mark()
    }
}

/// A migration that rebuilt a table leaves the old table's pages free in
/// the file: when they are a quarter of it or more, the file is rewritten
/// without them (once, at the upgrade). Not fatal: another process using
/// the file makes it wait for a later start.
fn give_back_free_pages(connection: &Connection) {
    let pages = connection.query_row(
        "SELECT freelist_count, page_count FROM pragma_freelist_count(), pragma_page_count()",
        [],
        |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)),
    );
    match pages {
        Ok((free, total)) if free * 4 >= total && free > 0 => {
            let started = Instant::now();
            match connection.execute_batch("VACUUM") {
                Ok(()) => tracing::info!(
                    free_pages = free,
                    seconds = started.elapsed().as_secs_f64(),
                    "the file was rewritten without the pages the migrations left free"
                ),
                Err(error) => tracing::warn!(
                    error = %StoreError::from(error),
                    "the pages the migrations left free stay in the file for now"
                ),
            }
        }
        Ok(_) => {}
        Err(error) => {
            tracing::warn!(error = %StoreError::from(error), "cannot read the file's free pages")
        }
    }
}

/// Adds the steps `statement` ran since it was last counted to
/// `proxydeck_sqlite_vm_steps_total`: what a page cost, seen from outside.
fn count_steps(statement: &rusqlite::Statement<'_>) {
    let steps = statement.reset_status(rusqlite::StatementStatus::VmStep);
    crate::metrics::sqlite_vm_steps(u64::try_from(steps).unwrap_or(0));
}

fn checkout(pool: &r2d2::Pool<Connector>) -> Result<r2d2::PooledConnection<Connector>, StoreError> {
    pool.get()
        .map_err(|e| StoreError::Unavailable(format!("no database connection: {e}")))
}

impl PooledSqlite {
    fn run_query(
        &mut self,
        sql: &str,
        runs: &[&[Param<'_>]],
        each: &mut EachRunRow<'_>,
    ) -> Result<(), StoreError> {
        if self.long_statements {
            off_the_worker(|| self.query_rows(sql, runs, each))
        } else {
            self.query_rows(sql, runs, each)
        }
    }

    /// Runs the statement once for each parameter list, prepared once.
    fn query_rows(
        &mut self,
        sql: &str,
        runs: &[&[Param<'_>]],
        each: &mut EachRunRow<'_>,
    ) -> Result<(), StoreError> {
        let mut statement = self.connection.prepare_cached(sql)?;
        let result = (|| {
            for (run, params) in runs.iter().enumerate() {
                let mut rows = statement.query(rusqlite::params_from_iter(*params))?;
                while let Some(row) = rows.next()? {
                    if !each(run, &SqliteRow(row))? {
                        break;
                    }
                }
            }
            Ok(())
        })();
        count_steps(&statement);
        result
    }

    fn run_execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let mut statement = self.connection.prepare_cached(sql)?;
        let changed = statement.execute(rusqlite::params_from_iter(params));
        count_steps(&statement);
        Ok(changed? as u64)
    }
}

/// SQLite's calls are quick blocking work: these futures finish at their
/// first poll.
#[async_trait]
impl Db for r2d2::PooledConnection<Connector> {
    async fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut EachRow<'_>,
    ) -> Result<(), StoreError> {
        self.run_query(sql, &[params], &mut |_, row| each(row))
    }

    async fn query_runs(
        &mut self,
        sql: &str,
        runs: &[&[Param<'_>]],
        each: &mut EachRunRow<'_>,
    ) -> Result<(), StoreError> {
        self.run_query(sql, runs, each)
    }

    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        self.run_execute(sql, params)
    }

    // Through the statement cache, like every other statement: a listing
    // opens and closes a transaction each time.
    async fn begin_read(&mut self) -> Result<(), StoreError> {
        self.run_execute("BEGIN", &[]).map(drop)
    }

    async fn begin_write(&mut self) -> Result<(), StoreError> {
        // IMMEDIATE takes the write lock now, not at the first write, so a
        // transaction never fails half-way for want of it.
        self.run_execute("BEGIN IMMEDIATE", &[]).map(drop)
    }

    async fn commit(&mut self) -> Result<(), StoreError> {
        self.run_execute("COMMIT", &[]).map(drop)
    }

    async fn rollback(&mut self) -> Result<(), StoreError> {
        self.run_execute("ROLLBACK", &[]).map(drop)
    }

    fn in_transaction(&self) -> bool {
        !self.connection.is_autocommit()
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    fn expect_long_statements(&mut self, long: bool) {
        self.long_statements = long;
    }
}

/// Runs `work`, which may take a millisecond or more, without holding up
/// the other requests of this worker thread: reads run on the request's
/// own thread (`SqliteDriver::run`), and tokio hands the thread's other
/// tasks to another thread meanwhile.
fn off_the_worker<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

struct SqliteRow<'a>(&'a rusqlite::Row<'a>);

impl SqliteRow<'_> {
    fn text_ref(&self, column: usize) -> Result<rusqlite::types::ValueRef<'_>, StoreError> {
        Ok(self.0.get_ref(column)?)
    }
}

fn column_error(column: usize) -> impl Fn(rusqlite::types::FromSqlError) -> StoreError {
    move |e| StoreError::Internal(format!("SQLite column {column}: {e}"))
}

impl Row for SqliteRow<'_> {
    fn int(&self, column: usize) -> Result<i64, StoreError> {
        Ok(self.0.get(column)?)
    }

    fn opt_int(&self, column: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.0.get(column)?)
    }

    fn text(&self, column: usize) -> Result<String, StoreError> {
        Ok(self.0.get(column)?)
    }

    fn append_bytes(&self, column: usize, out: &mut Vec<u8>) -> Result<(), StoreError> {
        out.extend_from_slice(
            self.text_ref(column)?
                .as_bytes()
                .map_err(column_error(column))?,
        );
        Ok(())
    }

    fn str(&self, column: usize) -> Result<&str, StoreError> {
        self.text_ref(column)?
            .as_str()
            .map_err(column_error(column))
    }

    fn append_text(&self, column: usize, out: &mut String) -> Result<(), StoreError> {
        out.push_str(self.str(column)?);
        Ok(())
    }

    fn boolean(&self, column: usize) -> Result<bool, StoreError> {
        Ok(self.0.get(column)?)
    }

    fn is_null(&self, column: usize) -> Result<bool, StoreError> {
        Ok(self.text_ref(column)? == ValueRef::Null)
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Param::Int(value) | Param::OptInt(Some(value)) => {
                ToSqlOutput::Owned(Value::Integer(value))
            }
            Param::OptInt(None) | Param::OptText(None) => ToSqlOutput::Owned(Value::Null),
            Param::Text(text) | Param::OptText(Some(text)) => {
                ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes()))
            }
            Param::Bool(flag) => ToSqlOutput::Owned(Value::Integer(flag.into())),
            Param::Bytes(bytes) => ToSqlOutput::Borrowed(ValueRef::Blob(bytes)),
            Param::TextList(_) | Param::IntList(_) => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    "SQLite has no list type".into(),
                ));
            }
        })
    }
}

/// Store errors from SQLite, in words that hold no SQL text.
impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        match &error {
            rusqlite::Error::SqliteFailure(failure, message) => {
                let text = format!(
                    "SQLite {:?} ({}): {}",
                    failure.code,
                    failure.extended_code,
                    message.as_deref().unwrap_or("no detail")
                );
                match failure.code {
                    ErrorCode::ConstraintViolation
                        if matches!(
                            failure.extended_code,
                            rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                                | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                        ) =>
                    {
                        Self::Conflict(Conflict::Unique(text))
                    }
                    ErrorCode::DatabaseBusy
                    | ErrorCode::DatabaseLocked
                    | ErrorCode::CannotOpen
                    | ErrorCode::SystemIoFailure
                    | ErrorCode::DiskFull
                    | ErrorCode::NotADatabase
                    | ErrorCode::DatabaseCorrupt
                    | ErrorCode::FileLockingProtocolFailed
                    | ErrorCode::PermissionDenied
                    | ErrorCode::ReadOnly
                    | ErrorCode::OutOfMemory => Self::Unavailable(text),
                    _ => Self::Internal(text),
                }
            }
            rusqlite::Error::SqlInputError { .. } => {
                Self::Internal("SQLite rejected a statement".into())
            }
            other => Self::Internal(format!("SQLite: {other}")),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// `query_only`: a reader can never write, even by mistake.
    Reader,
    Writer,
}

/// Opens pooled connections, and retires them when the database file at
/// the path is no longer the one they opened (moved away or deleted): the
/// service then answers 503 instead of serving a file that is gone, and
/// serves again once the file is back.
pub struct Connector {
    path: PathBuf,
    role: Role,
    busy_timeout: Duration,
    /// Times the file checks (tests move it rather than wait).
    clock: Clock,
}

pub struct PooledSqlite {
    connection: Connection,
    file: FileIdentity,
    checked_at: Instant,
    /// Statements may take milliseconds now (`Db::expect_long_statements`).
    long_statements: bool,
    /// The current write's deadline (`Db::set_deadline`).
    deadline: Option<Instant>,
}

/// How often a pooled connection checks that its file is still in place
/// (on the store's clock).
pub const FILE_CHECK_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the database file is gone: {0}")]
    Missing(#[from] std::io::Error),
    #[error("the database file was replaced or moved")]
    Replaced,
}

impl r2d2::ManageConnection for Connector {
    type Connection = PooledSqlite;
    type Error = ConnectError;

    fn connect(&self) -> Result<PooledSqlite, ConnectError> {
        // No CREATE flag: a file that vanished must not be re-created empty.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(&self.path, flags)?;
        connection.busy_timeout(self.busy_timeout)?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        match self.role {
            Role::Reader => connection.pragma_update(None, "query_only", "ON")?,
            // Large imports keep their scratch data on disk, not in memory.
            Role::Writer => connection.pragma_update(None, "temp_store", "FILE")?,
        }
        connection.set_prepared_statement_cache_capacity(64);
        // The query planner's stability guarantee: plans never depend on
        // bound values. Without it SQLite reads a bound LIMIT (and values
        // that could match a partial index) while planning, and so throws
        // the cached statement away and plans it again at every execution.
        connection.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )?;
        Ok(PooledSqlite {
            connection,
            file: FileIdentity::of(&self.path)?,
            checked_at: self.clock.instant(),
            long_statements: false,
            deadline: None,
        })
    }

    fn is_valid(&self, pooled: &mut PooledSqlite) -> Result<(), ConnectError> {
        let now = self.clock.instant();
        if now.duration_since(pooled.checked_at) < FILE_CHECK_INTERVAL {
            return Ok(());
        }
        if FileIdentity::of(&self.path)? != pooled.file {
            return Err(ConnectError::Replaced);
        }
        pooled.checked_at = now;
        Ok(())
    }

    fn has_broken(&self, _: &mut PooledSqlite) -> bool {
        false
    }
}

/// Which file a path names: device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileIdentity(u64, u64);

impl FileIdentity {
    fn of(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let metadata = std::fs::metadata(path)?;
        Ok(Self(metadata.dev(), metadata.ino()))
    }
}

#[derive(Debug)]
struct LogConnectErrors;

impl r2d2::HandleError<ConnectError> for LogConnectErrors {
    fn handle_error(&self, error: ConnectError) {
        tracing::warn!(%error, "database connection failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The opcodes of `sql`'s plan on a store of the current schema, with
    /// foreign keys on as the service runs them.
    fn opcodes(sql: &str) -> Vec<String> {
        let folder = tempfile::tempdir().unwrap();
        let mut connection = Connection::open(folder.path().join("store.db")).unwrap();
        embedded::migrations::runner().run(&mut connection).unwrap();
        connection
            .pragma_update(None, "foreign_keys", "ON")
            .unwrap();
        let mut plan = connection.prepare(&format!("EXPLAIN {sql}")).unwrap();
        // Each statement here takes one parameter (an organization id).
        plan.query_map(["org-a"], |row| row.get::<_, String>(1))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// A write's organization lock checks no foreign key: SQLite would
    /// visit every project (and membership) of the organization.
    #[test]
    fn the_organization_lock_checks_no_foreign_key() {
        let foreign_key_checks = |sql| {
            opcodes(sql)
                .into_iter()
                // The opcodes that visit referencing rows; `FkCheck` (one
                // test of a counter, which RETURNING adds) visits none.
                .filter(|op| op == "FkCounter" || op == "FkIfZero")
                .count()
        };
        assert_eq!(
            foreign_key_checks(crate::store::operations::write_steps::LOCK_ORGANIZATION),
            0
        );
        // What the lock must not be: its key set to itself is checked.
        assert!(foreign_key_checks("UPDATE organizations SET id = id WHERE id = ?1") > 0);
    }

    /// Projects of two organizations, written interleaved on a store of
    /// the schema before V4: `(id, organization number)` by rowid.
    fn stored(path: &Path) -> Vec<(String, i64)> {
        let connection = Connection::open(path).unwrap();
        let mut statement = connection
            .prepare("SELECT id, organization_number FROM projects ORDER BY rowid")
            .unwrap();
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn the_upgrade_stores_each_organizations_projects_together_and_new_ones_join_them() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("store.db");
        let mut old = Connection::open(&path).unwrap();
        embedded::migrations::runner()
            .set_target(refinery::Target::Version(3))
            .run(&mut old)
            .unwrap();
        old.execute_batch(
            "INSERT INTO organizations (id, name, created_at) VALUES ('org-a', 'A', 1), ('org-b', 'B', 2);
             INSERT INTO projects (id, organization_id, organization_number, created_at, updated_at, body)
             VALUES ('p1', 'org-a', 0, 10, 10, '{}'), ('p2', 'org-b', 1, 11, 11, '{}'),
                    ('p3', 'org-a', 0, 12, 12, '{}'), ('p4', 'org-b', 1, 13, 13, '{}'),
                    ('p0', 'org-b', 1, 9, 9, '{}');",
        )
        .unwrap();
        drop(old);

        let driver = SqliteDriver::open(&path, &StoreOptions::default()).unwrap();
        let by_organization = [("p1", 0), ("p3", 0), ("p0", 1), ("p2", 1), ("p4", 1)];
        let expected: Vec<(String, i64)> = by_organization
            .iter()
            .map(|(id, n)| (id.to_string(), *n))
            .collect();
        assert_eq!(stored(&path), expected);

        // A new project of the first organization goes after its last one,
        // before the second organization's; an existing one stays put.
        let mut writer = driver.writer.get().unwrap();
        let upsert = (dialect::SQLITE.project_upsert)();
        for (id, created_at) in [("p5", 14), ("p2", 15)] {
            let organization = if id == "p5" { "org-a" } else { "org-b" };
            let number = i64::from(id == "p2");
            writer
                .run_execute(
                    upsert,
                    &[
                        Param::Text(id),
                        Param::Text(organization),
                        Param::Int(created_at),
                        Param::Int(created_at),
                        Param::Text("{}"),
                        Param::Int(number),
                        Param::Text(""),
                    ],
                )
                .unwrap();
        }
        let ids: Vec<String> = stored(&path).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["p1", "p3", "p5", "p0", "p2", "p4"]);
    }

    /// V9 keeps every idempotency key of the store it upgrades, with an
    /// empty target: a createProject key made before goes on replaying.
    #[test]
    fn the_upgrade_keeps_idempotency_keys_with_an_empty_target() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("store.db");
        let mut old = Connection::open(&path).unwrap();
        embedded::migrations::runner()
            .set_target(refinery::Target::Version(8))
            .run(&mut old)
            .unwrap();
        old.execute(
            "INSERT INTO idempotency_keys
               (user_id, operation, key, digest, status, answer, version, created_at)
             VALUES ('u1', 'createProject', 'k', 'd', 200, '{}', 1, 5)",
            [],
        )
        .unwrap();
        drop(old);
        SqliteDriver::open(&path, &StoreOptions::default()).unwrap();
        let kept: (String, String, String, String) = Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT user_id, operation, target, key FROM idempotency_keys",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
            )
            .unwrap();
        assert_eq!(
            kept,
            (
                "u1".into(),
                "createProject".into(),
                String::new(),
                "k".into()
            )
        );
    }
}
