//! Import: every record in one write transaction, upserting by id, so that
//! a file is applied whole or not at all and importing it again changes
//! nothing.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use tokio::sync::mpsc;

use super::admin::{missing_organization, replace_memberships};
use super::to_json;
use crate::domain::FieldError;
use crate::domain::directory::{Organization, User};
use crate::domain::import::{ImportBatch, ImportError, ImportRecord, ObjectCounts};
use crate::domain::project::Project;
use crate::domain::proxy_settings::ProxySettings;
use crate::domain::time::Timestamp;
use crate::store::StoreError;

/// Why one record could not be applied.
enum Refusal {
    /// The record breaks a rule: the file's fault, named by field.
    Rule(FieldError),
    Store(StoreError),
}

impl From<rusqlite::Error> for Refusal {
    fn from(error: rusqlite::Error) -> Self {
        Self::Store(error.into())
    }
}

impl From<StoreError> for Refusal {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

pub(super) fn apply(
    c: &mut Connection,
    mut records: mpsc::Receiver<ImportBatch>,
) -> Result<ObjectCounts, ImportError> {
    let store_failed =
        |line: u64, error: StoreError| ImportError::at(line, None, error.to_string());
    let tx = c
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| store_failed(0, e.into()))?;
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS import_prior
             (id TEXT PRIMARY KEY, updated_at INTEGER NOT NULL, content_hash INTEGER NOT NULL);
         DELETE FROM temp.import_prior;",
    )
    .map_err(|e| store_failed(0, e.into()))?;
    let now = Timestamp::now();
    let mut summary = ObjectCounts::default();
    // Dropping `tx` on any early return rolls everything back.
    while let Some(batch) = records.blocking_recv() {
        for item in batch {
            let (line, record) = item?;
            summary.count(&record);
            let applied = match record {
                ImportRecord::Organization(organization) => {
                    upsert_organization(&tx, &organization, now)
                }
                ImportRecord::User(user) => upsert_user(&tx, &user, now),
                ImportRecord::Project(project) => upsert_project(&tx, *project, now),
                ImportRecord::ProxySettings(settings) => upsert_proxy_settings(&tx, &settings),
            };
            match applied {
                Ok(()) => {}
                Err(Refusal::Rule(error)) => return Err(ImportError::from_field(line, error)),
                Err(Refusal::Store(error)) => return Err(store_failed(line, error)),
            }
        }
    }
    tx.commit().map_err(|e| store_failed(0, e.into()))?;
    // Frees the temporary table's pages; the next import makes it anew.
    let _ = c.execute_batch("DROP TABLE IF EXISTS temp.import_prior");
    Ok(summary)
}

fn upsert_organization(
    tx: &Transaction<'_>,
    organization: &Organization,
    now: Timestamp,
) -> Result<(), Refusal> {
    tx.prepare_cached(
        "INSERT INTO organizations (id, name, created_at) VALUES (?1, ?2, COALESCE(?3, ?4))
         ON CONFLICT (id) DO UPDATE
         SET name = excluded.name, created_at = COALESCE(?3, organizations.created_at)",
    )?
    .execute(params![
        organization.id,
        organization.name,
        organization.created_at.map(Timestamp::as_millis),
        now.as_millis()
    ])?;
    Ok(())
}

fn upsert_user(tx: &Transaction<'_>, user: &User, now: Timestamp) -> Result<(), Refusal> {
    if let Some(error) = missing_organization(tx, &user.organizations)? {
        return Err(Refusal::Rule(error));
    }
    tx.prepare_cached(
        "INSERT INTO users (id, email, created_at) VALUES (?1, ?2, COALESCE(?3, ?4))
         ON CONFLICT (id) DO UPDATE
         SET email = excluded.email, created_at = COALESCE(?3, users.created_at)",
    )?
    .execute(params![
        user.id,
        user.email,
        user.created_at.map(Timestamp::as_millis),
        now.as_millis()
    ])?;
    replace_memberships(tx, &user.id, &user.organizations)?;
    Ok(())
}

