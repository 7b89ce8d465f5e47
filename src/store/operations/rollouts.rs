//! Rollouts in the store (`docs/rollouts.md`): started by a person,
//! stepped by the service (each instance looks once a second,
//! `src/rollouts.rs`), controlled by a person, and read by edges for
//! their target. Every rule is `domain::rollout`'s; here they are kept,
//! and each step is one write under the organization's lock that reads
//! the rollout again and changes it only from the version it read: two
//! instances, or one restarted, never take a step twice.

use serde::Serialize;

use super::edges;
use super::proxy_settings;
use super::readable::{Deleted, readable_project};
use super::rollout_rows::{
    COLUMNS, live_rollout, number, out_of_range, read, refuse_while_live, refused, rollout,
};
use super::write_request::{Actor, ObjectAnswer, WriteRequest};
use super::write_steps::{self, Change, Fed, Target};
use crate::domain::access::Action;
use crate::domain::change::ChangeKind;
use crate::domain::edge::Edge;
use crate::domain::organization_set::OrganizationSet;
use crate::domain::proxy_settings::ProxySettings;
use crate::domain::rollout::{
    Control, ControlStep, EdgeTargetTag, PlacedEdge, Placement, Plan, Rollout, RolloutRefusal,
    RolloutState, Step,
};
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::{Conflict, StoreError};
use crate::store::sql::db::{Db, Param, query_all, query_opt, transaction};

/// createRollout: the revision and the plan, checked by
/// `RolloutInput::check`; `checked_for_activation` says the revision
/// passed the checks before activation (the handler runs them first).
#[derive(Clone, Debug)]
pub struct StartRollout {
    pub request: WriteRequest,
    pub project_id: String,
    pub revision: u32,
    pub plan: Plan,
    pub checked_for_activation: bool,
}

operation!(StartRollout => start, Write, "create_rollout" -> ObjectAnswer);

async fn start(db: &mut dyn Db, query: &StartRollout) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let project_id = query.project_id.as_str();
    transaction!(db, begin_write, {
        let target = Target::Project(project_id);
        let organization =
            write_steps::authorize(db, &query.request, Action::ActivateRevision, target, now)
                .await?
                .ok_or_else(no_project)?;
        write_steps::lock_organization(db, &organization).await?;
        refuse_while_live(db, project_id).await?;
        let revision = query.revision;
        let (settings, _) = proxy_settings::stored_revision(db, project_id, revision)
            .await?
            .ok_or_else(proxy_settings::no_revision)?;
        if settings.is_active {
            return Err(refused(RolloutRefusal::AlreadyActive { revision }));
        }
        if !query.checked_for_activation {
            // Active when it was read for its checks, deactivated since.
            return Err(StoreError::Conflict(Conflict::DeactivatedWhileChecked {
                revision,
            }));
        }
        let Some((active, _)) = proxy_settings::active_revision(db, project_id).await? else {
            return Err(refused(RolloutRefusal::NoActiveRevision { revision }));
        };
        let reports = edges::all_of(db, project_id, now).await?;
        let live = reports
            .iter()
            .filter(|report| !report.stale)
            .map(|report| PlacedEdge {
                name: report.name.clone(),
                canary: report.canary,
            })
            .collect();
        let number = query_opt(
            db,
            "SELECT COALESCE(MAX(number), 0) + 1 FROM rollouts WHERE project_id = ?1",
            &[Param::Text(project_id)],
            |row| row.int(0),
        )
        .await?
        .unwrap_or(1);
        let rollout = Rollout {
            project_id: project_id.to_owned(),
            number: u32::try_from(number).map_err(|_| out_of_range("number"))?,
            revision,
            previous_revision: active.revision,
            state: RolloutState::Running,
            stage: 0,
            placement: Placement::new(&query.plan, live),
            plan: query.plan.clone(),
            stage_started: vec![now],
            reason: None,
            failed_edges: Vec::new(),
            created_by: query.request.actor.user_id.clone(),
            created_at: now,
            updated_at: now,
            ended_at: None,
            version: 1,
        };
        insert(db, &rollout).await?;
        record(
            db,
            &query.request,
            now,
            &rollout,
            None,
            ChangeKind::RolloutCreated,
        )
        .await?;
        answer(&rollout, &reports, now)
    })
}

/// getRollout: one rollout, with each stage's edges and their health now.
#[derive(Clone, Debug)]
pub struct GetRollout {
    pub project_id: String,
    pub number: u32,
    pub visible_to: OrganizationSet,
}

operation!(GetRollout => get, Read, "get_rollout" -> ObjectAnswer);

