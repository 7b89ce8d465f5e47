//! Import: every record in one write transaction, upserting by id, so that
//! a file is applied whole or not at all and importing it again changes
//! nothing.

use std::collections::HashMap;

use tokio::sync::mpsc;

use super::admin::{insert_organization, missing_organization, replace_memberships, unique_slug};
use crate::domain::FieldError;
use crate::domain::change::ChangeKind;
use crate::domain::directory::{Organization, User};
use crate::domain::domains::{DomainLine, new_token};
use crate::domain::import::{ImportBatch, ImportError, ImportRecord, ObjectCounts};
use crate::domain::project::Project;
use crate::domain::proxy_settings::ProxySettings;
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::operations::changes;
use crate::store::sql::db::{Db, Param, exists, query_opt, to_json};
use crate::store::sql::dialect::Dialect;

/// Why one record could not be applied.
enum Refusal {
    /// The record breaks a rule: the file's fault, named by field.
    Rule(FieldError),
    Store(StoreError),
}

impl From<StoreError> for Refusal {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

/// Applies import records in one transaction: all of them, or none.
pub struct Import(std::sync::Mutex<Option<mpsc::Receiver<ImportBatch>>>);

impl Import {
    pub fn new(records: mpsc::Receiver<ImportBatch>) -> Self {
        Self(std::sync::Mutex::new(Some(records)))
    }

    /// The import's own answer, or the store's failure to run it, told as
    /// the import's (at line 0).
    pub fn outcome(
        run: Result<Result<ObjectCounts, ImportError>, StoreError>,
    ) -> Result<ObjectCounts, ImportError> {
        run.unwrap_or_else(|error| Err(ImportError::at(0, None, error.to_string())))
    }
}

operation!(Import => import with dialect, OperatorWrite, "admin_import" -> Result<ObjectCounts, ImportError>);

async fn import(
    db: &mut dyn Db,
    dialect: Dialect,
    Import(records): &Import,
) -> Result<Result<ObjectCounts, ImportError>, StoreError> {
    // The receiver is taken by the one run of the work.
    let records = records
        .lock()
        .ok()
        .and_then(|mut r| r.take())
        .ok_or_else(|| StoreError::Internal("an import's records were already taken".into()))?;
    Ok(apply(db, dialect, records).await)
}

async fn apply(
    db: &mut dyn Db,
    dialect: Dialect,
    records: mpsc::Receiver<ImportBatch>,
) -> Result<ObjectCounts, ImportError> {
    let store_failed =
        |line: u64, error: StoreError| ImportError::at(line, None, error.to_string());
    db.begin_write().await.map_err(|e| store_failed(0, e))?;
    match apply_all(db, dialect, records).await {
        Ok(counts) => {
            db.commit().await.map_err(|e| store_failed(0, e))?;
            Ok(counts)
        }
        Err(error) => {
            let _ = db.rollback().await;
            Err(error)
        }
    }
}

async fn apply_all(
    db: &mut dyn Db,
    dialect: Dialect,
    mut records: mpsc::Receiver<ImportBatch>,
) -> Result<ObjectCounts, ImportError> {
    let store_failed =
        |line: u64, error: StoreError| ImportError::at(line, None, error.to_string());
    // Scratch space for the state of projects before this import (see
    // `upsert_project`); temporary tables are seen only by this connection.
    // Dropped before the commit, while the transaction still holds the
    // connection that made it.
    db.execute(
        "CREATE TEMP TABLE IF NOT EXISTS import_prior
             (id TEXT PRIMARY KEY, updated_at BIGINT NOT NULL, content_hash BIGINT NOT NULL)",
        &[],
    )
    .await
    .map_err(|e| store_failed(0, e))?;
    db.execute("DELETE FROM import_prior", &[])
        .await
        .map_err(|e| store_failed(0, e))?;
    let mut staged = StagedChanges::start(db)
        .await
        .map_err(|e| store_failed(0, e))?;
    let now = Timestamp::now();
    let mut counts = ObjectCounts::default();
    // Organizations seen to exist, with their numbers, so each is looked
    // up once per import rather than once per project (one round trip less
    // per line on PostgreSQL). Bounded by the number of organizations; an
    // import never deletes one, and a number never changes.
    let mut known_organizations = HashMap::new();
    while let Some(batch) = records.recv().await {
        for item in batch {
            let (line, record) = item?;
            counts.count(&record);
            let applied = match record {
                ImportRecord::Organization(organization) => {
                    upsert_organization(db, &organization, now).await
                }
                ImportRecord::User(user) => upsert_user(db, &user, now).await,
                ImportRecord::Project(project) => {
                    let known = &mut known_organizations;
                    upsert_project(db, dialect, *project, now, known, &mut staged).await
                }
                ImportRecord::ProxySettings(settings) => {
                    upsert_proxy_settings(db, &settings, &mut staged).await
                }
                ImportRecord::Domain(domain) => upsert_domain(db, &domain, now, &mut staged).await,
            };
            match applied {
                Ok(()) => {}
                Err(Refusal::Rule(error)) => return Err(ImportError::from_field(line, error)),
                Err(Refusal::Store(error)) => return Err(store_failed(line, error)),
            }
        }
    }
    staged
        .record(db, now)
        .await
        .map_err(|e| store_failed(0, e))?;
    db.execute("DROP TABLE import_prior", &[])
        .await
        .map_err(|e| store_failed(0, e))?;
    Ok(counts)
}

/// The changes an import makes, for the feed's followers: staged in a
/// temporary table as the import goes (a million-line import stays
/// small), recorded at its end (`changes::record_staged`: the import
/// holds the other writes' last step for one statement, not for its
/// length). A line that changes nothing stages nothing.
struct StagedChanges {
    count: i64,
}

impl StagedChanges {
    const TABLE: &str = "import_changes";

