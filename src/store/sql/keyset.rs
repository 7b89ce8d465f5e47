//! The keyset page every listing reads: a range read on an index in page
//! order, after the start item (found by its key), the row past the page
//! telling only that more follow. A page deep in a long list costs what
//! the first page costs.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::domain::pagination::{Direction, PageRequest};
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;
use crate::store::page::{JsonPage, JsonPageWriter};
use crate::store::sql::db::{Db, Param, Row};

/// One page of an ordered range read, the stored JSON in column
/// `body` copied straight from the row into the page. The row past the
/// page is not read: it only tells that more follow.
pub(crate) async fn json_page(
    db: &mut dyn Db,
    sql: &str,
    params: &[Param<'_>],
    page: &PageRequest,
    body: usize,
    key: impl Fn(&dyn Row, &mut String) -> Result<(), StoreError> + Send + Sync,
) -> Result<JsonPage, StoreError> {
    let mut out = JsonPageWriter::default();
    db.query(sql, params, &mut |row| {
        if out.count == page.limit as usize {
            out.has_more = true;
            return Ok(false);
        }
        out.push(|k| key(row, k), |joined| row.append_bytes(body, joined))?;
        out.reserve_rest(page.limit as usize);
        Ok(true)
    })
    .await?;
    Ok(out.finish())
}

/// A page of objects written here from their rows (not stored as JSON):
/// `select` (its own parameters `params`) after the item the `start`
/// subquery finds by its id, in `keys` order; `object` answers each row's
/// key and JSON.
pub(crate) async fn objects_page(
    db: &mut dyn Db,
    (select, start): (&'static str, &'static str),
    keys: &'static [&'static str],
    mut params: Vec<Param<'_>>,
    page: &PageRequest,
    object: impl Fn(&dyn Row) -> Result<(String, String), StoreError> + Send + Sync,
) -> Result<JsonPage, StoreError> {
    let sql = keyset_select(
        select,
        params.len(),
        keys,
        StartKeys::Selected {
            subquery: start,
            binds: 1,
        },
        page,
    );
    params.extend(page.start_key.as_deref().map(Param::Text));
    params.push(Param::Int(page.fetch_count() as i64));
    let mut out = JsonPageWriter::default();
    db.query(sql, &params, &mut |row| {
        if out.count == page.limit as usize {
            out.has_more = true;
            return Ok(false);
        }
        let (key, json) = object(row)?;
        out.push_ready(&key, json.as_bytes());
        Ok(true)
    })
    .await?;
    Ok(out.finish())
}

/// Where a page that starts after an item gets that item's keys.
#[derive(Clone, Copy)]
pub(crate) enum StartKeys {
    /// Bound as parameters, one per key column.
    Bound,
    /// Selected by a subquery (one row of the key columns), whose own
    /// placeholders number on from the select's.
    Selected {
        subquery: &'static str,
        binds: usize,
    },
}

/// `select` (whose own placeholders are `?1` to `?{bound}`) with the keyset
/// condition when the page starts after a key, then the order and the
/// limit. The caller binds, after its own arguments: the start item's keys
/// or the subquery's arguments (when `page.start_key` is set), then the
/// number of rows to fetch.
///
/// Each shape is built once per thread and kept (there are a few dozen at
/// most): building the text costs more than running the prepared
/// statement.
pub(crate) fn keyset_select(
    select: &'static str,
    bound: usize,
    keys: &'static [&'static str],
    start: StartKeys,
    page: &PageRequest,
) -> &'static str {
    /// Select's address, subquery's address (or 0), ascending, after a key.
    type Shape = (usize, usize, bool, bool);
    thread_local! {
        static BUILT: RefCell<HashMap<Shape, &'static str>> = RefCell::new(HashMap::new());
    }
    // A select always comes with the same keys and bound placeholders:
    // its address (and the subquery's) names the shape.
    let shape = (
        select.as_ptr() as usize,
        match start {
            StartKeys::Bound => 0,
            StartKeys::Selected { subquery, .. } => subquery.as_ptr() as usize,
        },
        page.direction == Direction::Asc,
        page.start_key.is_some(),
    );
    BUILT.with(|built| {
        *built.borrow_mut().entry(shape).or_insert_with(|| {
            Box::leak(build_keyset_select(select, bound, keys, start, page).into_boxed_str())
        })
    })
}

