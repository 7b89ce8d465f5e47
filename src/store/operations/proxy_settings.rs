//! A project's proxy settings: the page of its revisions, and
//! createProjectProxySettings and updateProjectProxySettings
//! (`docs/management.md`). Each write takes the project's organization lock
//! (`projects::writable_project`, then `write_steps::lock_organization`), so
//! that revision numbers and the one active revision are decided one
//! write at a time, and records every revision it changes in the audit
//! (object id `PROJECT/REVISION`). Each has a dry run (`dry_run=true`):
//! a read operation that takes the write's steps up to the storing.

use std::sync::atomic::{AtomicBool, Ordering};

use super::projects::writable_project;
use super::rollout_rows;
use super::write_request::{ObjectAnswer, WriteRequest};
use super::write_steps::{self, Change, Fed};
use crate::domain::access::{self, Action, Facts, Refusal};
use crate::domain::change::ChangeKind;
use crate::domain::proxy_settings::{DryRun, ProxySettings};
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::{Conflict, StoreError};
use crate::store::listing::ProxySettingsQuery;
use crate::store::page::JsonPage;
use crate::store::sql::db::{Db, Param, Row, exists, query_opt, to_json, transaction};
use crate::store::sql::keyset::{StartKeys, json_page, keyset_select};

/// What updateProjectProxySettings changes: the members present.
#[derive(Clone, Debug, Default)]
pub struct SettingsChange {
    pub description: Option<String>,
    pub is_active: Option<bool>,
    /// Whether the revision passed the checks before activation, run by
    /// the caller on what [`RevisionToActivate`] read, outside any
    /// transaction: its regexes take seconds to compile, which must not
    /// hold the store's writer. A revision's backends and routes never
    /// change, so the check holds for the write.
    pub checked_for_activation: bool,
}

/// The revision an updateProjectProxySettings with `is_active: true`
/// would activate, read for its checks before the write (or the dry run)
/// runs: `None` when it is active already (nothing to check), 404 when
/// unknown, the write's refusals (401, 403, 404) for a caller who may not
/// activate it, and its 412 for an `If-Match` it does not meet. A read:
/// nothing is locked.
#[derive(Clone, Debug)]
pub struct RevisionToActivate {
    pub request: WriteRequest,
    pub project_id: String,
    pub revision: u32,
}

operation!(RevisionToActivate => to_activate, FreshRead, "revision_to_activate" -> Option<ProxySettings>);

async fn to_activate(
    db: &mut dyn Db,
    asked: &RevisionToActivate,
) -> Result<Option<ProxySettings>, StoreError> {
    let now = Timestamp::now();
    let project_id = &asked.project_id;
    transaction!(db, begin_read, {
        writable_project(
            db,
            &asked.request,
            Action::ActivateRevision,
            project_id,
            now,
        )
        .await?;
        let (settings, version) = stored_revision(db, project_id, asked.revision)
            .await?
            .ok_or_else(no_revision)?;
        // The write's order of refusals: its 412 before the checks' 400.
        write_steps::check_if_match(&asked.request, version)?;
        Ok((!settings.is_active).then_some(settings))
    })
}

pub(super) fn no_revision() -> StoreError {
    StoreError::NotFound {
        kind: "proxy settings revision",
        id: String::new(),
    }
}