    async fn start(db: &mut dyn Db) -> Result<Self, StoreError> {
        db.execute(
            "CREATE TEMP TABLE IF NOT EXISTS import_changes
                 (n BIGINT PRIMARY KEY, kind TEXT NOT NULL, project_id TEXT NOT NULL,
                  revision BIGINT, domain TEXT, version BIGINT NOT NULL)",
            &[],
        )
        .await?;
        db.execute("DELETE FROM import_changes", &[]).await?;
        Ok(Self { count: 0 })
    }

    async fn stage(
        &mut self,
        db: &mut dyn Db,
        kind: ChangeKind,
        project_id: &str,
        object: Staged<'_>,
        version: i64,
    ) -> Result<(), StoreError> {
        self.count += 1;
        let (revision, domain) = match object {
            Staged::Project => (None, None),
            Staged::Revision(revision) => (Some(i64::from(revision)), None),
            Staged::Domain(name) => (None, Some(name)),
        };
        db.execute(
            "INSERT INTO import_changes (n, kind, project_id, revision, domain, version)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                Param::Int(self.count),
                Param::Text(kind.as_str()),
                Param::Text(project_id),
                Param::OptInt(revision),
                Param::OptText(domain),
                Param::Int(version),
            ],
        )
        .await?;
        Ok(())
    }

    /// Records the staged changes and lets the table go.
    async fn record(self, db: &mut dyn Db, at: Timestamp) -> Result<(), StoreError> {
        changes::record_staged(db, Self::TABLE, self.count, at).await?;
        db.execute("DROP TABLE import_changes", &[]).await?;
        Ok(())
    }
}

/// What a staged change is of, in its project.
#[derive(Clone, Copy)]
enum Staged<'a> {
    Project,
    Revision(u32),
    Domain(&'a str),
}

