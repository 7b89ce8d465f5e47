//! Reads: the three listings and the token look-up. Every listing is a
//! keyset range read on an index, so a page deep in a long list costs what
//! the first page costs.

use rusqlite::types::ToSql;
use rusqlite::{Connection, OptionalExtension, Row};
use serde_json::value::RawValue;

use crate::domain::api_token::{ApiToken, ApiTokenTag};
use crate::domain::pagination::{Direction, Page, PageRequest, merge_ordered};
use crate::domain::time::Timestamp;
use crate::domain::token::TokenDigest;
use crate::store::{
    ApiTokensQuery, ProjectsQuery, ProxySettingsQuery, StoreError, StoredProject,
    StoredProxySettings, TokenGrant,
};

pub(super) fn find_token(
    c: &Connection,
    digest: &TokenDigest,
) -> Result<Option<TokenGrant>, StoreError> {
    let tx = c.unchecked_transaction()?;
    let token = tx
        .prepare_cached(
            "SELECT id, user_id, expires_at, revoked_at IS NOT NULL, last_used_at
             FROM api_tokens WHERE digest = ?1",
        )?
        .query_row([&digest.0[..]], |row| {
            Ok(TokenGrant {
                token_id: row.get(0)?,
                user_id: row.get(1)?,
                organizations: Vec::new(),
                expires_at: timestamp_opt(row, 2)?,
                revoked: row.get(3)?,
                last_used_at: timestamp_opt(row, 4)?,
            })
        })
        .optional()?;
    let Some(mut token) = token else {
        return Ok(None);
    };
    token.organizations = tx
        .prepare_cached(
            "SELECT organization_id FROM memberships WHERE user_id = ?1 ORDER BY organization_id",
        )?
        .query_map([&token.user_id], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(Some(token))
}

pub(super) fn projects(
    c: &Connection,
    query: &ProjectsQuery,
) -> Result<Page<StoredProject>, StoreError> {
    let page = &query.page;
    // One read transaction: the start key and the rows come from one snapshot.
    let tx = c.unchecked_transaction()?;
    let after = match &page.start_key {
        None => None,
        Some(key) => {
            let start: Option<(i64, String)> = tx
                .prepare_cached("SELECT created_at, organization_id FROM projects WHERE id = ?1")?
                .query_row([key], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            match start {
                Some((created_at, organization)) if query.organizations.contains(&organization) => {
                    Some((created_at, key))
                }
                _ => return Err(StoreError::UnknownStartKey),
            }
        }
    };
    let sql = keyset_select(
        "SELECT created_at, id, body FROM projects WHERE deleted_at IS NULL AND organization_id = ?",
        &["created_at", "id"],
        page,
    );
    let fetch = page.fetch_count() as i64;
    // One range read per organization, merged: each uses the index
    // (organization_id, created_at, id) in order, with no sort.
    let mut lists = Vec::with_capacity(query.organizations.len());
    for organization in query.organizations.iter() {
        let mut args: Vec<&dyn ToSql> = vec![organization];
        if let Some((created_at, id)) = &after {
            args.extend([created_at as &dyn ToSql, id]);
        }
        args.push(&fetch);
        let rows = tx
            .prepare_cached(&sql)?
            .query_map(args.as_slice(), |row| {
                Ok(StoredProject {
                    created_at: timestamp(row, 0)?,
                    id: row.get(1)?,
                    json: raw_json(row, 2)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        lists.push(rows);
    }
    let rows = merge_ordered(lists, page, |a, b| {
        (a.created_at, &a.id).cmp(&(b.created_at, &b.id))
    });
    Ok(Page::from_overfetch(rows, page))
}

pub(super) fn api_tokens(
    c: &Connection,
    query: &ApiTokensQuery,
) -> Result<Page<ApiToken>, StoreError> {
    let page = &query.page;
    let tx = c.unchecked_transaction()?;
    let after = match &page.start_key {
        None => None,
        Some(key) => {
            let start: Option<(i64, String)> = tx
                .prepare_cached(
                    "SELECT created_at, name FROM api_tokens WHERE id = ?1 AND user_id = ?2",
                )?
                .query_row([key, &query.user_id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            match start {
                Some((created_at, name)) if query.name.as_ref().is_none_or(|n| *n == name) => {
                    Some((created_at, key))
                }
                _ => return Err(StoreError::UnknownStartKey),
            }
        }
    };
    let mut select =
        format!("SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE revoked_at IS NULL AND user_id = ?");
    let mut args: Vec<&dyn ToSql> = vec![&query.user_id];
    if let Some(name) = &query.name {
        select.push_str(" AND name = ?");
        args.push(name);
    }
    let sql = keyset_select(&select, &["created_at", "id"], page);
    if let Some((created_at, id)) = &after {
        args.extend([created_at as &dyn ToSql, id]);
    }
    let fetch = page.fetch_count() as i64;
    args.push(&fetch);
    let rows = tx
        .prepare_cached(&sql)?
        .query_map(args.as_slice(), api_token)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_overfetch(rows, page))
}

pub(super) fn proxy_settings(
    c: &Connection,
    query: &ProxySettingsQuery,
) -> Result<Page<StoredProxySettings>, StoreError> {
    let page = &query.page;
    let tx = c.unchecked_transaction()?;
    let organization: Option<String> = tx
        .prepare_cached(
            "SELECT organization_id FROM projects WHERE id = ?1 AND deleted_at IS NULL",
        )?
        .query_row([&query.project_id], |row| row.get(0))
        .optional()?;
    if !organization.is_some_and(|o| query.visible_to.contains(&o)) {
        return Err(StoreError::NotFound {
            kind: "project",
            id: query.project_id.clone(),
        });
    }
    let after = match &page.start_key {
        None => None,
        Some(key) => {
            let revision = parse_revision(key).ok_or(StoreError::UnknownStartKey)?;
            let known = tx
                .prepare_cached(
                    "SELECT 1 FROM proxy_settings WHERE project_id = ?1 AND revision = ?2",
                )?
                .exists(rusqlite::params![query.project_id, revision])?;
            if !known {
                return Err(StoreError::UnknownStartKey);
            }
            Some(revision)
        }
    };
    let sql = keyset_select(
        "SELECT revision, body FROM proxy_settings WHERE project_id = ?",
        &["revision"],
        page,
    );
    let mut args: Vec<&dyn ToSql> = vec![&query.project_id];
    if let Some(revision) = &after {
        args.push(revision);
    }
    let fetch = page.fetch_count() as i64;
    args.push(&fetch);
    let rows = tx
        .prepare_cached(&sql)?
        .query_map(args.as_slice(), |row| {
            Ok(StoredProxySettings {
                revision: row.get(0)?,
                json: raw_json(row, 1)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_overfetch(rows, page))
}

/// The columns [`api_token`] reads, in its order.
pub(super) const TOKEN_COLUMNS: &str =
    "id, user_id, name, from_browser, last_used_at, expires_at, created_at, updated_at, hint";

/// An api_token object from a row selected with [`TOKEN_COLUMNS`] first.
pub(super) fn api_token(row: &Row<'_>) -> rusqlite::Result<ApiToken> {
    Ok(ApiToken {
        object: ApiTokenTag::Tag,
        id: row.get(0)?,
        user_id: row.get(1)?,
        name: row.get(2)?,
        from_browser: row.get(3)?,
        last_used_at: timestamp_opt(row, 4)?,
        expires_at: timestamp_opt(row, 5)?,
        created_at: timestamp(row, 6)?,
        updated_at: timestamp(row, 7)?,
        token: row.get(8)?,
    })
}

/// A revision's key as the listing gives it: its decimal digits, no sign,
/// no leading zero.
fn parse_revision(key: &str) -> Option<u32> {
    let canonical =
        !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) && !key.starts_with('0');
    canonical.then(|| key.parse().ok()).flatten()
}

/// Appends to `select` (whose placeholders are `?`) the keyset condition
/// when the page starts after a key, then the order and the limit. The
/// caller binds, in order: its own arguments, the start item's keys (when
/// `page.start_key` is set), and the number of rows to fetch.
fn keyset_select(select: &str, keys: &[&str], page: &PageRequest) -> String {
    let (comparison, order) = match page.direction {
        Direction::Asc => (">", "ASC"),
        Direction::Desc => ("<", "DESC"),
    };
    let columns = keys.join(", ");
    let placeholders = vec!["?"; keys.len()].join(", ");
    let mut sql = String::from(select);
    if page.start_key.is_some() {
        sql.push_str(&format!(" AND ({columns}) {comparison} ({placeholders})"));
    }
    let ordering: Vec<String> = keys.iter().map(|k| format!("{k} {order}")).collect();
    sql.push_str(&format!(" ORDER BY {} LIMIT ?", ordering.join(", ")));
    sql
}

pub(super) fn timestamp(row: &Row<'_>, index: usize) -> rusqlite::Result<Timestamp> {
    let millis: i64 = row.get(index)?;
    Timestamp::from_millis(millis).ok_or_else(|| out_of_range(index, millis))
}

pub(super) fn timestamp_opt(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Timestamp>> {
    let millis: Option<i64> = row.get(index)?;
    millis
        .map(|m| Timestamp::from_millis(m).ok_or_else(|| out_of_range(index, m)))
        .transpose()
}

fn out_of_range(index: usize, millis: i64) -> rusqlite::Error {
    rusqlite::Error::IntegralValueOutOfRange(index, millis)
}

/// Stored JSON, taken as it is: it was checked when it was written.
fn raw_json(row: &Row<'_>, index: usize) -> rusqlite::Result<Box<RawValue>> {
    let text: String = row.get(index)?;
    RawValue::from_string(text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
    })
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
            keyset_select(
                "SELECT x FROM t WHERE a = ?",
                &["created_at", "id"],
                &page(Direction::Desc, None)
            ),
            "SELECT x FROM t WHERE a = ? ORDER BY created_at DESC, id DESC LIMIT ?"
        );
        assert_eq!(
            keyset_select(
                "SELECT x FROM t WHERE a = ?",
                &["created_at", "id"],
                &page(Direction::Asc, Some("k"))
            ),
            "SELECT x FROM t WHERE a = ? AND (created_at, id) > (?, ?) ORDER BY created_at ASC, id ASC LIMIT ?"
        );
        assert_eq!(
            keyset_select(
                "SELECT x FROM t WHERE a = ?",
                &["revision"],
                &page(Direction::Desc, Some("3"))
            ),
            "SELECT x FROM t WHERE a = ? AND (revision) < (?) ORDER BY revision DESC LIMIT ?"
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