/// A page of a project's revisions, when the caller may see the project.
pub(crate) async fn page(
    db: &mut dyn Db,
    query: &ProxySettingsQuery,
) -> Result<JsonPage, StoreError> {
    let page = &query.page;
    // `Some(None)`: a start key that is no revision; the read below
    // reports it.
    let start_revision = page.start_key.as_deref().map(parse_revision);
    if start_revision != Some(None) {
        // The common case in one statement (one snapshot, no transaction):
        // the revisions joined to their project, whose organization tells
        // whether the caller may see it, the start revision found by a
        // subquery. Without rows it cannot tell an unknown or invisible
        // project, an unknown start key and the end of the list apart: the
        // transaction below tells.
        let sql = keyset_select(
            "SELECT s.revision, s.body, p.organization_number FROM proxy_settings s
             JOIN projects p ON p.id = s.project_id
             WHERE s.project_id = ?1 AND p.deleted_at IS NULL",
            1,
            &["s.revision"],
            StartKeys::Selected {
                subquery: "SELECT revision FROM proxy_settings WHERE project_id = ?1 AND revision = ?2",
                binds: 1,
            },
            page,
        );
        let mut params = vec![Param::Text(&query.project_id)];
        params.extend(start_revision.flatten().map(|r| Param::Int(r.into())));
        params.push(Param::Int(page.fetch_count() as i64));
        // Every row is of the same project: the first one tells. A project
        // the caller may not see reads on as if it had no row here, so
        // that it costs what an unknown one costs (the same statements,
        // below): the time of a 404 must not tell whether it exists.
        let visibility_checked = AtomicBool::new(false);
        let found = json_page(db, sql, &params, page, 1, |row, key| {
            if !visibility_checked.swap(true, Ordering::Relaxed) {
                may_read(query, row.int(2)?)?;
            }
            revision_key(row, key)
        })
        .await;
        match found {
            Ok(found) if found.count > 0 => return Ok(found),
            // Only the check above refuses: go on to the statements that
            // tell unknown projects.
            Ok(_)
            | Err(StoreError::Refused {
                refusal: Refusal::NotFound,
                ..
            }) => {}
            Err(error) => return Err(error),
        }
    }
    transaction!(db, begin_read, {
        let organization = query_opt(
            db,
            "SELECT organization_number FROM projects WHERE id = ?1 AND deleted_at IS NULL",
            &[Param::Text(&query.project_id)],
            |row| row.int(0),
        )
        .await?;
        match organization {
            Some(number) => may_read(query, number)?,
            None => return Err(unknown_project(query)),
        }
        let after = match &page.start_key {
            None => None,
            Some(key) => {
                let revision = parse_revision(key).ok_or(StoreError::UnknownStartKey)?;
                let known = exists(
                    db,
                    "SELECT 1 FROM proxy_settings WHERE project_id = ?1 AND revision = ?2",
                    &[Param::Text(&query.project_id), Param::Int(revision.into())],
                )
                .await?;
                if !known {
                    return Err(StoreError::UnknownStartKey);
                }
                Some(revision)
            }
        };
        let sql = keyset_select(
            "SELECT revision, body FROM proxy_settings WHERE project_id = ?1",
            1,
            &["revision"],
            StartKeys::Bound,
            page,
        );
        let mut params = vec![Param::Text(&query.project_id)];
        params.extend(after.map(|revision| Param::Int(revision.into())));
        params.push(Param::Int(page.fetch_count() as i64));
        json_page(db, sql, &params, page, 1, revision_key).await
    })
}

/// Whether the caller may read the revisions of a project of organization
/// `number` ([`access::decide`]): the same answer for one it may not see
/// as for a project that does not exist.
fn may_read(query: &ProxySettingsQuery, number: i64) -> Result<(), StoreError> {
    let standing = query.visible_to.standing_toward_number(number);
    access::decide(Action::ReadProjects, Facts::live(standing))
        .map_err(|refusal| StoreError::refused(refusal, "project"))
}

/// The same answer for a project that does not exist and one the caller
/// may not see.
fn unknown_project(query: &ProxySettingsQuery) -> StoreError {
    StoreError::NotFound {
        kind: "project",
        id: query.project_id.clone(),
    }
}

/// A revision's page key, from column 0.
fn revision_key(row: &dyn Row, key: &mut String) -> Result<(), StoreError> {
    use std::fmt::Write;
    write!(key, "{}", revision(row, 0)?).expect("writing to a String succeeds");
    Ok(())
}

/// A revision's key as the listing gives it: its decimal digits, no sign,
/// no leading zero.
fn parse_revision(key: &str) -> Option<u32> {
    let canonical =
        !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) && !key.starts_with('0');
    canonical.then(|| key.parse().ok()).flatten()
}

fn revision(row: &dyn Row, column: usize) -> Result<u32, StoreError> {
    let value = row.int(column)?;
    u32::try_from(value)
        .map_err(|_| StoreError::Internal(format!("stored revision {value} is out of range")))
}

