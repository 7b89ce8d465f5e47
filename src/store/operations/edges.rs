//! What edges report of a project (`docs/feed.md`, "Who runs which
//! revision"): each edge's last report, kept by project and edge name.
//! Reporting needs only the right to read the project: an edge follows
//! the project with a token that reads it. Removing a report needs the
//! right to change the project. A project keeps a bounded number of
//! reports: a new name past the bound replaces the oldest stale report,
//! or is refused when none is stale.

use super::by_name::{NamePage, NamePageSql};
use super::readable::{Deleted, readable_project};
use super::write_request::WriteRequest;
use super::write_steps::{self, Change, Target};
use crate::domain::FieldError;
use crate::domain::access::Action;
use crate::domain::edge::{Edge, EdgeReport, EdgeStatus, EdgeTag, STALE_AFTER_SECONDS};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::{Conflict, StoreError};
use crate::store::sql::db::{Db, Param, Row, exists, query_all, query_opt, transaction};

/// An edge's report on a project.
#[derive(Clone, Debug)]
pub struct ReportEdge {
    /// Whose token reports: checked as stored now, in the report's own
    /// transaction, as every write's is.
    pub request: WriteRequest,
    pub project_id: String,
    pub report: EdgeReport,
    /// Reports the project keeps at most (`--edge-reports-per-project`).
    pub most: u32,
}

operation!(ReportEdge => report, Write, "report_edge" -> Edge);

async fn report(db: &mut dyn Db, query: &ReportEdge) -> Result<Edge, StoreError> {
    let now = Timestamp::now();
    let report = &query.report;
    let project = Param::Text(&query.project_id);
    let name = Param::Text(&report.name);
    transaction!(db, begin_write, {
        // A token revoked a moment ago reports nothing, whatever the
        // token cache holds; an unknown project and one the caller may not
        // read cost the same one statement.
        let target = Target::Project(&query.project_id);
        let organization =
            write_steps::authorize(db, &query.request, Action::ReadProjects, target, now)
                .await?
                .ok_or_else(|| no_such("project"))?;
        let revision = Param::Int(report.revision.into());
        let sql = "SELECT 1 FROM proxy_settings WHERE project_id = ?1 AND revision = ?2";
        if !exists(db, sql, &[project, revision]).await? {
            return Err(StoreError::Invalid(FieldError::new(
                "revision",
                "must be a revision of the project",
            )));
        }
        let sql = "SELECT 1 FROM edge_reports WHERE project_id = ?1 AND name = ?2";
        if !exists(db, sql, &[project, name]).await? {
            make_room(db, query, &organization, now).await?;
        }
        db.execute(
            "INSERT INTO edge_reports (project_id, name, revision, status, error, reported_at,
                                       health, canary)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (project_id, name) DO UPDATE
             SET revision = excluded.revision, status = excluded.status,
                 error = excluded.error, reported_at = excluded.reported_at,
                 health = excluded.health, canary = excluded.canary",
            &[
                project,
                name,
                Param::Int(report.revision.into()),
                Param::Text(report.status.as_str()),
                Param::Text(report.error.as_deref().unwrap_or_default()),
                Param::Int(now.as_millis()),
                Param::Text(health_column(report.healthy)),
                Param::Bool(report.canary),
            ],
        )
        .await?;
        Ok(Edge {
            object: EdgeTag::Tag,
            name: report.name.clone(),
            revision: report.revision,
            status: report.status,
            error: report.error.clone(),
            healthy: report.healthy,
            canary: report.canary,
            reported_at: now,
            stale: false,
        })
    })
}

/// Room for one more report on the project: when it keeps its most, the
/// oldest stale reports go (what no edge reports any more); with none
/// stale, the new name is refused (409), and the live edges stay in view.
/// Counted under the organization's lock: new names reported at once
/// cannot pass the bound together. Only a new name pays for it.
async fn make_room(
    db: &mut dyn Db,
    query: &ReportEdge,
    organization: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    write_steps::lock_organization(db, organization).await?;
    let project = Param::Text(&query.project_id);
    let sql = "SELECT COUNT(*) FROM edge_reports WHERE project_id = ?1";
    let kept = query_opt(db, sql, &[project], |row| row.int(0))
        .await?
        .unwrap_or(0);
    let over = kept - i64::from(query.most) + 1;
    if over <= 0 {
        return Ok(());
    }
    let stale_before = now.as_millis() - STALE_AFTER_SECONDS * 1000;
    let gone = db
        .execute(
            "DELETE FROM edge_reports WHERE project_id = ?1 AND name IN
               (SELECT name FROM edge_reports WHERE project_id = ?1 AND reported_at < ?2
                 ORDER BY reported_at, name LIMIT ?3)",
            &[project, Param::Int(stale_before), Param::Int(over)],
        )
        .await?;
    if (gone as i64) < over {
        return Err(StoreError::Conflict(Conflict::EdgeReportsFull {
            most: query.most,
        }));
    }
    Ok(())
}

/// Removes an edge's report (deleteEdge), for a caller who may change the
/// project: 404 for an unknown or invisible project, 403 for a role that
/// may not change it, 404 for a name with no report. Audited.
#[derive(Clone, Debug)]
pub struct DeleteEdge {
    pub request: WriteRequest,
    pub project_id: String,
    pub name: String,
}

operation!(DeleteEdge => delete, Write, "delete_edge" -> ());

