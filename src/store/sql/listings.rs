//! Reads: the three listings and the token look-up. Every listing is a
//! keyset range read on an index, so a page deep in a long list costs what
//! the first page costs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use super::page_memory::{Era, Recall, RememberedPage, RowSpans, append, page_key};
use super::{Db, PageMemory, Param, Row, exists, query_all, query_opt, transaction};
use crate::domain::api_token::{ApiToken, ApiTokenTag};
use crate::domain::pagination::{Direction, Page, PageRequest, merge_ordered};
use crate::domain::time::Timestamp;
use crate::domain::token::TokenDigest;
use crate::store::{
    ApiTokensQuery, JsonPage, JsonPageWriter, ProjectsQuery, ProxySettingsQuery, StoreError,
    TokenGrant,
};

pub(super) async fn find_token(
    db: &mut dyn Db,
    digest: &TokenDigest,
) -> Result<Option<TokenGrant>, StoreError> {
    transaction!(db, begin_read, {
        let token = query_opt(
            db,
            "SELECT id, user_id, expires_at, revoked_at IS NOT NULL, last_used_at
             FROM api_tokens WHERE digest = ?1",
            &[Param::Bytes(&digest.0)],
            |row| {
                Ok(TokenGrant {
                    token_id: row.text(0)?,
                    user_id: row.text(1)?,
                    organizations: Vec::new(),
                    expires_at: timestamp_opt(row, 2)?,
                    revoked: row.boolean(3)?,
                    last_used_at: timestamp_opt(row, 4)?,
                })
            },
        )
        .await?;
        let Some(mut token) = token else {
            return Ok(None);
        };
        token.organizations = query_all(
            db,
            "SELECT organization_id FROM memberships WHERE user_id = ?1 ORDER BY organization_id",
            &[Param::Text(&token.user_id)],
            |row| row.text(0),
        )
        .await?;
        Ok(Some(token))
    })
}