/// createProjectProxySettings: `settings` is checked already; its
/// revision number and activity are decided here.
#[derive(Clone, Debug)]
pub struct CreateProxySettings {
    pub request: WriteRequest,
    pub project_id: String,
    pub settings: ProxySettings,
}

operation!(CreateProxySettings => create, Write, "create_project_proxy_settings" -> ObjectAnswer);

async fn create(
    db: &mut dyn Db,
    CreateProxySettings {
        request,
        project_id,
        settings,
    }: &CreateProxySettings,
) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let organization =
            writable_project(db, request, Action::ChangeProjects, project_id, now).await?;
        write_steps::lock_organization(db, &organization).await?;
        // After the lock: a request with the same key that held it has
        // committed its answer by now.
        if let Some(answer) = write_steps::replay(db, request, project_id, now).await? {
            return Ok(answer);
        }
        let settings = numbered(db, project_id, settings).await?;
        let body = to_json(&settings)?;
        db.execute(
            "INSERT INTO proxy_settings (project_id, revision, is_active, body, version)
             VALUES (?1, ?2, ?3, ?4, 1)",
            &[
                Param::Text(project_id),
                Param::Int(settings.revision.into()),
                Param::Bool(settings.is_active),
                Param::Text(&body),
            ],
        )
        .await?;
        let answer = ObjectAnswer { body, version: 1 };
        let fed = Fed {
            kind: ChangeKind::ProxySettingsCreated,
            project_id,
            revision: Some(settings.revision),
            domain: None,
            rollout: None,
        };
        let (object, object_id) = fed.audited_object();
        write_steps::record(
            db,
            request,
            now,
            Change {
                object,
                object_id: &object_id,
                version_before: None,
                version_after: Some(1),
                feed: Some(fed),
            },
        )
        .await?;
        write_steps::keep_answer(db, request, project_id, &answer, now).await?;
        Ok(answer)
    })
}

/// createProjectProxySettings with `dry_run=true`: what
/// [`CreateProxySettings`] would store, decided by the same steps up to
/// the storing (the caller's rights, the numbering, the checks), in a
/// read transaction: no lock, no revision, no audit record, no change
/// for the feed, no idempotency key.
#[derive(Clone, Debug)]
pub struct TryCreateProxySettings(pub CreateProxySettings);

operation!(TryCreateProxySettings => try_create, Read, "try_create_project_proxy_settings" -> DryRun);

async fn try_create(
    db: &mut dyn Db,
    TryCreateProxySettings(CreateProxySettings {
        request,
        project_id,
        settings,
    }): &TryCreateProxySettings,
) -> Result<DryRun, StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_read, {
        writable_project(db, request, Action::ChangeProjects, project_id, now).await?;
        let settings = numbered(db, project_id, settings).await?;
        let active = active_revision(db, project_id).await?;
        Ok(DryRun::new(
            settings,
            active.map(|(active, _)| active).as_ref(),
        ))
    })
}

/// The revision a create makes of `settings`: numbered after the
/// project's highest revision, active when it is the project's first,
/// checked again.
async fn numbered(
    db: &mut dyn Db,
    project_id: &str,
    settings: &ProxySettings,
) -> Result<ProxySettings, StoreError> {
    let highest = query_opt(
        db,
        "SELECT MAX(revision) FROM proxy_settings WHERE project_id = ?1",
        &[Param::Text(project_id)],
        |row| row.opt_int(0),
    )
    .await?
    .flatten();
    let revision = u32::try_from(highest.unwrap_or(0) + 1)
        .map_err(|_| StoreError::Conflict(Conflict::NoRevisionNumberLeft))?;
    let settings = ProxySettings {
        project_id: None,
        revision,
        // A project's first revision is active, later ones wait for
        // updateProjectProxySettings.
        is_active: highest.is_none(),
        ..settings.clone()
    };
    settings.validate().map_err(StoreError::Invalid)?;
    Ok(settings)
}

