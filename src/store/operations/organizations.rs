//! Organizations made, changed and deleted over the API (docs/teams.md,
//! "Organizations"): createOrganization (the caller becomes its admin),
//! updateOrganization and deleteOrganization (its admins). Each write
//! decides on the caller's token and role read in its own transaction,
//! takes the organization's row lock, decides again under it (a role
//! changed meanwhile counts), and is audited (object `organization`).
//!
//! A deleted organization keeps its row (its number is never reused) with
//! `deleted_at` set and its slug given back (set to its id); its
//! memberships end, each member's summary rewritten in the same
//! transaction, so that no read shows it again.

use super::memberships::{organization_type, put_membership, refresh_summary};
use super::write_request::{ObjectAnswer, WriteRequest};
use super::write_steps::{self, Change, Target};
use crate::domain::access::Action;
use crate::domain::directory::{OrganizationObject, OrganizationTag, OrganizationType, Role};
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::{Conflict, StoreError};
use crate::store::sql::db::{Db, Param, Row, query_all, query_opt, to_json, transaction};
use crate::store::sql::keyset::timestamp;

/// The columns [`object`] reads, in its order.
const COLUMNS: &str = "id, name, slug, type, created_at, updated_at, version";

fn object(row: &dyn Row) -> Result<(OrganizationObject, i64), StoreError> {
    Ok((
        OrganizationObject {
            object: OrganizationTag::Tag,
            id: row.text(0)?,
            name: row.text(1)?,
            slug: row.text(2)?,
            kind: organization_type(row, 3)?,
            created_at: timestamp(row, 4)?,
            updated_at: timestamp(row, 5)?,
        },
        row.int(6)?,
    ))
}

fn answer((organization, version): &(OrganizationObject, i64)) -> Result<ObjectAnswer, StoreError> {
    Ok(ObjectAnswer {
        body: to_json(organization)?,
        version: *version,
    })
}

fn no_organization() -> StoreError {
    StoreError::NotFound {
        kind: "organization",
        id: String::new(),
    }
}

/// The live organization `id`, as stored now.
pub(super) async fn read_organization(
    db: &mut dyn Db,
    id: &str,
) -> Result<Option<(OrganizationObject, i64)>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM organizations WHERE id = ?1 AND deleted_at IS NULL");
    query_opt(db, &sql, &[Param::Text(id)], object).await
}

/// Decides `action` on the organization for the write's caller, takes the
/// organization's row lock, and decides again under it: a role changed
/// by a write that held the lock before is the one that counts (two
/// admins demoting each other at once leave one). Answers the
/// organization's number.
pub(super) async fn authorize_locked(
    db: &mut dyn Db,
    request: &WriteRequest,
    action: Action,
    organization_id: &str,
    now: Timestamp,
) -> Result<i64, StoreError> {
    let target = Target::Organization(organization_id);
    write_steps::authorize(db, request, action, target, now)
        .await?
        .ok_or_else(no_organization)?;
    let number = write_steps::lock_organization(db, organization_id)
        .await?
        .ok_or_else(no_organization)?;
    write_steps::authorize(db, request, action, target, now)
        .await?
        .ok_or_else(no_organization)?;
    Ok(number)
}

/// createOrganization (named apart from the operator's
/// `admin::CreateOrganization`): a `pro` organization named `name` with
/// `slug`, its caller its admin. With an idempotency key, the key's first answer
/// may come instead.
#[derive(Clone, Debug)]
pub struct StartOrganization {
    pub request: WriteRequest,
    /// The new organization's id (`ids::new_id`).
    pub id: String,
    pub name: String,
    pub slug: String,
    /// Organizations the user may create in an hour
    /// (`--organizations-per-user-per-hour`).
    pub most_per_hour: u32,
}

operation!(StartOrganization => create, Write, "create_organization" -> ObjectAnswer);

async fn create(db: &mut dyn Db, query: &StartOrganization) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let request = &query.request;
    let user_id = &request.actor.user_id;
    transaction!(db, begin_write, {
        write_steps::authorize(db, request, Action::CreateOrganization, Target::Caller, now)
            .await?;
        if let Some(answer) = write_steps::replay(db, request, "", now).await? {
            return Ok(answer);
        }
        within_hourly_bound(db, user_id, query.most_per_hour, now).await?;
        db.execute(
            "INSERT INTO organizations (id, name, slug, type, created_at, updated_at, version,
                                        created_by)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5, 1, ?6)",
            &[
                Param::Text(&query.id),
                Param::Text(&query.name),
                Param::Text(&query.slug),
                Param::Text(OrganizationType::Pro.as_str()),
                Param::Int(now.as_millis()),
                Param::Text(user_id),
            ],
        )
        .await
        .map_err(|e| {
            e.conflict_named(|| Conflict::OrganizationSlugTaken {
                slug: query.slug.clone(),
            })
        })?;
        put_membership(db, user_id, &query.id, Role::Admin, now).await?;
        refresh_summary(db, user_id).await?;
        let organization = read_organization(db, &query.id)
            .await?
            .ok_or_else(no_organization)?;
        let answer = answer(&organization)?;
        let change = Change {
            object: "organization",
            object_id: &query.id,
            version_before: None,
            version_after: Some(answer.version),
            feed: None,
        };
        write_steps::record(db, request, now, change).await?;
        write_steps::keep_answer(db, request, "", &answer, now).await?;
        Ok(answer)
    })
}

