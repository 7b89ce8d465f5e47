//! The whole store, read in creation order: for `admin export` (streamed
//! line by line from one snapshot) and the operator's listings.

use rusqlite::{Connection, OptionalExtension};
use tokio::sync::mpsc;

use super::listings::{TOKEN_COLUMNS, api_token, timestamp, timestamp_opt};
use super::to_json;
use crate::domain::api_token::TokenRecord;
use crate::domain::directory::{Organization, OrganizationTag, User, UserTag};
use crate::domain::import::ObjectCounts;
use crate::domain::proxy_settings::ProxySettings;
use crate::store::StoreError;

pub(super) fn count_objects(c: &Connection) -> Result<ObjectCounts, StoreError> {
    let tx = c.unchecked_transaction()?;
    let count = |sql: &str| -> Result<u64, StoreError> {
        let n: i64 = tx.prepare_cached(sql)?.query_row([], |row| row.get(0))?;
        Ok(n as u64)
    };
    Ok(ObjectCounts {
        organizations: count("SELECT count(*) FROM organizations")?,
        users: count("SELECT count(*) FROM users")?,
        projects: count("SELECT count(*) FROM projects WHERE deleted_at IS NULL")?,
        proxy_settings: count(
            "SELECT count(*) FROM proxy_settings s JOIN projects p ON p.id = s.project_id
             WHERE p.deleted_at IS NULL",
        )?,
    })
}

/// Sends each line into `lines`; stops early (without error) when the
/// receiving side is gone.
pub(super) fn export(
    c: &Connection,
    lines: &mpsc::Sender<String>,
) -> Result<ObjectCounts, StoreError> {
    // One read transaction: the export is one consistent snapshot.
    let tx = c.unchecked_transaction()?;
    let mut counts = ObjectCounts::default();
    let send = |line: String| lines.blocking_send(line).is_ok();

    let open = each_organization(&tx, |organization| {
        counts.organizations += 1;
        Ok(send(to_json(&organization)?))
    })? && each_user(&tx, |user| {
        counts.users += 1;
        Ok(send(to_json(&user)?))
    })?;
    if !open {
        return Ok(counts);
    }
    // Projects are stored as the exact JSON the listing (and so the export)
    // shows.
    let mut projects = tx.prepare_cached(
        "SELECT body FROM projects WHERE deleted_at IS NULL ORDER BY created_at, id",
    )?;
    let mut rows = projects.query([])?;
    while let Some(row) = rows.next()? {
        counts.projects += 1;
        if !send(row.get(0)?) {
            return Ok(counts);
        }
    }
    let mut settings = tx.prepare_cached(
        "SELECT s.project_id, s.body FROM projects p JOIN proxy_settings s ON s.project_id = p.id
         WHERE p.deleted_at IS NULL ORDER BY p.created_at, p.id, s.revision",
    )?;
    let mut rows = settings.query([])?;
    while let Some(row) = rows.next()? {
        let body: String = row.get(1)?;
        let mut revision: ProxySettings = serde_json::from_str(&body).map_err(|e| {
            StoreError::Internal(format!("stored proxy settings are not valid: {e}"))
        })?;
        revision.project_id = Some(row.get(0)?);
        counts.proxy_settings += 1;
        if !send(to_json(&revision)?) {
            return Ok(counts);
        }
    }
    Ok(counts)
}

pub(super) fn organizations(c: &Connection) -> Result<Vec<Organization>, StoreError> {
    let mut all = Vec::new();
    each_organization(c, |organization| {
        all.push(organization);
        Ok(true)
    })?;
    Ok(all)
}

pub(super) fn users(c: &Connection) -> Result<Vec<User>, StoreError> {
    let tx = c.unchecked_transaction()?;
    let mut all = Vec::new();
    each_user(&tx, |user| {
        all.push(user);
        Ok(true)
    })?;
    Ok(all)
}

pub(super) fn user_tokens(c: &Connection, user_id: &str) -> Result<Vec<TokenRecord>, StoreError> {
    let tx = c.unchecked_transaction()?;
    let known = tx
        .prepare_cached("SELECT 1 FROM users WHERE id = ?1")?
        .query_row([user_id], |_| Ok(()))
        .optional()?
        .is_some();
    if !known {
        return Err(StoreError::NotFound {
            kind: "user",
            id: user_id.to_owned(),
        });
    }
    let sql = format!(
        "SELECT {TOKEN_COLUMNS}, revoked_at FROM api_tokens WHERE user_id = ?1 ORDER BY created_at, id"
    );
    let tokens = tx
        .prepare_cached(&sql)?
        .query_map([user_id], |row| {
            Ok(TokenRecord {
                token: api_token(row)?,
                revoked_at: timestamp_opt(row, 9)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(tokens)
}

/// Calls `each` on every organization in creation order while it answers
/// `Ok(true)`; answers whether it went to the end.
fn each_organization(
    c: &Connection,
    mut each: impl FnMut(Organization) -> Result<bool, StoreError>,
) -> Result<bool, StoreError> {
    let mut statement =
        c.prepare_cached("SELECT id, name, created_at FROM organizations ORDER BY created_at, id")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let organization = Organization {
            object: OrganizationTag::Tag,
            id: row.get(0)?,
            name: row.get(1)?,
            created_at: Some(timestamp(row, 2)?),
        };
        if !each(organization)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Like [`each_organization`], for users with their organizations (sorted).
fn each_user(
    c: &Connection,
    mut each: impl FnMut(User) -> Result<bool, StoreError>,
) -> Result<bool, StoreError> {
    let mut statement =
        c.prepare_cached("SELECT id, email, created_at FROM users ORDER BY created_at, id")?;
    let mut memberships = c.prepare_cached(
        "SELECT organization_id FROM memberships WHERE user_id = ?1 ORDER BY organization_id",
    )?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let organizations = memberships
            .query_map([&id], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        let user = User {
            object: UserTag::Tag,
            id,
            email: row.get(1)?,
            organizations,
            created_at: Some(timestamp(row, 2)?),
        };
        if !each(user)? {
            return Ok(false);
        }
    }
    Ok(true)
}
