//! createProject, getProject, updateProject, deleteProject
//! (`management.md`): bodies through `body.rs`, the write's context
//! through `writes.rs`, the store's project operations.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde_json::Value;

use super::AppState;
use super::body::JsonBody;
use super::caller::Caller;
use super::error::ApiError;
use super::listings::ProjectId;
use super::query::QueryParams;
use super::writes::{OperationHeaders, object_response};
use crate::domain::FieldError;
use crate::domain::ids;
use crate::domain::project::{self, ProjectChange};
use crate::store::api::projects::{CreateProject, DeleteProject, GetProject, UpdateProject};

pub async fn create(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let digest = body.digest();
    let members = body.checked("ProjectCreateInput", slug_problem)?;
    let project = ProjectChange::check(members)
        .map_err(ApiError::InvalidBody)?
        .new_project(ids::new_id());
    let request = headers.write_request(&caller, "createProject", Some(digest));
    Ok(object_response(
        app.store.run(CreateProject { request, project }).await?,
    ))
}

pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    _: OperationHeaders,
    ProjectId(id): ProjectId,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &["organization_id"])?;
    let read = GetProject {
        id,
        visible_to: caller.0.organizations.clone(),
        organization_id: params.get("organization_id").map(str::to_owned),
    };
    Ok(object_response(app.store.run(read).await?))
}

pub async fn update(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(id): ProjectId,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let mut members = body.checked("ProjectUpdateInput", slug_problem)?;
    if let Some(sent) = members.remove("id")
        && sent.as_str() != Some(id.as_str())
    {
        return Err(ApiError::InvalidBody(vec![FieldError::new(
            "id",
            "must be the project id of the path",
        )]));
    }
    let change = ProjectChange::check(members).map_err(ApiError::InvalidBody)?;
    let request = headers.write_request(&caller, "updateProject", None);
    Ok(object_response(
        app.store
            .run(UpdateProject {
                request,
                id,
                change,
            })
            .await?,
    ))
}

pub async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(id): ProjectId,
) -> Result<Response, ApiError> {
    let request = headers.write_request(&caller, "deleteProject", None);
    Ok(object_response(
        app.store.run(DeleteProject { request, id }).await?,
    ))
}

/// The slug's rule, beside the schema's checks (which do not read its
/// pattern).
fn slug_problem(body: &Value) -> Vec<FieldError> {
    match body.get("slug").and_then(Value::as_str) {
        Some(slug) => project::check_slug(slug).err().into_iter().collect(),
        None => Vec::new(),
    }
}
