//! Projects: a page of the caller's organizations' projects (one
//! organization's in the shared SQL, several organizations' in the
//! dialect's), and getProject, createProject, updateProject,
//! deleteProject. Each write checks the caller's rights, `If-Match` and
//! the slug's uniqueness inside its transaction and records itself in the
//! audit (`write_steps.rs`).

use super::write_request::{ObjectAnswer, WriteRequest};
use super::write_steps::{self, Change, Fed, Target};
use crate::domain::access::{self, Action, Facts};
use crate::domain::change::ChangeKind;
use crate::domain::organization_set::OrganizationSet;
use crate::domain::pagination::PageRequest;
use crate::domain::project::{Project, ProjectChange};
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::{Conflict, StoreError};
use crate::store::listing::ProjectsQuery;
use crate::store::page::JsonPage;
use crate::store::sql::db::{Db, Param, exists, query_opt, to_json, transaction};
use crate::store::sql::dialect::{Dialect, MergePlan};
use crate::store::sql::keyset::{StartKeys, json_page, keyset_select};

/// getProject: one project the caller can see, with its version.
#[derive(Clone, Debug)]
pub struct GetProject {
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

/// A page of projects. One organization's is a range read on its index
/// (`one_organization_page`); several organizations' pages are read the
/// way each dialect reads them best (`Dialect::organizations_page`), both
/// bounded by the page: never one statement per organization with a page
/// of rows each. Either resolves the start key inside its own statements
/// and reads nothing after one that is not an item of the list, so an
/// empty page after a start key is told apart from the end of the list
/// afterwards, in one snapshot.
pub(crate) async fn page(
    db: &mut dyn Db,
    dialect: Dialect,
    query: &ProjectsQuery,
) -> Result<JsonPage, StoreError> {
    let found = projects_page(db, dialect, query).await?;
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
        projects_page(db, dialect, query).await
    })
}

async fn projects_page(
    db: &mut dyn Db,
    dialect: Dialect,
    query: &ProjectsQuery,
) -> Result<JsonPage, StoreError> {
    let page = &query.page;
    match query.organizations.numbers() {
        [] => Ok(JsonPage::default()),
        [organization] => one_organization_page(db, *organization, page).await,
        _ => {
            let set = &query.organizations;
            let plan = MergePlan {
                scan_budget: scan_budget(set, page),
                long_merge: set.len() >= LONG_MERGE_ORGANIZATIONS,
            };
            (dialect.organizations_page)(db, set, page, plan).await
        }
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
const LONG_MERGE_ORGANIZATIONS: usize = 64;

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
fn scan_budget(set: &OrganizationSet, page: &PageRequest) -> Option<usize> {
    (set.len() >= SCAN_MIN_ORGANIZATIONS && set.bitmap().is_some())
        .then(|| 4 * (set.len() + page.fetch_count()))
}

operation!(GetProject => get, Read, "get_project" -> ObjectAnswer);

async fn get(db: &mut dyn Db, read: &GetProject) -> Result<ObjectAnswer, StoreError> {
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
    let standing = read.visible_to.standing_toward(&organization_id);
    access::decide(Action::ReadProjects, Facts::live(standing))
        .map_err(|refusal| StoreError::refused(refusal, "project"))?;
    // getProject's `organization_id`: the project must be in it.
    let in_the_organization_asked = read
        .organization_id
        .as_ref()
        .is_none_or(|asked| asked.eq_ignore_ascii_case(&organization_id));
    if in_the_organization_asked {
        Ok(answer)
    } else {
        Err(no_project())
    }
}

/// createProject: `project` is checked already and has its new id. With
/// an idempotency key, the key's first answer may come instead.
#[derive(Clone, Debug)]
pub struct CreateProject {
    pub request: WriteRequest,
    pub project: Project,
}

operation!(CreateProject => create with dialect, Write, "create_project" -> ObjectAnswer);

async fn create(
    db: &mut dyn Db,
    dialect: Dialect,
    CreateProject { request, project }: &CreateProject,
) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let organization = &project.organization_id;
        let target = Target::Organization(organization);
        write_steps::authorize(db, request, Action::ChangeProjects, target, now).await?;
        let number = write_steps::lock_organization(db, organization)
            .await?
            .ok_or_else(no_organization)?;
        // After the lock: a request with the same key that held it has
        // committed its answer by now. The path names no object: the
        // organization is in the body, which the key's digest covers.
        if let Some(answer) = write_steps::replay(db, request, "", now).await? {
            return Ok(answer);
        }
        refuse_taken_slug(db, project).await?;
        let mut project = project.clone();
        project.created_at = Some(now);
        project.updated_at = Some(now);
        let body = to_json(&project)?;
        let upsert = (dialect.project_upsert)();
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
        write_steps::record(
            db,
            request,
            now,
            Change {
                object: "project",
                object_id: &project.id,
                version_before: None,
                version_after: Some(answer.version),
                feed: Some(Fed {
                    kind: ChangeKind::ProjectCreated,
                    project_id: &project.id,
                    revision: None,
                    domain: None,
                    rollout: None,
                }),
            },
        )
        .await?;
        write_steps::keep_answer(db, request, "", &answer, now).await?;
        Ok(answer)
    })
}

