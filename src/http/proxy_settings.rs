//! createProjectProxySettings and updateProjectProxySettings
//! (`management.md`): a new revision is checked by the schema of the
//! served document, then by the domain's rules (`ProxySettings::validate`,
//! the same as the import's).

use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Map, Value};

use super::AppState;
use super::body::JsonBody;
use super::caller::Caller;
use super::error::ApiError;
use super::listings::ProjectId;
use super::writes::{OperationHeaders, object_response};
use crate::domain::FieldError;
use crate::domain::proxy_settings::ProxySettings;
use crate::store::StoreError;
use crate::store::api::proxy_settings::{CreateProxySettings, SettingsChange, UpdateProxySettings};

pub async fn create(
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

pub async fn update(
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