/// updateProjectProxySettings: a revision's description and activity.
#[derive(Clone, Debug)]
pub struct UpdateProxySettings {
    pub request: WriteRequest,
    pub project_id: String,
    pub revision: u32,
    pub change: SettingsChange,
}

operation!(UpdateProxySettings => update, Write, "update_project_proxy_settings" -> ObjectAnswer);

async fn update(db: &mut dyn Db, update: &UpdateProxySettings) -> Result<ObjectAnswer, StoreError> {
    let UpdateProxySettings {
        request,
        project_id,
        ..
    } = update;
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let organization = writable_project(db, request, update.action(), project_id, now).await?;
        write_steps::lock_organization(db, &organization).await?;
        if update.change.is_active.is_some() {
            rollout_rows::refuse_while_live(db, project_id).await?;
        }
        let planned = plan_update(db, update).await?;
        store_update(db, request, now, project_id, planned).await
    })
}

/// Makes `revision` the project's active one, in the write's transaction
/// (a rollout's success, `docs/rollouts.md`): the same steps as an
/// activation by updateProjectProxySettings; its checks before activation
/// ran when the rollout started.
pub(super) async fn activate(
    db: &mut dyn Db,
    request: &WriteRequest,
    now: Timestamp,
    project_id: &str,
    revision: u32,
) -> Result<(), StoreError> {
    let update = UpdateProxySettings {
        request: request.clone(),
        project_id: project_id.to_owned(),
        revision,
        change: SettingsChange {
            description: None,
            is_active: Some(true),
            checked_for_activation: true,
        },
    };
    let planned = plan_update(db, &update).await?;
    store_update(db, request, now, project_id, planned).await?;
    Ok(())
}

/// Stores what [`plan_update`] decided: the active revision it
/// deactivates first (the store keeps at most one active revision per
/// project at every statement), then the revision.
async fn store_update(
    db: &mut dyn Db,
    request: &WriteRequest,
    now: Timestamp,
    project_id: &str,
    planned: PlannedUpdate,
) -> Result<ObjectAnswer, StoreError> {
    if let Some((previous, previous_version)) = &planned.deactivated {
        let kind = ChangeKind::ProxySettingsDeactivated;
        save(
            db,
            request,
            now,
            project_id,
            previous,
            *previous_version,
            kind,
        )
        .await?;
    }
    let (settings, version, kind) = (&planned.settings, planned.version, planned.kind);
    save(db, request, now, project_id, settings, version, kind).await
}

/// updateProjectProxySettings with `dry_run=true`: what
/// [`UpdateProxySettings`] would do, decided by the same steps up to the
/// storing (the caller's rights, the revision, `If-Match`, the checks
/// before activation), in a read transaction: nothing is locked, changed,
/// audited or fed.
#[derive(Clone, Debug)]
pub struct TryUpdateProxySettings(pub UpdateProxySettings);

operation!(TryUpdateProxySettings => try_update, Read, "try_update_project_proxy_settings" -> DryRun);

async fn try_update(
    db: &mut dyn Db,
    TryUpdateProxySettings(update): &TryUpdateProxySettings,
) -> Result<DryRun, StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_read, {
        writable_project(
            db,
            &update.request,
            update.action(),
            &update.project_id,
            now,
        )
        .await?;
        if update.change.is_active.is_some() {
            rollout_rows::refuse_while_live(db, &update.project_id).await?;
        }
        let planned = plan_update(db, update).await?;
        Ok(DryRun::new(planned.settings, planned.active.as_ref()))
    })
}

impl UpdateProxySettings {
    /// Which revision is active is what the edges serve: an action of its
    /// own, whatever the description does.
    fn action(&self) -> Action {
        match self.change.is_active {
            Some(_) => Action::ActivateRevision,
            None => Action::ChangeProjects,
        }
    }
}

/// What an update does, decided on what is stored.
struct PlannedUpdate {
    /// The revision after the change, the version it changes from, and
    /// how the feed tells the change.
    settings: ProxySettings,
    version: i64,
    kind: ChangeKind,
    /// The active revision the update deactivates (another one, made
    /// inactive), with its version.
    deactivated: Option<(ProxySettings, i64)>,
    /// The project's active revision before the update.
    active: Option<ProxySettings>,
}

