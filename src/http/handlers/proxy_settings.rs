//! A project's proxy settings: `GET /v1/projects/{id}/proxy-settings`,
//! createProjectProxySettings and updateProjectProxySettings
//! (`docs/interface.md`, `docs/management.md`): a new revision is checked by the
//! schema of the served document, then by the domain's rules
//! (`ProxySettings::validate`, the same as the import's, and the checks
//! before activation, `activation_problems`, the API's own). With
//! `dry_run=true` either write answers what it would do and stores
//! nothing (`docs/management.md`, "Dry runs").

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Map, Value};

use super::projects::{ProjectId, may, may_write};
use crate::domain::FieldError;
use crate::domain::access::Action;
use crate::domain::pagination::DEFAULT_PROXY_SETTINGS_LIMIT;
use crate::domain::proxy_settings::{DryRun, ProxySettings, activation_problems};
use crate::domain::regexes::RegexChecks;
use crate::http::body::{JsonBody, off_the_runtime};
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::operation_headers::OperationHeaders;
use crate::http::query::QueryParams;
use crate::http::respond::{json_body, list_response, object_response};
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::operations::proxy_settings::{
    CreateProxySettings, RevisionToActivate, SettingsChange, TryCreateProxySettings,
    TryUpdateProxySettings, UpdateProxySettings,
};
use crate::store::operations::write_request::WriteRequest;
use crate::store::operations::write_steps::WriteTarget;
use crate::store::{Listing, ProxySettingsQuery};

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route(
            "/v1/projects/{id}/proxy-settings",
            authenticated(get(list).post(create), state),
        )
        .route(
            "/v1/projects/{id}/proxy-settings/{revision}",
            authenticated(post(update), state),
        )
}

/// `GET /v1/projects/{id}/proxy-settings`
async fn list(
    State(app): State<AppState>,
    Caller(caller): Caller,
    ProjectId(project_id): ProjectId,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (_, page) = QueryParams::listing(query.as_deref(), &[], DEFAULT_PROXY_SETTINGS_LIMIT)?;
    let url = format!("/v1/projects/{project_id}/proxy-settings");
    let result = app
        .store
        .list(Listing::ProxySettings(ProxySettingsQuery {
            project_id,
            visible_to: caller.organizations.clone(),
            page,
        }))
        .await?;
    Ok(list_response(&url, result))
}

async fn create(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    RawQuery(query): RawQuery,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let dry_run = dry_run(query.as_deref(), &headers)?;
    // Rights first, then the body's checks (docs/management.md).
    let request = headers.write_request(&caller, "createProjectProxySettings", None);
    may_write(&app, &request, WriteTarget::Project(project_id.clone())).await?;
    let digest = body.digest();
    let settings = off_the_runtime(move |regexes| new_revision(body, regexes)).await?;
    let request = headers.write_request(&caller, "createProjectProxySettings", Some(digest));
    let create = CreateProxySettings {
        request,
        project_id,
        settings,
    };
    if dry_run {
        let answer = app.store.run(TryCreateProxySettings(create)).await?;
        return Ok(dry_run_response(&answer));
    }
    Ok(object_response(app.store.run(create).await?))
}

