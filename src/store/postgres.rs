//! The PostgreSQL store's driver: several stateless `proxydeck serve`
//! processes can share one database.
//!
//! Like the SQLite driver, it pools blocking connections (the `postgres`
//! crate, the synchronous face of tokio-postgres) and the store runs each
//! call on tokio's blocking pool, so both backends share every line of the
//! store's logic (`store::sql`). Statements are prepared once per
//! connection and cached.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, NoTls, Statement};

use super::sql::{Db, Driver, Param, Row, SqlStore};
use super::{StoreError, StoreOptions};

mod embedded {
    refinery::embed_migrations!("migrations/postgres");
}

/// Key of the advisory lock that lets one instance at a time migrate.
const MIGRATION_LOCK: i64 = 0x0070_726f_7879_646b; // "proxydk"

/// Connects to the database `url` names and applies the migrations it
/// lacks (one instance at a time, under an advisory lock).
pub async fn open(url: String, options: StoreOptions) -> anyhow::Result<SqlStore<PostgresDriver>> {
    let timeout = options.timeout;
    let driver =
        tokio::task::spawn_blocking(move || PostgresDriver::open(&url, &options)).await??;
    Ok(SqlStore::new(driver, timeout))
}

pub struct PostgresDriver {
    /// Always `Some` but while being dropped.
    pool: Option<r2d2::Pool<Connector>>,
}

/// A `postgres::Client` closes by blocking on its own runtime, which may
/// not happen on an async thread (where the store is dropped when the
/// service stops): the connections are closed on a thread of their own.
impl Drop for PostgresDriver {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            let _ = std::thread::spawn(move || drop(pool)).join();
        }
    }
}

impl PostgresDriver {
    fn open(url: &str, options: &StoreOptions) -> anyhow::Result<Self> {
        // The URL may hold a password: errors never repeat it.
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| anyhow::anyhow!("the PostgreSQL URL is not valid: {e}"))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("proxydeck");
        }
        // A server that vanishes without closing the connection (a network
        // partition, a crashed host) is noticed instead of waited on forever.
        config
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30))
            .tcp_user_timeout(options.timeout.max(Duration::from_secs(5)));

        let mut client = config
            .connect(NoTls)
            .context("cannot connect to PostgreSQL")?;
        migrate(&mut client)?;
        drop(client);

        let pool = r2d2::Pool::builder()
            .max_size(options.pool_size.max(1))
            .connection_timeout(options.timeout)
            // A stale connection shows itself on first use; the store then
            // retries reads once on another (see `SqlStore::read`).
            .test_on_check_out(false)
            .error_handler(Box::new(LogConnectErrors))
            .build(Connector { config })
            .context("cannot open connections to PostgreSQL")?;
        Ok(Self { pool: Some(pool) })
    }
}

fn migrate(client: &mut Client) -> anyhow::Result<()> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .context("cannot take the migration lock")?;
    let report = embedded::migrations::runner().run(client);
    let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    let report = report.context("cannot apply the schema migrations to PostgreSQL")?;
    for migration in report.applied_migrations() {
        tracing::info!(
            version = migration.version(),
            name = migration.name(),
            "applied migration"
        );
    }
    Ok(())
}

impl Driver for PostgresDriver {
    type Connection = r2d2::PooledConnection<Connector>;

    fn reader(&self) -> Result<Self::Connection, StoreError> {
        self.writer()
    }

    fn writer(&self) -> Result<Self::Connection, StoreError> {
        self.pool
            .as_ref()
            .expect("the pool lives as long as the driver")
            .get()
            .map_err(|e| StoreError::Unavailable(format!("no database connection: {e}")))
    }
}

/// Prepared statements kept per connection, at most this many.
const STATEMENT_CACHE: usize = 128;

