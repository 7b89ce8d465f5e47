//! The management API's project operations: create, read one, update,
//! delete; each write checks the caller's role, `If-Match` and the slug's
//! uniqueness inside its transaction and records itself in the audit
//! (`writes.rs`).

use serde_json::{Map, Value};

use super::writes::{self, Change};
use super::{Db, Param, exists, query_opt, to_json, transaction};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::project::Project;
use crate::domain::time::Timestamp;
use crate::store::StoreError;
use crate::store::writes::{ObjectAnswer, WriteRequest};

/// What getProject reads.
#[derive(Clone, Debug)]
pub struct ProjectRead {
    pub id: String,
    /// The caller's organizations.
    pub visible_to: OrganizationSet,
    /// getProject's `organization_id`: the project must be in it.
    pub organization_id: Option<String>,
}

fn no_project() -> StoreError {
    StoreError::NotFound {
        kind: "project",
        id: String::new(),
    }
}

fn no_organization() -> StoreError {
    StoreError::NotFound {
        kind: "organization",
        id: String::new(),
    }
}

pub(super) async fn get(db: &mut dyn Db, read: &ProjectRead) -> Result<ObjectAnswer, StoreError> {
    let (organization_id, answer) = transaction!(db, begin_read, {
        query_opt(
            db,
            "SELECT organization_id, body, version FROM projects WHERE id = ?1 AND deleted_at IS NULL",
            &[Param::Text(&read.id)],
            |row| {
                Ok((
                    row.text(0)?,
                    ObjectAnswer {
                        body: row.text(1)?,
                        version: row.int(2)?,
                    },
                ))
            },
        )
        .await?
        .ok_or_else(no_project)
    })?;
    let visible = read.visible_to.contains_id(&organization_id)
        && read
            .organization_id
            .as_ref()
            .is_none_or(|asked| asked.eq_ignore_ascii_case(&organization_id));
    if visible {
        Ok(answer)
    } else {
        Err(no_project())
    }
}

pub(super) async fn create(
    db: &mut dyn Db,
    input: &(WriteRequest, Project),
) -> Result<ObjectAnswer, StoreError> {
    let (request, project) = input;
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let organization = &project.organization_id;
        let number = writes::lock_organization(db, organization)
            .await?
            .ok_or_else(no_organization)?;
        // After the lock: a request with the same key that held it has
        // committed its answer by now.
        if let Some(answer) = writes::replay(db, request, now).await? {
            return Ok(answer);
        }
        writes::require_project_writer(db, request, organization, no_organization).await?;
        refuse_taken_slug(db, project).await?;
        let mut project = project.clone();
        project.created_at = Some(now);
        project.updated_at = Some(now);
        let body = to_json(&project)?;
        let upsert = db.project_upsert_sql();
        db.execute(
            upsert,
            &[
                Param::Text(&project.id),
                Param::Text(organization),
                Param::Int(now.as_millis()),
                Param::Int(now.as_millis()),
                Param::Text(&body),
                Param::Int(number),
                Param::Text(&project.slug),
            ],
        )
        .await?;
        let answer = ObjectAnswer { body, version: 1 };
        writes::record(
            db,
            request,
            now,
            Change {
                object: "project",
                object_id: &project.id,
                version_before: None,
                version_after: Some(answer.version),
            },
        )
        .await?;
        writes::keep_answer(db, request, &answer, now).await?;
        Ok(answer)
    })
}

