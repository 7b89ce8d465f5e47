//! SQLite's page of several organizations' projects. Statements run in
//! process and cost a microsecond or two each, so the page is assembled
//! here from small ones, in one read transaction (one snapshot):
//!
//! 1. The scan: the index on (created_at, id, organization_number) stepped
//!    in page order, each entry's organization tested against the caller's
//!    [`Bitmap`], until a page and one more are found or a budget of
//!    entries is spent (`listings::scan_budget`).
//! 2. Otherwise the merge: each organization's first entry after the start
//!    (one index probe each), the best `limit + 1` of them, then from each
//!    of those organizations, best first, only the entries that can still
//!    make the page: no further than the worst of the best first entries,
//!    or than the worst of the best `limit + 1` entries found so far, and
//!    no more than the page has room for below the better organizations.
//!
//! The entries carry their rowids; only the `limit` of the page have their
//! bodies read, by rowid. Either step reads O(organizations + limit²) index
//! entries at worst, and usually about `limit`.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;

use super::{PooledSqlite, SqliteRow};
use crate::domain::organization_set::{Bitmap, OrganizationSet};
use crate::domain::pagination::{Direction, PageRequest};
use crate::store::sql::listings::{LONG_MERGE_ORGANIZATIONS, scan_budget};
use crate::store::sql::{Param, Row as _};
use crate::store::{JsonPage, JsonPageWriter, StoreError};

/// An index entry: a project's place in the order, and its row.
#[derive(Clone, Debug)]
struct Entry {
    created_at: i64,
    id: String,
    rowid: i64,
}

impl Entry {
    /// Ascending (created_at, id) order.
    fn cmp_key(&self, other: &Self) -> Ordering {
        (self.created_at, &self.id).cmp(&(other.created_at, &other.id))
    }
}

pub(super) fn organizations_page(
    connection: &mut PooledSqlite,
    set: &OrganizationSet,
    page: &PageRequest,
) -> Result<JsonPage, StoreError> {
    // Inside the caller's transaction when there is one; a snapshot of its
    // own otherwise.
    let own = connection.connection.is_autocommit();
    if own {
        connection.run_execute("BEGIN", &[])?;
    }
    let result = read(connection, set, page);
    if own {
        let end = connection.run_execute(if result.is_ok() { "COMMIT" } else { "ROLLBACK" }, &[]);
        if let (Ok(_), Err(error)) = (&result, end) {
            return Err(error);
        }
    }
    result
}

