//! createProjectProxySettings and updateProjectProxySettings
//! (`management.md`): each write takes the project's organization lock
//! (`project_writes::lock_writable_project`), so that revision numbers and
//! the one active revision are decided one write at a time, and records
//! every revision it changes in the audit (object id `PROJECT/REVISION`).

use super::project_writes::lock_writable_project;
use super::writes::{self, Change};
use super::{Db, Param, query_opt, to_json, transaction};
use crate::domain::proxy_settings::ProxySettings;
use crate::domain::time::Timestamp;
use crate::store::StoreError;
use crate::store::writes::{ObjectAnswer, WriteRequest};

/// What updateProjectProxySettings changes: the members present.
#[derive(Clone, Debug, Default)]
pub struct SettingsChange {
    pub description: Option<String>,
    pub is_active: Option<bool>,
}

const OBJECT: &str = "proxy_settings";

fn no_revision() -> StoreError {
    StoreError::NotFound {
        kind: "proxy settings revision",
        id: String::new(),
    }
}

fn object_id(project_id: &str, revision: u32) -> String {
    format!("{project_id}/{revision}")
}

pub(super) async fn create(
    db: &mut dyn Db,
    input: &(WriteRequest, String, ProxySettings),
) -> Result<ObjectAnswer, StoreError> {
    let (request, project_id, settings) = input;
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        lock_writable_project(db, request, project_id, now).await?;
        // After the lock: a request with the same key that held it has
        // committed its answer by now.
        if let Some(answer) = writes::replay(db, request, project_id, now).await? {
            return Ok(answer);
        }
        let highest = query_opt(
            db,
            "SELECT MAX(revision) FROM proxy_settings WHERE project_id = ?1",
            &[Param::Text(project_id)],
            |row| row.opt_int(0),
        )
        .await?
        .flatten();
        let revision = u32::try_from(highest.unwrap_or(0) + 1)
            .map_err(|_| StoreError::Conflict("the project has no revision number left".into()))?;
        let settings = ProxySettings {
            project_id: None,
            revision,
            // A project's first revision is active, later ones wait for
            // updateProjectProxySettings.
            is_active: highest.is_none(),
            ..settings.clone()
        };
        settings.validate().map_err(StoreError::Invalid)?;
        let body = to_json(&settings)?;
        db.execute(
            "INSERT INTO proxy_settings (project_id, revision, is_active, body, version)
             VALUES (?1, ?2, ?3, ?4, 1)",
            &[
                Param::Text(project_id),
                Param::Int(revision.into()),
                Param::Bool(settings.is_active),
                Param::Text(&body),
            ],
        )
        .await?;
        let answer = ObjectAnswer { body, version: 1 };
        writes::record(
            db,
            request,
            now,
            Change {
                object: OBJECT,
                object_id: &object_id(project_id, revision),
                version_before: None,
                version_after: Some(1),
            },
        )
        .await?;
        writes::keep_answer(db, request, project_id, &answer, now).await?;
        Ok(answer)
    })
}

pub(super) async fn update(
    db: &mut dyn Db,
    input: &(WriteRequest, String, u32, SettingsChange),
) -> Result<ObjectAnswer, StoreError> {
    let (request, project_id, revision, change) = input;
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        lock_writable_project(db, request, project_id, now).await?;
        let (mut settings, version) = stored(db, project_id, *revision)
            .await?
            .ok_or_else(no_revision)?;
        writes::check_if_match(request, version)?;
        if change.is_active == Some(true) && !settings.is_active {
            // The previous active revision goes first: the store keeps at
            // most one active revision per project at every statement.
            let active = query_opt(
                db,
                "SELECT revision FROM proxy_settings WHERE project_id = ?1 AND is_active",
                &[Param::Text(project_id)],
                |row| row.int(0),
            )
            .await?;
            if let Some(active) = active.and_then(|r| u32::try_from(r).ok()) {
                let (mut previous, previous_version) = stored(db, project_id, active)
                    .await?
                    .ok_or_else(no_revision)?;
                previous.is_active = false;
                save(db, request, now, project_id, &previous, previous_version).await?;
            }
        }
        if let Some(description) = &change.description {
            settings.description.clone_from(description);
        }
        if let Some(is_active) = change.is_active {
            settings.is_active = is_active;
        }
        save(db, request, now, project_id, &settings, version).await
    })
}

/// A revision as stored, with its version.
async fn stored(
    db: &mut dyn Db,
    project_id: &str,
    revision: u32,
) -> Result<Option<(ProxySettings, i64)>, StoreError> {
    let found = query_opt(
        db,
        "SELECT body, version FROM proxy_settings WHERE project_id = ?1 AND revision = ?2",
        &[Param::Text(project_id), Param::Int(revision.into())],
        |row| Ok((row.text(0)?, row.int(1)?)),
    )
    .await?;
    found
        .map(|(body, version)| {
            let settings = serde_json::from_str(&body).map_err(|e| {
                StoreError::Internal(format!(
                    "revision {revision} of {project_id} is stored unreadable: {e}"
                ))
            })?;
            Ok((settings, version))
        })
        .transpose()
}

/// Writes a changed revision over its `version` and records it.
async fn save(
    db: &mut dyn Db,
    request: &WriteRequest,
    now: Timestamp,
    project_id: &str,
    settings: &ProxySettings,
    version: i64,
) -> Result<ObjectAnswer, StoreError> {
    let body = to_json(settings)?;
    let changed = db
        .execute(
            "UPDATE proxy_settings SET is_active = ?3, body = ?4, version = version + 1
              WHERE project_id = ?1 AND revision = ?2 AND version = ?5",
            &[
                Param::Text(project_id),
                Param::Int(settings.revision.into()),
                Param::Bool(settings.is_active),
                Param::Text(&body),
                Param::Int(version),
            ],
        )
        .await?;
    let id = object_id(project_id, settings.revision);
    writes::record_update(db, request, now, changed, OBJECT, &id, version).await?;
    Ok(ObjectAnswer {
        body,
        version: version + 1,
    })
}