/// A domain's claim as the line says it: inserted, or the claim of the
/// same project and name changed when the line changes it (a member the
/// line leaves out keeps its value). The operator is trusted with
/// `dns_status`, so that a restore routes what routed, but not past the
/// rules: a name is in one project of an organization, and verified in
/// one project at most. Either way its check is due at once.
async fn upsert_domain(
    db: &mut dyn Db,
    line: &DomainLine,
    now: Timestamp,
    staged: &mut StagedChanges,
) -> Result<(), Refusal> {
    let (project, name) = (Param::Text(&line.project_id), Param::Text(&line.name));
    let number = query_opt(
        db,
        "SELECT organization_number FROM projects WHERE id = ?1 AND deleted_at IS NULL",
        &[project],
        |row| row.int(0),
    )
    .await?
    .ok_or_else(|| {
        Refusal::Rule(FieldError::new(
            "project_id",
            format!("no project {} exists", line.project_id),
        ))
    })?;
    let other = query_opt(
        db,
        "SELECT project_id FROM domains WHERE organization_number = ?1 AND name = ?2
            AND project_id <> ?3",
        &[Param::Int(number), name, project],
        |row| row.text(0),
    )
    .await?;
    if let Some(other) = other {
        return Err(Refusal::Rule(FieldError::new(
            "name",
            format!("is a domain of project {other} of the same organization"),
        )));
    }
    if line.dns_status {
        let sql = "SELECT 1 FROM domains WHERE name = ?1 AND verified = ?2 AND project_id <> ?3";
        if exists(db, sql, &[name, Param::Bool(true), project]).await? {
            return Err(Refusal::Rule(FieldError::new(
                "dns_status",
                "is true for a name verified in another project: a name is verified in one \
                 organization at most",
            )));
        }
    }
    let prior = query_opt(
        db,
        "SELECT token, verified, ssl, created_at, updated_at, version FROM domains
          WHERE project_id = ?1 AND name = ?2",
        &[project, name],
        |row| {
            Ok((
                row.text(0)?,
                row.boolean(1)?,
                row.boolean(2)?,
                row.int(3)?,
                row.int(4)?,
                row.int(5)?,
            ))
        },
    )
    .await?;
    let millis = |time: Option<Timestamp>, kept: Option<i64>| {
        time.map(Timestamp::as_millis)
            .or(kept)
            .unwrap_or(now.as_millis())
    };
    let kept = prior.as_ref();
    let token = line
        .token
        .clone()
        .or_else(|| kept.map(|prior| prior.0.clone()))
        .unwrap_or_else(new_token);
    let created_at = millis(line.created_at, kept.map(|prior| prior.3));
    let updated_at = millis(line.updated_at, kept.map(|prior| prior.4));
    let state = (
        token,
        line.dns_status,
        line.ssl_status,
        created_at,
        updated_at,
    );
    let (kind, version) = match prior {
        Some((token, verified, ssl, created, updated, version)) => {
            if (token, verified, ssl, created, updated) == state {
                return Ok(());
            }
            (ChangeKind::DomainUpdated, version + 1)
        }
        None => (ChangeKind::DomainCreated, 1),
    };
    db.execute(
        "INSERT INTO domains (project_id, name, organization_number, token, verified, ssl,
                              created_at, updated_at, version, next_check_at, misses)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0)
         ON CONFLICT (project_id, name) DO UPDATE
         SET token = excluded.token, verified = excluded.verified, ssl = excluded.ssl,
             created_at = excluded.created_at, updated_at = excluded.updated_at,
             version = excluded.version, next_check_at = excluded.next_check_at,
             last_result = NULL, missing_since = NULL, misses = 0",
        &[
            project,
            name,
            Param::Int(number),
            Param::Text(&state.0),
            Param::Bool(state.1),
            Param::Bool(state.2),
            Param::Int(created_at),
            Param::Int(updated_at),
            Param::Int(version),
            Param::Int(now.as_millis()),
        ],
    )
    .await?;
    staged
        .stage(
            db,
            kind,
            &line.project_id,
            Staged::Domain(&line.name),
            version,
        )
        .await?;
    Ok(())
}