fn read(
    connection: &mut PooledSqlite,
    set: &OrganizationSet,
    page: &PageRequest,
) -> Result<JsonPage, StoreError> {
    let start = match &page.start_key {
        None => None,
        Some(id) => match start_item(connection, id)? {
            Some((created_at, organization)) if set.contains_number(organization) => {
                Some((created_at, id.as_str()))
            }
            // Not a project of the caller's: nothing after it.
            _ => return Ok(JsonPage::default()),
        },
    };
    let scanned = match (scan_budget(set, page), set.bitmap()) {
        (Some(budget), Some(bitmap)) => scan(connection, bitmap, budget, start, page)?,
        _ => None,
    };
    let entries = match scanned {
        Some(entries) => entries,
        None if set.len() >= LONG_MERGE_ORGANIZATIONS => {
            off_the_worker(|| merge(connection, set, start, page))?
        }
        None => merge(connection, set, start, page)?,
    };
    bodies(connection, &entries, page)
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

fn start_item(connection: &mut PooledSqlite, id: &str) -> Result<Option<(i64, i64)>, StoreError> {
    let mut found = None;
    connection.run_query(
        "SELECT created_at, organization_number FROM projects WHERE id = ?1",
        &[Param::Text(id)],
        &mut |row| {
            found = Some((row.int(0)?, row.int(1)?));
            Ok(false)
        },
    )?;
    Ok(found)
}

/// The page's entries (and one more, when there is one) from the order of
/// every project; `None` when the budget ran out first.
fn scan(
    connection: &mut PooledSqlite,
    bitmap: &Bitmap,
    budget: usize,
    start: Option<(i64, &str)>,
    page: &PageRequest,
) -> Result<Option<Vec<Entry>>, StoreError> {
    let sql = range_sql(Range {
        index: "projects_order",
        organization: false,
        after: start.is_some(),
        bounded: false,
        direction: page.direction,
    });
    let mut params = Vec::with_capacity(3);
    if let Some((created_at, id)) = start {
        params.extend([Param::Int(created_at), Param::Text(id)]);
    }
    params.push(Param::Int(budget as i64));
    let (fetch, mut entries, mut read) = (page.fetch_count(), Vec::new(), 0);
    connection.run_query(sql, &params, &mut |row| {
        read += 1;
        if bitmap.contains(row.int(3)?) {
            entries.push(entry(row)?);
        }
        Ok(entries.len() < fetch)
    })?;
    // Fewer entries than the budget: the list ended, and the page with it.
    Ok((entries.len() == fetch || read < budget).then_some(entries))
}

/// The page's entries (and one more) merged from the organizations'.
fn merge(
    connection: &mut PooledSqlite,
    set: &OrganizationSet,
    start: Option<(i64, &str)>,
    page: &PageRequest,
) -> Result<Vec<Entry>, StoreError> {
    let fetch = page.fetch_count();
    // Best first, in the page's order.
    let in_order = |a: &Entry, b: &Entry| match page.direction {
        Direction::Asc => a.cmp_key(b),
        Direction::Desc => b.cmp_key(a),
    };
    let mut heads = Vec::new();
    for &organization in set.numbers() {
        let first = organization_range(connection, organization, start, None, 1, page)?;
        heads.extend(first.into_iter().map(|entry| (organization, entry)));
    }
    heads.sort_by(|a, b| in_order(&a.1, &b.1));
    heads.truncate(fetch);
    // The worst of the best `fetch` first entries bounds the page: those
    // `fetch` entries alone would fill it.
    let mut bound = (heads.len() == fetch).then(|| heads[fetch - 1].1.clone());
    let mut found: Vec<Entry> = Vec::with_capacity(2 * fetch);
    for (rank, (organization, _)) in heads.iter().enumerate() {
        // The `rank` better organizations each put their first entry above
        // every entry of this one.
        let room = fetch - rank;
        found.extend(organization_range(
            connection,
            *organization,
            start,
            bound.as_ref(),
            room,
            page,
        )?);
        if found.len() >= fetch {
            found.sort_by(in_order);
            found.truncate(fetch);
            bound = Some(found[fetch - 1].clone());
        }
    }
    found.sort_by(in_order);
    found.truncate(fetch);
    Ok(found)
}

/// Up to `limit` entries of one organization after `start` and no further
/// than `bound` (inclusive), in the page's order.
fn organization_range(
    connection: &mut PooledSqlite,
    organization: i64,
    start: Option<(i64, &str)>,
    bound: Option<&Entry>,
    limit: usize,
    page: &PageRequest,
) -> Result<Vec<Entry>, StoreError> {
    let sql = range_sql(Range {
        index: "projects_listing",
        organization: true,
        after: start.is_some(),
        bounded: bound.is_some(),
        direction: page.direction,
    });
    let mut params = vec![Param::Int(organization)];
    if let Some((created_at, id)) = start {
        params.extend([Param::Int(created_at), Param::Text(id)]);
    }
    if let Some(bound) = bound {
        params.extend([Param::Int(bound.created_at), Param::Text(&bound.id)]);
    }
    params.push(Param::Int(limit as i64));
    let mut entries = Vec::with_capacity(limit.min(64));
    connection.run_query(sql, &params, &mut |row| {
        entries.push(entry(row)?);
        Ok(true)
    })?;
    Ok(entries)
}

/// The page: the first `limit` entries with their bodies; one more entry
/// tells that more follow.
fn bodies(
    connection: &mut PooledSqlite,
    entries: &[Entry],
    page: &PageRequest,
) -> Result<JsonPage, StoreError> {
    let limit = page.limit as usize;
    let mut out = JsonPageWriter {
        has_more: entries.len() > limit,
        ..JsonPageWriter::default()
    };
    // One statement, bound again for each row.
    let mut statement = connection
        .connection
        .prepare_cached("SELECT body FROM projects WHERE rowid = ?1")?;
    for entry in entries.iter().take(limit) {
        let mut rows = statement.query([entry.rowid])?;
        let Some(row) = rows.next()? else {
            return Err(StoreError::Internal(format!(
                "project {} left its row during a read transaction",
                entry.id
            )));
        };
        out.push(
            |key| {
                key.push_str(&entry.id);
                Ok::<_, StoreError>(())
            },
            |json| SqliteRow(row).append_bytes(0, json),
        )?;
        out.reserve_rest(limit);
    }
    super::count_steps(&statement);
    Ok(out.finish())
}

/// An entry from a row whose first columns are rowid, created_at and id.
fn entry(row: &dyn crate::store::sql::Row) -> Result<Entry, StoreError> {
    Ok(Entry {
        rowid: row.int(0)?,
        created_at: row.int(1)?,
        id: row.text(2)?,
    })
}

/// The shape of a range read on one of the two indexes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Range {
    index: &'static str,
    /// One organization's entries (`?1` its number).
    organization: bool,
    /// After a start item (its created_at and id bound next).
    after: bool,
    /// No further than a bound (its created_at and id bound next).
    bounded: bool,
    direction: Direction,
}

