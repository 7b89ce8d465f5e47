//! How a rollout is kept (`docs/rollouts.md`): its row and how it is
//! read, the live one of a project, and the rule every change of which
//! revision is active follows while one is live. Below both the rollouts'
//! operations and the activation (`proxy_settings.rs`), which each need
//! them, so that neither imports the other for it.

use crate::domain::rollout::{Rollout, RolloutRefusal, RolloutState};
use crate::domain::time::Timestamp;
use crate::store::error::{Conflict, StoreError};
use crate::store::sql::db::{Db, Param, Row, query_opt};

/// What a rollout row holds, in [`rollout`]'s order.
pub(super) const COLUMNS: &str =
    "project_id, number, revision, previous_revision, state, stage, plan, edges,
    stage_started, reason, failed_edges, created_by, created_at, updated_at, ended_at, version";

/// 409 while the project has a live rollout: what changes which revision
/// is active waits for it to end (`docs/rollouts.md`, "One rollout at a
/// time").
pub(super) async fn refuse_while_live(db: &mut dyn Db, project_id: &str) -> Result<(), StoreError> {
    match live_rollout(db, project_id).await? {
        Some(rollout) => Err(refused(RolloutRefusal::InProgress {
            number: rollout.number,
            revision: rollout.revision,
        })),
        None => Ok(()),
    }
}

/// Removes a project's rollouts, in the transaction that deletes it.
pub(crate) async fn remove_all(db: &mut dyn Db, project_id: &str) -> Result<(), StoreError> {
    db.execute(
        "DELETE FROM rollouts WHERE project_id = ?1",
        &[Param::Text(project_id)],
    )
    .await?;
    Ok(())
}

pub(super) async fn live_rollout(
    db: &mut dyn Db,
    project_id: &str,
) -> Result<Option<Rollout>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM rollouts WHERE project_id = ?1 AND state IN ('running', 'paused')"
    );
    query_opt(db, &sql, &[Param::Text(project_id)], rollout).await
}

pub(super) async fn read(
    db: &mut dyn Db,
    project_id: &str,
    number: u32,
) -> Result<Option<Rollout>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM rollouts WHERE project_id = ?1 AND number = ?2");
    let params = [Param::Text(project_id), Param::Int(number.into())];
    query_opt(db, &sql, &params, rollout).await
}

pub(super) fn rollout(row: &dyn Row) -> Result<Rollout, StoreError> {
    let parsed = |column: usize| -> Result<String, StoreError> { row.text(column) };
    let time = |millis: i64| Timestamp::from_millis(millis).ok_or_else(|| out_of_range("time"));
    let stage_started: Vec<i64> = from_json(&parsed(8)?)?;
    Ok(Rollout {
        project_id: row.text(0)?,
        number: number(row, 1)?,
        revision: number(row, 2)?,
        previous_revision: number(row, 3)?,
        state: RolloutState::parse(row.str(4)?).ok_or_else(|| out_of_range("state"))?,
        stage: usize::try_from(row.int(5)?).map_err(|_| out_of_range("stage"))?,
        plan: from_json(&parsed(6)?)?,
        placement: from_json(&parsed(7)?)?,
        stage_started: stage_started
            .into_iter()
            .map(time)
            .collect::<Result<_, _>>()?,
        reason: (!row.is_null(9)?).then(|| row.text(9)).transpose()?,
        failed_edges: from_json(&parsed(10)?)?,
        created_by: row.text(11)?,
        created_at: time(row.int(12)?)?,
        updated_at: time(row.int(13)?)?,
        ended_at: row.opt_int(14)?.map(time).transpose()?,
        version: row.int(15)?,
    })
}

pub(super) fn number(row: &dyn Row, column: usize) -> Result<u32, StoreError> {
    u32::try_from(row.int(column)?).map_err(|_| out_of_range("number"))
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Internal(format!("a rollout is stored unreadable: {e}")))
}

pub(super) fn out_of_range(what: &str) -> StoreError {
    StoreError::Internal(format!("a rollout's {what} is stored out of range"))
}

pub(super) fn refused(refusal: RolloutRefusal) -> StoreError {
    StoreError::Conflict(Conflict::Rollout(refusal))
}
