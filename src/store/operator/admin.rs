//! The `proxydeck admin org|user|token|project ...` commands' writes to the
//! directory: organizations, users and their memberships, tokens, and the
//! removal of a project.

use std::collections::BTreeMap;

use crate::domain::FieldError;
use crate::domain::api_token::ApiToken;
use crate::domain::change::ChangeKind;
use crate::domain::directory::{MAX_SLUG_CHARS, Organization, Role, User, slug_of};
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::{Conflict, StoreError};
use crate::store::operations::api_tokens::insert_token;
use crate::store::operations::changes;
use crate::store::operations::memberships::{put_membership, refresh_summary};
use crate::store::sql::db::{Db, Param, exists, query_all, query_opt, transaction};
use crate::store::tokens::NewToken;

/// A new organization; without a slug, one is made from its name.
#[derive(Clone, Debug)]
pub struct CreateOrganization(pub Organization);

operation!(CreateOrganization => create_organization, OperatorWrite, "admin_org_create" -> Organization);

async fn create_organization(
    db: &mut dyn Db,
    CreateOrganization(organization): &CreateOrganization,
) -> Result<Organization, StoreError> {
    let mut organization = organization.clone();
    let created_at = *organization.created_at.get_or_insert_with(Timestamp::now);
    transaction!(db, begin_write, {
        let slug = match &organization.slug {
            Some(slug) => slug.clone(),
            None => unique_slug(db, &organization).await?,
        };
        insert_organization(db, &organization, &slug, created_at.as_millis())
            .await
            .map_err(|e| {
                e.conflict_named(|| Conflict::OrganizationExists {
                    id: organization.id.clone(),
                    slug: slug.clone(),
                })
            })?;
        organization.slug = Some(slug);
        Ok(())
    })?;
    Ok(organization)
}

/// Writes a new organization (a slug taken is a `Conflict`).
pub(crate) async fn insert_organization(
    db: &mut dyn Db,
    organization: &Organization,
    slug: &str,
    created_at: i64,
) -> Result<u64, StoreError> {
    db.execute(
        "INSERT INTO organizations (id, name, slug, type, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        &[
            Param::Text(&organization.id),
            Param::Text(&organization.name),
            Param::Text(slug),
            Param::Text(organization.kind.as_str()),
            Param::Int(created_at),
        ],
    )
    .await
}

/// Tries made at a slug from the name before taking the organization's id
/// (a UUID: a slug, and unique).
const SLUG_TRIES: u32 = 20;

/// The slug a new organization gets: its name's ([`slug_of`]), with `-2`,
/// `-3`, ... when that one is taken.
pub(crate) async fn unique_slug(
    db: &mut dyn Db,
    organization: &Organization,
) -> Result<String, StoreError> {
    let base = slug_of(&organization.name);
    for n in 1..=SLUG_TRIES {
        let candidate = if n == 1 {
            base.clone()
        } else {
            let suffix = format!("-{n}");
            let mut stem = base[..base.len().min(MAX_SLUG_CHARS - suffix.len())].to_owned();
            while stem.ends_with('-') {
                stem.pop();
            }
            stem + &suffix
        };
        if !exists(
            db,
            "SELECT 1 FROM organizations WHERE slug = ?1",
            &[Param::Text(&candidate)],
        )
        .await?
        {
            return Ok(candidate);
        }
    }
    Ok(organization.id.clone())
}

/// A new user with its memberships.
#[derive(Clone, Debug)]
pub struct CreateUser(pub User);

operation!(CreateUser => create_user, OperatorWrite, "admin_user_create" -> User);

async fn create_user(db: &mut dyn Db, CreateUser(user): &CreateUser) -> Result<User, StoreError> {
    let mut user = user.clone();
    let created_at = *user.created_at.get_or_insert_with(Timestamp::now);
    transaction!(db, begin_write, {
        if let Some(error) = missing_organization(db, &user).await? {
            return Err(StoreError::Invalid(error));
        }
        db.execute(
            "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
            &[
                Param::Text(&user.id),
                Param::Text(&user.email),
                Param::Text(user.name.as_deref().unwrap_or_default()),
                Param::Int(created_at.as_millis()),
            ],
        )
        .await
        .map_err(|e| {
            e.conflict_named(|| Conflict::Exists {
                kind: "user",
                id: user.id.clone(),
            })
        })?;
        replace_memberships(db, &user.id, created_at, &user.roles).await
    })?;
    Ok(user)
}

