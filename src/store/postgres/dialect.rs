//! PostgreSQL's [`Dialect`]: the statement that writes a project, and the
//! page of several organizations' projects, in one statement when the
//! caller's organizations hold most projects, two at most.
//!
//! 1. The scan: the index on (created_at, id) INCLUDE (organization_number)
//!    walked in page order, each entry tested against the caller's
//!    organizations as one bitmap parameter (`get_bit`), at most a budget
//!    of entries (the plan's `scan_budget`, `sql::dialect::MergePlan`); the bodies of the rows kept are
//!    fetched by id. A full page found within the budget is the answer.
//! 2. Otherwise the merge: each organization's first entry after the start
//!    (one index probe each, `LATERAL`), the best `limit + 1` of them, and
//!    then from each of those organizations only the entries that can still
//!    make the page: no further than the worst of those first entries, and
//!    no more than the page has room for below the better ones. The best
//!    `limit + 1` overall get their bodies.
//!
//! Either reads O(organizations + limit²) index entries at worst and
//! `limit + 1` bodies (the one past the page only tells that more follow),
//! in one statement, one snapshot, whose start item is looked up and
//! checked against the caller's organizations inside it.
//!
//! 3. For a few organizations ([`SMALL_MERGE_ORGANIZATIONS`]), instead of
//!    the merge: each organization's first `limit + 1` rows, bodies
//!    included (`LATERAL`), the best `limit + 1` of them. It reads up to
//!    that many times the page's rows, and costs PostgreSQL less than the
//!    merge's steps below that (bench/RESULTS.md, "A few organizations'
//!    page").

use std::sync::{LazyLock, OnceLock};

use crate::domain::organization_set::{Bitmap, OrganizationSet};
use crate::domain::pagination::{Direction, PageRequest};
use crate::store::error::StoreError;
use crate::store::page::JsonPage;
use crate::store::sql::db::{Db, Param};
use crate::store::sql::dialect::{Dialect, MergePlan, PROJECT_CONFLICT};
use crate::store::sql::keyset::json_page;

pub const POSTGRES: Dialect = Dialect {
    name: "postgres",
    project_upsert,
    organizations_page: |db, set, page, plan| Box::pin(organizations_page(db, set, page, plan)),
};

fn project_upsert() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
                "INSERT INTO projects (id, organization_id, organization_number, created_at, updated_at, body, slug)
                 VALUES (?1, ?2, ?6, ?3, ?4, ?5, ?7) {PROJECT_CONFLICT}"
            )
    });
    &SQL
}

/// Organizations a caller may be in, at most, for a page of their projects
/// to be read as each one's first rows (`small_merge_sql`).
const SMALL_MERGE_ORGANIZATIONS: usize = 3;

async fn organizations_page(
    db: &mut dyn Db,
    set: &OrganizationSet,
    page: &PageRequest,
    plan: MergePlan,
) -> Result<JsonPage, StoreError> {
    if let (Some(budget), Some(bitmap)) = (plan.scan_budget, set.bitmap()) {
        let found = scan(db, bitmap, budget, page).await?;
        // Fewer rows than asked: the list ended, or the budget did. The
        // merge tells, and costs no more than the scan's budget.
        if found.has_more {
            return Ok(found);
        }
    }
    let statements = &statements()[variant(page)];
    if set.len() <= SMALL_MERGE_ORGANIZATIONS {
        return merge(db, &statements.small_merge, set, page).await;
    }
    db.expect_long_statements(plan.long_merge);
    let merged = merge(db, &statements.merge, set, page).await;
    db.expect_long_statements(false);
    merged
}

async fn scan(
    db: &mut dyn Db,
    bitmap: &Bitmap,
    budget: usize,
    page: &PageRequest,
) -> Result<JsonPage, StoreError> {
    let sql = &statements()[variant(page)].scan;
    let mut params = vec![
        Param::Bytes(&bitmap.bits),
        Param::Int(bitmap.base),
        Param::Int(bitmap.last_bit()),
        Param::Int(budget as i64),
    ];
    params.extend(page.start_key.as_deref().map(Param::Text));
    params.push(Param::Int(page.fetch_count() as i64));
    json_page(db, sql, &params, page, 2, |row, key| {
        row.append_text(1, key)
    })
    .await
}

/// A merge statement's page: `sql` takes $1 the organizations' numbers,
/// $2 the number of rows, then $3 the start key.
async fn merge(
    db: &mut dyn Db,
    sql: &str,
    set: &OrganizationSet,
    page: &PageRequest,
) -> Result<JsonPage, StoreError> {
    let mut params = vec![
        Param::IntList(set.numbers()),
        Param::Int(page.fetch_count() as i64),
    ];
    params.extend(page.start_key.as_deref().map(Param::Text));
    json_page(db, sql, &params, page, 2, |row, key| {
        row.append_text(1, key)
    })
    .await
}

/// The statements of one page shape.
struct Statements {
    scan: String,
    merge: String,
    small_merge: String,
}

/// Descending or ascending, after a start key or from the first item.
fn variant(page: &PageRequest) -> usize {
    usize::from(page.direction == Direction::Asc) * 2 + usize::from(page.start_key.is_some())
}

fn statements() -> &'static [Statements; 4] {
    static BUILT: OnceLock<[Statements; 4]> = OnceLock::new();
    BUILT.get_or_init(|| {
        [
            (Direction::Desc, false),
            (Direction::Desc, true),
            (Direction::Asc, false),
            (Direction::Asc, true),
        ]
        .map(|(direction, after)| Statements {
            scan: scan_sql(direction, after),
            merge: merge_sql(direction, after),
            small_merge: small_merge_sql(direction, after),
        })
    })
}

