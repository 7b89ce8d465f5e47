//! The PostgreSQL store's driver: several stateless `proxydeck serve`
//! processes can share one database.
//!
//! It talks to PostgreSQL with tokio-postgres, awaiting the network on the
//! request's own task (no hop to a blocking thread). Connections are of
//! two kinds:
//!
//! - shared clients, for statements outside transactions (most listings
//!   are one statement): many requests use one at once and their
//!   statements are pipelined on it, so a few connections serve many
//!   concurrent requests;
//! - exclusive connections, from a pool, for transactions: a connection
//!   is checked out at `BEGIN` and given back at `COMMIT`/`ROLLBACK`.
//!
//! Statements are prepared once per connection and cached, and sessions ask
//! for generic plans (`plan_cache_mode = force_generic_plan`): a listing's
//! plan never depends on its values, and PostgreSQL otherwise plans each of
//! the first executions of a prepared statement anew (measured in
//! bench/RESULTS.md).
//!
//! Through a transaction pooler (`Pooler::Transaction`) neither holds: a
//! server connection serves whichever client's transaction comes, so
//! statements go unnamed, parsed with each execution in its one round
//! trip ([`Statements::Unnamed`]), no session option is sent, and the
//! migrations, under their session-level advisory lock, take a direct
//! connection.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_trait::async_trait;
use deadpool::managed::{self, Metrics, Object, PoolError, RecycleError, RecycleResult};
use futures_util::TryStreamExt as _;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, Config, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::metrics::{PoolUse, ReplicaUse};
use crate::store::driver::caller;
use crate::store::driver::outage::Outage;
use crate::store::driver::{Access, Driver, Freshness, Work, on_blocking_thread};
use crate::store::engine::deadline;
use crate::store::error::{Conflict, StoreError};
use crate::store::options::{Pooler, StoreOptions};
use crate::store::sql::db::{Db, EachRow, Param, Row};

pub mod dialect;
mod history;
mod replicas;
mod settings;

use replicas::Replicas;

pub use settings::{PostgresSettings, SslMode};

mod embedded {
    refinery::embed_migrations!("migrations/postgres");
}

/// Key of the advisory lock that lets one instance at a time migrate.
const MIGRATION_LOCK: i64 = 0x0070_726f_7879_646b; // "proxydk"

/// Connects to the database `url` names and applies the migrations it
/// lacks (one instance at a time, under an advisory lock).
pub async fn open(url: String, options: StoreOptions) -> anyhow::Result<PostgresDriver> {
    PostgresDriver::open(&url, &options).await
}

/// The servers `config` names, as `host:port` or a Unix socket's path, in
/// the order they are tried (nothing else of the URL: it may hold a
/// password).
fn servers(config: &Config) -> String {
    let (hosts, addresses, ports) = (
        config.get_hosts(),
        config.get_hostaddrs(),
        config.get_ports(),
    );
    let shown: Vec<String> = (0..hosts.len().max(addresses.len()))
        .map(|i| {
            let port = match ports {
                [one] => *one,
                each => each.get(i).copied().unwrap_or(5432),
            };
            match (addresses.get(i), hosts.get(i)) {
                (Some(address), _) => format!("{address}:{port}"),
                (None, Some(Host::Tcp(host))) => format!("{host}:{port}"),
                (None, Some(Host::Unix(folder))) => {
                    format!("{}/.s.PGSQL.{port}", folder.display())
                }
                (None, None) => unreachable!("i is below the longer list's length"),
            }
        })
        .collect();
    if shown.is_empty() {
        "no host (give host= or hostaddr=)".into()
    } else {
        shown.join(", ")
    }
}

/// How `--db-pool-size` connections are split: half (at least one) exclusive
/// for transactions, the rest (at least one) shared by single statements.
fn connection_split(pool_size: u32) -> (usize, usize) {
    let exclusive = (pool_size as usize / 2).max(1);
    let shared = (pool_size as usize).saturating_sub(exclusive).max(1);
    (exclusive, shared)
}

pub struct PostgresDriver {
    primary: Arc<Server>,
    /// `None` when every read goes to the primary.
    replicas: Option<Arc<Replicas>>,
}

/// One server's connections: shared clients for single statements, an
/// exclusive pool for transactions.
pub(crate) struct Server {
    connector: Connector,
    shared: Vec<SharedClient>,
    next_shared: AtomicUsize,
    exclusive: managed::Pool<Connector>,
}

