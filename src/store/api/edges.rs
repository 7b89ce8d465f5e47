//! What edges report of a project (`docs/feed.md`, "Who runs which
//! revision"): each edge's last report, kept by project and edge name.
//! Reporting needs only the right to read the project: an edge follows
//! the project with a token that reads it.

use super::readable::{Deleted, readable_project};
use crate::domain::edge::{Edge, EdgeReport, EdgeStatus, EdgeTag};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;
use crate::store::operation::operation;
use crate::store::sql::db::{Db, Param, Row, query_all, transaction};

/// An edge's report on a project.
#[derive(Clone, Debug)]
pub struct ReportEdge {
    pub project_id: String,
    pub visible_to: OrganizationSet,
    pub report: EdgeReport,
}

operation!(ReportEdge => report, Write, "report_edge" -> Edge);

async fn report(db: &mut dyn Db, query: &ReportEdge) -> Result<Edge, StoreError> {
    let now = Timestamp::now();
    let report = &query.report;
    transaction!(db, begin_write, {
        let visible_to = Some(&query.visible_to);
        readable_project(db, visible_to, &query.project_id, Deleted::Excluded).await?;
        db.execute(
            "INSERT INTO edge_reports (project_id, name, revision, status, error, reported_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (project_id, name) DO UPDATE
             SET revision = excluded.revision, status = excluded.status,
                 error = excluded.error, reported_at = excluded.reported_at",
            &[
                Param::Text(&query.project_id),
                Param::Text(&report.name),
                Param::Int(report.revision.into()),
                Param::Text(report.status.as_str()),
                Param::Text(report.error.as_deref().unwrap_or_default()),
                Param::Int(now.as_millis()),
            ],
        )
        .await?;
        Ok(Edge {
            object: EdgeTag::Tag,
            name: report.name.clone(),
            revision: report.revision,
            status: report.status,
            error: report.error.clone(),
            reported_at: now,
            stale: false,
        })
    })
}

/// A page of a project's edges, by name: at most `limit` after
/// `start_key` (an edge's name), and whether more follow.
#[derive(Clone, Debug)]
pub struct ListEdges {
    pub project_id: String,
    pub visible_to: OrganizationSet,
    pub limit: u32,
    pub start_key: Option<String>,
}

operation!(ListEdges => list, Read, "list_edges" -> (Vec<Edge>, bool));

async fn list(db: &mut dyn Db, query: &ListEdges) -> Result<(Vec<Edge>, bool), StoreError> {
    let now = Timestamp::now();
    let (mut edges, fetched) = transaction!(db, begin_read, {
        let visible_to = Some(&query.visible_to);
        readable_project(db, visible_to, &query.project_id, Deleted::Excluded).await?;
        let mut params = vec![Param::Text(&query.project_id)];
        let after = match &query.start_key {
            Some(name) => {
                params.push(Param::Text(name));
                " AND name > ?2"
            }
            None => "",
        };
        let fetch = i64::from(query.limit) + 1;
        params.push(Param::Int(fetch));
        let sql = format!(
            "SELECT name, revision, status, error, reported_at FROM edge_reports
              WHERE project_id = ?1{after} ORDER BY name LIMIT ?{}",
            params.len()
        );
        let edges = query_all(db, &sql, &params, |row| edge(row, now)).await?;
        Ok((edges, fetch))
    })?;
    let more = edges.len() as i64 == fetched;
    edges.truncate(query.limit as usize);
    Ok((edges, more))
}

fn edge(row: &dyn Row, now: Timestamp) -> Result<Edge, StoreError> {
    let stored =
        |what: &str| StoreError::Internal(format!("an edge report's {what} is unreadable"));
    let reported_at = Timestamp::from_millis(row.int(4)?).ok_or_else(|| stored("time"))?;
    Ok(Edge {
        object: EdgeTag::Tag,
        name: row.text(0)?,
        revision: u32::try_from(row.int(1)?).map_err(|_| stored("revision"))?,
        status: EdgeStatus::parse(row.str(2)?).ok_or_else(|| stored("status"))?,
        error: Some(row.text(3)?).filter(|error| !error.is_empty()),
        reported_at,
        stale: Edge::is_stale(reported_at, now),
    })
}
