//! Reads: the three listings and the token look-up, in the SQL both
//! dialects share. Every listing is a keyset range read on an index, so a
//! page deep in a long list costs what the first page costs; a page of
//! several organizations' projects, whose statements differ by dialect,
//! is each driver's own (`Db::organizations_page`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Db, Param, Row, exists, query_opt, to_json, transaction};
use crate::domain::api_token::{ApiToken, ApiTokenTag};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::pagination::{Direction, PageRequest};
use crate::domain::time::Timestamp;
use crate::domain::token::TokenDigest;
use crate::store::{
    ApiTokensQuery, JsonPage, JsonPageWriter, Listing, ListingKey, ProjectsQuery,
    ProxySettingsQuery, StoreError, TokenGrant,
};

/// The token whose digest is `digest`, with its user's organizations: one
/// row (one statement, no transaction), the organizations as the user's
/// summary of them, whatever their number.
pub(super) async fn find_token(
    db: &mut dyn Db,
    digest: &TokenDigest,
) -> Result<Option<TokenGrant>, StoreError> {
    query_opt(
        db,
        "SELECT t.id, t.user_id, t.expires_at, t.revoked_at IS NOT NULL, t.last_used_at,
                u.memberships
         FROM api_tokens t JOIN users u ON u.id = t.user_id
         WHERE t.digest = ?1",
        &[Param::Bytes(&digest.0)],
        |row| {
            let organizations = OrganizationSet::from_summary(row.text(5)?).map_err(|why| {
                StoreError::Internal(format!("user {}: {why}", row.str(1).unwrap_or("?")))
            })?;
            Ok(TokenGrant {
                token_id: row.text(0)?,
                user_id: row.text(1)?,
                organizations,
                expires_at: timestamp_opt(row, 2)?,
                revoked: row.boolean(3)?,
                last_used_at: timestamp_opt(row, 4)?,
            })
        },
    )
    .await
}

/// A page of any listing.
pub(super) async fn read(db: &mut dyn Db, key: &ListingKey) -> Result<JsonPage, StoreError> {
    match key.listing() {
        Listing::Projects(query) => projects(db, key, query).await,
        Listing::ApiTokens(query) => api_tokens(db, query).await,
        Listing::ProxySettings(query) => proxy_settings(db, query).await,
    }
}

/// A page of projects. One organization's is a range read on its index
/// (`one_organization_page`); several organizations' pages are read the
/// way each dialect reads them best (`Db::organizations_page`), both
/// bounded by the page: never one statement per organization with a page
/// of rows each. Either resolves the start key inside its own statements
/// and reads nothing after one that is not an item of the list, so an
/// empty page after a start key is told apart from the end of the list
/// afterwards, in one snapshot.
async fn projects(
    db: &mut dyn Db,
    key: &ListingKey,
    query: &ProjectsQuery,
) -> Result<JsonPage, StoreError> {
    let found = projects_page(db, key, query).await?;
    if found.count > 0 || query.page.start_key.is_none() {
        return Ok(found);
    }
    transaction!(db, begin_read, {
        let Some(start) = &query.page.start_key else {
            return Ok(JsonPage::default());
        };
        let organization = query_opt(
            db,
            "SELECT organization_number FROM projects WHERE id = ?1",
            &[Param::Text(start)],
            |row| row.int(0),
        )
        .await?;
        if !organization.is_some_and(|n| query.organizations.contains_number(n)) {
            return Err(StoreError::UnknownStartKey);
        }
        projects_page(db, key, query).await
    })
}

async fn projects_page(
    db: &mut dyn Db,
    key: &ListingKey,
    query: &ProjectsQuery,
) -> Result<JsonPage, StoreError> {
    let page = &query.page;
    match query.organizations.numbers() {
        [] => Ok(JsonPage::default()),
        [organization] => match db.own_organization_page(key, *organization, page).await {
            Some(found) => found,
            None => one_organization_page(db, *organization, page).await,
        },
        _ => db.organizations_page(&query.organizations, page).await,
    }
}

/// One organization's page of projects: one range read on the index
/// (organization_number, created_at, id), already in page order, the start
/// item found by a subquery (one statement, one snapshot).
pub(crate) async fn one_organization_page(
    db: &mut dyn Db,
    organization: i64,
    page: &PageRequest,
) -> Result<JsonPage, StoreError> {
    let sql = keyset_select(
        "SELECT created_at, id, body FROM projects WHERE deleted_at IS NULL AND organization_number = ?1",
        1,
        &["created_at", "id"],
        StartKeys::Selected {
            subquery: "SELECT created_at, id FROM projects WHERE id = ?2 AND organization_number = ?1",
            binds: 1,
        },
        page,
    );
    let mut params = vec![Param::Int(organization)];
    params.extend(page.start_key.as_deref().map(Param::Text));
    params.push(Param::Int(page.fetch_count() as i64));
    json_page(db, sql, &params, page, 2, |row, key| {
        row.append_text(1, key)
    })
    .await
}