impl PostgresDriver {
    async fn open(url: &str, options: &StoreOptions) -> anyhow::Result<Self> {
        let statements = match &options.pooler {
            Pooler::Direct => Statements::Prepared,
            Pooler::Transaction { .. } => Statements::Unnamed,
        };
        let (connector, mut setup) = match &options.pooler {
            Pooler::Direct => {
                let connector = Connector::new(url, options, statements)?;
                let setup = connector.connect_at_start().await?;
                (connector, setup)
            }
            Pooler::Transaction { direct_url } => {
                let direct = Connector::new(direct_url, options, Statements::Prepared)?;
                let setup = direct.connect_at_start().await?;
                (Connector::new(url, options, statements)?, setup)
            }
        };
        migrate(&mut setup.client).await?;
        drop(setup);
        let primary = Arc::new(Server::open(connector, options).await?);
        let replicas = Replicas::open(&options.replicas, options, statements, &primary)?;
        Ok(Self { primary, replicas })
    }

    /// Notes the position of the write the current caller just made, for
    /// its next reads (only when reading from replicas).
    async fn note_write(&self) {
        if let Some(replicas) = &self.replicas
            && let Some(caller) = caller::current()
        {
            replicas.wrote(caller, &self.primary).await;
        }
    }
}

impl Server {
    /// The server's connections, the shared ones made now (their failure
    /// is the operator's message).
    async fn open(connector: Connector, options: &StoreOptions) -> anyhow::Result<Self> {
        let server = Self::lazy(connector, options)?;
        for slot in &server.shared {
            let connection = server.connector.connect_at_start().await?;
            *slot.current.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(Arc::new(connection));
        }
        Ok(server)
    }

    /// The server's connections, each made when first needed.
    fn lazy(connector: Connector, options: &StoreOptions) -> anyhow::Result<Self> {
        let (exclusive, shared) = connection_split(options.pool_size);
        let shared = (0..shared)
            .map(|_| SharedClient {
                current: Mutex::new(None),
                reconnect: tokio::sync::Mutex::new(()),
            })
            .collect();
        let pool = managed::Pool::builder(connector.clone())
            .max_size(exclusive)
            .wait_timeout(Some(options.timeout))
            .create_timeout(Some(options.timeout))
            .recycle_timeout(Some(options.timeout))
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .context("cannot make the PostgreSQL connection pool")?;
        Ok(Self {
            connector,
            shared,
            next_shared: AtomicUsize::new(0),
            exclusive: pool,
        })
    }

    /// Where the server names itself in logs and metrics (no password).
    pub(crate) fn name(&self) -> String {
        servers(&self.connector.config)
    }

    /// A shared client (round robin), connected anew if it was lost.
    async fn shared_connection(&self) -> Result<Arc<PgConnection>, StoreError> {
        let slot =
            &self.shared[self.next_shared.fetch_add(1, Ordering::Relaxed) % self.shared.len()];
        if let Some(connection) = slot.live() {
            return Ok(connection);
        }
        // One task reconnects; the others wait for it, then use its client.
        let _reconnecting = slot.reconnect.lock().await;
        if let Some(connection) = slot.live() {
            return Ok(connection);
        }
        let connection = Arc::new(self.connector.connect().await?);
        *slot.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(connection.clone());
        Ok(connection)
    }

    /// An exclusive connection, waiting at most the configured timeout.
    async fn checkout(&self) -> Result<Object<Connector>, StoreError> {
        self.exclusive.get().await.map_err(|error| match error {
            PoolError::Backend(error) => error,
            PoolError::Timeout(_) => {
                StoreError::Unavailable("no database connection in time".into())
            }
            other => StoreError::Unavailable(format!("no database connection: {other}")),
        })
    }

    /// How its pools are used now, named for `replica` when it is one.
    /// Shared clients carry many requests' statements at once, so each
    /// live one counts as in use; the exclusive pool says what it holds.
    pub(crate) fn pool_use(&self, replica: Option<&str>) -> impl Iterator<Item = PoolUse> {
        let live = self
            .shared
            .iter()
            .filter(|slot| slot.live().is_some())
            .count();
        let exclusive = self.exclusive.status();
        [
            PoolUse {
                pool: "shared",
                replica: replica.map(str::to_owned),
                max_size: self.shared.len(),
                idle: 0,
                in_use: live,
                waiting: None,
            },
            PoolUse {
                pool: "exclusive",
                replica: replica.map(str::to_owned),
                max_size: exclusive.max_size,
                idle: exclusive.available,
                in_use: exclusive.size.saturating_sub(exclusive.available),
                waiting: Some(exclusive.waiting),
            },
        ]
        .into_iter()
    }

