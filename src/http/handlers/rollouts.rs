//! Safe rollouts (`docs/rollouts.md`): `POST /v1/projects/{id}/rollouts`
//! (createRollout) begins one, `GET` lists them (listRollouts), `GET
//! .../rollouts/{number}` reads one (getRollout), `POST
//! .../rollouts/{number}/{pause|resume|promote|abort}` is a person's hand
//! on it, and `GET /v1/projects/{id}/edges/{name}/target` (getEdgeTarget)
//! tells an edge the revision it must run now. Starting and controlling
//! need the right to activate revisions; reading, the right to read the
//! project (an edge's read token).

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::Value;

use super::projects::{ProjectId, may};
use super::proxy_settings::checked_for_activation;
use crate::domain::FieldError;
use crate::domain::access::Action;
use crate::domain::edge;
use crate::domain::rollout::{Control, RolloutInput};
use crate::http::body::JsonBody;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::operation_headers::OperationHeaders;
use crate::http::query::QueryParams;
use crate::http::respond::{json_body, named_list_response, object_response};
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::operations::rollouts::{
    ControlRollout, GetEdgeTarget, GetRollout, ListRollouts, StartRollout,
};
use crate::store::operations::write_steps::WriteTarget;

/// Rollouts a page holds by default, and at most.
const DEFAULT_LIMIT: u32 = 20;
const MAX_LIMIT: u32 = 100;

pub fn routes(state: &AppState) -> Routes {
    // pauseRollout, resumeRollout, promoteRollout, abortRollout: a path
    // each, as documented.
    let actions = Control::ALL
        .into_iter()
        .fold(Routes::new(), |routes, control| {
            let handler = move |app, caller, headers, project, path| {
                control_rollout(app, caller, headers, project, path, control)
            };
            routes.route(control.path(), authenticated(post(handler), state))
        });
    actions
        .route(
            "/v1/projects/{id}/rollouts",
            authenticated(get(list).post(create), state),
        )
        .route(
            "/v1/projects/{id}/rollouts/{number}",
            authenticated(get(get_one), state),
        )
        .route(
            "/v1/projects/{id}/edges/{name}/target",
            authenticated(get(target), state),
        )
}

/// `POST /v1/projects/{id}/rollouts`
async fn create(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let request = headers.write_request(&caller, "createRollout", None);
    // Rights first: a caller who may not activate learns nothing of the
    // body, and nothing is compiled for it.
    let target = WriteTarget::Project(project_id.clone());
    may(&app, &request, Action::ActivateRevision, target).await?;
    let members = body.checked("RolloutInput", RolloutInput::stage_problems)?;
    let input: RolloutInput = serde_json::from_value(Value::Object(members))
        .map_err(|e| ApiError::InvalidBody(vec![FieldError::new("body", e.to_string())]))?;
    let (revision, plan) = input.check().map_err(ApiError::InvalidBody)?;
    let checked_for_activation =
        checked_for_activation(&app, &request, &project_id, revision).await?;
    let answer = app
        .store
        .run(StartRollout {
            request,
            project_id,
            revision,
            plan,
            checked_for_activation,
        })
        .await?;
    app.rollouts.wake();
    let mut response = object_response(answer);
    *response.status_mut() = StatusCode::CREATED;
    Ok(response)
}

/// `GET /v1/projects/{id}/rollouts`
async fn list(
    State(app): State<AppState>,
    Caller(caller): Caller,
    ProjectId(project_id): ProjectId,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &["limit", "start_key"])?;
    let limit = params.limit(DEFAULT_LIMIT, MAX_LIMIT)?;
    let start_key = params
        .get("start_key")
        .map(|key| rollout_number(key, "start_key"))
        .transpose()?;
    let url = format!("/v1/projects/{project_id}/rollouts");
    let (rollouts, has_more) = app
        .store
        .run(ListRollouts {
            project_id,
            visible_to: caller.organizations.clone(),
            limit,
            start_key,
        })
        .await?;
    let last_key = rollouts
        .last()
        .and_then(|last| last.get("number"))
        .map(Value::to_string);
    Ok(named_list_response(
        &url,
        &rollouts,
        has_more,
        last_key.as_deref(),
    ))
}

/// `GET /v1/projects/{id}/rollouts/{number}`
async fn get_one(
    State(app): State<AppState>,
    Caller(caller): Caller,
    ProjectId(project_id): ProjectId,
    Path((_, number)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let number = rollout_number(&number, "number")?;
    let answer = app
        .store
        .run(GetRollout {
            project_id,
            number,
            visible_to: caller.organizations.clone(),
        })
        .await?;
    Ok(object_response(answer))
}

/// pauseRollout, resumeRollout, promoteRollout, abortRollout.
async fn control_rollout(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    Path((_, number)): Path<(String, String)>,
    control: Control,
) -> Result<Response, ApiError> {
    let number = rollout_number(&number, "number")?;
    let request = headers.write_request(&caller, control.operation(), None);
    let answer = app
        .store
        .run(ControlRollout {
            request,
            project_id,
            number,
            control,
        })
        .await?;
    Ok(object_response(answer))
}

/// `GET /v1/projects/{id}/edges/{name}/target`
async fn target(
    State(app): State<AppState>,
    Caller(caller): Caller,
    ProjectId(project_id): ProjectId,
    Path((_, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    if !edge::valid_name(&name) {
        return Err(ApiError::invalid("name", edge::NAME_RULE));
    }
    let target = app
        .store
        .run(GetEdgeTarget {
            project_id,
            name,
            visible_to: caller.organizations.clone(),
        })
        .await?;
    let body = serde_json::to_string(&target).map_err(|_| ApiError::Internal)?;
    Ok(json_body(StatusCode::OK, body.into()))
}

/// A rollout's number in a path or a `start_key`: decimal digits, from 1.
fn rollout_number(text: &str, param: &str) -> Result<u32, ApiError> {
    let canonical = !text.is_empty()
        && text.len() <= 10
        && text.bytes().all(|b| b.is_ascii_digit())
        && !text.starts_with('0');
    match canonical.then(|| text.parse::<u32>().ok()).flatten() {
        Some(number) => Ok(number),
        None if param == "number" => Err(ApiError::no_such("rollout")),
        None => Err(ApiError::invalid(
            param,
            "must be a rollout's number, from 1",
        )),
    }
}