fn build_keyset_select(
    select: &str,
    bound: usize,
    keys: &[&str],
    start: StartKeys,
    page: &PageRequest,
) -> String {
    let (comparison, order) = match page.direction {
        Direction::Asc => (">", "ASC"),
        Direction::Desc => ("<", "DESC"),
    };
    let mut next = bound;
    let mut placeholder = || {
        next += 1;
        format!("?{next}")
    };
    let mut sql = String::from(select);
    if page.start_key.is_some() {
        let columns = keys.join(", ");
        let values = match start {
            StartKeys::Bound => {
                let values: Vec<String> = keys.iter().map(|_| placeholder()).collect();
                values.join(", ")
            }
            StartKeys::Selected { subquery, binds } => {
                (0..binds).for_each(|_| drop(placeholder()));
                subquery.to_string()
            }
        };
        sql.push_str(&format!(" AND ({columns}) {comparison} ({values})"));
    }
    let ordering: Vec<String> = keys.iter().map(|k| format!("{k} {order}")).collect();
    sql.push_str(&format!(
        " ORDER BY {} LIMIT {}",
        ordering.join(", "),
        placeholder()
    ));
    sql
}

pub(crate) fn timestamp(row: &dyn Row, column: usize) -> Result<Timestamp, StoreError> {
    let millis = row.int(column)?;
    Timestamp::from_millis(millis)
        .ok_or_else(|| StoreError::Internal(format!("stored timestamp {millis} is out of range")))
}

pub(crate) fn timestamp_opt(row: &dyn Row, column: usize) -> Result<Option<Timestamp>, StoreError> {
    match row.opt_int(column)? {
        None => Ok(None),
        Some(_) => timestamp(row, column).map(Some),
    }
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;

    fn page(direction: Direction, start: Option<&str>) -> PageRequest {
        PageRequest {
            start_key: start.map(String::from),
            direction,
            limit: 20,
        }
    }

    #[test]
    fn keyset_sql_shapes() {
        assert_eq!(
            build_keyset_select(
                "SELECT x FROM t WHERE a = ?1",
                1,
                &["created_at", "id"],
                StartKeys::Bound,
                &page(Direction::Desc, None)
            ),
            "SELECT x FROM t WHERE a = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2"
        );
        assert_eq!(
            build_keyset_select(
                "SELECT x FROM t WHERE a = ?1",
                1,
                &["created_at", "id"],
                StartKeys::Bound,
                &page(Direction::Asc, Some("k"))
            ),
            "SELECT x FROM t WHERE a = ?1 AND (created_at, id) > (?2, ?3) ORDER BY created_at ASC, id ASC LIMIT ?4"
        );
        assert_eq!(
            build_keyset_select(
                "SELECT x FROM t WHERE a = ?1 AND b = ?2",
                2,
                &["revision"],
                StartKeys::Bound,
                &page(Direction::Desc, Some("3"))
            ),
            "SELECT x FROM t WHERE a = ?1 AND b = ?2 AND (revision) < (?3) ORDER BY revision DESC LIMIT ?4"
        );
        assert_eq!(
            build_keyset_select(
                "SELECT x FROM t WHERE a = ?1",
                1,
                &["created_at", "id"],
                StartKeys::Selected {
                    subquery: "SELECT created_at, id FROM t WHERE id = ?2",
                    binds: 1
                },
                &page(Direction::Desc, Some("k"))
            ),
            "SELECT x FROM t WHERE a = ?1 AND (created_at, id) < (SELECT created_at, id FROM t WHERE id = ?2) ORDER BY created_at DESC, id DESC LIMIT ?3"
        );
    }
}