async fn get(db: &mut dyn Db, query: &GetRollout) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_read, {
        let visible_to = Some(&query.visible_to);
        readable_project(db, visible_to, &query.project_id, Deleted::Excluded).await?;
        let rollout = read(db, &query.project_id, query.number)
            .await?
            .ok_or_else(no_rollout)?;
        let reports = edges::all_of(db, &query.project_id, now).await?;
        answer(&rollout, &reports, now)
    })
}

/// listRollouts: a page of the project's rollouts, newest first, after
/// `start_key` (a number), without their stages' edges; and whether more
/// follow.
#[derive(Clone, Debug)]
pub struct ListRollouts {
    pub project_id: String,
    pub visible_to: OrganizationSet,
    pub limit: u32,
    pub start_key: Option<u32>,
}

operation!(ListRollouts => list, Read, "list_rollouts" -> (Vec<serde_json::Value>, bool));

async fn list(
    db: &mut dyn Db,
    query: &ListRollouts,
) -> Result<(Vec<serde_json::Value>, bool), StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_read, {
        let visible_to = Some(&query.visible_to);
        readable_project(db, visible_to, &query.project_id, Deleted::Excluded).await?;
        let before = query.start_key.map_or(i64::MAX, i64::from);
        let sql = format!(
            "SELECT {COLUMNS} FROM rollouts WHERE project_id = ?1 AND number < ?2
              ORDER BY number DESC LIMIT ?3"
        );
        let params = [
            Param::Text(&query.project_id),
            Param::Int(before),
            Param::Int(i64::from(query.limit) + 1),
        ];
        let mut rollouts = query_all(db, &sql, &params, rollout).await?;
        let more = rollouts.len() > query.limit as usize;
        rollouts.truncate(query.limit as usize);
        let reports = edges::all_of(db, &query.project_id, now).await?;
        let items = rollouts
            .iter()
            .map(|rollout| rollout.view(&reports, now, false))
            .map(|view| serde_json::to_value(view).map_err(|e| StoreError::Internal(e.to_string())))
            .collect::<Result<_, _>>()?;
        Ok((items, more))
    })
}

/// pauseRollout, resumeRollout, promoteRollout, abortRollout: a person's
/// action on a live rollout, with `If-Match` against its version.
#[derive(Clone, Debug)]
pub struct ControlRollout {
    pub request: WriteRequest,
    pub project_id: String,
    pub number: u32,
    pub control: Control,
}

operation!(ControlRollout => control, Write, "control_rollout" -> ObjectAnswer);

async fn control(db: &mut dyn Db, query: &ControlRollout) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let project_id = query.project_id.as_str();
    transaction!(db, begin_write, {
        let target = Target::Project(project_id);
        let organization =
            write_steps::authorize(db, &query.request, Action::ActivateRevision, target, now)
                .await?
                .ok_or_else(no_project)?;
        write_steps::lock_organization(db, &organization).await?;
        let before = read(db, project_id, query.number)
            .await?
            .ok_or_else(no_rollout)?;
        write_steps::check_if_match(&query.request, before.version)?;
        let step = query.control.apply(&before).map_err(refused)?;
        let mut after = before.clone();
        match step {
            ControlStep::State(RolloutState::Aborted) => {
                after.reason = Some(format!(
                    "aborted by user {}: every edge back on revision {}",
                    query.request.actor.user_id, before.previous_revision
                ));
                end(&mut after, RolloutState::Aborted, now);
            }
            ControlStep::State(state) => after.state = state,
            ControlStep::Promote => {
                promote(db, &query.request, &mut after, now).await?;
            }
        }
        let reports = edges::all_of(db, project_id, now).await?;
        save(db, &query.request, now, &before, &mut after).await?;
        answer(&after, &reports, now)
    })
}

/// The rollouts not ended, of every project: what the service looks at.
#[derive(Clone, Debug)]
pub struct LiveRollouts;

operation!(LiveRollouts => live, Read, "live_rollouts" -> Vec<(String, u32)>);

async fn live(db: &mut dyn Db, _: &LiveRollouts) -> Result<Vec<(String, u32)>, StoreError> {
    query_all(
        db,
        "SELECT project_id, number FROM rollouts WHERE state IN ('running', 'paused')
          ORDER BY project_id, number LIMIT 10000",
        &[],
        |row| Ok((row.text(0)?, number(row, 1)?)),
    )
    .await
}

/// The service's look at one live rollout: the step its rules call for
/// now (a stage reached, a success, a rollback), taken, or nothing.
/// Answers the step taken.
#[derive(Clone, Debug)]
pub struct StepRollout {
    pub project_id: String,
    pub number: u32,
}