/// A new organization gets a slug from its name when the line gives none;
/// an existing one keeps its own. `updated_at` moves to the time of import
/// when the line changes anything; the memberships' copies of the
/// organization's creation time and type follow it.
async fn upsert_organization(
    db: &mut dyn Db,
    organization: &Organization,
    now: Timestamp,
) -> Result<(), Refusal> {
    let stored = query_opt(
        db,
        "SELECT name, slug, type, created_at, deleted_at IS NOT NULL FROM organizations
          WHERE id = ?1",
        &[Param::Text(&organization.id)],
        |row| {
            Ok((
                (row.text(0)?, row.text(1)?, row.text(2)?, row.int(3)?),
                row.boolean(4)?,
            ))
        },
    )
    .await?;
    // A deleted organization (deleteOrganization) stays deleted: its row
    // is kept so that its number and id are never reused.
    let stored = match stored {
        Some((_, true)) => {
            return Err(Refusal::Rule(FieldError::new(
                "id",
                format!(
                    "names organization {}, which was deleted: its id is never reused",
                    organization.id
                ),
            )));
        }
        Some((stored, false)) => Some(stored),
        None => None,
    };
    let slug = match (&organization.slug, &stored) {
        (Some(slug), _) => slug.clone(),
        (None, Some((_, slug, _, _))) => slug.clone(),
        (None, None) => unique_slug(db, organization).await?,
    };
    let kind = organization.kind.as_str();
    let created_at = organization
        .created_at
        .map(Timestamp::as_millis)
        .or(stored.as_ref().map(|s| s.3))
        .unwrap_or(now.as_millis());
    let Some((name, stored_slug, stored_kind, stored_created_at)) = stored else {
        insert_organization(db, organization, &slug, created_at)
            .await
            .map_err(|e| slug_taken(e, &slug))?;
        return Ok(());
    };
    if (
        name.as_str(),
        stored_slug.as_str(),
        stored_kind.as_str(),
        stored_created_at,
    ) == (organization.name.as_str(), slug.as_str(), kind, created_at)
    {
        return Ok(());
    }
    db.execute(
        "UPDATE organizations SET name = ?2, slug = ?3, type = ?4, created_at = ?5, updated_at = ?6,
                version = version + 1
         WHERE id = ?1",
        &[
            Param::Text(&organization.id),
            Param::Text(&organization.name),
            Param::Text(&slug),
            Param::Text(kind),
            Param::Int(created_at),
            Param::Int(now.as_millis()),
        ],
    )
    .await
    .map_err(|e| slug_taken(e, &slug))?;
    if (stored_kind.as_str(), stored_created_at) != (kind, created_at) {
        db.execute(
            "UPDATE memberships SET organization_type = ?2, organization_created_at = ?3
             WHERE organization_id = ?1",
            &[
                Param::Text(&organization.id),
                Param::Text(kind),
                Param::Int(created_at),
            ],
        )
        .await?;
    }
    Ok(())
}

fn slug_taken(error: StoreError, slug: &str) -> Refusal {
    match error {
        StoreError::Conflict(_) => Refusal::Rule(FieldError::new(
            "slug",
            format!("another organization has the slug {slug}"),
        )),
        other => Refusal::Store(other),
    }
}

/// `updated_at` moves to the time of import when the line changes the
/// user's email, name or roles.
async fn upsert_user(db: &mut dyn Db, user: &User, now: Timestamp) -> Result<(), Refusal> {
    if let Some(error) = missing_organization(db, user).await? {
        return Err(Refusal::Rule(error));
    }
    let stored = query_opt(
        db,
        "SELECT email, name, created_at FROM users WHERE id = ?1",
        &[Param::Text(&user.id)],
        |row| Ok((row.text(0)?, row.text(1)?, row.int(2)?)),
    )
    .await?;
    let name = user.name.as_deref().unwrap_or_default();
    let created_at = user
        .created_at
        .map(Timestamp::as_millis)
        .or(stored.as_ref().map(|s| s.2))
        .unwrap_or(now.as_millis());
    db.execute(
        "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (id) DO UPDATE
         SET email = excluded.email, name = excluded.name, created_at = excluded.created_at",
        &[
            Param::Text(&user.id),
            Param::Text(&user.email),
            Param::Text(name),
            Param::Int(created_at),
        ],
    )
    .await?;
    let since = Timestamp::from_millis(created_at).unwrap_or(now);
    let memberships_changed = replace_memberships(db, &user.id, since, &user.roles).await?;
    if let Some((email, stored_name, stored_created_at)) = stored
        && (memberships_changed
            || (email.as_str(), stored_name.as_str(), stored_created_at)
                != (user.email.as_str(), name, created_at))
    {
        db.execute(
            "UPDATE users SET updated_at = ?2 WHERE id = ?1",
            &[Param::Text(&user.id), Param::Int(now.as_millis())],
        )
        .await?;
    }
    Ok(())
}

