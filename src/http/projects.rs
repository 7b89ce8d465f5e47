//! createProject, getProject, updateProject, deleteProject
//! (`management.md`): bodies through `body.rs`, the write's context
//! through `writes.rs`, the store's project operations.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde_json::{Map, Value};

use super::AppState;
use super::body::JsonBody;
use super::caller::Caller;
use super::error::ApiError;
use super::listings::ProjectId;
use super::query::QueryParams;
use super::writes::{OperationHeaders, object_response};
use crate::domain::FieldError;
use crate::domain::ids;
use crate::domain::project::{self, Project};
use crate::store::api::projects::{CreateProject, DeleteProject, GetProject, UpdateProject};

/// An organization id that only stands in while an update's members are
/// checked on their own.
const SOME_ORGANIZATION: &str = "00000000-0000-7000-8000-000000000000";

pub async fn create(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let digest = body.digest();
    let members = body.checked("ProjectCreateInput", slug_problem)?;
    let organization_id = members
        .get("organization_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut project = Project::new(ids::new_id(), organization_id);
    project.apply(&members).map_err(in_body)?;
    let mut problems = project.problems();
    problems.extend(project.check_slug().err());
    if !problems.is_empty() {
        return Err(ApiError::InvalidBody(problems));
    }
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
    check_members(&id, &members)?;
    let request = headers.write_request(&caller, "updateProject", None);
    Ok(object_response(
        app.store
            .run(UpdateProject {
                request,
                id,
                members,
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

/// An update's members against the domain's rules, on their own (the
/// stored project they go onto keeps the rules already): every member at
/// fault, before the store is asked.
fn check_members(id: &str, members: &Map<String, Value>) -> Result<(), ApiError> {
    let mut probe = Project::new(id.to_owned(), SOME_ORGANIZATION.to_owned());
    probe.apply(members).map_err(in_body)?;
    let mut problems: Vec<FieldError> = probe
        .problems()
        .into_iter()
        .filter(|problem| members.contains_key(top_member(&problem.field)))
        .collect();
    if members.contains_key("slug") {
        problems.extend(probe.check_slug().err());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ApiError::InvalidBody(problems))
    }
}

/// The slug's rule, beside the schema's checks (which do not read its
/// pattern).
fn slug_problem(body: &Value) -> Vec<FieldError> {
    match body.get("slug").and_then(Value::as_str) {
        Some(slug) => project::check_slug(slug).err().into_iter().collect(),
        None => Vec::new(),
    }
}

fn top_member(path: &str) -> &str {
    path.split(['.', '[']).next().unwrap_or(path)
}

/// A body the schema let through that still does not make a project: a
/// fault of the schema, told as the body's.
fn in_body(problem: FieldError) -> ApiError {
    ApiError::InvalidBody(vec![problem.within("body")])
}