operation!(StepRollout => step, Write, "step_rollout" -> Option<RolloutStepTaken>);

/// A step the service took, for its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolloutStepTaken {
    pub state: RolloutState,
    /// The stage it stands at after, from 1.
    pub stage: usize,
    pub reason: Option<String>,
}

async fn step(
    db: &mut dyn Db,
    query: &StepRollout,
) -> Result<Option<RolloutStepTaken>, StoreError> {
    let now = Timestamp::now();
    let project_id = query.project_id.as_str();
    transaction!(db, begin_write, {
        let organization = query_opt(
            db,
            "SELECT organization_id FROM projects WHERE id = ?1 AND deleted_at IS NULL",
            &[Param::Text(project_id)],
            |row| row.text(0),
        )
        .await?;
        let Some(organization) = organization else {
            return Ok(None);
        };
        write_steps::lock_organization(db, &organization).await?;
        let Some(before) = read(db, project_id, query.number).await? else {
            return Ok(None);
        };
        let reports = edges::all_of(db, project_id, now).await?;
        let Some(step) = before.next_step(&reports, now) else {
            return Ok(None);
        };
        let request = service_request(match &step {
            Step::Advance => "advanceRollout",
            Step::Succeed => "completeRollout",
            Step::RollBack { .. } => "rollBackRollout",
        });
        let mut after = before.clone();
        match step {
            Step::Advance | Step::Succeed => promote(db, &request, &mut after, now).await?,
            Step::RollBack { reason, failed } => {
                after.reason = Some(reason);
                after.failed_edges = failed;
                end(&mut after, RolloutState::RolledBack, now);
            }
        }
        save(db, &request, now, &before, &mut after).await?;
        Ok(Some(RolloutStepTaken {
            state: after.state,
            stage: after.stage + 1,
            reason: after.reason,
        }))
    })
}

/// getEdgeTarget: the revision the edge named `name` must run now
/// (`docs/rollouts.md`, "What each edge runs").
#[derive(Clone, Debug)]
pub struct GetEdgeTarget {
    pub project_id: String,
    pub name: String,
    pub visible_to: OrganizationSet,
}

/// An edge's target, as getEdgeTarget answers it.
#[derive(Clone, Debug, Serialize)]
pub struct EdgeTarget {
    pub object: EdgeTargetTag,
    pub project_id: String,
    pub name: String,
    pub revision: Option<u32>,
    pub rollout: Option<u32>,
    /// The edge's stage in the rollout, from 1.
    pub stage: Option<usize>,
    pub proxy_settings: Option<ProxySettings>,
}

operation!(GetEdgeTarget => target, Read, "get_edge_target" -> EdgeTarget);

async fn target(db: &mut dyn Db, query: &GetEdgeTarget) -> Result<EdgeTarget, StoreError> {
    let now = Timestamp::now();
    let project_id = query.project_id.as_str();
    transaction!(db, begin_read, {
        let visible_to = Some(&query.visible_to);
        readable_project(db, visible_to, project_id, Deleted::Excluded).await?;
        let live = live_rollout(db, project_id).await?;
        let (settings, rollout, stage) = match live {
            Some(rollout) => {
                let reports = edges::all_of(db, project_id, now).await?;
                let canary = reports
                    .iter()
                    .any(|report| report.name == query.name && report.canary);
                let (revision, stage) = rollout.target_of(&query.name, canary);
                let settings = proxy_settings::stored_revision(db, project_id, revision)
                    .await?
                    .map(|(settings, _)| settings);
                (settings, Some(rollout.number), Some(stage + 1))
            }
            None => {
                let active = proxy_settings::active_revision(db, project_id).await?;
                (active.map(|(settings, _)| settings), None, None)
            }
        };
        Ok(EdgeTarget {
            object: EdgeTargetTag::Tag,
            project_id: project_id.to_owned(),
            name: query.name.clone(),
            revision: settings.as_ref().map(|settings| settings.revision),
            rollout,
            stage,
            proxy_settings: settings,
        })
    })
}

/// The next stage begins now; after the last, the revision becomes the
/// active one and the rollout has succeeded.
async fn promote(
    db: &mut dyn Db,
    request: &WriteRequest,
    rollout: &mut Rollout,
    now: Timestamp,
) -> Result<(), StoreError> {
    if rollout.stage + 1 < rollout.plan.stages.len() {
        rollout.stage += 1;
        rollout.stage_started.push(now);
        return Ok(());
    }
    end(rollout, RolloutState::Succeeded, now);
    proxy_settings::activate(db, request, now, &rollout.project_id, rollout.revision).await
}