async fn update(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    Path((_, revision)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let revision = revision_number(&revision)?;
    let dry_run = dry_run(query.as_deref(), &headers)?;
    let request = headers.write_request(&caller, "updateProjectProxySettings", None);
    // The body is small (a description, a flag: the schema bounds it), but
    // rights come first all the same: to activate or deactivate a revision
    // is an action of its own (`UpdateProxySettings::action`).
    let action = match body.member("is_active") {
        Some(_) => Action::ActivateRevision,
        None => Action::ChangeProjects,
    };
    may(
        &app,
        &request,
        action,
        WriteTarget::Project(project_id.clone()),
    )
    .await?;
    let members = body.checked("ProxySettingsUpdateInput", |_| Vec::new())?;
    let is_active = members.get("is_active").and_then(Value::as_bool);
    let checked_for_activation = if is_active == Some(true) {
        checked_for_activation(&app, &request, &project_id, revision).await?
    } else {
        false
    };
    let change = SettingsChange {
        description: members
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        is_active,
        checked_for_activation,
    };
    let update = UpdateProxySettings {
        request,
        project_id,
        revision,
        change,
    };
    if dry_run {
        let answer = app.store.run(TryUpdateProxySettings(update)).await?;
        return Ok(dry_run_response(&answer));
    }
    Ok(object_response(app.store.run(update).await?))
}

/// The checks before activation of the stored revision an update (or its
/// dry run) activates, run before the store's write or read and outside
/// them, off the runtime (its regexes may take a second to compile: they
/// must not hold the store's writer nor a worker): `true` when they were
/// run and passed, `false` when the revision is active already (nothing
/// to check); a 400 naming every member of the stored revision at fault
/// otherwise. A caller who may not activate it gets the write's refusal,
/// and nothing is compiled for it.
pub(super) async fn checked_for_activation(
    app: &AppState,
    request: &WriteRequest,
    project_id: &str,
    revision: u32,
) -> Result<bool, ApiError> {
    let to_activate = RevisionToActivate {
        request: request.clone(),
        project_id: project_id.to_owned(),
        revision,
    };
    let Some(settings) = app.store.run(to_activate).await? else {
        return Ok(false);
    };
    off_the_runtime(move |regexes| {
        let written = serde_json::to_value(&settings).map_err(|_| ApiError::Internal)?;
        let problems = activation_problems(&written, regexes)?;
        if problems.is_empty() {
            Ok(true)
        } else {
            Err(ApiError::StoredBeforeRules { revision, problems })
        }
    })
    .await
}

/// A new revision's body checked: by its schema, then by the domain's
/// rules, every member at fault named in one 400 (the import's rules'
/// first problem, and all the checks before activation find).
fn new_revision(body: JsonBody, regexes: &mut RegexChecks) -> Result<ProxySettings, ApiError> {
    let members = body.checked("ProxySettingsCreateInput", |body| {
        let mut problems = body.as_object().map(rank_problems).unwrap_or_default();
        problems.extend(activation_problems(body, regexes).into_iter().flatten());
        problems
    })?;
    let problems = rank_problems(&members);
    if !problems.is_empty() {
        return Err(ApiError::InvalidBody(problems));
    }
    let mut body = Value::Object(members);
    let mut problems = activation_problems(&body, regexes)?;
    // A stand-in: the store numbers the revision.
    body["revision"] = 1.into();
    let settings: ProxySettings = serde_json::from_value(body)
        .map_err(|e| ApiError::InvalidBody(vec![FieldError::new("body", e.to_string())]))?;
    problems.splice(0..0, settings.validate().err());
    if problems.is_empty() {
        Ok(settings)
    } else {
        Err(ApiError::InvalidBody(problems))
    }
}

/// The write's `dry_run` query parameter (its only one): `true` or
/// `false`, `false` when absent; anything else, or another parameter, is
/// a 400 naming it. A dry run takes no `Idempotency-Key` (400): it stores
/// nothing a key could replay.
fn dry_run(query: Option<&str>, headers: &OperationHeaders) -> Result<bool, ApiError> {
    let params = QueryParams::parse(query, &["dry_run"])?;
    let dry_run = match params.get("dry_run") {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::invalid("dry_run", "must be true or false")),
    };
    if dry_run && headers.idempotency_key.is_some() {
        return Err(ApiError::InvalidHeader {
            header: "Idempotency-Key",
            rule: "is not taken with dry_run=true: a dry run stores nothing to replay".into(),
        });
    }
    Ok(dry_run)
}

/// A dry run's answer: 200 and the JSON, without an `ETag` (it is no
/// stored object's version).
fn dry_run_response(answer: &DryRun) -> Response {
    let body = serde_json::to_vec(answer).expect("a dry run's answer serializes");
    json_body(StatusCode::OK, body.into())
}

/// A path's `revision`: decimal digits (else 400); a number no revision
/// can have is unknown (404).
fn revision_number(text: &str) -> Result<u32, ApiError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::InvalidParameter {
            param: "revision".into(),
            rule: "must be a revision number in decimal digits".into(),
        });
    }
    text.parse()
        .map_err(|_| ApiError::no_such("proxy settings revision"))
}

/// Route ranks the schema lets through as strings must still be integers
/// (the schema's `pattern` is the domain's to check).
fn rank_problems(members: &Map<String, Value>) -> Vec<FieldError> {
    let Some(Value::Array(routes)) = members.get("routes") else {
        return Vec::new();
    };
    routes
        .iter()
        .enumerate()
        .filter_map(|(i, route)| {
            let rank = route.get("rank")?.as_str()?;
            let digits = rank.strip_prefix('-').unwrap_or(rank);
            let integer = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && rank.parse::<i64>().is_ok();
            (!integer).then(|| FieldError::new(format!("routes[{i}].rank"), "must be an integer"))
        })
        .collect()
}