/// The revision (404 when unknown), `If-Match` against its version (412),
/// that the checks before activation were run when the update activates
/// it (by the caller, [`RevisionToActivate`]), and the active revision it
/// deactivates.
async fn plan_update(
    db: &mut dyn Db,
    UpdateProxySettings {
        request,
        project_id,
        revision,
        change,
    }: &UpdateProxySettings,
) -> Result<PlannedUpdate, StoreError> {
    let (mut settings, version) = stored_revision(db, project_id, *revision)
        .await?
        .ok_or_else(no_revision)?;
    write_steps::check_if_match(request, version)?;
    let activates = change.is_active == Some(true) && !settings.is_active;
    if activates && !change.checked_for_activation {
        // It was active when it was read for its checks, and another
        // write deactivated it since: its checks were not run.
        return Err(StoreError::Conflict(Conflict::DeactivatedWhileChecked {
            revision: *revision,
        }));
    }
    let active = active_revision(db, project_id).await?;
    let deactivated = match &active {
        Some((previous, previous_version)) if activates => {
            let previous = ProxySettings {
                is_active: false,
                ..previous.clone()
            };
            Some((previous, *previous_version))
        }
        _ => None,
    };
    let was_active = settings.is_active;
    if let Some(description) = &change.description {
        settings.description.clone_from(description);
    }
    if let Some(is_active) = change.is_active {
        settings.is_active = is_active;
    }
    Ok(PlannedUpdate {
        kind: ChangeKind::of_revision_activity(was_active, settings.is_active),
        settings,
        version,
        deactivated,
        active: active.map(|(active, _)| active),
    })
}

/// The project's active revision, with its version; none when no revision
/// is active.
pub(super) async fn active_revision(
    db: &mut dyn Db,
    project_id: &str,
) -> Result<Option<(ProxySettings, i64)>, StoreError> {
    read_revision(
        db,
        "SELECT body, version FROM proxy_settings WHERE project_id = ?1 AND is_active",
        &[Param::Text(project_id)],
    )
    .await
}

/// A revision as stored, with its version.
pub(super) async fn stored_revision(
    db: &mut dyn Db,
    project_id: &str,
    revision: u32,
) -> Result<Option<(ProxySettings, i64)>, StoreError> {
    read_revision(
        db,
        "SELECT body, version FROM proxy_settings WHERE project_id = ?1 AND revision = ?2",
        &[Param::Text(project_id), Param::Int(revision.into())],
    )
    .await
}

/// The revision `sql` reads (its body and version), if any.
async fn read_revision(
    db: &mut dyn Db,
    sql: &str,
    params: &[Param<'_>],
) -> Result<Option<(ProxySettings, i64)>, StoreError> {
    let found = query_opt(db, sql, params, |row| Ok((row.text(0)?, row.int(1)?))).await?;
    found
        .map(|(body, version)| {
            let settings = serde_json::from_str(&body).map_err(|e| {
                StoreError::Internal(format!("a revision is stored unreadable: {e}"))
            })?;
            Ok((settings, version))
        })
        .transpose()
}

/// Writes a changed revision over its `version` and records it as `kind`.
async fn save(
    db: &mut dyn Db,
    request: &WriteRequest,
    now: Timestamp,
    project_id: &str,
    settings: &ProxySettings,
    version: i64,
    kind: ChangeKind,
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
    let fed = Fed {
        kind,
        project_id,
        revision: Some(settings.revision),
        domain: None,
        rollout: None,
    };
    write_steps::record_update(db, request, now, changed, version, fed).await?;
    Ok(ObjectAnswer {
        body,
        version: version + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_keys_are_canonical_decimals() {
        assert_eq!(parse_revision("1"), Some(1));
        assert_eq!(parse_revision("4294967295"), Some(u32::MAX));
        for bad in ["", "0", "01", "-1", "+1", "1.0", "4294967296", " 1"] {
            assert_eq!(parse_revision(bad), None, "{bad}");
        }
    }
}
