//! Writes of the operator's commands and of token use.

use super::{Db, Param, exists, query_all, transaction};
use crate::domain::FieldError;
use crate::domain::api_token::{ApiToken, ApiTokenTag};
use crate::domain::directory::{Organization, User};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::time::Timestamp;
use crate::store::{NewToken, StoreError, TokenUse};

pub(super) async fn record_token_uses(
    db: &mut dyn Db,
    uses: &[TokenUse],
) -> Result<(), StoreError> {
    transaction!(db, begin_write, {
        for used in uses {
            // Never backwards: several instances may report the same token.
            db.execute(
                "UPDATE api_tokens SET last_used_at = ?2
                 WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)",
                &[
                    Param::Text(&used.token_id),
                    Param::Int(used.used_at.as_millis()),
                ],
            )
            .await?;
        }
        Ok(())
    })
}

pub(super) async fn create_organization(
    db: &mut dyn Db,
    organization: &Organization,
) -> Result<Organization, StoreError> {
    let mut organization = organization.clone();
    let created_at = *organization.created_at.get_or_insert_with(Timestamp::now);
    transaction!(db, begin_write, {
        db.execute(
            "INSERT INTO organizations (id, name, created_at) VALUES (?1, ?2, ?3)",
            &[
                Param::Text(&organization.id),
                Param::Text(&organization.name),
                Param::Int(created_at.as_millis()),
            ],
        )
        .await
        .map_err(|e| {
            conflict(e, || {
                format!("organization {} already exists", organization.id)
            })
        })
    })?;
    Ok(organization)
}

pub(super) async fn create_user(db: &mut dyn Db, user: &User) -> Result<User, StoreError> {
    let mut user = user.clone();
    let created_at = *user.created_at.get_or_insert_with(Timestamp::now);
    transaction!(db, begin_write, {
        if let Some(error) = missing_organization(db, &user.organizations).await? {
            return Err(StoreError::Invalid(error));
        }
        db.execute(
            "INSERT INTO users (id, email, created_at) VALUES (?1, ?2, ?3)",
            &[
                Param::Text(&user.id),
                Param::Text(&user.email),
                Param::Int(created_at.as_millis()),
            ],
        )
        .await
        .map_err(|e| conflict(e, || format!("user {} already exists", user.id)))?;
        replace_memberships(db, &user.id, &user.organizations).await
    })?;
    Ok(user)
}

/// The first of `organizations` that does not exist, as an error naming it.
pub(super) async fn missing_organization(
    db: &mut dyn Db,
    organizations: &[String],
) -> Result<Option<FieldError>, StoreError> {
    for (i, organization) in organizations.iter().enumerate() {
        if !exists(
            db,
            "SELECT 1 FROM organizations WHERE id = ?1",
            &[Param::Text(organization)],
        )
        .await?
        {
            return Ok(Some(FieldError::new(
                format!("organizations[{i}]"),
                format!("no organization {organization} exists"),
            )));
        }
    }
    Ok(None)
}

pub(super) async fn replace_memberships(
    db: &mut dyn Db,
    user_id: &str,
    organizations: &[String],
) -> Result<(), StoreError> {
    db.execute(
        "DELETE FROM memberships WHERE user_id = ?1",
        &[Param::Text(user_id)],
    )
    .await?;
    for organization in organizations {
        db.execute(
            "INSERT INTO memberships (user_id, organization_id) VALUES (?1, ?2)",
            &[Param::Text(user_id), Param::Text(organization)],
        )
        .await?;
    }
    // The user's organizations, whole, as authentication reads them.
    let members = query_all(
        db,
        "SELECT m.organization_id, o.number FROM memberships m
         JOIN organizations o ON o.id = m.organization_id WHERE m.user_id = ?1",
        &[Param::Text(user_id)],
        |row| Ok((row.text(0)?, row.int(1)?)),
    )
    .await?;
    db.execute(
        "UPDATE users SET memberships = ?2 WHERE id = ?1",
        &[
            Param::Text(user_id),
            Param::Text(OrganizationSet::new(members).summary()),
        ],
    )
    .await?;
    Ok(())
}

pub(super) async fn create_token(
    db: &mut dyn Db,
    token: &NewToken,
) -> Result<ApiToken, StoreError> {
    transaction!(db, begin_write, {
        if !exists(
            db,
            "SELECT 1 FROM users WHERE id = ?1",
            &[Param::Text(&token.user_id)],
        )
        .await?
        {
            return Err(StoreError::NotFound {
                kind: "user",
                id: token.user_id.clone(),
            });
        }
        db.execute(
            "INSERT INTO api_tokens
               (id, user_id, name, from_browser, digest, hint, created_at, updated_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
            &[
                Param::Text(&token.id),
                Param::Text(&token.user_id),
                Param::Text(&token.name),
                Param::Bool(token.from_browser),
                Param::Bytes(&token.digest.0),
                Param::Text(&token.hint),
                Param::Int(token.created_at.as_millis()),
                Param::OptInt(token.expires_at.map(Timestamp::as_millis)),
            ],
        )
        .await
        .map_err(|e| conflict(e, || format!("api token {} already exists", token.id)))
    })?;
    Ok(ApiToken {
        object: ApiTokenTag::Tag,
        id: token.id.clone(),
        user_id: token.user_id.clone(),
        name: token.name.clone(),
        from_browser: token.from_browser,
        last_used_at: None,
        expires_at: token.expires_at,
        created_at: token.created_at,
        updated_at: token.created_at,
        token: token.hint.clone(),
    })
}

pub(super) async fn revoke_token(db: &mut dyn Db, token_id: &str) -> Result<(), StoreError> {
    let now = Timestamp::now().as_millis();
    transaction!(db, begin_write, {
        let changed = db.execute(
            "UPDATE api_tokens SET revoked_at = ?2, updated_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
            &[Param::Text(token_id), Param::Int(now)],
        )
        .await?;
        if changed > 0
            || exists(
                db,
                "SELECT 1 FROM api_tokens WHERE id = ?1",
                &[Param::Text(token_id)],
            )
            .await?
        {
            Ok(())
        } else {
            Err(StoreError::NotFound {
                kind: "api token",
                id: token_id.to_owned(),
            })
        }
    })
}

pub(super) async fn delete_project(db: &mut dyn Db, project_id: &str) -> Result<(), StoreError> {
    let now = Timestamp::now().as_millis();
    transaction!(db, begin_write, {
        let changed = db
            .execute(
                "UPDATE projects SET deleted_at = ?2 WHERE id = ?1 AND deleted_at IS NULL",
                &[Param::Text(project_id), Param::Int(now)],
            )
            .await?;
        if changed > 0 {
            Ok(())
        } else {
            Err(StoreError::NotFound {
                kind: "project",
                id: project_id.to_owned(),
            })
        }
    })
}

/// A uniqueness violation (which drivers report as `Conflict`) gets its
/// proper message; anything else keeps its meaning.
fn conflict(error: StoreError, message: impl FnOnce() -> String) -> StoreError {
    match error {
        StoreError::Conflict(_) => StoreError::Conflict(message()),
        other => other,
    }
}