    /// The one `bigint` a statement without parameters answers, sent
    /// unprepared (fit for a transaction pooler too); `None` for NULL.
    pub(crate) async fn number(&self, sql: &str) -> Result<Option<i64>, StoreError> {
        let connection = self.shared_connection().await?;
        let rows = connection.client.query_typed(sql, &[]).await?;
        let row = rows
            .first()
            .ok_or_else(|| StoreError::Internal("a one-number statement answered no row".into()))?;
        Ok(row.try_get(0)?)
    }
}

async fn migrate(client: &mut Client) -> anyhow::Result<()> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await
        .context("cannot take the migration lock")?;
    let runner = embedded::migrations::runner();
    let report = async {
        // A history recorded before PostgreSQL's versions were SQLite's.
        history::renumber(client, runner.get_migrations()).await?;
        runner
            .run_async(client)
            .await
            .context("cannot apply the schema migrations to PostgreSQL")
    }
    .await;
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    let report = report?;
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
    /// A read goes to a replica when one is current enough for it
    /// (`replicas.rs`), and to the primary when none is or the one chosen
    /// fails; everything else goes to the primary.
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
            // A read that could go to a replica is counted where it was
            // answered: the primary's when the replica chosen failed it.
            let may_use_replica = driver.replicas.is_some()
                && matches!(access, Access::Read(freshness) if freshness != Freshness::Latest);
            if let (Access::Read(freshness), Some(replicas)) = (access, &driver.replicas)
                && let Some(replica) = replicas.choose(freshness)
            {
                let mut session = PgSession::new(replica.server().clone(), None);
                match work(&mut session, &input).await {
                    Err(failure @ (StoreError::Unavailable(_) | StoreError::Down)) => {
                        replica.failed(&failure);
                    }
                    // A statement the standby cancelled (a conflict with
                    // recovery): the primary answers it.
                    Err(StoreError::Internal(_)) => {}
                    answer => {
                        crate::metrics::read_served(true);
                        return answer;
                    }
                }
            }
            let mut session = PgSession::new(driver.primary.clone(), None);
            let answer = work(&mut session, &input).await;
            if may_use_replica {
                crate::metrics::read_served(false);
            }
            if access == Access::Write && answer.is_ok() {
                driver.note_write().await;
            }
            answer
        }
    }

    fn follows_callers(&self) -> bool {
        self.replicas.is_some()
    }

    async fn freshness(self: &Arc<Self>) -> Freshness {
        // Without replicas every read is the primary's: no caller to ask.
        let Some(replicas) = &self.replicas else {
            return Freshness::Any;
        };
        match caller::current() {
            Some(caller) => replicas.freshness_for(&caller).await,
            None => Freshness::Any,
        }
    }

    /// The job keeps one exclusive connection from start to end.
    fn read_on_thread<Q, T>(
        self: &Arc<Self>,
        input: Arc<Q>,
        work: Work<Q, T>,
    ) -> impl Future<Output = Result<T, StoreError>> + Send
    where
        Q: Send + Sync + 'static,
        T: Send + 'static,
    {
        let primary = self.primary.clone();
        async move {
            let connection = primary.checkout().await?;
            let session = PgSession::new(primary, Some(connection));
            on_blocking_thread(move || Ok(session), input, work).await
        }
    }

    fn replica_use(&self) -> Vec<ReplicaUse> {
        self.replicas
            .as_ref()
            .map_or_else(Vec::new, |replicas| replicas.in_use())
    }

    /// The primary's pools, then each replica's.
    fn pool_use(&self) -> Vec<PoolUse> {
        let mut pools: Vec<PoolUse> = self.primary.pool_use(None).collect();
        if let Some(replicas) = &self.replicas {
            pools.extend(replicas.pool_use());
        }
        pools
    }
}