pub(super) async fn projects(
    db: &mut dyn Db,
    query: &ProjectsQuery,
) -> Result<JsonPage, StoreError> {
    let page = &query.page;
    if let [organization] = &query.organizations[..] {
        // One organization, the common case: one range read on the index
        // (organization_id, created_at, id), already in page order, the
        // start item found by a subquery. One statement is one snapshot: no
        // transaction needed. Without rows it cannot tell an unknown start
        // key from the end of the list: the general read below tells.
        let memory = db.page_memory();
        let recall = memory.as_ref().map(|memory| {
            let key = page_key(query);
            let recall = memory.recall(&key);
            (memory, key, recall)
        });
        let found = match recall {
            Some((
                memory,
                key,
                Recall::Again {
                    page: previous,
                    era,
                },
            )) => {
                let remembered =
                    remembering_projects_page(db, memory, key, &previous, era, organization, page)
                        .await?;
                match remembered {
                    Some(found) => found,
                    None => one_organization_projects_page(db, organization, page).await?,
                }
            }
            None | Some((_, _, Recall::FirstSighting)) => {
                one_organization_projects_page(db, organization, page).await?
            }
        };
        if found.count > 0 || page.start_key.is_none() {
            return Ok(found);
        }
    }
    transaction!(db, begin_read, {
        let after = match &page.start_key {
            None => None,
            Some(key) => {
                let start = query_opt(
                    db,
                    "SELECT created_at, organization_id FROM projects WHERE id = ?1",
                    &[Param::Text(key)],
                    |row| Ok((row.int(0)?, row.text(1)?)),
                )
                .await?;
                match start {
                    Some((created_at, organization))
                        if query.organizations.contains(&organization) =>
                    {
                        Some((created_at, key.as_str()))
                    }
                    _ => return Err(StoreError::UnknownStartKey),
                }
            }
        };
        let sql = keyset_select(
            "SELECT created_at, id, body FROM projects WHERE deleted_at IS NULL AND organization_id = ?1",
            1,
            &["created_at", "id"],
            StartKeys::Bound,
            page,
        );
        // One range read per organization, merged.
        let mut lists = Vec::with_capacity(query.organizations.len());
        for organization in query.organizations.iter() {
            let mut params = vec![Param::Text(organization)];
            if let Some((created_at, id)) = after {
                params.extend([Param::Int(created_at), Param::Text(id)]);
            }
            params.push(Param::Int(page.fetch_count() as i64));
            let mut list = Vec::with_capacity(page.fetch_count());
            db.query(sql, &params, &mut |row| {
                let mut json = Vec::new();
                // A list's row past the page is never shown (it follows a
                // full page of that list's own rows): its body stays unread.
                if list.len() < page.limit as usize {
                    row.append_bytes(2, &mut json)?;
                }
                list.push((timestamp(row, 0)?, row.text(1)?, json));
                Ok(true)
            })
            .await?;
            lists.push(list);
        }
        let merged = merge_ordered(lists, page, |a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut out = JsonPageWriter {
            has_more: merged.len() > page.limit as usize,
            ..JsonPageWriter::default()
        };
        for (_, id, json) in merged.into_iter().take(page.limit as usize) {
            out.push_ready(&id, &json);
        }
        Ok(out.finish())
    })
}

/// One organization's page of projects, read the plain way.
async fn one_organization_projects_page(
    db: &mut dyn Db,
    organization: &str,
    page: &PageRequest,
) -> Result<JsonPage, StoreError> {
    let sql = keyset_select(
        "SELECT created_at, id, body FROM projects WHERE deleted_at IS NULL AND organization_id = ?1",
        1,
        &["created_at", "id"],
        StartKeys::Selected {
            subquery: "SELECT created_at, id FROM projects WHERE id = ?2 AND organization_id = ?1",
            binds: 1,
        },
        page,
    );
    let mut params = vec![Param::Text(organization)];
    params.extend(page.start_key.as_deref().map(Param::Text));
    params.push(Param::Int(page.fetch_count() as i64));
    json_page(db, sql, &params, page, 2, |row, key| {
        row.append_text(1, key)
    })
    .await
}

/// One organization's page of projects, as the statement above reads it,
/// on a store that remembers the pages it received ([`PageMemory`]): the
/// statement also takes the ids and row versions of the rows this page had
/// last time (`previous`, recalled in `era`), and gives no body for a row
/// still at its remembered version. `None` when a connection was made anew
/// meanwhile: the answer may have come from another server than the
/// remembered rows, so neither is used.
async fn remembering_projects_page(
    db: &mut dyn Db,
    memory: &PageMemory,
    key: String,
    previous: &RememberedPage,
    era: Era,
    organization: &str,
    page: &PageRequest,
) -> Result<Option<JsonPage>, StoreError> {
    let sql = keyset_select(
        "SELECT created_at, id, xmin::text, \
         CASE WHEN (?2::text[])[array_position(?1::text[], id)] = xmin::text THEN NULL ELSE body END \
         FROM projects WHERE deleted_at IS NULL AND organization_id = ?3",
        3,
        &["created_at", "id"],
        StartKeys::Selected {
            subquery: "SELECT created_at, id FROM projects WHERE id = ?4 AND organization_id = ?3",
            binds: 1,
        },
        page,
    );
    let (ids, versions): (Vec<&str>, Vec<&str>) =
        (0..previous.len()).map(|index| previous.row(index)).unzip();
    let mut params = vec![
        Param::TextList(&ids),
        Param::TextList(&versions),
        Param::Text(organization),
    ];
    params.extend(page.start_key.as_deref().map(Param::Text));
    params.push(Param::Int(page.fetch_count() as i64));

    /// Where a received row is: a remembered one (its index), or a new one
    /// (its id, version and body, in `fresh`).
    enum Source {
        Remembered(usize),
        Fresh(RowSpans),
    }
    let mut out = JsonPageWriter::default();
    let mut sources = Vec::with_capacity(page.fetch_count());
    let mut fresh = String::new();
    db.query(sql, &params, &mut |row| {
        let position = sources.len();
        let (id, version) = (row.str(1)?, row.str(2)?);
        let source = if row.is_null(3)? {
            let index = previous.find(position, id, version).ok_or_else(|| {
                StoreError::Internal(format!(
                    "PostgreSQL left out the body of project {id}, which was not remembered"
                ))
            })?;
            Source::Remembered(index)
        } else {
            if fresh.is_empty() {
                // Rows of a list are alike in size: room for the rest at once.
                fresh.reserve(2048 * (page.fetch_count() - position));
            }
            let id = append(&mut fresh, id);
            let version = append(&mut fresh, version);
            let start = fresh.len();
            row.append_text(3, &mut fresh)?;
            Source::Fresh([id, version, start..fresh.len()])
        };
        if out.count < page.limit as usize {
            let body = match &source {
                Source::Remembered(index) => previous.body(*index),
                Source::Fresh([_, _, body]) => &fresh[body.clone()],
            };
            out.push_ready(id, body.as_bytes());
            out.reserve_rest(page.limit as usize);
        } else {
            out.has_more = true;
        }
        sources.push(source);
        Ok(true)
    })
    .await?;
    if memory.era() != era {
        return Ok(None);
    }
    let from_memory = sources
        .iter()
        .filter(|source| matches!(source, Source::Remembered(_)))
        .count();
    crate::metrics::page_bodies(from_memory as u64, (sources.len() - from_memory) as u64);
    // Nothing to remember when every row is the one remembered at its
    // place: the memory holds this page already.
    let as_remembered = sources.len() == previous.len()
        && sources
            .iter()
            .enumerate()
            .all(|(position, source)| matches!(source, Source::Remembered(i) if *i == position));
    if !as_remembered {
        // The new rows are in `fresh` already: the remembered ones join them.
        let spans = sources
            .into_iter()
            .map(|source| match source {
                Source::Fresh(spans) => spans,
                Source::Remembered(index) => {
                    let (id, version) = previous.row(index);
                    [id, version, previous.body(index)].map(|part| append(&mut fresh, part))
                }
            })
            .collect();
        memory.remember(key, RememberedPage::new(fresh, spans), era);
    }
    Ok(Some(out.finish()))
}

pub(super) async fn api_tokens(
    db: &mut dyn Db,
    query: &ApiTokensQuery,
) -> Result<Page<ApiToken>, StoreError> {
    // The start key and the rows must come from one snapshot. Without a
    // start key the read is one statement: a snapshot by itself.
    if query.page.start_key.is_none() {
        api_tokens_page(db, query).await
    } else {
        transaction!(db, begin_read, { api_tokens_page(db, query).await })
    }
}

async fn api_tokens_page(
    db: &mut dyn Db,
    query: &ApiTokensQuery,
) -> Result<Page<ApiToken>, StoreError> {
    let page = &query.page;
    let after = match &page.start_key {
        None => None,
        Some(key) => {
            let start = query_opt(
                db,
                "SELECT created_at, name FROM api_tokens WHERE id = ?1 AND user_id = ?2",
                &[Param::Text(key), Param::Text(&query.user_id)],
                |row| Ok((row.int(0)?, row.text(1)?)),
            )
            .await?;
            match start {
                Some((created_at, name)) if query.name.as_ref().is_none_or(|n| *n == name) => {
                    Some((created_at, key.as_str()))
                }
                _ => return Err(StoreError::UnknownStartKey),
            }
        }
    };
    let mut params = vec![Param::Text(&query.user_id)];
    let select = match &query.name {
        None => concat!(
            "SELECT ",
            token_columns!(),
            " FROM api_tokens WHERE revoked_at IS NULL AND user_id = ?1"
        ),
        Some(name) => {
            params.push(Param::Text(name));
            concat!(
                "SELECT ",
                token_columns!(),
                " FROM api_tokens WHERE revoked_at IS NULL AND user_id = ?1 AND name = ?2"
            )
        }
    };
    let sql = keyset_select(
        select,
        params.len(),
        &["created_at", "id"],
        StartKeys::Bound,
        page,
    );
    if let Some((created_at, id)) = after {
        params.extend([Param::Int(created_at), Param::Text(id)]);
    }
    params.push(Param::Int(page.fetch_count() as i64));
    let rows = query_all(db, sql, &params, api_token).await?;
    Ok(Page::from_overfetch(rows, page))
}

pub(super) async fn proxy_settings(
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
            "SELECT s.revision, s.body, p.organization_id FROM proxy_settings s
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
        // Every row is of the same project: the first one tells.
        let visibility_checked = AtomicBool::new(false);
        let found = json_page(db, sql, &params, page, 1, |row, key| {
            if !visibility_checked.swap(true, Ordering::Relaxed) {
                let organization = row.text(2)?;
                if !query.visible_to.contains(&organization) {
                    return Err(unknown_project(query));
                }
            }
            revision_key(row, key)
        })
        .await?;
        if found.count > 0 {
            return Ok(found);
        }
    }
    transaction!(db, begin_read, {
        let organization = query_opt(
            db,
            "SELECT organization_id FROM projects WHERE id = ?1 AND deleted_at IS NULL",
            &[Param::Text(&query.project_id)],
            |row| row.text(0),
        )
        .await?;
        if !organization.is_some_and(|o| query.visible_to.contains(&o)) {
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
async fn json_page(
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
enum StartKeys {
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
fn keyset_select(
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
