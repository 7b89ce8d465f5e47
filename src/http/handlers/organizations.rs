//! The caller's organizations: listOrganizations, getOrganization and
//! getMyOrganization, and the writes of docs/teams.md: createOrganization,
//! updateOrganization, deleteOrganization. The caller's memberships are
//! read from the store on each request (not from the token's cached
//! grant): what these answer is what the memberships are now.

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use crate::domain::FieldError;
use crate::domain::directory::{OrganizationType, SLUG_RULE, is_slug};
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
use crate::quotas::OrganizationCreation;
use crate::store::operations::memberships::{MemberOrganization, WhichOrganization};
use crate::store::operations::organizations::{
    DeleteOrganization, StartOrganization, UpdateOrganization,
};
use crate::store::operations::write_request::ObjectAnswer;
use crate::store::{Listing, OrganizationsQuery};

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route(
            "/v1/organizations",
            authenticated(get(list).post(create), state),
        )
        .route("/v1/organizations/me", authenticated(get(mine), state))
        .route(
            "/v1/organizations/{id}",
            authenticated(get(one).merge(post(update)).delete(delete), state),
        )
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
    let (organization, version) = app
        .store
        .run(MemberOrganization {
            user_id: user_id.to_owned(),
            which,
        })
        .await?;
    let body = serde_json::to_string(&organization).map_err(|_| ApiError::Internal)?;
    Ok(object_response(ObjectAnswer { body, version }))
}

/// The rules past the schema's: a name's characters, a slug's (which is
/// never an organization id: a deleted organization's slug becomes its
/// id).
fn rule_problems(body: &Value) -> Vec<FieldError> {
    let mut problems = Vec::new();
    if let Some(name) = body.get("name").and_then(Value::as_str) {
        if name.trim().is_empty() {
            problems.push(FieldError::new("name", "must not be blank"));
        } else if name.chars().any(char::is_control) {
            problems.push(FieldError::new(
                "name",
                "must not contain control characters",
            ));
        }
    }
    if let Some(slug) = body.get("slug").and_then(Value::as_str) {
        if !is_slug(slug) {
            problems.push(FieldError::new("slug", SLUG_RULE));
        } else if ids::parse_organization_id(slug).is_some() {
            problems.push(FieldError::new(
                "slug",
                "must not be a UUID: those are organizations' ids",
            ));
        }
    }
    problems
}

/// The body checked against `schema`, then by [`rule_problems`]: one 400
/// naming every member at fault.
fn checked_body(body: JsonBody, schema: &str) -> Result<Map<String, Value>, ApiError> {
    let members = body.checked(schema, rule_problems)?;
    let problems = rule_problems(&Value::Object(members.clone()));
    if problems.is_empty() {
        Ok(members)
    } else {
        Err(ApiError::InvalidBody(problems))
    }
}

fn text_member(members: &Map<String, Value>, name: &str) -> Option<String> {
    members.get(name).and_then(Value::as_str).map(str::to_owned)
}

/// `POST /v1/organizations`
async fn create(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    body: JsonBody,
) -> Result<Response, ApiError> {
    if app.quotas.organization_creation == OrganizationCreation::Operators {
        return Err(ApiError::Forbidden(
            "organizations are created by the service's operator on this service \
             (proxydeck admin org create)"
                .into(),
        ));
    }
    let digest = body.digest();
    let members = checked_body(body, "OrganizationCreateInput")?;
    let (Some(name), Some(slug)) = (text_member(&members, "name"), text_member(&members, "slug"))
    else {
        return Err(ApiError::invalid("name", "is required"));
    };
    let request = headers.write_request(&caller, "createOrganization", Some(digest));
    let answer = app
        .store
        .run(StartOrganization {
            request,
            id: ids::new_id(),
            name,
            slug,
            most_per_hour: app.quotas.organizations_per_user_per_hour,
        })
        .await?;
    app.auth.forget_user(&caller.0.user_id);
    Ok(object_response(answer))
}

/// The organization id of a path: 404 for anything that is not one, as
/// for an organization the caller cannot see.
fn organization_id(id: &str) -> Result<String, ApiError> {
    ids::parse_organization_id(id).ok_or_else(no_organization)
}

/// `POST /v1/organizations/{id}`
async fn update(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    Path(id): Path<String>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let id = organization_id(&id)?;
    let members = checked_body(body, "OrganizationUpdateInput")?;
    let same = members
        .get("id")
        .and_then(Value::as_str)
        .and_then(ids::parse_organization_id)
        .is_some_and(|sent| sent == id);
    if !same {
        return Err(ApiError::InvalidBody(vec![FieldError::new(
            "id",
            "must be the organization's id, as in the path",
        )]));
    }
    let request = headers.write_request(&caller, "updateOrganization", None);
    let answer = app
        .store
        .run(UpdateOrganization {
            request,
            id,
            name: text_member(&members, "name"),
            slug: text_member(&members, "slug"),
        })
        .await?;
    Ok(object_response(answer))
}

/// `DELETE /v1/organizations/{id}`
async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = organization_id(&id)?;
    let request = headers.write_request(&caller, "deleteOrganization", None);
    let version = app
        .store
        .run(DeleteOrganization {
            request,
            id: id.clone(),
        })
        .await?;
    app.auth.forget_members_of(&id);
    let body = json!({"object": "organization", "id": id, "deleted": true}).to_string();
    Ok(object_response(ObjectAnswer { body, version }))
}

fn no_organization() -> ApiError {
    ApiError::NotFound("no such organization".into())
}
