//! The store: what the service keeps, on SQLite or PostgreSQL.
//!
//! Its layers, from the bottom: what callers speak with it (`error.rs`:
//! what happened in the store, which the HTTP layer words; pages,
//! listings' keys, tokens, options; `sql/`: the connection interface
//! drivers implement and the SQL dialects' differences), the driver
//! interface (`driver/`: connections, where work runs, a database's
//! outages, whose request the work is for), the operations, each declared
//! beside its SQL (`operations/`: the API's, by resource; `operator/`: the
//! operator's commands), the drivers (`sqlite/`, `postgres/`), the engine
//! (`engine/`: what an operation is, how each kind runs, bounded, retried
//! and timed, the writes' deadlines, and the listings' read path with the
//! caches of `cache/`); and here, the [`Store`] that [`open`] makes from a
//! database URL.

pub mod cache;
mod driver;
pub mod engine;
mod error;
mod listing;
pub mod operations;
pub mod operator;
mod options;
mod page;
mod postgres;
mod sql;
mod sqlite;
mod tokens;

use std::path::PathBuf;

use crate::domain::url_password;
use crate::metrics::{PoolUse, ReplicaUse};
use engine::Engine;
use engine::reader::{ReadPage, ReadPath};
use postgres::PostgresDriver;
use postgres::dialect::POSTGRES;
use sqlite::SqliteDriver;
use sqlite::dialect::SQLITE;

pub use driver::caller::for_caller;
pub use engine::operation::Operation;
pub use error::{Conflict, StoreError};
pub use listing::{
    ApiTokensQuery, Listing, ListingKey, MembersQuery, OrganizationsQuery, ProjectsQuery,
    ProxySettingsQuery,
};
pub use options::{Caches, Pooler, Replicas, StoreOptions};
pub use page::{JsonPage, JsonPageWriter};
pub use postgres::{PostgresSettings, SslMode};
pub use sqlite::FILE_CHECK_INTERVAL;
pub use tokens::{NewToken, TokenGrant, TokenUse};

/// Everything the service keeps: the engine on the backend the database
/// URL named. Operations that write are all-or-nothing.
pub struct Store(Backend);

enum Backend {
    Sqlite(Engine<SqliteDriver>),
    Postgres(Engine<PostgresDriver>),
}

/// `$body` with `$engine` bound to the store's engine, whichever backend.
macro_rules! on_engine {
    ($store:expr, $engine:ident => $body:expr) => {
        match &$store.0 {
            Backend::Sqlite($engine) => $body,
            Backend::Postgres($engine) => $body,
        }
    };
}

impl Store {
    /// Runs an operation (`operations::...`, `operator::...`).
    pub async fn run<O: Operation>(&self, operation: O) -> Result<O::Output, StoreError> {
        on_engine!(self, engine => engine.run(operation).await)
    }

    /// A page of a listing, through the read path.
    pub async fn list(&self, listing: Listing) -> Result<JsonPage, StoreError> {
        on_engine!(self, engine => engine.list(listing).await)
    }

    /// Resolves after a write commits through this store, or at once when
    /// one did since the last call returned: for one waiter, the change
    /// feed's tail (`feed.rs`); writes made elsewhere are found by its poll.
    pub async fn written(&self) {
        on_engine!(self, engine => engine.written().await)
    }

    /// How the store's connection pools are used at this moment, for the
    /// metrics: cheap, never waits.
    pub fn pool_use(&self) -> Vec<PoolUse> {
        on_engine!(self, engine => engine.pool_use())
    }

    /// The read replicas as their last checks found them (none unless the
    /// store reads from replicas).
    pub fn replica_use(&self) -> Vec<ReplicaUse> {
        on_engine!(self, engine => engine.replica_use())
    }

    /// Whether a request's store work must run as its caller's
    /// ([`for_caller`]): only when reads go to replicas, so that a caller
    /// reads its own writes; otherwise nothing pays for it.
    pub fn follows_callers(&self) -> bool {
        on_engine!(self, engine => engine.follows_callers())
    }
}

