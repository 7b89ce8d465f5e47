//! SQLite's [`Dialect`]: where a new project's row goes, and the page of
//! several organizations' projects.
//!
//! Statements run in process and cost a microsecond or two each, so the
//! page is assembled here from small ones, in one read transaction (one
//! snapshot):
//!
//! 1. The scan: the index on (created_at, id, organization_number) stepped
//!    in page order, each entry's organization tested against the caller's
//!    [`Bitmap`], until a page and one more are found or a budget of
//!    entries is spent (the plan's `scan_budget`, `sql::dialect::MergePlan`).
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
use std::sync::LazyLock;

use crate::domain::organization_set::{Bitmap, OrganizationSet};
use crate::domain::pagination::{Direction, PageRequest};
use crate::store::error::StoreError;
use crate::store::page::{JsonPage, JsonPageWriter};
use crate::store::sql::db::{Db, Param, Row};
use crate::store::sql::dialect::{Dialect, MergePlan, PROJECT_CONFLICT};

/// The rowids of one organization's projects: organization number n owns
/// (n + 1) * 2^32 to (n + 2) * 2^32 (migration V4).
const ORGANIZATION_ROWS: i64 = 1 << 32;

pub const SQLITE: Dialect = Dialect {
    name: "sqlite",
    project_upsert,
    organizations_page: |db, set, page, plan| Box::pin(organizations_page(db, set, page, plan)),
};

/// A new project's row goes after its organization's last one (migration
/// V4: rowids by organization, so that one organization's page reads a few
/// table pages).
fn project_upsert() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
                "INSERT INTO projects (rowid, id, organization_id, organization_number, created_at, updated_at, body, slug)
                 VALUES ((SELECT COALESCE(MAX(rowid), (?6 + 1) * {ROWS}) + 1 FROM projects
                           WHERE rowid > (?6 + 1) * {ROWS} AND rowid < (?6 + 2) * {ROWS}),
                         ?1, ?2, ?6, ?3, ?4, ?5, ?7) {PROJECT_CONFLICT}",
                ROWS = ORGANIZATION_ROWS
            )
    });
    &SQL
}

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

async fn organizations_page(
    db: &mut dyn Db,
    set: &OrganizationSet,
    page: &PageRequest,
    plan: MergePlan,
) -> Result<JsonPage, StoreError> {
    // Inside the caller's transaction when there is one; a snapshot of its
    // own otherwise.
    let own = !db.in_transaction();
    if own {
        db.begin_read().await?;
    }
    let result = read(db, set, page, plan).await;
    if own {
        let end = match &result {
            Ok(_) => db.commit().await,
            Err(_) => db.rollback().await,
        };
        if let (Ok(_), Err(error)) = (&result, end) {
            return Err(error);
        }
    }
    result
}

async fn read(
    db: &mut dyn Db,
    set: &OrganizationSet,
    page: &PageRequest,
    plan: MergePlan,
) -> Result<JsonPage, StoreError> {
    let start = match &page.start_key {
        None => None,
        Some(id) => match start_item(db, id).await? {
            Some((created_at, organization)) if set.contains_number(organization) => {
                Some((created_at, id.as_str()))
            }
            // Not a project of the caller's: nothing after it.
            _ => return Ok(JsonPage::default()),
        },
    };
    let scanned = match (plan.scan_budget, set.bitmap()) {
        (Some(budget), Some(bitmap)) => scan(db, bitmap, budget, start, page).await?,
        _ => None,
    };
    let entries = match scanned {
        Some(entries) => entries,
        None => {
            db.expect_long_statements(plan.long_merge);
            let merged = merge(db, set, start, page).await;
            db.expect_long_statements(false);
            merged?
        }
    };
    bodies(db, &entries, page).await
}

async fn start_item(db: &mut dyn Db, id: &str) -> Result<Option<(i64, i64)>, StoreError> {
    let mut found = None;
    db.query(
        "SELECT created_at, organization_number FROM projects WHERE id = ?1",
        &[Param::Text(id)],
        &mut |row| {
            found = Some((row.int(0)?, row.int(1)?));
            Ok(false)
        },
    )
    .await?;
    Ok(found)
}

/// The page's entries (and one more, when there is one) from the order of
/// every project; `None` when the budget ran out first.
async fn scan(
    db: &mut dyn Db,
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
    db.query(sql, &params, &mut |row| {
        read += 1;
        if bitmap.contains(row.int(3)?) {
            entries.push(entry(row)?);
        }
        Ok(entries.len() < fetch)
    })
    .await?;
    // Fewer entries than the budget: the list ended, and the page with it.
    Ok((entries.len() == fetch || read < budget).then_some(entries))
}

/// The page's entries (and one more) merged from the organizations'.
async fn merge(
    db: &mut dyn Db,
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
        let first = organization_range(db, organization, start, None, 1, page).await?;
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
        found.extend(
            organization_range(db, *organization, start, bound.as_ref(), room, page).await?,
        );
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
async fn organization_range(
    db: &mut dyn Db,
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
    db.query(sql, &params, &mut |row| {
        entries.push(entry(row)?);
        Ok(true)
    })
    .await?;
    Ok(entries)
}

/// The page: the first `limit` entries with their bodies (one statement,
/// run for each rowid); one more entry tells that more follow.
async fn bodies(
    db: &mut dyn Db,
    entries: &[Entry],
    page: &PageRequest,
) -> Result<JsonPage, StoreError> {
    let limit = page.limit as usize;
    let mut out = JsonPageWriter::default();
    out.has_more = entries.len() > limit;
    let entries = &entries[..entries.len().min(limit)];
    let rowids: Vec<[Param<'_>; 1]> = entries.iter().map(|e| [Param::Int(e.rowid)]).collect();
    let runs: Vec<&[Param<'_>]> = rowids.iter().map(|p| p.as_slice()).collect();
    let mut found = 0;
    db.query_runs(
        "SELECT body FROM projects WHERE rowid = ?1",
        &runs,
        &mut |run, row| {
            // Runs answer in order, each one row at most: a missing row
            // leaves `found` behind the run's index.
            if run != found {
                return Ok(false);
            }
            found += 1;
            out.push(
                |key| {
                    key.push_str(&entries[run].id);
                    Ok::<_, StoreError>(())
                },
                |json| row.append_bytes(0, json),
            )?;
            out.reserve_rest(limit);
            Ok(false)
        },
    )
    .await?;
    if let Some(missing) = entries.get(found) {
        return Err(StoreError::Internal(format!(
            "project {} left its row during a read transaction",
            missing.id
        )));
    }
    Ok(out.finish())
}

/// An entry from a row whose first columns are rowid, created_at and id.
fn entry(row: &dyn Row) -> Result<Entry, StoreError> {
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