/// One slot of a shared client.
struct SharedClient {
    current: Mutex<Option<Arc<PgConnection>>>,
    /// Held by the one task that connects the slot anew.
    reconnect: tokio::sync::Mutex<()>,
}

impl SharedClient {
    fn live(&self) -> Option<Arc<PgConnection>> {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current.as_ref().filter(|c| !c.client.is_closed()).cloned()
    }
}

/// The store's work on PostgreSQL: single statements go to a shared
/// client; a transaction takes an exclusive connection for its duration.
pub struct PgSession {
    /// The server the session's statements go to.
    server: Arc<Server>,
    exclusive: Option<Object<Connector>>,
    /// The exclusive connection stays for the whole session (a job that
    /// checked it out up front).
    pinned: bool,
    in_transaction: bool,
    /// Statements outside a transaction run on an exclusive connection of
    /// their own rather than on a shared client: a statement that may run
    /// for milliseconds (a page merged from hundreds of organizations) then
    /// holds up no cheap statement pipelined behind it on a shared client
    /// (`Db::expect_long_statements`); such statements wait for each other
    /// instead, for the exclusive connections.
    apart: bool,
    /// The current write's deadline (`Db::set_deadline`).
    deadline: Option<Instant>,
}

impl PgSession {
    fn new(server: Arc<Server>, pinned: Option<Object<Connector>>) -> Self {
        Self {
            server,
            pinned: pinned.is_some(),
            exclusive: pinned,
            in_transaction: false,
            apart: false,
            deadline: None,
        }
    }

    async fn begin(&mut self, sql: &str) -> Result<(), StoreError> {
        let connection = match self.exclusive.take() {
            Some(connection) => connection,
            None => self.server.checkout().await?,
        };
        let connection = self.exclusive.insert(connection);
        self.in_transaction = true;
        connection.client.batch_execute(sql).await?;
        Ok(())
    }

    async fn end(&mut self, sql: &str) -> Result<(), StoreError> {
        let Some(connection) = &self.exclusive else {
            return Err(StoreError::Internal("no transaction to end".into()));
        };
        let ended = connection.client.batch_execute(sql).await;
        // Whether it succeeded or not, the transaction is over (a failed
        // COMMIT rolls back; a broken connection is not reused).
        self.in_transaction = false;
        if !self.pinned {
            self.exclusive = None;
        }
        Ok(ended?)
    }
}

/// A session dropped in a transaction (its request timed out) must not give
/// the connection back with the transaction open: it is closed instead.
impl Drop for PgSession {
    fn drop(&mut self) {
        if self.in_transaction
            && let Some(connection) = self.exclusive.take()
        {
            drop(Object::take(connection));
        }
    }
}

#[async_trait]
impl Db for PgSession {
    async fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut EachRow<'_>,
    ) -> Result<(), StoreError> {
        match &self.exclusive {
            Some(connection) => connection.query(sql, params, each).await,
            None if self.apart => {
                let connection = self.server.checkout().await?;
                connection.query(sql, params, each).await
            }
            None => {
                let shared = self.server.shared_connection().await?;
                shared.query(sql, params, each).await
            }
        }
    }

    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        match &self.exclusive {
            Some(connection) => connection.execute(sql, params).await,
            None => {
                let shared = self.server.shared_connection().await?;
                shared.execute(sql, params).await
            }
        }
    }

    async fn begin_read(&mut self) -> Result<(), StoreError> {
        // One snapshot for every statement of the transaction.
        self.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
    }

    async fn begin_write(&mut self) -> Result<(), StoreError> {
        match self.deadline {
            // No statement of the write outlasts its deadline (a lock
            // waited for included): cancelled, it fails the transaction,
            // which rolls back. One round trip with the BEGIN.
            Some(deadline) => {
                let left = deadline::millis_left(deadline);
                self.begin(&format!("BEGIN; SET LOCAL statement_timeout = {left}"))
                    .await
            }
            None => self.begin("BEGIN").await,
        }
    }

    async fn commit(&mut self) -> Result<(), StoreError> {
        self.end("COMMIT").await
    }

    async fn rollback(&mut self) -> Result<(), StoreError> {
        self.end("ROLLBACK").await
    }

    fn in_transaction(&self) -> bool {
        self.in_transaction
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    fn expect_long_statements(&mut self, long: bool) {
        self.apart = long;
    }
}