pub struct PooledPostgres {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl PooledPostgres {
    /// The prepared form of `sql` (written with `?N` placeholders).
    fn statement(&mut self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(&dollar_placeholders(sql))?;
        if self.statements.len() >= STATEMENT_CACHE {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }
}

/// `?N` (SQLite's numbered placeholders) become `$N`, outside quotes.
fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c == '?' && !quoted && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

fn pg_param<'a>(param: &'a Param<'a>) -> &'a (dyn ToSql + Sync) {
    match param {
        Param::Int(value) => value,
        Param::OptInt(value) => value,
        Param::Text(value) => value,
        Param::Bool(value) => value,
        Param::Bytes(value) => value,
    }
}

impl Db for r2d2::PooledConnection<Connector> {
    fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        use postgres::fallible_iterator::FallibleIterator as _;
        let statement = self.statement(sql)?;
        // Rows stream in as they are read: an export never holds them all.
        let mut rows = self
            .client
            .query_raw(&statement, params.iter().map(pg_param))?;
        while let Some(row) = rows.next()? {
            if !each(&PostgresRow(&row))? {
                break;
            }
        }
        Ok(())
    }

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let statement = self.statement(sql)?;
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(pg_param).collect();
        Ok(self.client.execute(&statement, &params)?)
    }

    fn begin_read(&mut self) -> Result<(), StoreError> {
        // One snapshot for every statement of the transaction.
        Ok(self
            .client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?)
    }

    fn begin_write(&mut self) -> Result<(), StoreError> {
        Ok(self.client.batch_execute("BEGIN")?)
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        Ok(self.client.batch_execute("COMMIT")?)
    }

    fn rollback(&mut self) -> Result<(), StoreError> {
        Ok(self.client.batch_execute("ROLLBACK")?)
    }
}

struct PostgresRow<'a>(&'a postgres::Row);

impl Row for PostgresRow<'_> {
    fn int(&self, column: usize) -> Result<i64, StoreError> {
        Ok(self.0.try_get(column)?)
    }

    fn opt_int(&self, column: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.0.try_get(column)?)
    }

    fn text(&self, column: usize) -> Result<String, StoreError> {
        Ok(self.0.try_get(column)?)
    }

    fn append_bytes(&self, column: usize, out: &mut Vec<u8>) -> Result<(), StoreError> {
        out.extend_from_slice(self.0.try_get::<_, &str>(column)?.as_bytes());
        Ok(())
    }

    fn append_text(&self, column: usize, out: &mut String) -> Result<(), StoreError> {
        out.push_str(self.0.try_get::<_, &str>(column)?);
        Ok(())
    }

    fn boolean(&self, column: usize) -> Result<bool, StoreError> {
        Ok(self.0.try_get(column)?)
    }
}

/// Store errors from PostgreSQL: a lost or refused connection is
/// `Unavailable`, a uniqueness violation `Conflict`. Messages hold the
/// server's words (never SQL text) and go to logs only.
impl From<postgres::Error> for StoreError {
    fn from(error: postgres::Error) -> Self {
        let Some(server) = error.as_db_error() else {
            return Self::Unavailable(format!("PostgreSQL: {error}"));
        };
        let text = format!("PostgreSQL {}: {}", server.code().code(), server.message());
        let code = server.code();
        if *code == SqlState::UNIQUE_VIOLATION {
            Self::Conflict(text)
        } else if code.code().starts_with("08")
            || code.code().starts_with("57P")
            || code.code().starts_with("53")
            || *code == SqlState::READ_ONLY_SQL_TRANSACTION
        {
            // Connection failures, shutdowns, lack of resources, a standby.
            Self::Unavailable(text)
        } else {
            Self::Internal(text)
        }
    }
}

/// Opens pooled connections to the configured server.
pub struct Connector {
    config: postgres::Config,
}

impl r2d2::ManageConnection for Connector {
    type Connection = PooledPostgres;
    type Error = postgres::Error;

    fn connect(&self) -> Result<PooledPostgres, postgres::Error> {
        Ok(PooledPostgres {
            client: self.config.connect(NoTls)?,
            statements: HashMap::new(),
        })
    }

    fn is_valid(&self, pooled: &mut PooledPostgres) -> Result<(), postgres::Error> {
        pooled.client.simple_query("").map(drop)
    }

    fn has_broken(&self, pooled: &mut PooledPostgres) -> bool {
        pooled.client.is_closed()
    }
}

#[derive(Debug)]
struct LogConnectErrors;

impl r2d2::HandleError<postgres::Error> for LogConnectErrors {
    fn handle_error(&self, error: postgres::Error) {
        tracing::warn!(%error, "PostgreSQL connection failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_dollars_outside_quotes() {
        assert_eq!(
            dollar_placeholders("SELECT a FROM t WHERE b = ?1 AND c = '?2' AND d = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c = '?2' AND d = $12"
        );
        assert_eq!(dollar_placeholders("SELECT '?'"), "SELECT '?'");
    }
}
