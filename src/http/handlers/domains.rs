//! A project's custom domains (`docs/domains.md`): listProjectDomains and
//! createProjectDomain (`/v1/projects/{id}/domains`), getProjectDomain,
//! updateProjectDomain and deleteProjectDomain
//! (`/v1/projects/{id}/domains/{name}`). A name in a path or a body is
//! taken in its one form (`domain::host_name`), so that `Shop.Example.com`
//! and `shop.example.com` name one domain.

use axum::extract::{FromRequestParts, RawPathParams, RawQuery, State};
use axum::http::request::Parts;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::Value;

use super::projects::{ProjectId, may, may_write};
use crate::domain::FieldError;
use crate::domain::access::Action;
use crate::domain::domains::{StoredDomain, new_token};
use crate::domain::host_name::HostName;
use crate::http::body::JsonBody;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::operation_headers::OperationHeaders;
use crate::http::query::QueryParams;
use crate::http::respond::{named_list_response, object_response};
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::operations::domains::{
    CreateDomain, DeleteDomain, GetDomain, ListDomains, UpdateDomain,
};
use crate::store::operations::write_request::ObjectAnswer;
use crate::store::operations::write_steps::WriteTarget;

/// Domains a page holds by default, and at most: a project's whole list
/// at the default limit of names a project holds, so that a client that
/// sends no parameter (the public document's takes none) gets it all.
const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 100;

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route(
            "/v1/projects/{id}/domains",
            authenticated(get(list).post(create), state),
        )
        .route(
            "/v1/projects/{id}/domains/{name}",
            authenticated(get(read).merge(post(update)).delete(remove), state),
        )
}

/// A name, as a path or a body gives it, in its one form; else a 400
/// naming `field` and the rule.
fn host_name(field: &str, text: &str) -> Result<HostName, ApiError> {
    HostName::parse(text).map_err(|rule| ApiError::invalid(field, rule))
}

/// The `{name}` of a domain's path, in its one form; else a 400 naming
/// `name`, before any store look-up.
pub struct DomainName(HostName);

impl<S: Send + Sync> FromRequestParts<S> for DomainName {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        // A segment that is not UTF-8 once decoded is no name either.
        let params = RawPathParams::from_request_parts(parts, state).await.ok();
        let name = params
            .iter()
            .flatten()
            .find(|(param, _)| *param == "name")
            .map(|(_, name)| name)
            .unwrap_or_default();
        host_name("name", name).map(Self)
    }
}

/// The object the API answers for a stored domain.
fn object(app: &AppState, domain: &StoredDomain) -> Result<ObjectAnswer, ApiError> {
    let grace = app.domain_checks.options.schedule.grace_millis;
    let body = serde_json::to_string(&domain.answer(grace)).map_err(|_| ApiError::Internal)?;
    Ok(ObjectAnswer {
        body,
        version: domain.version,
    })
}

/// `GET /v1/projects/{id}/domains`
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
        .map(|key| host_name("start_key", key).map(HostName::into_string))
        .transpose()?;
    let url = format!("/v1/projects/{project_id}/domains");
    let (domains, has_more) = app
        .store
        .run(ListDomains {
            project_id,
            visible_to: caller.organizations.clone(),
            limit,
            start_key,
        })
        .await?;
    let grace = app.domain_checks.options.schedule.grace_millis;
    let data: Vec<_> = domains.iter().map(|domain| domain.answer(grace)).collect();
    let last_key = domains.last().map(|last| last.name.as_str());
    Ok(named_list_response(&url, &data, has_more, last_key))
}

/// `POST /v1/projects/{id}/domains`
async fn create(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let request = headers.write_request(&caller, "createProjectDomain", None);
    may_write(&app, &request, WriteTarget::Project(project_id.clone())).await?;
    let digest = body.digest();
    let members = body.checked("DomainCreateInput", |body| {
        match body.get("name").and_then(Value::as_str) {
            Some(name) => HostName::parse(name)
                .err()
                .map(|rule| FieldError::new("name", rule))
                .into_iter()
                .collect(),
            None => Vec::new(),
        }
    })?;
    let name = members
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("name", "is required"))?;
    let name = host_name("name", name)?;
    let request = headers.write_request(&caller, "createProjectDomain", Some(digest));
    let answer = app
        .store
        .run(CreateDomain {
            request,
            project_id,
            name,
            token: new_token(),
            limits: app.domain_checks.options.limits,
        })
        .await?;
    app.domain_checks.wake();
    Ok(object_response(answer))
}

/// `GET /v1/projects/{id}/domains/{name}`
async fn read(
    State(app): State<AppState>,
    Caller(caller): Caller,
    _: OperationHeaders,
    ProjectId(project_id): ProjectId,
    DomainName(name): DomainName,
) -> Result<Response, ApiError> {
    let domain = app
        .store
        .run(GetDomain {
            project_id,
            name: name.into_string(),
            visible_to: caller.organizations.clone(),
        })
        .await?;
    Ok(object_response(object(&app, &domain)?))
}

/// `POST /v1/projects/{id}/domains/{name}`: `dns_status: true` checks the
/// record now and answers what the check found; `ssl_status` is an
/// edge's report of the name's certificate.
async fn update(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    DomainName(name): DomainName,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let members = body.checked("DomainUpdateInput", |_| Vec::new())?;
    let dns_status = members.get("dns_status").and_then(Value::as_bool);
    let ssl = members.get("ssl_status").and_then(Value::as_bool);
    if dns_status == Some(false) {
        return Err(ApiError::invalid(
            "dns_status",
            "can only be true, which asks for a DNS check now: a name stops routing when it \
             is deleted or when its record has been gone for the grace period",
        ));
    }
    let request = headers.write_request(&caller, "updateProjectDomain", None);
    let check = match dns_status {
        Some(true) => {
            // Rights first: no lookup is made for a caller who may not.
            let target = WriteTarget::Project(project_id.clone());
            may(&app, &request, Action::ChangeProjects, target).await?;
            let domain = app
                .store
                .run(GetDomain {
                    project_id: project_id.clone(),
                    name: name.to_string(),
                    visible_to: caller.0.organizations.clone(),
                })
                .await?;
            Some(app.domain_checks.check(name.base(), &domain.token).await)
        }
        _ => None,
    };
    let answer = app
        .store
        .run(UpdateDomain {
            request,
            project_id,
            name: name.into_string(),
            check,
            ssl,
            schedule: app.domain_checks.options.schedule,
        })
        .await?;
    Ok(object_response(answer))
}

/// `DELETE /v1/projects/{id}/domains/{name}`
async fn remove(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    ProjectId(project_id): ProjectId,
    DomainName(name): DomainName,
) -> Result<Response, ApiError> {
    let request = headers.write_request(&caller, "deleteProjectDomain", None);
    let answer = app
        .store
        .run(DeleteDomain {
            request,
            project_id,
            name: name.into_string(),
        })
        .await?;
    Ok(object_response(answer))
}