/// Prepared statements kept per connection, at most this many.
const STATEMENT_CACHE: usize = 128;

/// A connection with its prepared statements.
pub struct PgConnection {
    client: Client,
    /// `None` when statements are not prepared ([`Statements::Unnamed`]).
    prepared: Option<Mutex<HashMap<String, Statement>>>,
}

impl PgConnection {
    /// The prepared form of `sql` (written with `?N` placeholders).
    async fn statement(
        &self,
        prepared: &Mutex<HashMap<String, Statement>>,
        sql: &str,
    ) -> Result<Statement, StoreError> {
        let cached = prepared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(sql)
            .cloned();
        if let Some(statement) = cached {
            return Ok(statement);
        }
        let statement = self.client.prepare(&dollar_placeholders(sql)).await?;
        let mut statements = prepared.lock().unwrap_or_else(PoisonError::into_inner);
        if statements.len() >= STATEMENT_CACHE {
            statements.clear();
        }
        statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    async fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut EachRow<'_>,
    ) -> Result<(), StoreError> {
        // Rows stream in as they are read: an export never holds them all.
        let rows = match &self.prepared {
            Some(prepared) => {
                let statement = self.statement(prepared, sql).await?;
                let params = params.iter().map(pg_param);
                self.client.query_raw(&statement, params).await?
            }
            None => {
                let params = params.iter().map(typed_param);
                let sql = dollar_placeholders(sql);
                self.client.query_typed_raw(&sql, params).await?
            }
        };
        let mut rows = std::pin::pin!(rows);
        while let Some(row) = rows.try_next().await? {
            if !each(&PostgresRow(&row))? {
                break;
            }
        }
        Ok(())
    }

    async fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        match &self.prepared {
            Some(prepared) => {
                let statement = self.statement(prepared, sql).await?;
                let params: Vec<_> = params.iter().map(pg_param).collect();
                Ok(self.client.execute(&statement, &params).await?)
            }
            None => {
                let params: Vec<_> = params.iter().map(typed_param).collect();
                let sql = dollar_placeholders(sql);
                Ok(self.client.execute_typed(&sql, &params).await?)
            }
        }
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
        Param::OptText(value) => value,
        Param::Bool(value) => value,
        Param::Bytes(value) => value,
        Param::TextList(value) => value,
        Param::IntList(value) => value,
    }
}

/// A parameter with the type a prepared statement would have inferred
/// for it: the only one its Rust type accepts (`i64` is `bigint` alone),
/// or `text` for the text types, which PostgreSQL casts where needed.
fn typed_param<'a>(param: &'a Param<'a>) -> (&'a (dyn ToSql + Sync), Type) {
    let ty = match param {
        Param::Int(_) | Param::OptInt(_) => Type::INT8,
        Param::Text(_) | Param::OptText(_) => Type::TEXT,
        Param::Bool(_) => Type::BOOL,
        Param::Bytes(_) => Type::BYTEA,
        Param::TextList(_) => Type::TEXT_ARRAY,
        Param::IntList(_) => Type::INT8_ARRAY,
    };
    (pg_param(param), ty)
}

struct PostgresRow<'a>(&'a tokio_postgres::Row);

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

    fn str(&self, column: usize) -> Result<&str, StoreError> {
        Ok(self.0.try_get(column)?)
    }

    fn append_bytes(&self, column: usize, out: &mut Vec<u8>) -> Result<(), StoreError> {
        out.extend_from_slice(self.str(column)?.as_bytes());
        Ok(())
    }

    fn append_text(&self, column: usize, out: &mut String) -> Result<(), StoreError> {
        out.push_str(self.str(column)?);
        Ok(())
    }

    fn boolean(&self, column: usize) -> Result<bool, StoreError> {
        Ok(self.0.try_get(column)?)
    }

    fn is_null(&self, column: usize) -> Result<bool, StoreError> {
        Ok(self.0.try_get::<_, Nullness>(column)?.0)
    }
}

/// Whether a value is NULL, of any type, without decoding it (a text
/// would be checked as UTF-8 for nothing).
struct Nullness(bool);

impl<'a> FromSql<'a> for Nullness {
    fn from_sql(_: &Type, _: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Self(false))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Self(true))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// The SQLSTATE classes whose server message is logged: connection
