//! The three listings of `interface.md`.

use axum::extract::{FromRequestParts, RawPathParams, RawQuery, State};
use axum::http::request::Parts;
use axum::response::Response;

use super::caller::Caller;
use super::error::ApiError;
use super::query::QueryParams;
use super::{AppState, list_response, token_list_response};
use crate::domain::access::{self, Action, Facts, Refusal};
use crate::domain::api_token;
use crate::domain::ids;
use crate::domain::pagination::{DEFAULT_LIMIT, DEFAULT_PROXY_SETTINGS_LIMIT};
use crate::store::{ApiTokensQuery, Listing, ProjectsQuery, ProxySettingsQuery};

/// `GET /v1/projects`
pub async fn projects(
    State(app): State<AppState>,
    Caller(caller): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(
        query.as_deref(),
        &["organization_id", "limit", "start_key", "order_direction"],
    )?;
    let page = params.page_request(DEFAULT_LIMIT)?;
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

/// `GET /v1/api_tokens`
pub async fn api_tokens(
    State(app): State<AppState>,
    Caller(caller): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(
        query.as_deref(),
        &["name", "limit", "start_key", "order_direction"],
    )?;
    let page = params.page_request(DEFAULT_LIMIT)?;
    let name = params.get("name");
    // A name no token can have is refused, not looked up.
    if let Some(Err(broken)) = name.map(api_token::validate_name) {
        return Err(ApiError::invalid("name", broken.message));
    }
    let echoed = page.clone();
    let result = app
        .store
        .list(Listing::ApiTokens(ApiTokensQuery {
            user_id: caller.user_id.clone(),
            name: name.map(str::to_owned),
            page,
        }))
        .await?;
    Ok(token_list_response(&echoed, result))
}

/// `GET /v1/projects/{id}/proxy-settings`
pub async fn proxy_settings(
    State(app): State<AppState>,
    Caller(caller): Caller,
    ProjectId(project_id): ProjectId,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = QueryParams::parse(query.as_deref(), &["limit", "start_key", "order_direction"])?;
    let page = params.page_request(DEFAULT_PROXY_SETTINGS_LIMIT)?;
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