/// Where the data lives, parsed from `--database`. The text may hold a
/// password: show it through [`url_password::masked`], as `Debug` does.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Self::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&url_password::masked(url))
                .finish(),
        }
    }
}

impl DatabaseUrl {
    pub fn parse(url: &str) -> Result<Self, String> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() || path.contains('?') {
                return Err(format!(
                    "database URL {:?}: write sqlite://PATH, such as sqlite://proxydeck.db or sqlite:///var/lib/proxydeck/data.db",
                    url_password::masked(url)
                ));
            }
            Ok(Self::Sqlite(PathBuf::from(path)))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // Bad settings (TLS ones included) are told at start-up, by name.
            PostgresSettings::from_url(url).map_err(|why| format!("database URL: {why}"))?;
            Ok(Self::Postgres(url.to_owned()))
        } else {
            Err(format!(
                "database URL must start with sqlite:// or postgres://, got {:?}",
                url.split("://").next().unwrap_or_default()
            ))
        }
    }
}

/// The end of every store's read path: a page read by the API's listing
/// operations.
const READ_PAGE: ReadPage = |db, dialect, key| Box::pin(operations::read_page(db, dialect, key));

/// Opens the store `url` names, first applying the migrations it lacks,
/// then rewriting bodies of an older shape. The SQL dialect is chosen
/// here, once, with the driver.
pub async fn open(url: &DatabaseUrl, options: &StoreOptions) -> anyhow::Result<Store> {
    // Each dialect keeps the read path's cache that buys something on it
    // (docs/choices.md, "Caches"): SQLite's reads cost a few µs, sharing
    // them cost more than it saved; PostgreSQL's round trips are worth
    // sharing, and it cannot tell commits without a round trip.
    let caches = options.caches;
    let backend = match url {
        DatabaseUrl::Sqlite(path) => Backend::Sqlite(Engine::new(
            sqlite::open(path.clone(), options.clone()).await?,
            SQLITE,
            options,
            ReadPath {
                recent_pages: caches.recent_pages,
                shared_reads: false,
                read_page: READ_PAGE,
            },
        )),
        DatabaseUrl::Postgres(url) => Backend::Postgres(Engine::new(
            postgres::open(url.clone(), options.clone()).await?,
            POSTGRES,
            options,
            ReadPath {
                recent_pages: false,
                shared_reads: caches.shared_reads,
                read_page: READ_PAGE,
            },
        )),
    };
    let store = Store(backend);
    // The stored bodies of an older shape, rewritten through the domain
    // types.
    let changed = store
        .run(operator::shapes::UpgradeStoredBodies)
        .await
        .map_err(|e| anyhow::anyhow!("cannot rewrite the stored bodies: {e}"))?;
    if changed > 0 {
        tracing::info!(bodies = changed, "rewrote stored bodies of an older shape");
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls() {
        assert_eq!(
            DatabaseUrl::parse("sqlite://proxydeck.db").unwrap(),
            DatabaseUrl::Sqlite("proxydeck.db".into())
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/data.db").unwrap(),
            DatabaseUrl::Sqlite("/var/data.db".into())
        );
        assert!(matches!(
            DatabaseUrl::parse("postgres://u@h/db").unwrap(),
            DatabaseUrl::Postgres(_)
        ));
        let secret = DatabaseUrl::parse("postgres://app:s3cret@db/proxydeck").unwrap();
        assert_eq!(
            format!("{secret:?}"),
            r#"Postgres("postgres://app:****@db/proxydeck")"#
        );
        for bad in [
            "sqlite://",
            "mysql://x",
            "proxydeck.db",
            "sqlite://a.db?mode=ro",
            "postgres://u@db/x?sslmode=verify",
            "postgres://u@db/x?sslmode=verify-full",
        ] {
            assert!(DatabaseUrl::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            DatabaseUrl::parse("postgres://u:s3cret@db/x?sslmode=nope").unwrap_err(),
            r#"database URL: sslmode="nope" is not one of disable, prefer, require, verify-ca, verify-full"#
        );
    }
}
