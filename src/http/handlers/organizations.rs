//! The caller's organizations: listOrganizations, getOrganization and
//! getMyOrganization. The caller's memberships are read from the store on
//! each request (not from the token's cached grant): what these answer is
//! what the memberships are now.

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::routing::get;

use crate::domain::directory::OrganizationType;
use crate::domain::ids;
use crate::domain::pagination::DEFAULT_LIMIT;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::query::QueryParams;
use crate::http::respond::{content_tagged_response, list_response};
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::operations::memberships::{MemberOrganization, WhichOrganization};
use crate::store::{Listing, OrganizationsQuery};

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route("/v1/organizations", authenticated(get(list), state))
        .route("/v1/organizations/me", authenticated(get(mine), state))
        .route("/v1/organizations/{id}", authenticated(get(one), state))
}

/// `GET /v1/organizations`
async fn list(
    State(app): State<AppState>,
    Caller(caller): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (params, page) = QueryParams::listing(query.as_deref(), &["type"], DEFAULT_LIMIT)?;
    let kind = match params.get("type") {
        None => None,
        Some(text) => Some(
            OrganizationType::parse(text)
                .ok_or_else(|| ApiError::invalid("type", "must be pro or perso"))?,
        ),
    };
    let result = app
        .store
        .list(Listing::Organizations(OrganizationsQuery {
            user_id: caller.user_id.clone(),
            kind,
            page,
        }))
        .await?;
    Ok(list_response("/v1/organizations", result))
}

/// `GET /v1/organizations/{id}`: 404 for an organization the caller is
/// not in, one that does not exist and an id of any other form alike.
async fn one(
    State(app): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let Some(id) = ids::parse_organization_id(&id) else {
        return Err(no_organization());
    };
    member_organization(&app, &caller.user_id, WhichOrganization::Id(id)).await
}

/// `GET /v1/organizations/me`: the caller's oldest membership's.
async fn mine(State(app): State<AppState>, Caller(caller): Caller) -> Result<Response, ApiError> {
    member_organization(&app, &caller.user_id, WhichOrganization::Oldest).await
}

async fn member_organization(
    app: &AppState,
    user_id: &str,
    which: WhichOrganization,
) -> Result<Response, ApiError> {
    let organization = app
        .store
        .run(MemberOrganization {
            user_id: user_id.to_owned(),
            which,
        })
        .await?;
    Ok(content_tagged_response(&organization))
}

fn no_organization() -> ApiError {
    ApiError::NotFound("no such organization".into())
}