/// Refuses a new organization when the user created `most` over the API
/// in the last hour, deleted ones included. Under the user's row lock
/// (PostgreSQL; SQLite's writes are one at a time), so creations at once
/// cannot pass the bound together; counted on `organizations_created_by`.
async fn within_hourly_bound(
    db: &mut dyn Db,
    user_id: &str,
    most: u32,
    now: Timestamp,
) -> Result<(), StoreError> {
    write_steps::lock_user(db, user_id).await?;
    match write_steps::hourly_bound_full(
        db,
        "SELECT created_at FROM organizations WHERE created_by = ?1 AND created_at > ?2
          ORDER BY created_at DESC LIMIT 1 OFFSET ?3",
        user_id,
        most,
        now,
    )
    .await?
    {
        None => Ok(()),
        Some(retry_after_seconds) => Err(StoreError::TooManyNewOrganizations {
            most,
            retry_after_seconds,
        }),
    }
}

/// updateOrganization: a new name, slug, or both (admins).
#[derive(Clone, Debug)]
pub struct UpdateOrganization {
    pub request: WriteRequest,
    pub id: String,
    pub name: Option<String>,
    pub slug: Option<String>,
}

operation!(UpdateOrganization => update, Write, "update_organization" -> ObjectAnswer);

async fn update(db: &mut dyn Db, query: &UpdateOrganization) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let request = &query.request;
    transaction!(db, begin_write, {
        authorize_locked(db, request, Action::ManageOrganization, &query.id, now).await?;
        let (before, version) = read_organization(db, &query.id)
            .await?
            .ok_or_else(no_organization)?;
        write_steps::check_if_match(request, version)?;
        let name = query.name.as_deref().unwrap_or(&before.name);
        let slug = query.slug.as_deref().unwrap_or(&before.slug);
        db.execute(
            "UPDATE organizations SET name = ?2, slug = ?3, updated_at = ?4, version = version + 1
              WHERE id = ?1",
            &[
                Param::Text(&query.id),
                Param::Text(name),
                Param::Text(slug),
                Param::Int(now.as_millis()),
            ],
        )
        .await
        .map_err(|e| {
            e.conflict_named(|| Conflict::OrganizationSlugTaken {
                slug: slug.to_owned(),
            })
        })?;
        let after = read_organization(db, &query.id)
            .await?
            .ok_or_else(no_organization)?;
        let change = Change {
            object: "organization",
            object_id: &query.id,
            version_before: Some(version),
            version_after: Some(after.1),
            feed: None,
        };
        write_steps::record(db, request, now, change).await?;
        answer(&after)
    })
}

/// deleteOrganization (admins): refused while the organization has
/// projects; otherwise its row is marked deleted, its slug given back,
/// its memberships ended (each member's summary rewritten) and its
/// pending invitations ended. Answers the organization's version before.
#[derive(Clone, Debug)]
pub struct DeleteOrganization {
    pub request: WriteRequest,
    pub id: String,
}

operation!(DeleteOrganization => delete, Write, "delete_organization" -> i64);

async fn delete(db: &mut dyn Db, query: &DeleteOrganization) -> Result<i64, StoreError> {
    let now = Timestamp::now();
    let request = &query.request;
    let id = Param::Text(&query.id);
    let at = Param::Int(now.as_millis());
    transaction!(db, begin_write, {
        let number =
            authorize_locked(db, request, Action::ManageOrganization, &query.id, now).await?;
        let (_, version) = read_organization(db, &query.id)
            .await?
            .ok_or_else(no_organization)?;
        write_steps::check_if_match(request, version)?;
        let projects = query_opt(
            db,
            "SELECT COUNT(*) FROM projects WHERE organization_number = ?1 AND deleted_at IS NULL",
            &[Param::Int(number)],
            |row| row.int(0),
        )
        .await?
        .unwrap_or(0);
        if projects > 0 {
            return Err(StoreError::Conflict(Conflict::OrganizationHasProjects {
                projects,
            }));
        }
        db.execute(
            "UPDATE organizations SET deleted_at = ?2, slug = id, updated_at = ?2,
                    version = version + 1
              WHERE id = ?1",
            &[id, at],
        )
        .await?;
        let members = query_all(
            db,
            "SELECT user_id FROM memberships WHERE organization_id = ?1",
            &[id],
            |row| row.text(0),
        )
        .await?;
        db.execute("DELETE FROM memberships WHERE organization_id = ?1", &[id])
            .await?;
        for member in &members {
            refresh_summary(db, member).await?;
        }
        db.execute(
            "UPDATE invitations SET deleted_at = ?1
              WHERE organization_id = ?2 AND accepted_at IS NULL AND deleted_at IS NULL",
            &[at, id],
        )
        .await?;
        let change = Change {
            object: "organization",
            object_id: &query.id,
            version_before: Some(version),
            version_after: Some(version + 1),
            feed: None,
        };
        write_steps::record(db, request, now, change).await?;
        Ok(version + 1)
    })
}