/// Absent timestamps keep the stored ones: `created_at` as it stands,
/// `updated_at` as it stood before this import began, unless the project's
/// content ends up different from then, when it takes the time of import.
/// Judging against the state before the import (not the previous line)
/// keeps a re-import a no-op even when a file names a project twice.
fn upsert_project(
    tx: &Transaction<'_>,
    mut project: Project,
    now: Timestamp,
) -> Result<(), Refusal> {
    let organization_known = tx
        .prepare_cached("SELECT 1 FROM organizations WHERE id = ?1")?
        .exists([&project.organization_id])?;
    if !organization_known {
        return Err(Refusal::Rule(FieldError::new(
            "organization_id",
            format!("no organization {} exists", project.organization_id),
        )));
    }
    let stored: Option<(i64, i64, String)> = tx
        .prepare_cached("SELECT created_at, updated_at, body FROM projects WHERE id = ?1")?
        .query_row([&project.id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    let before_import = state_before_import(tx, &project.id, stored.as_ref())?;
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
    let (created_at, updated_at) = (
        project.created_at.unwrap_or(now),
        project.updated_at.unwrap_or(now),
    );
    tx.prepare_cached(
        "INSERT INTO projects (id, organization_id, created_at, updated_at, body)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (id) DO UPDATE
         SET organization_id = excluded.organization_id, created_at = excluded.created_at,
             updated_at = excluded.updated_at, body = excluded.body, deleted_at = NULL",
    )?
    .execute(params![
        project.id,
        project.organization_id,
        created_at.as_millis(),
        updated_at.as_millis(),
        body
    ])?;
    Ok(())
}

/// A project's `updated_at` and content hash as they were before this
/// import, recorded the first time the import touches it. Kept in a
/// temporary table, not in memory, so a million-line import stays small.
fn state_before_import(
    tx: &Transaction<'_>,
    project_id: &str,
    stored: Option<&(i64, i64, String)>,
) -> Result<Option<(i64, i64)>, Refusal> {
    let recorded: Option<(i64, i64)> = tx
        .prepare_cached("SELECT updated_at, content_hash FROM temp.import_prior WHERE id = ?1")?
        .query_row([project_id], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    if recorded.is_some() {
        return Ok(recorded);
    }
    let Some((_, updated_at, body)) = stored else {
        return Ok(None);
    };
    let state = (*updated_at, hash(body));
    tx.prepare_cached(
        "INSERT INTO temp.import_prior (id, updated_at, content_hash) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![project_id, state.0, state.1])?;
    Ok(Some(state))
}

/// A fingerprint of stored JSON, compared only within one process.
fn hash(body: &str) -> i64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    body.hash(&mut hasher);
    hasher.finish() as i64
}

fn upsert_proxy_settings(tx: &Transaction<'_>, settings: &ProxySettings) -> Result<(), Refusal> {
    let project_id = settings.project_id.as_deref().unwrap_or_default();
    let project_known = tx
        .prepare_cached("SELECT 1 FROM projects WHERE id = ?1 AND deleted_at IS NULL")?
        .exists([project_id])?;
    if !project_known {
        return Err(Refusal::Rule(FieldError::new(
            "project_id",
            format!("no project {project_id} exists"),
        )));
    }
    if settings.is_active {
        let active: Option<u32> = tx
            .prepare_cached(
                "SELECT revision FROM proxy_settings
                 WHERE project_id = ?1 AND is_active = 1 AND revision != ?2",
            )?
            .query_row(params![project_id, settings.revision], |row| row.get(0))
            .optional()?;
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
    tx.prepare_cached(
        "INSERT INTO proxy_settings (project_id, revision, is_active, body) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (project_id, revision) DO UPDATE
         SET is_active = excluded.is_active, body = excluded.body",
    )?
    .execute(params![
        project_id,
        settings.revision,
        settings.is_active,
        to_json(&listed)?
    ])?;
    Ok(())
}
