//! The store's logic, written once for every SQL backend.
//!
//! Each operation is a function over [`Db`], a small interface every driver
//! implements on its own connections: run a statement, read rows through
//! [`Row`], open and close transactions. Statements use numbered
//! placeholders `?1`, `?2`, ...: SQLite's own syntax, which the PostgreSQL
//! driver rewrites to `$1`, `$2`. Where the dialects differ, the SQL keeps
//! to their common part (`CAST(... AS BIGINT)`, booleans bound as
//! parameters, `ON CONFLICT ... DO UPDATE`).
//!
//! [`SqlStore`] turns a [`Driver`] (pools of connections) into a
//! [`Store`]: each call checks a connection out on tokio's blocking pool
//! and runs one of these functions on it.

mod admin;
mod export;
mod import;
mod listings;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::{
    ApiTokensQuery, JsonPage, NewToken, ProjectsQuery, ProxySettingsQuery, Store, StoreError,
    TokenGrant, TokenUse,
};
use crate::domain::api_token::{ApiToken, TokenRecord};
use crate::domain::directory::{Organization, User};
use crate::domain::import::{ImportBatch, ImportError, ObjectCounts};
use crate::domain::pagination::Page;
use crate::domain::token::TokenDigest;

/// A statement parameter: the few types the schema uses. Nulls are typed,
/// as PostgreSQL needs.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    Int(i64),
    OptInt(Option<i64>),
    Text(&'a str),
    Bool(bool),
    Bytes(&'a [u8]),
}

/// One result row.
pub trait Row {
    fn int(&self, column: usize) -> Result<i64, StoreError>;
    fn opt_int(&self, column: usize) -> Result<Option<i64>, StoreError>;
    fn text(&self, column: usize) -> Result<String, StoreError>;
    /// Appends a text column's bytes, as stored (no UTF-8 check).
    fn append_bytes(&self, column: usize, out: &mut Vec<u8>) -> Result<(), StoreError>;
    /// Appends a text column (checked UTF-8).
    fn append_text(&self, column: usize, out: &mut String) -> Result<(), StoreError>;
    fn boolean(&self, column: usize) -> Result<bool, StoreError>;
}

/// A connection, as the store's logic uses it. Drivers map their errors to
/// [`StoreError`]: lost connections to `Unavailable`, uniqueness
/// violations to `Conflict`.
pub trait Db {
    /// Runs `sql` and calls `each` on every row until it answers false.
    fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError>;
    /// Runs `sql`; answers the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError>;
    /// Opens a transaction whose reads all see one snapshot.
    fn begin_read(&mut self) -> Result<(), StoreError>;
    /// Opens a write transaction.
    fn begin_write(&mut self) -> Result<(), StoreError>;
    fn commit(&mut self) -> Result<(), StoreError>;
    fn rollback(&mut self) -> Result<(), StoreError>;
}

/// Connections for the store: where reads and writes get one.
pub trait Driver: Send + Sync + 'static {
    type Connection: Db;
    /// A connection for reads; waits at most the configured timeout.
    fn reader(&self) -> Result<Self::Connection, StoreError>;
    /// A connection for writes; waits at most the configured timeout.
    fn writer(&self) -> Result<Self::Connection, StoreError>;
    /// A reader connection, only when one is free right now and the
    /// driver's reads are quick local work that never waits on a lock (so
    /// they may run on an async thread); `None` otherwise.
    fn instant_reader(&self) -> Option<Self::Connection> {
        None
    }
}