async fn delete(db: &mut dyn Db, query: &DeleteEdge) -> Result<(), StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        let target = Target::Project(&query.project_id);
        write_steps::authorize(db, &query.request, Action::ChangeProjects, target, now)
            .await?
            .ok_or_else(|| no_such("project"))?;
        let gone = db
            .execute(
                "DELETE FROM edge_reports WHERE project_id = ?1 AND name = ?2",
                &[Param::Text(&query.project_id), Param::Text(&query.name)],
            )
            .await?;
        if gone == 0 {
            return Err(no_such("edge"));
        }
        let object_id = format!("{}/{}", query.project_id, query.name);
        let change = Change {
            object: "edge",
            object_id: &object_id,
            version_before: None,
            version_after: None,
            feed: None,
        };
        write_steps::record(db, &query.request, now, change).await
    })
}

fn no_such(kind: &'static str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: String::new(),
    }
}

/// Removes a project's reports, in the transaction that deletes it: they
/// go with their project.
pub(crate) async fn remove_all(db: &mut dyn Db, project_id: &str) -> Result<(), StoreError> {
    db.execute(
        "DELETE FROM edge_reports WHERE project_id = ?1",
        &[Param::Text(project_id)],
    )
    .await?;
    Ok(())
}

/// A page of a project's edges, by name: at most `limit` after
/// `start_key` (an edge's name), and whether more follow.
#[derive(Clone, Debug)]
pub struct ListEdges {
    pub project_id: String,
    pub visible_to: OrganizationSet,
    pub limit: u32,
    pub start_key: Option<String>,
    pub order: EdgeOrder,
}

/// How a page of edges is ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeOrder {
    /// By name (pages by `start_key`).
    Name,
    /// Those that need attention first, as they stand now: failed, then
    /// stale, then the rest, each by name; one page. What a reader is
    /// shown whatever names the edges chose.
    Attention,
}

operation!(ListEdges => list, Read, "list_edges" -> (Vec<Edge>, bool));

async fn list(db: &mut dyn Db, query: &ListEdges) -> Result<(Vec<Edge>, bool), StoreError> {
    let now = Timestamp::now();
    let page = NamePage {
        project_id: &query.project_id,
        start_key: query.start_key.as_deref(),
        limit: query.limit,
    };
    let edges = transaction!(db, begin_read, {
        let visible_to = Some(&query.visible_to);
        readable_project(db, visible_to, &query.project_id, Deleted::Excluded).await?;
        let NamePageSql {
            after,
            mut params,
            limit_at,
        } = page.sql();
        let stale_before = now.as_millis() - STALE_AFTER_SECONDS * 1000;
        let order = match query.order {
            EdgeOrder::Name => "name".to_owned(),
            EdgeOrder::Attention => {
                params.push(Param::Int(stale_before));
                // As `Edge::is_stale` says it: stale past the bound.
                format!(
                    "CASE WHEN reported_at < ?{} THEN 1 WHEN status = 'failed' THEN 0 ELSE 2 END,
                     name",
                    params.len()
                )
            }
        };
        let sql = format!(
            "SELECT {EDGE_COLUMNS} FROM edge_reports
              WHERE project_id = ?1{after} ORDER BY {order} LIMIT ?{limit_at}"
        );
        query_all(db, &sql, &params, |row| edge(row, now)).await
    })?;
    Ok(page.finish(edges))
}

/// What [`edge`] reads of a report, in its order.
pub(crate) const EDGE_COLUMNS: &str = "name, revision, status, error, reported_at, health, canary";

/// A report as [`EDGE_COLUMNS`] reads it, stale or not at `now`.
pub(crate) fn edge(row: &dyn Row, now: Timestamp) -> Result<Edge, StoreError> {
    let stored =
        |what: &str| StoreError::Internal(format!("an edge report's {what} is unreadable"));
    let reported_at = Timestamp::from_millis(row.int(4)?).ok_or_else(|| stored("time"))?;
    let healthy = match row.str(5)? {
        "" => None,
        "healthy" => Some(true),
        "unhealthy" => Some(false),
        _ => return Err(stored("health")),
    };
    Ok(Edge {
        object: EdgeTag::Tag,
        name: row.text(0)?,
        revision: u32::try_from(row.int(1)?).map_err(|_| stored("revision"))?,
        status: EdgeStatus::parse(row.str(2)?).ok_or_else(|| stored("status"))?,
        error: Some(row.text(3)?).filter(|error| !error.is_empty()),
        healthy,
        canary: row.boolean(6)?,
        reported_at,
        stale: Edge::is_stale(reported_at, now),
    })
}

/// How a report's health check is stored: `''` for none.
fn health_column(healthy: Option<bool>) -> &'static str {
    match healthy {
        None => "",
        Some(true) => "healthy",
        Some(false) => "unhealthy",
    }
}

/// Every report of the project, as they stand at `now` (at most
/// `--edge-reports-per-project`): what a rollout judges its edges by.
pub(crate) async fn all_of(
    db: &mut dyn Db,
    project_id: &str,
    now: Timestamp,
) -> Result<Vec<Edge>, StoreError> {
    let sql =
        format!("SELECT {EDGE_COLUMNS} FROM edge_reports WHERE project_id = ?1 ORDER BY name");
    query_all(db, &sql, &[Param::Text(project_id)], |row| edge(row, now)).await
}
