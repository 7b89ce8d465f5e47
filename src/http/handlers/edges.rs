//! Who runs which revision (`docs/feed.md`): `POST
//! /v1/projects/{id}/edges` (reportEdge: an edge tells the revision it
//! applied, or that it could not) and `GET /v1/projects/{id}/edges`
//! (listEdges: each edge's last report, by name, or those that need
//! attention first). Both need only the right to read the project.
//! `DELETE /v1/projects/{id}/edges/{name}` (deleteEdge) removes a report,
//! for whoever may change the project.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{delete, get};
use serde_json::{Value, json};

use super::projects::ProjectId;
use crate::domain::FieldError;
use crate::domain::edge::{self, EdgeReport};
use crate::http::body::JsonBody;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::operation_headers::OperationHeaders;
use crate::http::query::QueryParams;
use crate::http::respond::{json_body, named_list_response};
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::operations::edges::{DeleteEdge, EdgeOrder, ListEdges, ReportEdge};

/// Edges a page holds by default, and at most.
const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 100;

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route(
            "/v1/projects/{id}/edges",
            authenticated(get(list).post(report), state),
        )
        .route(
            "/v1/projects/{id}/edges/{name}",
            authenticated(delete(remove), state),
        )
}

/// `POST /v1/projects/{id}/edges`
async fn report(
    State(app): State<AppState>,
    caller: Caller,
    // For `api-version`; a report takes neither If-Match nor an
    // Idempotency-Key (sending it again changes nothing but its time).
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    body: JsonBody,
) -> Result<Response, ApiError> {
    // The schema's checks do not read its pattern: the name's rule joins
    // them, so that a 400 names every bad member.
    let members = body.checked("EdgeReportInput", |body| {
        match body.get("name").and_then(Value::as_str) {
            Some(name) if !edge::valid_name(name) => {
                vec![FieldError::new("name", edge::NAME_RULE)]
            }
            _ => Vec::new(),
        }
    })?;
    let report: EdgeReport = serde_json::from_value(Value::Object(members))
        .map_err(|e| ApiError::InvalidBody(vec![FieldError::new("body", e.to_string())]))?;
    let report = report.check().map_err(ApiError::InvalidBody)?;
    let edge = app
        .store
        .run(ReportEdge {
            request: headers.write_request(&caller, "reportEdge", None),
            project_id,
            report,
            most: app.quotas.edge_reports_per_project,
        })
        .await?;
    let body = serde_json::to_string(&edge).map_err(|_| ApiError::Internal)?;
    Ok(json_body(StatusCode::OK, body.into()))
}

/// `GET /v1/projects/{id}/edges`
async fn list(
    State(app): State<AppState>,
    Caller(caller): Caller,
    ProjectId(project_id): ProjectId,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &["limit", "start_key", "order"])?;
    let limit = params.limit(DEFAULT_LIMIT, MAX_LIMIT)?;
    let order = match params.get("order") {
        None | Some("name") => EdgeOrder::Name,
        Some("attention") => EdgeOrder::Attention,
        Some(_) => return Err(ApiError::invalid("order", "must be name or attention")),
    };
    let start_key = match params.get("start_key") {
        Some(name) if !edge::valid_name(name) => {
            return Err(ApiError::invalid("start_key", edge::NAME_RULE));
        }
        // Those that need attention come first as they stand now, which
        // a cursor by name cannot resume: one page.
        Some(_) if order == EdgeOrder::Attention => {
            return Err(ApiError::invalid(
                "start_key",
                "is only for order=name (order=attention is one page)",
            ));
        }
        other => other.map(str::to_owned),
    };
    let url = format!("/v1/projects/{project_id}/edges");
    let (edges, has_more) = app
        .store
        .run(ListEdges {
            project_id,
            visible_to: caller.organizations.clone(),
            limit,
            start_key,
            order,
        })
        .await?;
    let last_key = match order {
        EdgeOrder::Name => edges.last().map(|last| last.name.as_str()),
        EdgeOrder::Attention => None,
    };
    Ok(named_list_response(&url, &edges, has_more, last_key))
}

/// `DELETE /v1/projects/{id}/edges/{name}`
async fn remove(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    Path((_, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    if !edge::valid_name(&name) {
        return Err(ApiError::invalid("name", edge::NAME_RULE));
    }
    let request = headers.write_request(&caller, "deleteEdge", None);
    app.store
        .run(DeleteEdge {
            request,
            project_id,
            name: name.clone(),
        })
        .await?;
    let body = json!({"object": "edge", "name": name, "deleted": true});
    Ok(json_body(StatusCode::OK, body.to_string().into()))
}
