//! Writes of the operator's commands and of token use.

use rusqlite::{Connection, ErrorCode, OptionalExtension, Transaction, params};

use crate::domain::FieldError;
use crate::domain::api_token::{ApiToken, ApiTokenTag};
use crate::domain::directory::{Organization, User};
use crate::domain::time::Timestamp;
use crate::store::{NewToken, StoreError, TokenUse};

pub(super) fn record_token_uses(c: &mut Connection, uses: &[TokenUse]) -> Result<(), StoreError> {
    let tx = c.transaction()?;
    {
        let mut update = tx.prepare_cached(
            "UPDATE api_tokens SET last_used_at = ?2
             WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)",
        )?;
        for used in uses {
            update.execute(params![used.token_id, used.used_at.as_millis()])?;
        }
    }
    tx.commit()?;
    Ok(())
}

pub(super) fn create_organization(
    c: &mut Connection,
    mut organization: Organization,
) -> Result<Organization, StoreError> {
    let created_at = *organization.created_at.get_or_insert_with(Timestamp::now);
    c.execute(
        "INSERT INTO organizations (id, name, created_at) VALUES (?1, ?2, ?3)",
        params![organization.id, organization.name, created_at.as_millis()],
    )
    .map_err(|e| {
        conflict_or(e, || {
            format!("organization {} already exists", organization.id)
        })
    })?;
    Ok(organization)
}

pub(super) fn create_user(c: &mut Connection, mut user: User) -> Result<User, StoreError> {
    let created_at = *user.created_at.get_or_insert_with(Timestamp::now);
    let tx = c.transaction()?;
    if let Some(error) = missing_organization(&tx, &user.organizations)? {
        return Err(StoreError::Invalid(error));
    }
    tx.execute(
        "INSERT INTO users (id, email, created_at) VALUES (?1, ?2, ?3)",
        params![user.id, user.email, created_at.as_millis()],
    )
    .map_err(|e| conflict_or(e, || format!("user {} already exists", user.id)))?;
    replace_memberships(&tx, &user.id, &user.organizations)?;
    tx.commit()?;
    Ok(user)
}

/// The first of `organizations` that does not exist, as an error naming it.
pub(super) fn missing_organization(
    tx: &Transaction<'_>,
    organizations: &[String],
) -> Result<Option<FieldError>, StoreError> {
    let mut exists = tx.prepare_cached("SELECT 1 FROM organizations WHERE id = ?1")?;
    for (i, organization) in organizations.iter().enumerate() {
        if !exists.exists([organization])? {
            return Ok(Some(FieldError::new(
                format!("organizations[{i}]"),
                format!("no organization {organization} exists"),
            )));
        }
    }
    Ok(None)
}

pub(super) fn replace_memberships(
    tx: &Transaction<'_>,
    user_id: &str,
    organizations: &[String],
) -> Result<(), StoreError> {
    tx.prepare_cached("DELETE FROM memberships WHERE user_id = ?1")?
        .execute([user_id])?;
    let mut insert =
        tx.prepare_cached("INSERT INTO memberships (user_id, organization_id) VALUES (?1, ?2)")?;
    for organization in organizations {
        insert.execute([user_id, organization])?;
    }
    Ok(())
}

pub(super) fn create_token(c: &mut Connection, token: NewToken) -> Result<ApiToken, StoreError> {
    let tx = c.transaction()?;
    let user_known = tx
        .prepare_cached("SELECT 1 FROM users WHERE id = ?1")?
        .exists([&token.user_id])?;
    if !user_known {
        return Err(StoreError::NotFound {
            kind: "user",
            id: token.user_id,
        });
    }
    tx.execute(
        "INSERT INTO api_tokens
           (id, user_id, name, from_browser, digest, hint, created_at, updated_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
        params![
            token.id,
            token.user_id,
            token.name,
            token.from_browser,
            &token.digest.0[..],
            token.hint,
            token.created_at.as_millis(),
            token.expires_at.map(Timestamp::as_millis),
        ],
    )
    .map_err(|e| conflict_or(e, || format!("api token {} already exists", token.id)))?;
    tx.commit()?;
    Ok(ApiToken {
        object: ApiTokenTag::Tag,
        id: token.id,
        user_id: token.user_id,
        name: token.name,
        from_browser: token.from_browser,
        last_used_at: None,
        expires_at: token.expires_at,
        created_at: token.created_at,
        updated_at: token.created_at,
        token: token.hint,
    })
}

pub(super) fn revoke_token(c: &mut Connection, token_id: &str) -> Result<(), StoreError> {
    let now = Timestamp::now().as_millis();
    let changed = c.execute(
        "UPDATE api_tokens SET revoked_at = ?2, updated_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
        params![token_id, now],
    )?;
    let known = changed > 0
        || c.query_row("SELECT 1 FROM api_tokens WHERE id = ?1", [token_id], |_| {
            Ok(())
        })
        .optional()?
        .is_some();
    if known {
        Ok(())
    } else {
        Err(StoreError::NotFound {
            kind: "api token",
            id: token_id.to_owned(),
        })
    }
}

pub(super) fn delete_project(c: &mut Connection, project_id: &str) -> Result<(), StoreError> {
    let now = Timestamp::now().as_millis();
    let changed = c.execute(
        "UPDATE projects SET deleted_at = ?2 WHERE id = ?1 AND deleted_at IS NULL",
        params![project_id, now],
    )?;
    if changed > 0 {
        Ok(())
    } else {
        Err(StoreError::NotFound {
            kind: "project",
            id: project_id.to_owned(),
        })
    }
}

/// A uniqueness violation becomes [`StoreError::Conflict`]; anything else
/// keeps its own meaning.
fn conflict_or(error: rusqlite::Error, message: impl FnOnce() -> String) -> StoreError {
    match error.sqlite_error_code() {
        Some(ErrorCode::ConstraintViolation) => StoreError::Conflict(message()),
        _ => error.into(),
    }
}