pub(super) async fn update(
    db: &mut dyn Db,
    input: &(WriteRequest, String, Map<String, Value>),
) -> Result<ObjectAnswer, StoreError> {
    let (request, id, members) = input;
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let (mut project, version) = locked_project(db, request, id).await?;
        let stored = project.clone();
        project.apply(members).map_err(StoreError::Invalid)?;
        if let Some(problem) = project.problems_after_change(&stored).into_iter().next() {
            return Err(StoreError::Invalid(problem));
        }
        if project.slug != stored.slug {
            project.check_slug().map_err(StoreError::Invalid)?;
            refuse_taken_slug(db, &project).await?;
        }
        // Forward, even when the clock is not.
        let before = project.updated_at.map_or(0, Timestamp::as_millis);
        let updated_at = now.as_millis().max(before + 1);
        project.updated_at = Timestamp::from_millis(updated_at);
        let body = to_json(&project)?;
        let changed = db
            .execute(
                "UPDATE projects SET body = ?2, slug = ?3, updated_at = ?4, version = version + 1
                  WHERE id = ?1 AND version = ?5 AND deleted_at IS NULL",
                &[
                    Param::Text(id),
                    Param::Text(&body),
                    Param::Text(&project.slug),
                    Param::Int(updated_at),
                    Param::Int(version),
                ],
            )
            .await?;
        writes::record_update(db, request, now, changed, "project", id, version).await?;
        Ok(ObjectAnswer {
            body,
            version: version + 1,
        })
    })
}

pub(super) async fn delete(
    db: &mut dyn Db,
    input: &(WriteRequest, String),
) -> Result<ObjectAnswer, StoreError> {
    let (request, id) = input;
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let (_, version) = locked_project(db, request, id).await?;
        let changed = db
            .execute(
                "UPDATE projects SET deleted_at = ?2, version = version + 1
                  WHERE id = ?1 AND version = ?3 AND deleted_at IS NULL",
                &[
                    Param::Text(id),
                    Param::Int(now.as_millis()),
                    Param::Int(version),
                ],
            )
            .await?;
        writes::record_update(db, request, now, changed, "project", id, version).await?;
        let body = to_json(&serde_json::json!({"object": "project", "id": id, "deleted": true}))?;
        Ok(ObjectAnswer {
            body,
            version: version + 1,
        })
    })
}

/// The project a write changes, with its version, read after its
/// organization's lock is taken; the caller's role and `If-Match` are
/// checked on it.
async fn locked_project(
    db: &mut dyn Db,
    request: &WriteRequest,
    id: &str,
) -> Result<(Project, i64), StoreError> {
    let organization = lock_writable_project(db, request, id).await?;
    // Read again under the lock: a write that was under way is done now.
    let (body, version) = query_opt(
        db,
        "SELECT body, version FROM projects
          WHERE id = ?1 AND organization_id = ?2 AND deleted_at IS NULL",
        &[Param::Text(id), Param::Text(&organization)],
        |row| Ok((row.text(0)?, row.int(1)?)),
    )
    .await?
    .ok_or_else(no_project)?;
    writes::check_if_match(request, version)?;
    let project = serde_json::from_str(&body)
        .map_err(|e| StoreError::Internal(format!("project {id} is stored unreadable: {e}")))?;
    Ok((project, version))
}

/// Takes the lock of the organization of a project the caller may change
/// (its own, or its proxy settings) and answers that organization: 404
/// for a project unknown or invisible to the caller, 403 for a member.
pub(super) async fn lock_writable_project(
    db: &mut dyn Db,
    request: &WriteRequest,
    id: &str,
) -> Result<String, StoreError> {
    let organization = query_opt(
        db,
        "SELECT organization_id FROM projects WHERE id = ?1 AND deleted_at IS NULL",
        &[Param::Text(id)],
        |row| row.text(0),
    )
    .await?
    .ok_or_else(no_project)?;
    writes::lock_organization(db, &organization).await?;
    writes::require_project_writer(db, request, &organization, no_project).await?;
    Ok(organization)
}

/// 409 when another project of the organization has the slug.
async fn refuse_taken_slug(db: &mut dyn Db, project: &Project) -> Result<(), StoreError> {
    if exists(
        db,
        "SELECT 1 FROM projects
          WHERE organization_id = ?1 AND slug = ?2 AND id <> ?3 AND deleted_at IS NULL",
        &[
            Param::Text(&project.organization_id),
            Param::Text(&project.slug),
            Param::Text(&project.id),
        ],
    )
    .await?
    {
        Err(StoreError::Conflict(format!(
            "the organization already has a project with the slug {}",
            project.slug
        )))
    } else {
        Ok(())
    }
}