/// The first organization of the user's that does not exist, as an error
/// naming it as the user's line did (`organizations[i]` or `roles.<id>`).
pub(crate) async fn missing_organization(
    db: &mut dyn Db,
    user: &User,
) -> Result<Option<FieldError>, StoreError> {
    let named: Vec<(String, &String)> = match &user.organizations {
        Some(listed) => listed
            .iter()
            .enumerate()
            .map(|(i, id)| (format!("organizations[{i}]"), id))
            .collect(),
        None => user
            .roles
            .keys()
            .map(|id| (format!("roles.{id}"), id))
            .collect(),
    };
    for (field, organization) in named {
        if !exists(
            db,
            "SELECT 1 FROM organizations WHERE id = ?1 AND deleted_at IS NULL",
            &[Param::Text(organization)],
        )
        .await?
        {
            return Ok(Some(FieldError::new(
                field,
                format!("no organization {organization} exists"),
            )));
        }
    }
    Ok(None)
}

/// Makes the user's memberships `roles`: memberships it keeps keep their
/// age; a new one is as old as the later of the user and the organization
/// (`user_created_at`; docs/management.md, "Roles and organizations").
/// Answers whether anything changed.
pub(crate) async fn replace_memberships(
    db: &mut dyn Db,
    user_id: &str,
    user_created_at: Timestamp,
    roles: &BTreeMap<String, Role>,
) -> Result<bool, StoreError> {
    let stored = query_all(
        db,
        "SELECT organization_id, role FROM memberships WHERE user_id = ?1",
        &[Param::Text(user_id)],
        |row| Ok((row.text(0)?, row.text(1)?)),
    )
    .await?;
    let mut changed = stored.len() != roles.len();
    for (organization, role) in &stored {
        match roles.get(organization) {
            Some(kept) if kept.as_str() == role => {}
            Some(_) => changed = true,
            None => {
                changed = true;
                db.execute(
                    "DELETE FROM memberships WHERE user_id = ?1 AND organization_id = ?2",
                    &[Param::Text(user_id), Param::Text(organization)],
                )
                .await?;
            }
        }
    }
    if !changed {
        return Ok(false);
    }
    for (organization, role) in roles {
        put_membership(db, user_id, organization, *role, user_created_at).await?;
    }
    refresh_summary(db, user_id).await?;
    Ok(true)
}

/// A new token of a user (`admin token create`).
#[derive(Clone, Debug)]
pub struct CreateToken(pub NewToken);

operation!(CreateToken => create_token, OperatorWrite, "admin_token_create" -> ApiToken);

async fn create_token(
    db: &mut dyn Db,
    CreateToken(token): &CreateToken,
) -> Result<ApiToken, StoreError> {
    transaction!(db, begin_write, { insert_token(db, token).await })
}

/// Revokes a token (`admin token revoke`); revoking twice is not an error.
#[derive(Clone, Debug)]
pub struct RevokeToken(pub String);

operation!(RevokeToken => revoke_token, OperatorWrite, "admin_token_revoke" -> ());

async fn revoke_token(
    db: &mut dyn Db,
    RevokeToken(token_id): &RevokeToken,
) -> Result<(), StoreError> {
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

/// Removes a project from every listing (`admin project delete`). Its id
/// stays known, so a walk whose `start_key` names it goes on from where it
/// stood.
#[derive(Clone, Debug)]
pub struct RemoveProject(pub String);

operation!(RemoveProject => remove_project, OperatorWrite, "admin_project_delete" -> ());

async fn remove_project(
    db: &mut dyn Db,
    RemoveProject(project_id): &RemoveProject,
) -> Result<(), StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let version = query_opt(
            db,
            "UPDATE projects SET deleted_at = ?2, version = version + 1
              WHERE id = ?1 AND deleted_at IS NULL RETURNING version",
            &[Param::Text(project_id), Param::Int(now.as_millis())],
            |row| row.int(0),
        )
        .await?
        .ok_or_else(|| StoreError::NotFound {
            kind: "project",
            id: project_id.to_owned(),
        })?;
        crate::store::operations::edges::remove_all(db, project_id).await?;
        crate::store::operations::rollout_rows::remove_all(db, project_id).await?;
        crate::store::operations::domains::remove_all(db, project_id).await?;
        let fed = changes::Fed::of(ChangeKind::ProjectDeleted, project_id, None);
        changes::record(db, fed, version, now).await
    })
}
