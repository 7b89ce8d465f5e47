//! The change feed in the store (`docs/feed.md`): each write records its
//! changes here, in its own transaction ([`record`]); followers read them
//! by position ([`ReadChanges`]); old ones are let go ([`PruneChanges`]).
//!
//! Positions come from `feed_state.head`, moved by an UPDATE of its one
//! row in the write's transaction. On PostgreSQL that row's lock is held
//! to the commit, so positions are taken in commit order: a reader that
//! sees a position sees every position before it, and "the changes after
//! my cursor" never skips one that commits late. (Only this last step of
//! a write waits on the others; what comes before it, under the
//! organization's lock, runs side by side.) SQLite's writes are one at a
//! time already.

use super::readable::{Deleted, readable_project};
pub(crate) use super::write_steps::Fed;
use crate::domain::change::{Change, ChangeKind, ChangeTag, Cursor};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::sql::db::{Db, Param, Row, query_all, query_opt, transaction};

/// Takes the next position, holding `feed_state`'s row to the commit.
const TAKE_POSITIONS: &str = "UPDATE feed_state SET head = head + ?1 WHERE id = 1 RETURNING head";

/// Records that the write in progress did `kind` to project `project_id`
/// (and its `revision`), leaving the object at `version`. Run as the
/// write's last statements but its answer's: it holds every other
/// write's last step until this one commits.
pub(crate) async fn record(
    db: &mut dyn Db,
    fed: Fed<'_>,
    version: i64,
    at: Timestamp,
) -> Result<(), StoreError> {
    let position = query_opt(db, TAKE_POSITIONS, &[Param::Int(1)], |row| row.int(0))
        .await?
        .ok_or_else(missing_state)?;
    db.execute(
        "INSERT INTO changes (seq, at, kind, organization_id, organization_number, project_id,
                              revision, version, domain, rollout)
         SELECT ?1, ?2, ?3, organization_id, organization_number, id, ?4, ?5, ?7, ?8
           FROM projects WHERE id = ?6",
        &[
            Param::Int(position),
            Param::Int(at.as_millis()),
            Param::Text(fed.kind.as_str()),
            Param::OptInt(fed.revision.map(i64::from)),
            Param::Int(version),
            Param::Text(fed.project_id),
            Param::OptText(fed.domain),
            Param::OptInt(fed.rollout.map(i64::from)),
        ],
    )
    .await?;
    Ok(())
}

/// Records `count` changes staged in the table `staged` (columns `n`,
/// numbered 1 to `count`, `kind`, `project_id`, `revision`, `domain`,
/// `version`) at
/// once, in `n` order: a long write (an import) stages its changes as it
/// goes and takes positions only at its end, so that it holds the other
/// writes' last step for one statement, not for its whole length.
pub(crate) async fn record_staged(
    db: &mut dyn Db,
    staged: &str,
    count: i64,
    at: Timestamp,
) -> Result<(), StoreError> {
    if count == 0 {
        return Ok(());
    }
    let head = query_opt(db, TAKE_POSITIONS, &[Param::Int(count)], |row| row.int(0))
        .await?
        .ok_or_else(missing_state)?;
    let sql = format!(
        "INSERT INTO changes (seq, at, kind, organization_id, organization_number, project_id,
                              revision, version, domain)
         SELECT ?1 + c.n, ?2, c.kind, p.organization_id, p.organization_number, p.id,
                c.revision, c.version, c.domain
           FROM {staged} c JOIN projects p ON p.id = c.project_id"
    );
    db.execute(
        &sql,
        &[Param::Int(head - count), Param::Int(at.as_millis())],
    )
    .await?;
    Ok(())
}

fn missing_state() -> StoreError {
    StoreError::Internal("the feed's state row is missing".into())
}

/// Which changes a read is for.
#[derive(Clone, Debug, Default)]
pub struct ChangeScope {
    /// The organizations whose changes may be read; `None`: all of them
    /// (the service's own tail of the feed, never a caller's).
    pub visible_to: Option<OrganizationSet>,
    /// Only this organization's (by number; one of `visible_to`).
    pub organization: Option<i64>,
    /// Only this project's.
    pub project_id: Option<String>,
}

impl ChangeScope {
    /// Whether a change is in the scope.
    pub fn admits(&self, change: &Change) -> bool {
        let number = change.organization_number;
        self.visible_to
            .as_ref()
            .is_none_or(|set| set.contains_number(number))
            && self.organization.is_none_or(|n| n == number)
            && self
                .project_id
                .as_deref()
                .is_none_or(|id| id == change.project_id)
    }
}

/// The changes after `after` in `scope`, at most `limit` of them, reading
/// at most [`SCAN_LIMIT`] rows: a read costs its page, however few of the
/// changes the scope admits. `after: None` reads none and answers the
/// feed's head (where a new follower starts).
#[derive(Clone, Debug)]
pub struct ReadChanges {
    pub after: Option<Cursor>,
    pub scope: ChangeScope,
    pub limit: usize,
}

/// Rows one read looks at, at most.
pub const SCAN_LIMIT: usize = 1000;

#[derive(Clone, Debug)]
pub struct ChangesRead {
    pub changes: Vec<Change>,
    /// Every change in scope up to here was answered: the next read's
    /// `after`. Past the last change answered when the rows after it were
    /// out of scope.
    pub through: Cursor,
    /// The cursor read after was before the changes kept (or past the
    /// head: a store replaced under the client): no change was answered,
    /// and `through` is the head. The client lists again.
    pub reset: bool,
    /// Changes in the store past `through`: read again at once.
    pub more: bool,
}

