//! Projects: `GET /v1/projects` (listProjects), createProject, getProject,
//! updateProject, deleteProject (`docs/interface.md`, `docs/management.md`): bodies
//! through `body.rs`, the write's context through `operation_headers.rs`, the store's
//! project operations.

use axum::extract::{FromRequestParts, RawPathParams, RawQuery, State};
use axum::http::request::Parts;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::Value;

use crate::domain::FieldError;
use crate::domain::access::{self, Action, Facts, Refusal};
use crate::domain::ids;
use crate::domain::pagination::DEFAULT_LIMIT;
use crate::domain::project::{self, ProjectChange};
use crate::domain::regexes::{RegexChecks, Stopped};
use crate::http::body::{JsonBody, off_the_runtime};
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::operation_headers::OperationHeaders;
use crate::http::query::QueryParams;
use crate::http::respond::{list_response, object_response};
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::operations::projects::{CreateProject, DeleteProject, GetProject, UpdateProject};
use crate::store::operations::write_request::WriteRequest;
use crate::store::operations::write_steps::{MayWrite, WriteTarget};
use crate::store::{Listing, ProjectsQuery};

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route("/v1/projects", authenticated(get(list).post(create), state))
        .route(
            "/v1/projects/{id}",
            authenticated(get(read).merge(post(update)).delete(delete), state),
        )
}

/// `GET /v1/projects`
async fn list(
    State(app): State<AppState>,
    Caller(caller): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (params, page) =
        QueryParams::listing(query.as_deref(), &["organization_id"], DEFAULT_LIMIT)?;
    let organizations = match params.get("organization_id") {
        None => caller.organizations.clone(),
        Some(raw) => {
            let id = ids::parse_organization_id(raw)
                .ok_or_else(|| ApiError::invalid("organization_id", ids::ORGANIZATION_ID_RULE))?;
            // An organization that does not exist and one the caller is not
            // in give the same answer.
            let standing = caller.organizations.standing_toward(&id);
            access::decide(Action::ReadProjects, Facts::live(standing))
                .and_then(|()| caller.organizations.only(&id).ok_or(Refusal::NotFound))
                .map_err(|_| ApiError::NotFound("no such organization".into()))?
        }
    };
    let result = app
        .store
        .list(Listing::Projects(ProjectsQuery {
            organizations,
            page,
        }))
        .await?;
    Ok(list_response("/v1/projects", result))
}

async fn create(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    body: JsonBody,
) -> Result<Response, ApiError> {
    // Rights first (auth, then rights, then the body's checks): the
    // organization the body names, when it names one at all.
    let organization = body
        .member("organization_id")
        .and_then(Value::as_str)
        .and_then(ids::parse_organization_id);
    let Some(organization) = organization else {
        // No organization to ask about: the schema names what is wrong,
        // and no regex is compiled for a caller of unknown rights.
        let _ = body.checked("ProjectCreateInput", slug_problems)?;
        return Err(ApiError::InvalidBody(vec![FieldError::new(
            "organization_id",
            ids::ORGANIZATION_ID_RULE,
        )]));
    };
    let request = headers.write_request(&caller, "createProject", None);
    may_write(&app, &request, WriteTarget::Organization(organization)).await?;
    let digest = body.digest();
    let change = off_the_runtime(move |regexes| {
        let members = body.checked("ProjectCreateInput", |body| rule_problems(body, regexes))?;
        check_change(members, regexes)
    })
    .await?;
    let project = change.new_project(ids::new_id());
    let request = headers.write_request(&caller, "createProject", Some(digest));
    Ok(object_response(
        app.store.run(CreateProject { request, project }).await?,
    ))
}

async fn read(
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

async fn update(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(id): ProjectId,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let request = headers.write_request(&caller, "updateProject", None);
    may_write(&app, &request, WriteTarget::Project(id.clone())).await?;
    let path_id = id.clone();
    let change = off_the_runtime(move |regexes| {
        let mut members =
            body.checked("ProjectUpdateInput", |body| rule_problems(body, regexes))?;
        if let Some(sent) = members.remove("id")
            && sent.as_str() != Some(path_id.as_str())
        {
            return Err(ApiError::InvalidBody(vec![FieldError::new(
                "id",
                "must be the project id of the path",
            )]));
        }
        check_change(members, regexes)
    })
    .await?;
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

/// Whether the caller may change projects of `target`, asked of the store
/// before a write checks its body: a caller who may not gets the write's
/// own refusal (401, 403, or the same 404 for what does not exist and what
/// it cannot see) without the server compiling anything for it
/// (docs/management.md, "Order of refusals").
pub(super) async fn may_write(
    app: &AppState,
    request: &WriteRequest,
    target: WriteTarget,
) -> Result<(), ApiError> {
    may(app, request, Action::ChangeProjects, target).await
}

pub(super) async fn may(
    app: &AppState,
    request: &WriteRequest,
    action: Action,
    target: WriteTarget,
) -> Result<(), ApiError> {
    let asked = MayWrite {
        request: request.clone(),
        action,
        target,
    };
    Ok(app.store.run(asked).await?)
}

/// A change's own rules, its regexes compiled by `regexes`.
fn check_change(
    members: serde_json::Map<String, Value>,
    regexes: &mut RegexChecks,
) -> Result<ProjectChange, ApiError> {
    match ProjectChange::check(members, regexes) {
        Ok(change) => Ok(change),
        Err(Some(problems)) => Err(ApiError::InvalidBody(problems)),
        Err(None) => Err(Stopped.into()),
    }
}

async fn delete(
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

/// The slug's rule and the regex members' (`project::regex_problems`),
/// beside the schema's checks (which do not read patterns), so that one
/// 400 names them with the schema's problems. Checks stopped find nothing
/// more: nobody reads the answer.
fn rule_problems(body: &Value, regexes: &mut RegexChecks) -> Vec<FieldError> {
    let mut problems = slug_problems(body);
    if let Some(members) = body.as_object() {
        problems.extend(
            project::regex_problems(members, regexes)
                .into_iter()
                .flatten(),
        );
    }
    problems
}

fn slug_problems(body: &Value) -> Vec<FieldError> {
    match body.get("slug").and_then(Value::as_str) {
        Some(slug) => project::check_slug(slug).err().into_iter().collect(),
        None => Vec::new(),
    }
}

/// The project id of a path (`/v1/projects/{id}...`): 1 to 64 characters
/// of `[A-Za-z0-9_-]`, else a 400 naming `id`, before any store look-up.
/// Every operation on a project takes its id this way (the listing of its
/// proxy settings, getProject, updateProject, deleteProject, and the
/// proxy-settings writes), so a malformed id has one answer everywhere.
pub struct ProjectId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ProjectId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        // A segment that is not UTF-8 once decoded is no id either.
        let params = RawPathParams::from_request_parts(parts, state).await.ok();
        params
            .iter()
            .flatten()
            .find(|(name, _)| *name == "id")
            .map(|(_, id)| id)
            .filter(|id| ids::is_valid_id(id))
            .map(|id| Self(id.to_owned()))
            .ok_or_else(|| ApiError::invalid("id", ids::ID_RULE))
    }
}
