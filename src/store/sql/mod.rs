//! The store's logic, written once for every SQL backend.
//!
//! Each operation is an async function over [`Db`], a small interface every
//! driver implements on its own connections: run a statement, read rows
//! through [`Row`], open and close transactions. Statements use numbered
//! placeholders `?1`, `?2`, ...: SQLite's own syntax, which the PostgreSQL
//! driver rewrites to `$1`, `$2`. Where the dialects differ, the SQL keeps
//! to their common part (`CAST(... AS BIGINT)`, booleans bound as
//! parameters, `ON CONFLICT ... DO UPDATE`).
//!
//! [`SqlStore`] turns a [`Driver`] into a [`Store`]. The driver decides
//! where an operation runs: SQLite's calls are quick blocking work, run on
//! the request's own thread when a connection is free at once and on
//! tokio's blocking pool otherwise; PostgreSQL's are network round trips,
//! awaited on the request's task.

mod admin;
mod directory;
mod export;
mod import;
pub(crate) mod listings;
pub(crate) mod project_writes;
pub(crate) mod proxy_settings_writes;
pub(crate) mod shapes;
pub(crate) mod token_writes;
mod writes;

use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::BoxFuture;
use tokio::sync::mpsc;

pub use super::cache::recent_pages::CommitMark;
use super::cache::recent_pages::CommitMarks;
use super::cache::{self, Reader};
use super::{
    JsonPage, Listing, ListingKey, NewToken, OrganizationsQuery, PoolUse, Store, StoreError,
    StoreOptions, TokenGrant, TokenUse, WhichOrganization,
};
use crate::domain::api_token::{ApiToken, TokenRecord};
use crate::domain::directory::{Organization, OrganizationObject, User, UserWithRoles};
use crate::domain::import::{ImportBatch, ImportError, ObjectCounts};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::pagination::PageRequest;
use crate::domain::project::Project;
use crate::domain::proxy_settings::ProxySettings;
use crate::domain::token::TokenDigest;
use crate::store::writes::{AuditQuery, AuditRecord, ObjectAnswer, WriteRequest};
use crate::store::{ProjectRead, SettingsChange, TokenRead};

/// A statement parameter: the few types the schema uses. Nulls are typed,
/// as PostgreSQL needs.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    Int(i64),
    OptInt(Option<i64>),
    Text(&'a str),
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
    /// Runs `sql`; answers the number of rows it changed.
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError>;
    /// Opens a transaction whose reads all see one snapshot.
    async fn begin_read(&mut self) -> Result<(), StoreError>;
    /// Opens a write transaction.
    async fn begin_write(&mut self) -> Result<(), StoreError>;
    async fn commit(&mut self) -> Result<(), StoreError>;
    async fn rollback(&mut self) -> Result<(), StoreError>;

    /// A page of the projects of `set` (two organizations or more), in the
    /// dialect's own statements, from one snapshot. The start key is
    /// resolved there too: a page after one that is not a project of `set`
    /// is empty (`listings::projects` tells it from the end of the list).
    /// Bounded by the page, whatever the number of organizations: it reads
    /// O(organizations + limit) index entries and `limit` bodies at most.
    async fn organizations_page(
        &mut self,
        set: &OrganizationSet,
        page: &PageRequest,
    ) -> Result<JsonPage, StoreError>;

    /// The statement that writes a project, new or not (parameters: id,
    /// organization_id, created_at, updated_at, body, organization_number,
    /// slug). A project that exists moves to its next version when it changes
    /// (re-importing the same line changes nothing).
    /// SQLite places a new project's row among its organization's.
    fn project_upsert_sql(&self) -> &'static str {
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!(
                "INSERT INTO projects (id, organization_id, organization_number, created_at, updated_at, body, slug)
                 VALUES (?1, ?2, ?6, ?3, ?4, ?5, ?7) {PROJECT_CONFLICT}"
            )
        });
        &SQL
    }

    /// One organization's page of projects when the driver reads it a way
    /// of its own (PostgreSQL's page memory); `None`: the shared statement.
    async fn own_organization_page(
        &mut self,
        _key: &ListingKey,
        _organization: i64,
        _page: &PageRequest,
    ) -> Option<Result<JsonPage, StoreError>> {
        None
    }
}

/// How every dialect's statement that writes a project changes one that
/// exists (see `Db::project_upsert_sql`).
pub(crate) const PROJECT_CONFLICT: &str = "ON CONFLICT (id) DO UPDATE
     SET organization_id = excluded.organization_id,
         organization_number = excluded.organization_number,
         created_at = excluded.created_at, updated_at = excluded.updated_at,
         body = excluded.body, slug = excluded.slug, deleted_at = NULL,
         version = projects.version
           + CASE WHEN projects.body = excluded.body AND projects.deleted_at IS NULL
                  THEN 0 ELSE 1 END";

