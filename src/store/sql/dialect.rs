//! What the two SQL dialects cannot share. Each driver has its
//! [`Dialect`] (`sqlite/dialect.rs`, `postgres/dialect.rs`), chosen once,
//! when the store opens (`store::open`), and handed to the operations that
//! need it.

use futures_util::future::BoxFuture;

use crate::domain::organization_set::OrganizationSet;
use crate::domain::pagination::PageRequest;
use crate::store::error::StoreError;
use crate::store::page::JsonPage;
use crate::store::sql::db::Db;

/// A dialect's own statements (a value of plain data and functions, so
/// that it is `Copy` and `Send` whatever holds it).
#[derive(Clone, Copy)]
pub struct Dialect {
    /// Its name, for logs and tests.
    pub name: &'static str,
    /// The statement that writes a project, new or not (parameters: id,
    /// organization_id, created_at, updated_at, body, organization_number,
    /// slug). A project that exists moves to its next version when it
    /// changes (re-importing the same line changes nothing).
    pub project_upsert: fn() -> &'static str,
    /// A page of the projects of a set of two organizations or more, from
    /// one snapshot (the caller's transaction when one is open). The start
    /// key is resolved there too: a page after one that is not a project
    /// of the set is empty (`operations::projects::page` tells it from the end of
    /// the list). Bounded by the page, whatever the number of
    /// organizations: O(organizations + limit) index entries and `limit`
    /// bodies at most.
    pub organizations_page: OrganizationsPage,
}

/// How a dialect reads a page of several organizations' projects, as the
/// operation that asks plans it ([`MergePlan`]).
pub type OrganizationsPage = for<'a> fn(
    &'a mut dyn Db,
    &'a OrganizationSet,
    &'a PageRequest,
    MergePlan,
) -> BoxFuture<'a, Result<JsonPage, StoreError>>;

/// What the operation that reads a page of several organizations' projects
/// (`operations::projects::page`) decided of the read, for the dialect to
/// follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergePlan {
    /// How many entries of the order of every project the page may read
    /// before giving up for the organization-by-organization read; `None`:
    /// read organization by organization at once.
    pub scan_budget: Option<usize>,
    /// Whether the organization-by-organization read may take a
    /// millisecond or more: the driver then keeps it from holding up
    /// cheaper reads (SQLite: off the request's worker thread; PostgreSQL:
    /// on a connection of its own).
    pub long_merge: bool,
}

impl std::fmt::Debug for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// How every dialect's statement that writes a project changes one that
/// exists (see [`Dialect`]'s `project_upsert`).
pub(crate) const PROJECT_CONFLICT: &str = "ON CONFLICT (id) DO UPDATE
     SET organization_id = excluded.organization_id,
         organization_number = excluded.organization_number,
         created_at = excluded.created_at, updated_at = excluded.updated_at,
         body = excluded.body, slug = excluded.slug, deleted_at = NULL,
         version = projects.version
           + CASE WHEN projects.body = excluded.body AND projects.deleted_at IS NULL
                  THEN 0 ELSE 1 END";