operation!(ReadChanges => read, FreshRead, "list_changes" -> ChangesRead);

async fn read(db: &mut dyn Db, query: &ReadChanges) -> Result<ChangesRead, StoreError> {
    transaction!(db, begin_read, {
        // A project's changes may be read by those who may read the
        // project, deleted or not (its deletion is one of them).
        if let Some(project_id) = &query.scope.project_id {
            let visible_to = query.scope.visible_to.as_ref();
            readable_project(db, visible_to, project_id, Deleted::Included).await?;
        }
        let (head, pruned_through) = query_opt(
            db,
            "SELECT head, pruned_through FROM feed_state WHERE id = 1",
            &[],
            |row| Ok((row.int(0)?, row.int(1)?)),
        )
        .await?
        .ok_or_else(missing_state)?;
        let caught_up = |reset| ChangesRead {
            changes: Vec::new(),
            through: Cursor(head),
            reset,
            more: false,
        };
        let after = match query.after {
            None => return Ok(caught_up(false)),
            Some(Cursor(after)) if after < pruned_through || after > head => {
                return Ok(caught_up(true));
            }
            Some(Cursor(after)) => after,
        };
        if after == head {
            return Ok(caught_up(false));
        }
        let scope = &query.scope;
        let (narrowing, narrowed_by) = match (&scope.project_id, scope.organization) {
            (Some(id), _) => (" AND project_id = ?4", Some(Param::Text(id))),
            (None, Some(number)) => (" AND organization_number = ?4", Some(Param::Int(number))),
            (None, None) => ("", None),
        };
        // Narrowed reads find their rows by index: what they look at is
        // theirs, up to the page. A caller's whole feed looks at the feed's
        // rows in order and keeps those it may see.
        let scan = match narrowed_by {
            Some(_) => query.limit,
            None => SCAN_LIMIT.max(query.limit),
        };
        let sql = format!(
            "SELECT seq, at, kind, organization_id, organization_number, project_id, revision,
                    version, domain, rollout
               FROM changes WHERE seq > ?1 AND seq <= ?2{narrowing} ORDER BY seq LIMIT ?3"
        );
        let mut params = vec![Param::Int(after), Param::Int(head), Param::Int(scan as i64)];
        params.extend(narrowed_by);
        let rows = query_all(db, &sql, &params, change).await?;
        // Every row up to the last one looked at was weighed; when fewer
        // than asked came, every row up to the head was.
        let mut through = match rows.last() {
            Some(last) if rows.len() == scan => last.cursor.0,
            _ => head,
        };
        let mut changes = Vec::new();
        for change in rows {
            if scope.admits(&change) {
                let position = change.cursor.0;
                changes.push(change);
                if changes.len() == query.limit {
                    through = position;
                    break;
                }
            }
        }
        Ok(ChangesRead {
            changes,
            through: Cursor(through),
            reset: false,
            more: through < head,
        })
    })
}

fn change(row: &dyn Row) -> Result<Change, StoreError> {
    let kind = row.str(2)?;
    let kind = ChangeKind::parse(kind)
        .ok_or_else(|| StoreError::Internal(format!("a change of unknown kind {kind:?}")))?;
    let number = |column: usize| {
        row.opt_int(column)?
            .map(|r| {
                u32::try_from(r)
                    .map_err(|_| StoreError::Internal(format!("stored number {r} is out of range")))
            })
            .transpose()
    };
    let revision = number(6)?;
    Ok(Change {
        object: ChangeTag::Tag,
        cursor: Cursor(row.int(0)?),
        kind,
        at: Timestamp::from_millis(row.int(1)?).unwrap_or_else(Timestamp::now),
        organization_id: row.text(3)?,
        organization_number: row.int(4)?,
        project_id: row.text(5)?,
        revision,
        version: row.int(7)?,
        domain: (!row.is_null(8)?).then(|| row.text(8)).transpose()?,
        rollout: number(9)?,
    })
}

/// Lets go of the changes recorded before `before`, the oldest first and
/// at most `at_most` of them; stops at the first one that is not old
/// enough, so that what is kept is always every change after
/// `pruned_through`. Answers how many went.
#[derive(Clone, Debug)]
pub struct PruneChanges {
    pub before: Timestamp,
    pub at_most: i64,
}

operation!(PruneChanges => prune, OperatorWrite, "prune_changes" -> u64);

async fn prune(db: &mut dyn Db, query: &PruneChanges) -> Result<u64, StoreError> {
    transaction!(db, begin_write, {
        let oldest = query_all(
            db,
            "SELECT seq, at FROM changes ORDER BY seq LIMIT ?1",
            &[Param::Int(query.at_most)],
            |row| Ok((row.int(0)?, row.int(1)?)),
        )
        .await?;
        let Some(last) = oldest
            .iter()
            .take_while(|(_, at)| *at < query.before.as_millis())
            .map(|(seq, _)| *seq)
            .last()
        else {
            return Ok(0);
        };
        let gone = db
            .execute("DELETE FROM changes WHERE seq <= ?1", &[Param::Int(last)])
            .await?;
        db.execute(
            "UPDATE feed_state SET pruned_through = ?1 WHERE id = 1 AND pruned_through < ?1",
            &[Param::Int(last)],
        )
        .await?;
        Ok(gone)
    })
}