/// An operation of the store's logic on a connection and its input (a
/// function, so a driver may run it wherever it sees fit, and again).
pub type Work<Q, T> = for<'a> fn(&'a mut dyn Db, &'a Q) -> BoxFuture<'a, Result<T, StoreError>>;

/// Whether an operation only reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
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

    /// How the driver's connection pools are used now ([`Store::pool_use`]).
    fn pool_use(&self) -> Vec<PoolUse>;

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
        let result: Result<_, $crate::store::StoreError> = async $body.await;
        $crate::store::sql::finish($db, result).await
    }};
}
pub(crate) use transaction;
#[cfg(test)]
pub(crate) use writes::LOCK_ORGANIZATION;

/// Ends the transaction a piece of work ran in: commits its success, rolls
/// back its failure.
pub(crate) async fn finish<T>(
    db: &mut dyn Db,
    result: Result<T, StoreError>,
) -> Result<T, StoreError> {
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
    /// The listings' read path: the caches that are on, then the driver.
    listings: Reader,
}

impl<D: Driver> SqlStore<D> {
    pub fn new(driver: D, options: &StoreOptions) -> Self {
        let driver = Arc::new(driver);
        let timeout = options.timeout;
        let statements: Reader = {
            let driver = driver.clone();
            Arc::new(move |key: ListingKey| {
                let operation = key.listing().operation();
                Box::pin(bounded_read(
                    driver.clone(),
                    timeout,
                    operation,
                    Arc::new(key),
                    |db, key| Box::pin(listings::read(db, key)),
                ))
            })
        };
        // Commits can be watched when the driver could tell at once.
        let commit_marks = driver.commit_mark().map(|_| {
            let driver = driver.clone();
            Arc::new(move || driver.commit_mark()) as CommitMarks
        });
        Self {
            listings: cache::chain(options.caches.layers(commit_marks, timeout), statements),
            driver,
            request_timeout: timeout,
        }
    }

    /// Rewrites the stored bodies of an older shape through the domain
    /// types ([`shapes`]); run once when the store opens.
    pub async fn upgrade_stored_bodies(&self) -> Result<u64, StoreError> {
        let changed = self
            .write("upgrade_stored_bodies", Bound::Unbounded, (), |db, ()| {
                Box::pin(shapes::upgrade(db, &()))
            })
            .await?;
        if changed > 0 {
            tracing::info!(
                projects = changed,
                "rewrote project bodies of an older shape"
            );
        }
        Ok(changed)
    }

    /// Runs a request's read ([`bounded_read`]).
    async fn read<Q, T>(
        &self,
        operation: &'static str,
        input: Q,
        work: Work<Q, T>,
    ) -> Result<T, StoreError>
    where
        Q: Send + Sync + 'static,
        T: Send + 'static,
    {
        bounded_read(
            self.driver.clone(),
            self.request_timeout,
            operation,
            Arc::new(input),
            work,
        )
        .await
    }

    /// Runs a write: a request's, bounded in time; an operator's, not.
    async fn write<Q, T>(
        &self,
        operation: &'static str,
        bound: Bound,
        input: Q,
        work: Work<Q, T>,
    ) -> Result<T, StoreError>
    where
        Q: Send + Sync + 'static,
        T: Send + 'static,
    {
        let _timer = OperationTimer::start(operation);
        let run = self.driver.run(Access::Write, Arc::new(input), work);
        match bound {
            Bound::Request => within(self.request_timeout, run).await,
            Bound::Unbounded => run.await,
        }
    }

    /// Runs a request's write of the management API: bounded, and tried
    /// once more when it met a concurrent one ([`StoreError::Retry`]).
    async fn request_write<Q, T>(
        &self,
        operation: &'static str,
        input: Q,
        work: Work<Q, T>,
    ) -> Result<T, StoreError>
    where
        Q: Send + Sync + 'static,
        T: Send + 'static,
    {
        let input = Arc::new(input);
        let _timer = OperationTimer::start(operation);
        let attempt = || {
            within(
                self.request_timeout,
                self.driver.run(Access::Write, input.clone(), work),
            )
        };
        match attempt().await {
            Err(StoreError::Retry) => attempt().await,
            result => result,
        }
    }

    /// Runs an operator's read, unbounded.
    async fn operator_read<Q, T>(
        &self,
        operation: &'static str,
        input: Q,
        work: Work<Q, T>,
    ) -> Result<T, StoreError>
    where
        Q: Send + Sync + 'static,
        T: Send + 'static,
    {
        let _timer = OperationTimer::start(operation);
        self.driver.run(Access::Read, Arc::new(input), work).await
    }
}