fn end(rollout: &mut Rollout, state: RolloutState, now: Timestamp) {
    rollout.state = state;
    rollout.ended_at = Some(now);
}

/// Writes `after` over `before` (only from the version read: else 412, as
/// for any versioned object), and records the step.
async fn save(
    db: &mut dyn Db,
    request: &WriteRequest,
    now: Timestamp,
    before: &Rollout,
    after: &mut Rollout,
) -> Result<(), StoreError> {
    after.updated_at = now;
    after.version = before.version + 1;
    let changed = db
        .execute(
            "UPDATE rollouts SET state = ?3, stage = ?4, stage_started = ?5, reason = ?6,
                    failed_edges = ?7, updated_at = ?8, ended_at = ?9, version = ?10
              WHERE project_id = ?1 AND number = ?2 AND version = ?11",
            &[
                Param::Text(&after.project_id),
                Param::Int(after.number.into()),
                Param::Text(after.state.as_str()),
                Param::Int(after.stage as i64),
                Param::Text(&json(&millis(&after.stage_started))?),
                Param::OptText(after.reason.as_deref()),
                Param::Text(&json(&after.failed_edges)?),
                Param::Int(now.as_millis()),
                Param::OptInt(after.ended_at.map(Timestamp::as_millis)),
                Param::Int(after.version),
                Param::Int(before.version),
            ],
        )
        .await?;
    if changed == 0 {
        return Err(StoreError::VersionMismatch);
    }
    record(
        db,
        request,
        now,
        after,
        Some(before.version),
        ChangeKind::RolloutUpdated,
    )
    .await
}

async fn insert(db: &mut dyn Db, rollout: &Rollout) -> Result<(), StoreError> {
    db.execute(
        &format!(
            "INSERT INTO rollouts ({COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
        ),
        &[
            Param::Text(&rollout.project_id),
            Param::Int(rollout.number.into()),
            Param::Int(rollout.revision.into()),
            Param::Int(rollout.previous_revision.into()),
            Param::Text(rollout.state.as_str()),
            Param::Int(rollout.stage as i64),
            Param::Text(&json(&rollout.plan)?),
            Param::Text(&json(&rollout.placement)?),
            Param::Text(&json(&millis(&rollout.stage_started))?),
            Param::OptText(rollout.reason.as_deref()),
            Param::Text(&json(&rollout.failed_edges)?),
            Param::Text(&rollout.created_by),
            Param::Int(rollout.created_at.as_millis()),
            Param::Int(rollout.updated_at.as_millis()),
            Param::OptInt(rollout.ended_at.map(Timestamp::as_millis)),
            Param::Int(rollout.version),
        ],
    )
    .await?;
    Ok(())
}

/// The audit record and the feed's change of a rollout's write.
async fn record(
    db: &mut dyn Db,
    request: &WriteRequest,
    now: Timestamp,
    rollout: &Rollout,
    version_before: Option<i64>,
    kind: ChangeKind,
) -> Result<(), StoreError> {
    let fed = Fed {
        rollout: Some(rollout.number),
        ..Fed::of(kind, &rollout.project_id, Some(rollout.revision))
    };
    let (object, object_id) = fed.audited_object();
    let change = Change {
        object,
        object_id: &object_id,
        version_before,
        version_after: Some(rollout.version),
        feed: Some(fed),
    };
    write_steps::record(db, request, now, change).await
}

/// The steps the service takes itself are audited under no user: the
/// operation names the step.
fn service_request(operation: &'static str) -> WriteRequest {
    WriteRequest {
        actor: Actor {
            user_id: String::new(),
            token_id: String::new(),
            request_id: String::new(),
        },
        operation,
        if_match: None,
        idempotency: None,
    }
}

fn answer(rollout: &Rollout, reports: &[Edge], now: Timestamp) -> Result<ObjectAnswer, StoreError> {
    let body = json(&rollout.view(reports, now, true))?;
    Ok(ObjectAnswer {
        body,
        version: rollout.version,
    })
}

fn millis(times: &[Timestamp]) -> Vec<i64> {
    times.iter().map(|time| time.as_millis()).collect()
}

fn json(value: &impl Serialize) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Internal(format!("a rollout's JSON: {e}")))
}

fn no_project() -> StoreError {
    StoreError::NotFound {
        kind: "project",
        id: String::new(),
    }
}

fn no_rollout() -> StoreError {
    StoreError::NotFound {
        kind: "rollout",
        id: String::new(),
    }
}
