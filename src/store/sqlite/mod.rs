//! The embedded store: one SQLite file in WAL mode, so reads never wait on
//! a writer.
//!
//! Reads run on a small pool of read-only connections, each call on
//! tokio's blocking thread pool; writes go through a single writer
//! connection (SQLite allows one writer at a time anyway). Statements are
//! prepared once per connection and cached.

mod admin;
mod export;
mod import;
mod listings;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use tokio::sync::mpsc;

use super::{
    ApiTokensQuery, NewToken, ProjectsQuery, ProxySettingsQuery, Store, StoreError, StoreOptions,
    StoredProject, StoredProxySettings, TokenGrant, TokenUse,
};
use crate::domain::api_token::{ApiToken, TokenRecord};
use crate::domain::directory::{Organization, User};
use crate::domain::import::{ImportBatch, ImportError, ObjectCounts};
use crate::domain::pagination::Page;
use crate::domain::token::TokenDigest;

mod embedded {
    refinery::embed_migrations!("migrations/sqlite");
}

pub struct SqliteStore {
    readers: r2d2::Pool<Connector>,
    writer: r2d2::Pool<Connector>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and applies the
    /// migrations it lacks.
    pub async fn open(path: PathBuf, options: StoreOptions) -> anyhow::Result<Self> {
        tokio::task::spawn_blocking(move || Self::open_blocking(&path, &options)).await?
    }

    fn open_blocking(path: &Path, options: &StoreOptions) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let shown = path.display();
        let mut setup = Connection::open(path)
            .with_context(|| format!("cannot open or create the database file {shown}"))?;
        setup.busy_timeout(options.timeout)?;
        let mode: String = setup
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .with_context(|| format!("{shown} is not a usable SQLite database"))?;
        anyhow::ensure!(
            mode.eq_ignore_ascii_case("wal"),
            "{shown}: cannot switch to WAL mode"
        );
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
                })
                .with_context(|| format!("cannot open connections to {shown}"))
        };
        Ok(Self {
            readers: pool(Role::Reader, options.pool_size.max(1))?,
            writer: pool(Role::Writer, 1)?,
        })
    }

    async fn read<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let pool = self.readers.clone();
        run_blocking(move || job(&checkout(&pool)?.connection)).await
    }

    async fn write<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let pool = self.writer.clone();
        run_blocking(move || job(&mut checkout(&pool)?.connection)).await
    }
}

fn checkout(pool: &r2d2::Pool<Connector>) -> Result<r2d2::PooledConnection<Connector>, StoreError> {
    pool.get()
        .map_err(|e| StoreError::Unavailable(format!("no database connection: {e}")))
}

async fn run_blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|_| StoreError::Internal("a store task panicked".into()))?
}

#[async_trait]
impl Store for SqliteStore {
    async fn ping(&self) -> Result<(), StoreError> {
        self.read(|c| Ok(c.query_row("SELECT 1", [], |_| Ok(()))?))
            .await
    }

    async fn find_token(&self, digest: TokenDigest) -> Result<Option<TokenGrant>, StoreError> {
        self.read(move |c| listings::find_token(c, &digest)).await
    }

    async fn record_token_uses(&self, uses: Vec<TokenUse>) -> Result<(), StoreError> {
        self.write(move |c| admin::record_token_uses(c, &uses))
            .await
    }

    async fn list_projects(&self, query: ProjectsQuery) -> Result<Page<StoredProject>, StoreError> {
        self.read(move |c| listings::projects(c, &query)).await
    }

    async fn list_api_tokens(&self, query: ApiTokensQuery) -> Result<Page<ApiToken>, StoreError> {
        self.read(move |c| listings::api_tokens(c, &query)).await
    }

    async fn list_proxy_settings(
        &self,
        query: ProxySettingsQuery,
    ) -> Result<Page<StoredProxySettings>, StoreError> {
        self.read(move |c| listings::proxy_settings(c, &query))
            .await
    }

    async fn create_organization(
        &self,
        organization: Organization,
    ) -> Result<Organization, StoreError> {
        self.write(move |c| admin::create_organization(c, organization))
            .await
    }

    async fn create_user(&self, user: User) -> Result<User, StoreError> {
        self.write(move |c| admin::create_user(c, user)).await
    }

    async fn create_token(&self, token: NewToken) -> Result<ApiToken, StoreError> {
        self.write(move |c| admin::create_token(c, token)).await
    }

    async fn revoke_token(&self, token_id: &str) -> Result<(), StoreError> {
        let token_id = token_id.to_owned();
        self.write(move |c| admin::revoke_token(c, &token_id)).await
    }

    async fn delete_project(&self, project_id: &str) -> Result<(), StoreError> {
        let project_id = project_id.to_owned();
        self.write(move |c| admin::delete_project(c, &project_id))
            .await
    }

    async fn count_objects(&self) -> Result<ObjectCounts, StoreError> {
        self.read(export::count_objects).await
    }

    async fn export(&self, lines: mpsc::Sender<String>) -> Result<ObjectCounts, StoreError> {
        self.read(move |c| export::export(c, &lines)).await
    }

    async fn list_organizations(&self) -> Result<Vec<Organization>, StoreError> {
        self.read(export::organizations).await
    }

    async fn list_users(&self) -> Result<Vec<User>, StoreError> {
        self.read(export::users).await
    }

    async fn list_user_tokens(&self, user_id: &str) -> Result<Vec<TokenRecord>, StoreError> {
        let user_id = user_id.to_owned();
        self.read(move |c| export::user_tokens(c, &user_id)).await
    }

    async fn import(
        &self,
        records: mpsc::Receiver<ImportBatch>,
    ) -> Result<ObjectCounts, ImportError> {
        self.write(move |c| Ok(import::apply(c, records)))
            .await
            .map_err(|e| ImportError::at(0, None, e.to_string()))?
    }
}

/// Serialises a value that is ours to write: failing is a fault.
fn to_json(value: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Internal(format!("cannot write JSON: {e}")))
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
struct Connector {
    path: PathBuf,
    role: Role,
    busy_timeout: Duration,
}

struct PooledSqlite {
    connection: Connection,
    file: FileIdentity,
    checked_at: Instant,
}

/// How often a pooled connection checks that its file is still in place.
const FILE_CHECK_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
enum ConnectError {
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
        Ok(PooledSqlite {
            connection,
            file: FileIdentity::of(&self.path)?,
            checked_at: Instant::now(),
        })
    }

    fn is_valid(&self, pooled: &mut PooledSqlite) -> Result<(), ConnectError> {
        if pooled.checked_at.elapsed() < FILE_CHECK_INTERVAL {
            return Ok(());
        }
        if FileIdentity::of(&self.path)? != pooled.file {
            return Err(ConnectError::Replaced);
        }
        pooled.checked_at = Instant::now();
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