/// Organizations from which on a page merged organization by organization
/// may take a millisecond or more: the drivers then keep it from holding
/// up cheaper reads (SQLite: off the request's worker thread; PostgreSQL:
/// on a connection of its own).
pub(crate) const LONG_MERGE_ORGANIZATIONS: usize = 64;

/// Organizations a caller must be in, at least, for a page of their
/// projects to be looked for first in the order of every project (the
/// index on (created_at, id, organization_number)): below it, reading each
/// organization's first rows costs less.
const SCAN_MIN_ORGANIZATIONS: usize = 4;

/// How many entries of the order of every project a page of `set`'s
/// projects may read before giving up for the organization-by-organization
/// read, when it should try that order first at all: while the caller's
/// organizations hold most projects (an agency, a support account), a page
/// is found in about `limit` entries; where they are sparse, the budget
/// keeps the attempt within a small multiple of what reading organization
/// by organization costs (one entry per organization, and the page).
pub(crate) fn scan_budget(set: &OrganizationSet, page: &PageRequest) -> Option<usize> {
    (set.len() >= SCAN_MIN_ORGANIZATIONS && set.bitmap().is_some())
        .then(|| 4 * (set.len() + page.fetch_count()))
}

async fn api_tokens(db: &mut dyn Db, query: &ApiTokensQuery) -> Result<JsonPage, StoreError> {
    let found = api_tokens_page(db, query).await?;
    if found.count > 0 || query.page.start_key.is_none() {
        return Ok(found);
    }
    // An empty page after a start key: the end of the list, or a start key
    // that names none of the caller's tokens (of that name). Told in one
    // snapshot, with the page read again in it.
    transaction!(db, begin_read, {
        let Some(start) = &query.page.start_key else {
            return Ok(JsonPage::default());
        };
        let name = query_opt(
            db,
            "SELECT name FROM api_tokens WHERE id = ?1 AND user_id = ?2",
            &[Param::Text(start), Param::Text(&query.user_id)],
            |row| row.text(0),
        )
        .await?;
        let of_the_list = match (name, &query.name) {
            (Some(name), Some(asked)) => name == *asked,
            (found, None) => found.is_some(),
            (None, Some(_)) => false,
        };
        if !of_the_list {
            return Err(StoreError::UnknownStartKey);
        }
        api_tokens_page(db, query).await
    })
}

/// One statement (one snapshot): the start token, a revoked one too, found
/// by a subquery among the caller's (of the name asked for). The page's
/// items are api_token objects written here from their rows.
async fn api_tokens_page(db: &mut dyn Db, query: &ApiTokensQuery) -> Result<JsonPage, StoreError> {
    let page = &query.page;
    let mut params = vec![Param::Text(&query.user_id)];
    let (select, start) = match &query.name {
        None => (
            concat!(
                "SELECT ",
                token_columns!(),
                " FROM api_tokens WHERE revoked_at IS NULL AND user_id = ?1"
            ),
            "SELECT created_at, id FROM api_tokens WHERE id = ?2 AND user_id = ?1",
        ),
        Some(name) => {
            params.push(Param::Text(name));
            (
                concat!(
                    "SELECT ",
                    token_columns!(),
                    " FROM api_tokens WHERE revoked_at IS NULL AND user_id = ?1 AND name = ?2"
                ),
                "SELECT created_at, id FROM api_tokens WHERE id = ?3 AND user_id = ?1 AND name = ?2",
            )
        }
    };
    objects_page(
        db,
        (select, start),
        &["created_at", "id"],
        params,
        page,
        |row| {
            let token = api_token(row)?;
            Ok((token.id.clone(), to_json(&token)?))
        },
    )
    .await
}

