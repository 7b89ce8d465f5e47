//! An organization's members (docs/teams.md, "Members"):
//! listOrganizationsUsers (`GET /v1/organizations/{id}/users`),
//! updateOrganizationUser and deleteOrganizationUser
//! (`/v1/organizations/{id}/users/{userId}`).

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};

use crate::domain::directory::Role;
use crate::domain::ids;
use crate::domain::pagination::DEFAULT_LIMIT;
use crate::http::body::JsonBody;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::operation_headers::OperationHeaders;
use crate::http::query::QueryParams;
use crate::http::respond::{list_response, object_response};
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::operations::members::{RemoveMember, UpdateMember};
use crate::store::operations::write_request::ObjectAnswer;
use crate::store::{Listing, MembersQuery};

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route(
            "/v1/organizations/{id}/users",
            authenticated(axum::routing::get(list), state),
        )
        .route(
            "/v1/organizations/{id}/users/{userId}",
            authenticated(post(update).delete(remove), state),
        )
}

const ROLE_RULE: &str = "must be admin, editor or member";

fn no_organization() -> ApiError {
    ApiError::no_such("organization")
}

/// The path's organization id; 404 for anything else, as for an
/// organization the caller cannot see.
fn organization_id(id: &str) -> Result<String, ApiError> {
    ids::parse_organization_id(id).ok_or_else(no_organization)
}

/// The path's user id; 404 for what cannot be one.
fn user_id(id: &str) -> Result<String, ApiError> {
    if ids::is_valid_id(id) {
        Ok(id.to_owned())
    } else {
        Err(ApiError::no_such("user"))
    }
}

/// `GET /v1/organizations/{id}/users`: the members, for a member of the
/// organization (as the store holds the memberships now); 404 for anyone
/// else.
async fn list(
    State(app): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let organization_id = organization_id(&id)?;
    let (params, page) = QueryParams::listing(query.as_deref(), &["role"], DEFAULT_LIMIT)?;
    let role = params
        .get("role")
        .map(|text| Role::parse(text).ok_or_else(|| ApiError::invalid("role", ROLE_RULE)))
        .transpose()?;
    let url = format!("/v1/organizations/{organization_id}/users");
    let page = app
        .store
        .list(Listing::Members(MembersQuery {
            user_id: caller.user_id.clone(),
            organization_id,
            role,
            page,
        }))
        .await?;
    Ok(list_response(&url, page))
}

/// `POST /v1/organizations/{id}/users/{userId}` `{"role": ...}`
async fn update(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    Path((id, user)): Path<(String, String)>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let organization_id = organization_id(&id)?;
    let user_id = user_id(&user)?;
    let members = body.checked("OrganizationUserUpdateInput", |_| Vec::new())?;
    let role = members
        .get("role")
        .and_then(Value::as_str)
        .and_then(Role::parse)
        .ok_or_else(|| {
            ApiError::InvalidBody(vec![crate::domain::FieldError::new("role", ROLE_RULE)])
        })?;
    let request = headers.write_request(&caller, "updateOrganizationUser", None);
    let answer = app
        .store
        .run(UpdateMember {
            request,
            organization_id,
            user_id: user_id.clone(),
            role,
        })
        .await?;
    app.auth.forget_user(&user_id);
    Ok(object_response(answer))
}

/// `DELETE /v1/organizations/{id}/users/{userId}`: an admin removes a
/// member; anyone leaves (the path names the caller).
async fn remove(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    Path((id, user)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let organization_id = organization_id(&id)?;
    let user_id = user_id(&user)?;
    let request = headers.write_request(&caller, "deleteOrganizationUser", None);
    let version = app
        .store
        .run(RemoveMember {
            request,
            organization_id,
            user_id: user_id.clone(),
        })
        .await?;
    app.auth.forget_user(&user_id);
    let body = json!({"object": "user", "id": user_id, "deleted": true}).to_string();
    Ok(object_response(ObjectAnswer { body, version }))
}
