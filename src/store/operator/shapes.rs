//! Stored bodies follow the domain types (docs/choices.md, "Adding a
//! member to the project object").
//!
//! A project is stored as the JSON its listing shows. When `Project` gains
//! or changes a member, [`PROJECT_SHAPE`] goes up by one; when a store
//! opens and finds its bodies of an older shape (`stored_shapes`), it reads
//! each through `Project` (whose serde defaults fill what older bodies
//! lack) and writes it back, a batch per transaction, then records the new
//! shape. No SQL is written per field or per backend. A body that changes
//! gets a new version (its `ETag`), since its JSON did change; the caches of
//! the read path see the rewrite as any write.

use crate::domain::project::Project;
use crate::store::error::StoreError;
use crate::store::operation::operation;
use crate::store::sql::db::{Db, Param, query_all, query_opt, to_json, transaction};

/// The shape of the project bodies this code writes. Raise it with every
/// change of `Project`'s members.
pub const PROJECT_SHAPE: i64 = 1;

/// Projects rewritten per transaction: a bounded lock, whatever the store.
const BATCH: i64 = 500;

/// Rewrites the project bodies of an older shape; answers how many
/// changed. Safe to run again after a crash half-way, and by several
/// instances at once: a body already of the new shape is left as it is.
#[derive(Clone, Copy, Debug)]
pub struct UpgradeStoredBodies;

operation!(UpgradeStoredBodies => upgrade, OperatorWrite, "upgrade_stored_bodies" -> u64);

async fn upgrade(db: &mut dyn Db, _: &UpgradeStoredBodies) -> Result<u64, StoreError> {
    let stored = query_opt(
        db,
        "SELECT version FROM stored_shapes WHERE kind = 'project'",
        &[],
        |row| row.int(0),
    )
    .await?
    .unwrap_or(0);
    if stored >= PROJECT_SHAPE {
        return Ok(0);
    }
    let mut changed = 0;
    let mut after = String::new();
    loop {
        let (last, rewritten) = transaction!(db, begin_write, {
            let rows = query_all(
                db,
                &format!("SELECT id, body FROM projects WHERE id > ?1 ORDER BY id LIMIT {BATCH}"),
                &[Param::Text(&after)],
                |row| Ok((row.text(0)?, row.text(1)?)),
            )
            .await?;
            let mut rewritten = 0;
            for (id, body) in &rows {
                let project: Project = serde_json::from_str(body).map_err(|e| {
                    StoreError::Internal(format!("project {id} is stored unreadable: {e}"))
                })?;
                let upgraded = to_json(&project)?;
                if &upgraded != body {
                    db.execute(
                        "UPDATE projects SET body = ?2, version = version + 1 WHERE id = ?1",
                        &[Param::Text(id), Param::Text(&upgraded)],
                    )
                    .await?;
                    rewritten += 1;
                }
            }
            Ok((rows.last().map(|(id, _)| id.clone()), rewritten))
        })?;
        changed += rewritten;
        match last {
            Some(id) => after = id,
            None => break,
        }
    }
    transaction!(db, begin_write, {
        db.execute(
            "UPDATE stored_shapes SET version = ?1 WHERE kind = 'project' AND version < ?1",
            &[Param::Int(PROJECT_SHAPE)],
        )
        .await
    })?;
    Ok(changed)
}