/// A page of objects written here from their rows (not stored as JSON):
/// `select` (its own parameters `params`) after the item the `start`
/// subquery finds by its id, in `keys` order; `object` answers each row's
/// key and JSON.
pub(super) async fn objects_page(
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

async fn proxy_settings(
    db: &mut dyn Db,
    query: &ProxySettingsQuery,
) -> Result<JsonPage, StoreError> {
    let page = &query.page;
    // `Some(None)`: a start key that is no revision; the read below
    // reports it.
    let start_revision = page.start_key.as_deref().map(parse_revision);
    if start_revision != Some(None) {
        // The common case in one statement (one snapshot, no transaction):
        // the revisions joined to their project, whose organization tells
        // whether the caller may see it, the start revision found by a
        // subquery. Without rows it cannot tell an unknown or invisible
        // project, an unknown start key and the end of the list apart: the
        // transaction below tells.
        let sql = keyset_select(
            "SELECT s.revision, s.body, p.organization_number FROM proxy_settings s
             JOIN projects p ON p.id = s.project_id
             WHERE s.project_id = ?1 AND p.deleted_at IS NULL",
            1,
            &["s.revision"],
            StartKeys::Selected {
                subquery: "SELECT revision FROM proxy_settings WHERE project_id = ?1 AND revision = ?2",
                binds: 1,
            },
            page,
        );
        let mut params = vec![Param::Text(&query.project_id)];
        params.extend(start_revision.flatten().map(|r| Param::Int(r.into())));
        params.push(Param::Int(page.fetch_count() as i64));
        // Every row is of the same project: the first one tells. A project
        // the caller may not see reads on as if it had no row here, so
        // that it costs what an unknown one costs (the same statements,
        // below): the time of a 404 must not tell whether it exists.
        let visibility_checked = AtomicBool::new(false);
        let found = json_page(db, sql, &params, page, 1, |row, key| {
            if !visibility_checked.swap(true, Ordering::Relaxed)
                && !query.visible_to.contains_number(row.int(2)?)
            {
                return Err(unknown_project(query));
            }
            revision_key(row, key)
        })
        .await;
        match found {
            Ok(found) if found.count > 0 => return Ok(found),
            // Only the check above says NotFound: go on to the statements
            // that tell unknown projects.
            Ok(_) | Err(StoreError::NotFound { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    transaction!(db, begin_read, {
        let organization = query_opt(
            db,
            "SELECT organization_number FROM projects WHERE id = ?1 AND deleted_at IS NULL",
            &[Param::Text(&query.project_id)],
            |row| row.int(0),
        )
        .await?;
        if !organization.is_some_and(|n| query.visible_to.contains_number(n)) {
            return Err(unknown_project(query));
        }
        let after = match &page.start_key {
            None => None,
            Some(key) => {
                let revision = parse_revision(key).ok_or(StoreError::UnknownStartKey)?;
                let known = exists(
                    db,
                    "SELECT 1 FROM proxy_settings WHERE project_id = ?1 AND revision = ?2",
                    &[Param::Text(&query.project_id), Param::Int(revision.into())],
                )
                .await?;
                if !known {
                    return Err(StoreError::UnknownStartKey);
                }
                Some(revision)
            }
        };
        let sql = keyset_select(
            "SELECT revision, body FROM proxy_settings WHERE project_id = ?1",
            1,
            &["revision"],
            StartKeys::Bound,
            page,
        );
        let mut params = vec![Param::Text(&query.project_id)];
        params.extend(after.map(|revision| Param::Int(revision.into())));
        params.push(Param::Int(page.fetch_count() as i64));
        json_page(db, sql, &params, page, 1, revision_key).await
    })
}

/// The same answer for a project that does not exist and one the caller
/// may not see.
fn unknown_project(query: &ProxySettingsQuery) -> StoreError {
    StoreError::NotFound {
        kind: "project",
        id: query.project_id.clone(),
    }
}

/// A revision's page key, from column 0.
fn revision_key(row: &dyn Row, key: &mut String) -> Result<(), StoreError> {
    use std::fmt::Write;
    write!(key, "{}", revision(row, 0)?).expect("writing to a String succeeds");
    Ok(())
}

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

/// A revision's key as the listing gives it: its decimal digits, no sign,
/// no leading zero.
fn parse_revision(key: &str) -> Option<u32> {
    let canonical =
        !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) && !key.starts_with('0');
    canonical.then(|| key.parse().ok()).flatten()
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

/// The columns [`api_token`] reads, in its order (a macro, for `concat!`).
macro_rules! token_columns {
    () => {
        "id, user_id, name, from_browser, last_used_at, expires_at, created_at, updated_at, hint"
    };
}
pub(super) use token_columns;

/// An api_token object from a row selected with [`token_columns`] first.
pub(super) fn api_token(row: &dyn Row) -> Result<ApiToken, StoreError> {
    Ok(ApiToken {
        object: ApiTokenTag::Tag,
        id: row.text(0)?,
        user_id: row.text(1)?,
        name: row.text(2)?,
        from_browser: row.boolean(3)?,
        last_used_at: timestamp_opt(row, 4)?,
        expires_at: timestamp_opt(row, 5)?,
        created_at: timestamp(row, 6)?,
        updated_at: timestamp(row, 7)?,
        token: row.text(8)?,
    })
}

pub(super) fn timestamp(row: &dyn Row, column: usize) -> Result<Timestamp, StoreError> {
    let millis = row.int(column)?;
    Timestamp::from_millis(millis)
        .ok_or_else(|| StoreError::Internal(format!("stored timestamp {millis} is out of range")))
}

pub(super) fn timestamp_opt(row: &dyn Row, column: usize) -> Result<Option<Timestamp>, StoreError> {
    match row.opt_int(column)? {
        None => Ok(None),
        Some(_) => timestamp(row, column).map(Some),
    }
}

fn revision(row: &dyn Row, column: usize) -> Result<u32, StoreError> {
    let value = row.int(column)?;
    u32::try_from(value)
        .map_err(|_| StoreError::Internal(format!("stored revision {value} is out of range")))
}

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

    #[test]
    fn revision_keys_are_canonical_decimals() {
        assert_eq!(parse_revision("1"), Some(1));
        assert_eq!(parse_revision("4294967295"), Some(u32::MAX));
        for bad in ["", "0", "01", "-1", "+1", "1.0", "4294967296", " 1"] {
            assert_eq!(parse_revision(bad), None, "{bad}");
        }
    }
}
