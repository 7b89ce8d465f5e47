//! The audit log, as `proxydeck admin audit` reads it: every accepted
//! write, newest first (the records are written by the writes themselves,
//! `operations/write_steps.rs`).

use serde::Serialize;

use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::sql::db::{Db, Param, query_all, transaction};

/// Which audit records to list, newest first.
#[derive(Clone, Debug, Default)]
pub struct AuditQuery {
    pub since: Option<Timestamp>,
    pub user_id: Option<String>,
    /// The object's records; a project's include those of its revisions
    /// (recorded as `PROJECT/REVISION`).
    pub object_id: Option<String>,
    pub limit: u32,
}

/// One accepted write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditRecord {
    /// Its place in the log.
    #[serde(skip)]
    pub seq: i64,
    pub at: Timestamp,
    pub user_id: String,
    pub token_id: String,
    pub request_id: String,
    pub operation: String,
    pub object: String,
    pub object_id: String,
    pub version_before: Option<i64>,
    pub version_after: Option<i64>,
}

operation!(AuditQuery => audit, OperatorRead, "admin_audit" -> Vec<AuditRecord>);

async fn audit(db: &mut dyn Db, query: &AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
    transaction!(db, begin_read, { audit_page(db, query).await })
}

async fn audit_page(db: &mut dyn Db, query: &AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
    // Optional filters as `(?n IS NULL OR column = ?n)` would keep one
    // statement but defeat the indexes; each filter is written only when
    // asked, its parameters numbered in order.
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    let since = query.since.map(|at| at.as_millis());
    if let Some(since) = &since {
        params.push(Param::Int(*since));
        conditions.push(format!("at >= ?{}", params.len()));
    }
    if let Some(user_id) = &query.user_id {
        params.push(Param::Text(user_id));
        conditions.push(format!("user_id = ?{}", params.len()));
    }
    // A project's revisions are `PROJECT/N`: the ids from `PROJECT/` up to
    // `PROJECT0` ('0' follows '/'), an index range in the byte order both
    // stores keep ids in.
    let revisions = query
        .object_id
        .as_ref()
        .map(|id| (format!("{id}/"), format!("{id}0")));
    if let (Some(object_id), Some((first, after_last))) = (&query.object_id, &revisions) {
        params.extend([
            Param::Text(object_id),
            Param::Text(first),
            Param::Text(after_last),
        ]);
        let n = params.len();
        conditions.push(format!(
            "(object_id = ?{} OR (object_id >= ?{} AND object_id < ?{n}))",
            n - 2,
            n - 1
        ));
    }
    params.push(Param::Int(i64::from(query.limit)));
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conditions.join(" AND "))
    };
    let sql = format!(
        "SELECT seq, at, user_id, token_id, request_id, operation, object, object_id,
                version_before, version_after
           FROM audit_log {filter} ORDER BY at DESC, seq DESC LIMIT ?{}",
        params.len()
    );
    query_all(db, &sql, &params, |row| {
        Ok(AuditRecord {
            seq: row.int(0)?,
            at: Timestamp::from_millis(row.int(1)?)
                .ok_or_else(|| StoreError::Internal("an audit time is out of range".into()))?,
            user_id: row.text(2)?,
            token_id: row.text(3)?,
            request_id: row.text(4)?,
            operation: row.text(5)?,
            object: row.text(6)?,
            object_id: row.text(7)?,
            version_before: row.opt_int(8)?,
            version_after: row.opt_int(9)?,
        })
    })
    .await
}