/// updateProject: sets the members of a checked change (`null` puts a
/// member back to its default).
#[derive(Clone, Debug)]
pub struct UpdateProject {
    pub request: WriteRequest,
    pub id: String,
    pub change: ProjectChange,
}

operation!(UpdateProject => update, Write, "update_project" -> ObjectAnswer);

async fn update(
    db: &mut dyn Db,
    UpdateProject {
        request,
        id,
        change,
    }: &UpdateProject,
) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let (mut project, version) = locked_project(db, request, id, now).await?;
        let slug_before = project.slug.clone();
        // Checked already (`ProjectChange::check`), member by member.
        change.apply_to(&mut project);
        if project.slug != slug_before {
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
        let fed = Fed {
            kind: ChangeKind::ProjectUpdated,
            project_id: id,
            revision: None,
            domain: None,
            rollout: None,
        };
        write_steps::record_update(db, request, now, changed, version, fed).await?;
        Ok(ObjectAnswer {
            body,
            version: version + 1,
        })
    })
}

/// deleteProject: removes a project from every listing, as the operator's
/// `RemoveProject` does, for a caller who may.
#[derive(Clone, Debug)]
pub struct DeleteProject {
    pub request: WriteRequest,
    pub id: String,
}

operation!(DeleteProject => delete, Write, "delete_project" -> ObjectAnswer);

async fn delete(
    db: &mut dyn Db,
    DeleteProject { request, id }: &DeleteProject,
) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let (_, version) = locked_project(db, request, id, now).await?;
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
        let fed = Fed {
            kind: ChangeKind::ProjectDeleted,
            project_id: id,
            revision: None,
            domain: None,
            rollout: None,
        };
        write_steps::record_update(db, request, now, changed, version, fed).await?;
        super::edges::remove_all(db, id).await?;
        super::rollout_rows::remove_all(db, id).await?;
        super::domains::remove_all(db, id).await?;
        let body = to_json(&serde_json::json!({"object": "project", "id": id, "deleted": true}))?;
        Ok(ObjectAnswer {
            body,
            version: version + 1,
        })
    })
}

/// The project a write changes, with its version, read after its
/// organization's lock is taken; the caller's rights and `If-Match` are
/// checked on it.
async fn locked_project(
    db: &mut dyn Db,
    request: &WriteRequest,
    id: &str,
    now: Timestamp,
) -> Result<(Project, i64), StoreError> {
    let organization = writable_project(db, request, Action::ChangeProjects, id, now).await?;
    write_steps::lock_organization(db, &organization).await?;
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
    write_steps::check_if_match(request, version)?;
    let project = serde_json::from_str(&body)
        .map_err(|e| StoreError::Internal(format!("project {id} is stored unreadable: {e}")))?;
    Ok((project, version))
}

/// The organization of a project the caller may do `action` to: 401 for
/// a token no longer good, 404 for a project unknown or invisible to the
/// caller, 403 for a member ([`write_steps::authorize`]). A write then takes
/// the organization's lock ([`write_steps::lock_organization`]); a dry run,
/// which writes nothing, does not.
pub(crate) async fn writable_project(
    db: &mut dyn Db,
    request: &WriteRequest,
    action: Action,
    id: &str,
    now: Timestamp,
) -> Result<String, StoreError> {
    write_steps::authorize(db, request, action, Target::Project(id), now)
        .await?
        .ok_or_else(no_project)
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
        Err(StoreError::Conflict(Conflict::SlugTaken {
            slug: project.slug.clone(),
        }))
    } else {
        Ok(())
    }
}