/// `(comparison after the start, order, the far end of the order as a
/// created_at and an id)`.
fn order(direction: Direction) -> (&'static str, &'static str, [&'static str; 2]) {
    match direction {
        // Below every key: ids are [A-Za-z0-9_-], compared byte by byte.
        Direction::Desc => ("<", "DESC", ["-9223372036854775808", "''"]),
        Direction::Asc => (">", "ASC", ["9223372036854775807", "'~'"]),
    }
}

/// Whether organization number `column` is set in the bitmap parameters
/// ($1 bits, $2 base, $3 last bit).
fn member(column: &str) -> String {
    format!(
        "CASE WHEN {column} - $2 BETWEEN 0 AND $3 \
         THEN get_bit(CAST($1 AS BYTEA), CAST({column} - $2 AS INTEGER)) = 1 END"
    )
}

/// $1 bitmap, $2 base, $3 last bit, $4 budget, then $5 the start key when
/// `after`, then the number of rows.
fn scan_sql(direction: Direction, after: bool) -> String {
    let (beyond, order, _) = order(direction);
    let start = if after {
        format!(
            "AND (created_at, id) {beyond} (SELECT created_at, id FROM projects \
             WHERE id = $5 AND {})",
            member("organization_number")
        )
    } else {
        String::new()
    };
    let rows = if after { "$6" } else { "$5" };
    format!(
        "SELECT s.created_at, s.id, p.body \
         FROM (SELECT created_at, id, organization_number FROM projects \
               WHERE deleted_at IS NULL {start} \
               ORDER BY created_at {order}, id {order} LIMIT $4) AS s \
         CROSS JOIN LATERAL (SELECT body FROM projects WHERE id = s.id) AS p \
         WHERE {member} \
         ORDER BY s.created_at {order}, s.id {order} LIMIT {rows}",
        member = member("s.organization_number"),
    )
}

/// The start item, when `after`: a `WITH` clause's table `start` ($3, in
/// one of the organizations $1), and the condition of the rows past it.
fn start_of_merge(direction: Direction, after: bool) -> (&'static str, String) {
    if !after {
        return ("", String::new());
    }
    let (beyond, _, _) = order(direction);
    (
        "start AS (SELECT created_at, id FROM projects \
         WHERE id = $3 AND organization_number = ANY($1)),",
        format!("AND (created_at, id) {beyond} (SELECT created_at, id FROM start)"),
    )
}

/// $1 the organizations' numbers, $2 the number of rows, then $3 the start
/// key when `after`: each organization's first $2 rows with their bodies,
/// the best $2 of them.
fn small_merge_sql(direction: Direction, after: bool) -> String {
    let (_, order, _) = order(direction);
    let (start_cte, after_start) = start_of_merge(direction, after);
    let with = match start_cte.strip_suffix(',') {
        Some(start) => format!("WITH {start} "),
        None => String::new(),
    };
    format!(
        "{with}SELECT t.created_at, t.id, t.body FROM unnest($1::bigint[]) AS o(n) \
         CROSS JOIN LATERAL (SELECT created_at, id, body FROM projects \
           WHERE deleted_at IS NULL AND organization_number = o.n {after_start} \
           ORDER BY created_at {order}, id {order} LIMIT $2) AS t \
         ORDER BY t.created_at {order}, t.id {order} LIMIT $2"
    )
}

/// $1 the organizations' numbers, $2 the number of rows, then $3 the start
/// key when `after`.
fn merge_sql(direction: Direction, after: bool) -> String {
    let (_, order, [far_time, far_id]) = order(direction);
    let (start_cte, after_start) = start_of_merge(direction, after);
    // The far bound: the worst of the best `$2` first entries, when there
    // are that many; the far end of the order otherwise.
    let within = match direction {
        Direction::Desc => ">=",
        Direction::Asc => "<=",
    };
    format!(
        "WITH {start_cte} \
         heads AS ( \
           SELECT o.n, h.created_at, h.id FROM unnest($1::bigint[]) AS o(n) \
           CROSS JOIN LATERAL (SELECT created_at, id FROM projects \
             WHERE deleted_at IS NULL AND organization_number = o.n {after_start} \
             ORDER BY created_at {order}, id {order} LIMIT 1) AS h \
           ORDER BY h.created_at {order}, h.id {order} LIMIT $2), \
         ranked AS ( \
           SELECT n, created_at, id, \
                  row_number() OVER (ORDER BY created_at {order}, id {order}) AS rank \
           FROM heads), \
         bound AS ( \
           SELECT COALESCE(MAX(created_at) FILTER (WHERE rank = $2), {far_time}) AS created_at, \
                  COALESCE(MAX(id) FILTER (WHERE rank = $2), {far_id}) AS id \
           FROM ranked), \
         keys AS ( \
           SELECT k.created_at, k.id FROM ranked CROSS JOIN bound \
           CROSS JOIN LATERAL (SELECT created_at, id FROM projects \
             WHERE deleted_at IS NULL AND organization_number = ranked.n {after_start} \
               AND (created_at, id) {within} (bound.created_at, bound.id) \
             ORDER BY created_at {order}, id {order} LIMIT $2 - ranked.rank + 1) AS k \
           ORDER BY k.created_at {order}, k.id {order} LIMIT $2) \
         SELECT keys.created_at, keys.id, p.body FROM keys \
         CROSS JOIN LATERAL (SELECT body FROM projects WHERE id = keys.id) AS p \
         ORDER BY keys.created_at {order}, keys.id {order}"
    )
}