/// Runs a request's read, bounded in time by `request_timeout`. One that
/// fails as unavailable is tried once more, on another connection, within
/// the same bound: a pooled connection that went stale (the database
/// restarted) fails only once.
async fn bounded_read<D: Driver, Q, T>(
    driver: Arc<D>,
    request_timeout: Duration,
    operation: &'static str,
    input: Arc<Q>,
    work: Work<Q, T>,
) -> Result<T, StoreError>
where
    Q: Send + Sync + 'static,
    T: Send + 'static,
{
    let started = Instant::now();
    let _timer = OperationTimer::start(operation);
    let attempt = |limit| within(limit, driver.run(Access::Read, input.clone(), work));
    match attempt(request_timeout).await {
        Err(StoreError::Unavailable(first)) if started.elapsed() < request_timeout => {
            match attempt(request_timeout.saturating_sub(started.elapsed())).await {
                // The first failure marked the database down: it is what
                // this request met, and what its log line should say.
                Err(StoreError::Down) => Err(StoreError::Unavailable(first)),
                result => result,
            }
        }
        result => result,
    }
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

/// Records how long a store operation took when dropped: on success, on
/// failure, and when the request that awaited it went away.
struct OperationTimer {
    operation: &'static str,
    started: Instant,
}

impl OperationTimer {
    fn start(operation: &'static str) -> Self {
        Self {
            operation,
            started: Instant::now(),
        }
    }
}

impl Drop for OperationTimer {
    fn drop(&mut self) {
        crate::metrics::store_operation(self.operation, self.started.elapsed());
    }
}

/// Whether a write serves a request (and so must answer in bounded time) or
/// an operator's command.
#[derive(Clone, Copy)]
enum Bound {
    Request,
    Unbounded,
}

#[async_trait]
impl<D: Driver> Store for SqlStore<D> {
    async fn ping(&self) -> Result<(), StoreError> {
        self.read("ping", (), |db, ()| {
            Box::pin(async { exists(db, "SELECT 1", &[]).await.map(drop) })
        })
        .await
    }

    async fn find_token(&self, digest: TokenDigest) -> Result<Option<TokenGrant>, StoreError> {
        self.read("find_token", digest, |db, digest| {
            Box::pin(listings::find_token(db, digest))
        })
        .await
    }

    async fn record_token_uses(&self, uses: Vec<TokenUse>) -> Result<(), StoreError> {
        self.write("record_token_uses", Bound::Request, uses, |db, uses| {
            Box::pin(admin::record_token_uses(db, uses))
        })
        .await
    }

    async fn list(&self, listing: Listing) -> Result<JsonPage, StoreError> {
        (self.listings)(ListingKey::new(listing)).await
    }

    async fn user_with_roles(&self, user_id: &str) -> Result<Option<UserWithRoles>, StoreError> {
        self.read("user_with_roles", user_id.to_owned(), |db, user_id| {
            Box::pin(directory::user_with_roles(db, user_id))
        })
        .await
    }

    async fn member_organization(
        &self,
        user_id: &str,
        which: WhichOrganization,
    ) -> Result<Option<OrganizationObject>, StoreError> {
        self.read(
            "member_organization",
            (user_id.to_owned(), which),
            |db, input| Box::pin(directory::member_organization(db, input)),
        )
        .await
    }

    async fn organizations_of(&self, query: OrganizationsQuery) -> Result<JsonPage, StoreError> {
        self.read("list_organizations", query, |db, query| {
            Box::pin(directory::organizations_page(db, query))
        })
        .await
    }

    async fn create_organization(
        &self,
        organization: Organization,
    ) -> Result<Organization, StoreError> {
        self.write(
            "create_organization",
            Bound::Unbounded,
            organization,
            |db, organization| Box::pin(admin::create_organization(db, organization)),
        )
        .await
    }

    async fn create_user(&self, user: User) -> Result<User, StoreError> {
        self.write("create_user", Bound::Unbounded, user, |db, user| {
            Box::pin(admin::create_user(db, user))
        })
        .await
    }

    async fn create_token(&self, token: NewToken) -> Result<ApiToken, StoreError> {
        self.write("create_token", Bound::Unbounded, token, |db, token| {
            Box::pin(admin::create_token(db, token))
        })
        .await
    }

    async fn revoke_token(&self, token_id: &str) -> Result<(), StoreError> {
        self.write(
            "revoke_token",
            Bound::Unbounded,
            token_id.to_owned(),
            |db, token_id| Box::pin(admin::revoke_token(db, token_id)),
        )
        .await
    }

    async fn delete_project(&self, project_id: &str) -> Result<(), StoreError> {
        self.write(
            "delete_project",
            Bound::Unbounded,
            project_id.to_owned(),
            |db, project_id| Box::pin(admin::delete_project(db, project_id)),
        )
        .await
    }

    async fn get_project(&self, read: ProjectRead) -> Result<ObjectAnswer, StoreError> {
        self.read("get_project", read, |db, read| {
            Box::pin(project_writes::get(db, read))
        })
        .await
    }

    async fn create_project(
        &self,
        request: WriteRequest,
        project: Project,
    ) -> Result<ObjectAnswer, StoreError> {
        self.request_write("create_project", (request, project), |db, input| {
            Box::pin(project_writes::create(db, input))
        })
        .await
    }

    async fn update_project(
        &self,
        request: WriteRequest,
        project_id: String,
        members: serde_json::Map<String, serde_json::Value>,
    ) -> Result<ObjectAnswer, StoreError> {
        self.request_write(
            "update_project",
            (request, project_id, members),
            |db, input| Box::pin(project_writes::update(db, input)),
        )
        .await
    }

    async fn remove_project(
        &self,
        request: WriteRequest,
        project_id: String,
    ) -> Result<ObjectAnswer, StoreError> {
        self.request_write("remove_project", (request, project_id), |db, input| {
            Box::pin(project_writes::delete(db, input))
        })
        .await
    }

    async fn get_api_token(&self, read: TokenRead) -> Result<ObjectAnswer, StoreError> {
        self.read("get_api_token", read, |db, read| {
            Box::pin(token_writes::get(db, read))
        })
        .await
    }

    async fn create_api_token(
        &self,
        request: WriteRequest,
        token: NewToken,
    ) -> Result<ObjectAnswer, StoreError> {
        self.request_write("create_api_token", (request, token), |db, input| {
            Box::pin(token_writes::create(db, input))
        })
        .await
    }

    async fn delete_api_token(
        &self,
        request: WriteRequest,
        token_id: String,
    ) -> Result<ObjectAnswer, StoreError> {
        self.request_write("delete_api_token", (request, token_id), |db, input| {
            Box::pin(token_writes::delete(db, input))
        })
        .await
    }

    async fn create_proxy_settings(
        &self,
        request: WriteRequest,
        project_id: String,
        settings: ProxySettings,
    ) -> Result<ObjectAnswer, StoreError> {
        self.request_write(
            "create_proxy_settings",
            (request, project_id, settings),
            |db, input| Box::pin(proxy_settings_writes::create(db, input)),
        )
        .await
    }

    async fn update_proxy_settings(
        &self,
        request: WriteRequest,
        project_id: String,
        revision: u32,
        change: SettingsChange,
    ) -> Result<ObjectAnswer, StoreError> {
        self.request_write(
            "update_proxy_settings",
            (request, project_id, revision, change),
            |db, input| Box::pin(proxy_settings_writes::update(db, input)),
        )
        .await
    }

    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
        self.operator_read("audit", query, |db, query| {
            Box::pin(
                async move { transaction!(db, begin_read, { writes::audit(db, query).await }) },
            )
        })
        .await
    }

    async fn import(
        &self,
        records: mpsc::Receiver<ImportBatch>,
    ) -> Result<ObjectCounts, ImportError> {
        // The receiver is taken by the one run of the work.
        let records = std::sync::Mutex::new(Some(records));
        self.write("import", Bound::Unbounded, records, |db, records| {
            let records = records.lock().ok().and_then(|mut r| r.take());
            Box::pin(async move {
                let records = records.ok_or_else(|| {
                    StoreError::Internal("an import's records were already taken".into())
                })?;
                Ok(import::apply(db, records).await)
            })
        })
        .await
        .map_err(|e| ImportError::at(0, None, e.to_string()))?
    }

    async fn count_objects(&self) -> Result<ObjectCounts, StoreError> {
        self.operator_read("count_objects", (), |db, ()| {
            Box::pin(export::count_objects(db))
        })
        .await
    }

    async fn export(&self, lines: mpsc::Sender<String>) -> Result<ObjectCounts, StoreError> {
        self.driver
            .read_on_thread(Arc::new(lines), |db, lines| {
                Box::pin(export::export(db, lines))
            })
            .await
    }

    async fn list_organizations(&self) -> Result<Vec<Organization>, StoreError> {
        self.operator_read("list_organizations", (), |db, ()| {
            Box::pin(export::organizations(db))
        })
        .await
    }

    async fn list_users(&self) -> Result<Vec<User>, StoreError> {
        self.operator_read("list_users", (), |db, ()| Box::pin(export::users(db)))
            .await
    }

    async fn list_user_tokens(&self, user_id: &str) -> Result<Vec<TokenRecord>, StoreError> {
        self.operator_read("list_user_tokens", user_id.to_owned(), |db, user_id| {
            Box::pin(export::user_tokens(db, user_id))
        })
        .await
    }

    fn pool_use(&self) -> Vec<PoolUse> {
        self.driver.pool_use()
    }
}