/// Absent timestamps keep the stored ones: `created_at` as it stands,
/// `updated_at` as it stood before this import began, unless the project's
/// content ends up different from then, when it takes the time of import.
/// Judging against the state before the import (not the previous line)
/// keeps a re-import a no-op even when a file names a project twice.
async fn upsert_project(
    db: &mut dyn Db,
    dialect: Dialect,
    mut project: Project,
    now: Timestamp,
    known_organizations: &mut HashMap<String, i64>,
    staged: &mut StagedChanges,
) -> Result<(), Refusal> {
    let organization_number = match known_organizations.get(&project.organization_id) {
        Some(number) => *number,
        None => {
            let number = query_opt(
                db,
                "SELECT number FROM organizations WHERE id = ?1 AND deleted_at IS NULL",
                &[Param::Text(&project.organization_id)],
                |row| row.int(0),
            )
            .await?
            .ok_or_else(|| {
                Refusal::Rule(FieldError::new(
                    "organization_id",
                    format!("no organization {} exists", project.organization_id),
                ))
            })?;
            known_organizations.insert(project.organization_id.clone(), number);
            number
        }
    };
    let stored = query_opt(
        db,
        "SELECT created_at, updated_at, body, version, deleted_at IS NOT NULL
           FROM projects WHERE id = ?1",
        &[Param::Text(&project.id)],
        |row| {
            let time_and_body = (row.int(0)?, row.int(1)?, row.text(2)?);
            Ok((time_and_body, row.int(3)?, row.boolean(4)?))
        },
    )
    .await?;
    let (stored, stored_version) = match stored {
        Some((time_and_body, version, deleted)) => (Some(time_and_body), Some((version, deleted))),
        None => (None, None),
    };
    let before_import = state_before_import(db, &project.id, stored.as_ref()).await?;
    let stored_time = |millis| Timestamp::from_millis(millis).unwrap_or(now);
    if project.created_at.is_none() {
        project.created_at = Some(stored.as_ref().map_or(now, |s| stored_time(s.0)));
    }
    let body = match (project.updated_at, before_import) {
        (Some(_), _) | (None, None) => {
            project.updated_at.get_or_insert(now);
            to_json(&project)?
        }
        (None, Some((updated_at, content_hash))) => {
            project.updated_at = Some(stored_time(updated_at));
            let unchanged = to_json(&project)?;
            if hash(&unchanged) == content_hash {
                unchanged
            } else {
                project.updated_at = Some(now);
                to_json(&project)?
            }
        }
    };
    let millis = |at: Option<Timestamp>| at.unwrap_or(now).as_millis();
    let upsert = (dialect.project_upsert)();
    db.execute(
        upsert,
        &[
            Param::Text(&project.id),
            Param::Text(&project.organization_id),
            Param::Int(millis(project.created_at)),
            Param::Int(millis(project.updated_at)),
            Param::Text(&body),
            Param::Int(organization_number),
            Param::Text(&project.slug),
        ],
    )
    .await?;
    // As the upsert moves the version: when the body changes, or the
    // project comes back.
    let change = match (stored_version, &stored) {
        (None, _) => Some((ChangeKind::ProjectCreated, 1)),
        (Some((version, true)), _) => Some((ChangeKind::ProjectCreated, version + 1)),
        (Some((version, false)), Some((_, _, stored_body))) if *stored_body != body => {
            Some((ChangeKind::ProjectUpdated, version + 1))
        }
        _ => None,
    };
    if let Some((kind, version)) = change {
        let object = Staged::Project;
        staged.stage(db, kind, &project.id, object, version).await?;
    }
    Ok(())
}