/// The statement of a range read: rowid, created_at, id and
/// organization_number in the page's order; the last parameter is the
/// number of rows. Built once per thread and shape.
fn range_sql(range: Range) -> &'static str {
    thread_local! {
        static BUILT: RefCell<HashMap<Range, &'static str>> = RefCell::new(HashMap::new());
    }
    BUILT.with(|built| {
        *built
            .borrow_mut()
            .entry(range)
            .or_insert_with(|| Box::leak(build_range_sql(range).into_boxed_str()))
    })
}

fn build_range_sql(range: Range) -> String {
    let (beyond, within, order) = match range.direction {
        Direction::Desc => ("<", ">=", "DESC"),
        Direction::Asc => (">", "<=", "ASC"),
    };
    let mut next = 0;
    let mut placeholder = || {
        next += 1;
        format!("?{next}")
    };
    let mut sql = format!(
        "SELECT rowid, created_at, id, organization_number FROM projects INDEXED BY {} \
         WHERE deleted_at IS NULL",
        range.index
    );
    if range.organization {
        sql.push_str(&format!(" AND organization_number = {}", placeholder()));
    }
    if range.after {
        let (c, i) = (placeholder(), placeholder());
        sql.push_str(&format!(" AND (created_at, id) {beyond} ({c}, {i})"));
    }
    if range.bounded {
        let (c, i) = (placeholder(), placeholder());
        sql.push_str(&format!(" AND (created_at, id) {within} ({c}, {i})"));
    }
    sql.push_str(&format!(
        " ORDER BY created_at {order}, id {order} LIMIT {}",
        placeholder()
    ));
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_statements() {
        assert_eq!(
            build_range_sql(Range {
                index: "projects_order",
                organization: false,
                after: true,
                bounded: false,
                direction: Direction::Desc,
            }),
            "SELECT rowid, created_at, id, organization_number FROM projects INDEXED BY projects_order \
             WHERE deleted_at IS NULL AND (created_at, id) < (?1, ?2) \
             ORDER BY created_at DESC, id DESC LIMIT ?3"
        );
        assert_eq!(
            build_range_sql(Range {
                index: "projects_listing",
                organization: true,
                after: true,
                bounded: true,
                direction: Direction::Asc,
            }),
            "SELECT rowid, created_at, id, organization_number FROM projects INDEXED BY projects_listing \
             WHERE deleted_at IS NULL AND organization_number = ?1 AND (created_at, id) > (?2, ?3) \
             AND (created_at, id) <= (?4, ?5) ORDER BY created_at ASC, id ASC LIMIT ?6"
        );
    }
}
