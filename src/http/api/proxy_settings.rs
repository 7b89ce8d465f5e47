//! A project's proxy settings: `GET /v1/projects/{id}/proxy-settings`,
//! createProjectProxySettings and updateProjectProxySettings
//! (`interface.md`, `management.md`): a new revision is checked by the
//! schema of the served document, then by the domain's rules
//! (`ProxySettings::validate`, the same as the import's).

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Map, Value};

use super::projects::ProjectId;
use crate::domain::FieldError;
use crate::domain::pagination::DEFAULT_PROXY_SETTINGS_LIMIT;
use crate::domain::proxy_settings::ProxySettings;
use crate::http::body::JsonBody;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::query::QueryParams;
use crate::http::respond::{list_response, object_response};
use crate::http::routes::authenticated;
use crate::http::state::AppState;
use crate::http::writes::OperationHeaders;
use crate::store::StoreError;
use crate::store::api::proxy_settings::{CreateProxySettings, SettingsChange, UpdateProxySettings};
use crate::store::{Listing, ProxySettingsQuery};

pub fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
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
    body: JsonBody,
) -> Result<Response, ApiError> {
    let digest = body.digest();
    let mut members = body.checked("ProxySettingsCreateInput", |body| {
        body.as_object().map(rank_problems).unwrap_or_default()
    })?;
    let problems = rank_problems(&members);
    if !problems.is_empty() {
        return Err(ApiError::InvalidBody(problems));
    }
    // A stand-in: the store numbers the revision.
    members.insert("revision".into(), 1.into());
    let settings: ProxySettings = serde_json::from_value(Value::Object(members))
        .map_err(|e| ApiError::InvalidBody(vec![FieldError::new("body", e.to_string())]))?;
    settings
        .validate()
        .map_err(|problem| ApiError::InvalidBody(vec![problem]))?;
    let request = headers.write_request(&caller, "createProjectProxySettings", Some(digest));
    Ok(object_response(
        app.store
            .run(CreateProxySettings {
                request,
                project_id,
                settings,
            })
            .await?,
    ))
}

async fn update(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    Path((_, revision)): Path<(String, String)>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let revision = revision_number(&revision)?;
    let members = body.checked("ProxySettingsUpdateInput", |_| Vec::new())?;
    let change = SettingsChange {
        description: members
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        is_active: members.get("is_active").and_then(Value::as_bool),
    };
    let request = headers.write_request(&caller, "updateProjectProxySettings", None);
    Ok(object_response(
        app.store
            .run(UpdateProxySettings {
                request,
                project_id,
                revision,
                change,
            })
            .await?,
    ))
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
    text.parse().map_err(|_| {
        StoreError::NotFound {
            kind: "proxy settings revision",
            id: String::new(),
        }
        .into()
    })
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