/// exceptions, invalid authorization, invalid catalog name, insufficient
/// resources, operator intervention.
const MESSAGE_KEPT: [&str; 5] = ["08", "28", "3D", "53", "57"];

/// Store errors from PostgreSQL: a lost or refused connection is
/// `Unavailable`, a uniqueness violation `Conflict`, a value this side
/// could not convert (a fault of ours, not of the server) `Internal`.
/// Messages hold the SQLSTATE and the names of what failed (never SQL
/// text, nor the server's message, which may quote a value, but for the
/// classes of [`MESSAGE_KEPT`]); logs only.
impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> Self {
        let Some(server) = error.as_db_error() else {
            // tokio-postgres does not expose its error kinds but by their
            // words; anything else is taken for the connection's fault.
            let ours = [
                "error serializing parameter",
                "error deserializing column",
                "invalid column",
                "expected ",
            ];
            // With its cause: "error connecting to server" alone says
            // little (the cause names the refusal, never a password).
            let text = match std::error::Error::source(&error) {
                Some(cause) => match settings::tls_failure(cause) {
                    Some(failure) => format!("PostgreSQL: {error}: {failure}"),
                    None => format!("PostgreSQL: {error}: {cause}"),
                },
                None => format!("PostgreSQL: {error}"),
            };
            if ours
                .iter()
                .any(|start| error.to_string().starts_with(start))
            {
                return Self::Internal(text);
            }
            return Self::Unavailable(text);
        };
        // The server's message may quote a value (`invalid input syntax
        // for type uuid: "..."`): the SQLSTATE and the names it gives
        // say what failed without it. Only the classes about the
        // connection and the server itself, whose messages speak of the
        // settings (`password authentication failed for user "app"`,
        // `database "x" does not exist`) and never of a statement's
        // values, keep theirs: the operator's first clue.
        let mut text = format!("PostgreSQL {}", server.code().code());
        if MESSAGE_KEPT
            .iter()
            .any(|class| server.code().code().starts_with(class))
        {
            text.push_str(&format!(": {}", server.message()));
        }
        for (what, name) in [
            ("constraint", server.constraint()),
            ("table", server.table()),
            ("column", server.column()),
        ] {
            if let Some(name) = name {
                text.push_str(&format!(", {what} {name}"));
            }
        }
        let code = server.code();
        if *code == SqlState::UNIQUE_VIOLATION {
            Self::Conflict(Conflict::Unique(text))
        } else if code.code().starts_with("08")
            || code.code().starts_with("57P")
            || code.code().starts_with("53")
            || *code == SqlState::READ_ONLY_SQL_TRANSACTION
            || *code == SqlState::QUERY_CANCELED
        {
            // Connection failures, shutdowns, lack of resources, a standby,
            // a statement cancelled at its write's deadline.
            Self::Unavailable(text)
        } else {
            Self::Internal(text)
        }
    }
}

/// Opens connections to the configured server; the exclusive pool's
/// manager.
#[derive(Clone)]
pub struct Connector {
    config: Config,
    /// TLS as the URL's `sslmode` and `sslrootcert` ask ([`PostgresSettings`]).
    tls: MakeRustlsConnect,
    statements: Statements,
    /// Shared by every connection of the driver: an attempt while the
    /// database is known to be down is refused at once.
    outage: Arc<Outage>,
}

/// How a connection runs its statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Statements {
    /// Prepared once per connection (named) and cached, with generic
    /// plans asked for at the session's start.
    Prepared,
    /// Parsed anew by each execution, in the same round trip (the unnamed
    /// statement): through a transaction pooler, a named statement
    /// prepared by one transaction is not on the server connection of the
    /// next, and the pooler passes no session options.
    Unnamed,
}

impl Connector {
    /// A connector to a read replica: its outage is logged as the
    /// replica's, and costs no request its answer.
    fn for_replica(
        url: &str,
        options: &StoreOptions,
        statements: Statements,
    ) -> anyhow::Result<Self> {
        let mut connector = Self::new(url, options, statements)?;
        connector.outage = Arc::new(Outage::of_replica(servers(&connector.config)));
        Ok(connector)
    }