/// Every row `sql` answers, read with `map`.
pub(crate) fn query_all<T>(
    db: &mut dyn Db,
    sql: &str,
    params: &[Param<'_>],
    mut map: impl FnMut(&dyn Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut all = Vec::new();
    db.query(sql, params, &mut |row| {
        all.push(map(row)?);
        Ok(true)
    })?;
    Ok(all)
}

/// The first row `sql` answers, if any.
pub(crate) fn query_opt<T>(
    db: &mut dyn Db,
    sql: &str,
    params: &[Param<'_>],
    mut map: impl FnMut(&dyn Row) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let mut first = None;
    db.query(sql, params, &mut |row| {
        first = Some(map(row)?);
        Ok(false)
    })?;
    Ok(first)
}

/// Whether `sql` answers any row.
pub(crate) fn exists(db: &mut dyn Db, sql: &str, params: &[Param<'_>]) -> Result<bool, StoreError> {
    Ok(query_opt(db, sql, params, |_| Ok(()))?.is_some())
}

/// Runs `work` in a read transaction (one snapshot).
pub(crate) fn reading<T>(
    db: &mut dyn Db,
    work: impl FnOnce(&mut dyn Db) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    db.begin_read()?;
    finish(db, work)
}

/// Runs `work` in a write transaction, committed only when it succeeds.
pub(crate) fn writing<T>(
    db: &mut dyn Db,
    work: impl FnOnce(&mut dyn Db) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    db.begin_write()?;
    finish(db, work)
}

fn finish<T>(
    db: &mut dyn Db,
    work: impl FnOnce(&mut dyn Db) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    match work(db) {
        Ok(value) => {
            db.commit()?;
            Ok(value)
        }
        Err(error) => {
            let _ = db.rollback();
            Err(error)
        }
    }
}

/// Serialises a value that is ours to write: failing is a fault.
pub(crate) fn to_json(value: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Internal(format!("cannot write JSON: {e}")))
}

/// A [`Store`] on any SQL [`Driver`].
pub struct SqlStore<D: Driver> {
    driver: Arc<D>,
    /// Bound on one request's store work (checkout and queries): past it the
    /// request fails as unavailable instead of hanging.
    request_timeout: Duration,
}

impl<D: Driver> SqlStore<D> {
    pub fn new(driver: D, request_timeout: Duration) -> Self {
        Self {
            driver: Arc::new(driver),
            request_timeout,
        }
    }

    /// Runs `work` on a reader connection. A request's read runs right here
    /// when the driver has a connection free at once for reads that never
    /// wait (see [`Driver::instant_reader`]): a hop to the blocking pool
    /// costs more than such a read. Otherwise it runs on the blocking pool,
    /// bounded in time; one that fails as unavailable is tried once more,
    /// on another connection, within the same bound: a pooled connection
    /// that went stale (the database restarted) fails only once.
    async fn read<T: Send + 'static>(
        &self,
        bounded: Bound,
        work: impl Fn(&mut dyn Db) -> Result<T, StoreError> + Send + Sync + 'static,
    ) -> Result<T, StoreError> {
        if let Bound::Request = bounded
            && let Some(mut connection) = self.driver.instant_reader()
        {
            return work(&mut connection);
        }
        let work = Arc::new(work);
        let attempt = || {
            let (driver, work) = (self.driver.clone(), work.clone());
            move || work(&mut driver.reader()?)
        };
        let started = Instant::now();
        match self.run(bounded, self.request_timeout, attempt()).await {
            Err(StoreError::Unavailable(_))
                if matches!(bounded, Bound::Request)
                    && started.elapsed() < self.request_timeout =>
            {
                let left = self.request_timeout.saturating_sub(started.elapsed());
                self.run(bounded, left, attempt()).await
            }
            result => result,
        }
    }

    /// Runs `work` on the writer connection, on the blocking pool.
    async fn write<T: Send + 'static>(
        &self,
        bounded: Bound,
        work: impl FnOnce(&mut dyn Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let driver = self.driver.clone();
        self.run(bounded, self.request_timeout, move || {
            work(&mut driver.writer()?)
        })
        .await
    }

    async fn run<T: Send + 'static>(
        &self,
        bounded: Bound,
        limit: Duration,
        job: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let task = tokio::task::spawn_blocking(job);
        let joined = match bounded {
            Bound::Request => tokio::time::timeout(limit, task)
                .await
                .map_err(|_| StoreError::Unavailable("the store did not answer in time".into()))?,
            Bound::Unbounded => task.await,
        };
        joined.map_err(|_| StoreError::Internal("a store task panicked".into()))?
    }
}

/// Whether a call serves a request (and so must answer in bounded time) or
/// is an operator's long job (an import, an export).
#[derive(Clone, Copy)]
enum Bound {
    Request,
    Unbounded,
}

#[async_trait]
impl<D: Driver> Store for SqlStore<D> {
    async fn ping(&self) -> Result<(), StoreError> {
        self.read(Bound::Request, |db| exists(db, "SELECT 1", &[]).map(drop))
            .await
    }

    async fn find_token(&self, digest: TokenDigest) -> Result<Option<TokenGrant>, StoreError> {
        self.read(Bound::Request, move |db| listings::find_token(db, &digest))
            .await
    }

    async fn record_token_uses(&self, uses: Vec<TokenUse>) -> Result<(), StoreError> {
        self.write(Bound::Request, move |db| {
            admin::record_token_uses(db, &uses)
        })
        .await
    }

    async fn list_projects(&self, query: ProjectsQuery) -> Result<JsonPage, StoreError> {
        self.read(Bound::Request, move |db| listings::projects(db, &query))
            .await
    }

    async fn list_api_tokens(&self, query: ApiTokensQuery) -> Result<Page<ApiToken>, StoreError> {
        self.read(Bound::Request, move |db| listings::api_tokens(db, &query))
            .await
    }

    async fn list_proxy_settings(&self, query: ProxySettingsQuery) -> Result<JsonPage, StoreError> {
        self.read(Bound::Request, move |db| {
            listings::proxy_settings(db, &query)
        })
        .await
    }

    async fn create_organization(
        &self,
        organization: Organization,
    ) -> Result<Organization, StoreError> {
        self.write(Bound::Unbounded, move |db| {
            admin::create_organization(db, organization)
        })
        .await
    }

    async fn create_user(&self, user: User) -> Result<User, StoreError> {
        self.write(Bound::Unbounded, move |db| admin::create_user(db, user))
            .await
    }

    async fn create_token(&self, token: NewToken) -> Result<ApiToken, StoreError> {
        self.write(Bound::Unbounded, move |db| admin::create_token(db, token))
            .await
    }

    async fn revoke_token(&self, token_id: &str) -> Result<(), StoreError> {
        let token_id = token_id.to_owned();
        self.write(Bound::Unbounded, move |db| {
            admin::revoke_token(db, &token_id)
        })
        .await
    }

    async fn delete_project(&self, project_id: &str) -> Result<(), StoreError> {
        let project_id = project_id.to_owned();
        self.write(Bound::Unbounded, move |db| {
            admin::delete_project(db, &project_id)
        })
        .await
    }

    async fn import(
        &self,
        records: mpsc::Receiver<ImportBatch>,
    ) -> Result<ObjectCounts, ImportError> {
        self.write(Bound::Unbounded, move |db| Ok(import::apply(db, records)))
            .await
            .map_err(|e| ImportError::at(0, None, e.to_string()))?
    }

    async fn count_objects(&self) -> Result<ObjectCounts, StoreError> {
        self.read(Bound::Unbounded, export::count_objects).await
    }

    async fn export(&self, lines: mpsc::Sender<String>) -> Result<ObjectCounts, StoreError> {
        self.read(Bound::Unbounded, move |db| export::export(db, &lines))
            .await
    }

    async fn list_organizations(&self) -> Result<Vec<Organization>, StoreError> {
        self.read(Bound::Unbounded, export::organizations).await
    }

    async fn list_users(&self) -> Result<Vec<User>, StoreError> {
        self.read(Bound::Unbounded, export::users).await
    }

    async fn list_user_tokens(&self, user_id: &str) -> Result<Vec<TokenRecord>, StoreError> {
        let user_id = user_id.to_owned();
        self.read(Bound::Unbounded, move |db| {
            export::user_tokens(db, &user_id)
        })
        .await
    }
}