/// A project's `updated_at` and content hash as they were before this
/// import, recorded the first time the import touches it. Kept in a
/// temporary table, not in memory, so a million-line import stays small.
async fn state_before_import(
    db: &mut dyn Db,
    project_id: &str,
    stored: Option<&(i64, i64, String)>,
) -> Result<Option<(i64, i64)>, Refusal> {
    // A project not stored now was not stored before the import either (an
    // import never deletes): nothing to look up.
    let Some((_, updated_at, body)) = stored else {
        return Ok(None);
    };
    let recorded = query_opt(
        db,
        "SELECT updated_at, content_hash FROM import_prior WHERE id = ?1",
        &[Param::Text(project_id)],
        |row| Ok((row.int(0)?, row.int(1)?)),
    )
    .await?;
    if recorded.is_some() {
        return Ok(recorded);
    }
    let state = (*updated_at, hash(body));
    db.execute(
        "INSERT INTO import_prior (id, updated_at, content_hash) VALUES (?1, ?2, ?3)",
        &[
            Param::Text(project_id),
            Param::Int(state.0),
            Param::Int(state.1),
        ],
    )
    .await?;
    Ok(Some(state))
}

/// A fingerprint of stored JSON, compared only within one process.
fn hash(body: &str) -> i64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    body.hash(&mut hasher);
    hasher.finish() as i64
}

async fn upsert_proxy_settings(
    db: &mut dyn Db,
    settings: &ProxySettings,
    staged: &mut StagedChanges,
) -> Result<(), Refusal> {
    let project_id = settings.project_id.as_deref().unwrap_or_default();
    let project_known = exists(
        db,
        "SELECT 1 FROM projects WHERE id = ?1 AND deleted_at IS NULL",
        &[Param::Text(project_id)],
    )
    .await?;
    if !project_known {
        return Err(Refusal::Rule(FieldError::new(
            "project_id",
            format!("no project {project_id} exists"),
        )));
    }
    let revision = i64::from(settings.revision);
    if settings.is_active {
        let active = query_opt(
            db,
            "SELECT revision FROM proxy_settings WHERE project_id = ?1 AND is_active AND revision != ?2",
            &[Param::Text(project_id), Param::Int(revision)],
            |row| row.int(0),
        )
        .await?;
        if let Some(active) = active {
            return Err(Refusal::Rule(FieldError::new(
                "is_active",
                format!(
                    "revision {active} of project {project_id} is already active; \
                     at most one revision per project may be (deactivate it on an earlier line)"
                ),
            )));
        }
    }
    let listed = ProxySettings {
        project_id: None,
        ..settings.clone()
    };
    let body = to_json(&listed)?;
    let stored = query_opt(
        db,
        "SELECT is_active, version, body FROM proxy_settings WHERE project_id = ?1 AND revision = ?2",
        &[Param::Text(project_id), Param::Int(revision)],
        |row| Ok((row.boolean(0)?, row.int(1)?, row.text(2)?)),
    )
    .await?;
    db.execute(
        "INSERT INTO proxy_settings (project_id, revision, is_active, body) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (project_id, revision) DO UPDATE
         SET is_active = excluded.is_active, body = excluded.body,
             version = proxy_settings.version
               + CASE WHEN proxy_settings.body = excluded.body THEN 0 ELSE 1 END",
        &[
            Param::Text(project_id),
            Param::Int(revision),
            Param::Bool(settings.is_active),
            Param::Text(&body),
        ],
    )
    .await?;
    // As the upsert moves the version: when the body changes.
    let change = match stored {
        None => Some((ChangeKind::ProxySettingsCreated, 1)),
        Some((was_active, version, stored_body)) if stored_body != body => Some((
            ChangeKind::of_revision_activity(was_active, settings.is_active),
            version + 1,
        )),
        Some(_) => None,
    };
    if let Some((kind, version)) = change {
        let revision = Staged::Revision(settings.revision);
        staged
            .stage(db, kind, project_id, revision, version)
            .await?;
    }
    Ok(())
}