    fn new(url: &str, options: &StoreOptions, statements: Statements) -> anyhow::Result<Self> {
        // The URL may hold a password: errors never repeat it.
        let PostgresSettings {
            mut config, tls, ..
        } = PostgresSettings::from_url(url).map_err(anyhow::Error::msg)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("proxydeck");
        }
        if statements == Statements::Prepared {
            let generic_plans = "-c plan_cache_mode=force_generic_plan";
            let session_options = match config.get_options() {
                Some(given) => format!("{given} {generic_plans}"),
                None => generic_plans.to_owned(),
            };
            config.options(&session_options);
        }
        // A server that vanishes without closing the connection (a network
        // partition, a crashed host) is noticed instead of waited on forever.
        config
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30))
            .tcp_user_timeout(options.timeout.max(Duration::from_secs(5)));
        Ok(Self {
            config,
            tls,
            statements,
            outage: Arc::default(),
        })
    }

    /// tokio-postgres' errors do not say which server refused.
    fn cannot_connect(&self) -> String {
        format!("cannot connect to PostgreSQL at {}", servers(&self.config))
    }

    /// A connection made at start (the migrations', the primary's shared
    /// clients'), whose failure tells the operator what to do.
    async fn connect_at_start(&self) -> anyhow::Result<PgConnection> {
        self.connect().await.map_err(|error| {
            // pgbouncer's refusal of the session options.
            let hint = if error.to_string().contains("unsupported startup parameter") {
                " (through a transaction pooler such as pgbouncer, give \
                 --database-pooler transaction and --database-direct-url)"
            } else {
                ""
            };
            anyhow::Error::new(error).context(format!("{}{hint}", self.cannot_connect()))
        })
    }

    async fn connect(&self) -> Result<PgConnection, StoreError> {
        self.outage.may_try()?;
        let (client, connection) = match self.config.connect(self.tls.clone()).await {
            Ok(connected) => {
                self.outage.reached();
                connected
            }
            Err(error) => {
                let error = StoreError::from(error);
                self.outage.failed(&error);
                return Err(error);
            }
        };
        // The connection's socket is driven by a task of its own; it ends
        // when the client is dropped or the server goes away.
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "PostgreSQL connection lost");
            }
        });
        Ok(PgConnection {
            client,
            prepared: (self.statements == Statements::Prepared).then(|| Mutex::new(HashMap::new())),
        })
    }
}

impl managed::Manager for Connector {
    type Type = PgConnection;
    type Error = StoreError;

    async fn create(&self) -> Result<PgConnection, StoreError> {
        self.connect().await
    }

    /// A closed connection is replaced; a stale one that still looks open
    /// shows itself on first use (reads are then tried once more, see
    /// `reader::bounded_read`).
    async fn recycle(
        &self,
        connection: &mut PgConnection,
        _: &Metrics,
    ) -> RecycleResult<StoreError> {
        if connection.client.is_closed() {
            Err(RecycleError::message("the connection is closed"))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_shown_in_turn_with_their_ports_and_no_password() {
        let shown = |url: &str| servers(&url.parse().unwrap());
        assert_eq!(shown("postgres://u:secret@db/x"), "db:5432");
        assert_eq!(shown("postgres://u@a:1,b:2/x"), "a:1, b:2");
        assert_eq!(
            shown("postgres://u@/x?host=/run/pg&port=6000"),
            "/run/pg/.s.PGSQL.6000"
        );
        assert_eq!(shown("host=a,b port=7 user=u"), "a:7, b:7");
        // hostaddr takes the place of the host's name.
        assert_eq!(shown("host=db hostaddr=10.0.0.5 user=u"), "10.0.0.5:5432");
        assert_eq!(
            shown("user=u password=secret"),
            "no host (give host= or hostaddr=)"
        );
    }

    #[test]
    fn pool_size_splits_into_exclusive_and_shared() {
        assert_eq!(connection_split(0), (1, 1));
        assert_eq!(connection_split(1), (1, 1));
        assert_eq!(connection_split(2), (1, 1));
        assert_eq!(connection_split(3), (1, 2));
        assert_eq!(connection_split(4), (2, 2));
        assert_eq!(connection_split(9), (4, 5));
    }

    #[test]
    fn placeholders_become_dollars_outside_quotes() {
        assert_eq!(
            dollar_placeholders("SELECT a FROM t WHERE b = ?1 AND c = '?2' AND d = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c = '?2' AND d = $12"
        );
        assert_eq!(dollar_placeholders("SELECT '?'"), "SELECT '?'");
    }
}
