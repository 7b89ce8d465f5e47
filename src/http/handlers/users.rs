//! Users: getMe (the caller itself), getUser and updateUser
//! (docs/teams.md, "Users").

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use serde_json::Value;

use crate::domain::FieldError;
use crate::domain::ids;
use crate::http::body::JsonBody;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::operation_headers::OperationHeaders;
use crate::http::respond::{content_tagged_response, object_response};
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::operations::memberships::Me;
use crate::store::operations::users::{GetUser, Set, UpdateUser};
use crate::store::operations::write_request::ObjectAnswer;

/// Longest `avatar_url`, and longest terms or privacy version.
pub const MAX_AVATAR_URL_LEN: usize = 2048;
pub const MAX_VERSION_CHARS: usize = 100;

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route("/v1/users/me", authenticated(get(me), state))
        .route(
            "/v1/users/{id}",
            authenticated(get(read).post(update), state),
        )
}

/// `GET /v1/users/me`
async fn me(State(app): State<AppState>, Caller(caller): Caller) -> Result<Response, ApiError> {
    // A token outlives its user only until the token cache forgets it.
    let user = app
        .store
        .run(Me {
            user_id: caller.user_id.clone(),
        })
        .await?
        .ok_or_else(|| ApiError::NotFound("no such user".into()))?;
    Ok(content_tagged_response(&user))
}

/// The path's user id; 404 for what cannot be one.
fn user_id(id: &str) -> Result<String, ApiError> {
    if ids::is_valid_id(id) {
        Ok(id.to_owned())
    } else {
        Err(ApiError::no_such("user"))
    }
}

/// `GET /v1/users/{id}`: the caller, or a user it shares an organization
/// with (its roles in the shared organizations only); 404 otherwise.
async fn read(
    State(app): State<AppState>,
    Caller(caller): Caller,
    _: OperationHeaders,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let user_id = user_id(&id)?;
    let (user, version) = app
        .store
        .run(GetUser {
            caller_id: caller.user_id.clone(),
            user_id,
        })
        .await?;
    let body = serde_json::to_string(&user).map_err(|_| ApiError::Internal)?;
    Ok(object_response(ObjectAnswer { body, version }))
}

/// What updateUser does with one member of its body.
fn set_of(
    members: &serde_json::Map<String, Value>,
    name: &str,
    problems: &mut Vec<FieldError>,
    rule: impl Fn(&str) -> Option<&'static str>,
) -> Set {
    match members.get(name) {
        None => Set::Unchanged,
        Some(Value::Null) => Set::Clear,
        Some(Value::String(text)) => match rule(text) {
            None => Set::To(text.clone()),
            Some(broken) => {
                problems.push(FieldError::new(name, broken));
                Set::Unchanged
            }
        },
        Some(_) => {
            problems.push(FieldError::new(name, "must be a string or null"));
            Set::Unchanged
        }
    }
}

fn avatar_rule(url: &str) -> Option<&'static str> {
    let https = url
        .get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"));
    let parsed = url::Url::parse(url).ok();
    if url.len() > MAX_AVATAR_URL_LEN {
        Some("must be at most 2048 characters")
    } else if !https || parsed.is_none_or(|u| u.host_str().is_none_or(str::is_empty)) {
        Some("must be an https:// URL (or null to clear it)")
    } else {
        None
    }
}

fn version_rule(text: &str) -> Option<&'static str> {
    if text.chars().count() > MAX_VERSION_CHARS {
        Some("must be at most 100 characters")
    } else if text.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else {
        None
    }
}

/// `POST /v1/users/{id}`: the caller itself only (403 for a user it
/// shares an organization with, 404 otherwise).
async fn update(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    Path(id): Path<String>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let user_id = user_id(&id)?;
    let members = body.checked("UserUpdateInput", |_| Vec::new())?;
    let mut problems = Vec::new();
    let avatar_url = set_of(&members, "avatar_url", &mut problems, avatar_rule);
    let terms_version = set_of(&members, "terms_version", &mut problems, version_rule);
    let privacy_version = set_of(&members, "privacy_version", &mut problems, version_rule);
    if !problems.is_empty() {
        return Err(ApiError::InvalidBody(problems));
    }
    let request = headers.write_request(&caller, "updateUser", None);
    let answer = app
        .store
        .run(UpdateUser {
            request,
            user_id,
            avatar_url,
            terms_version,
            privacy_version,
        })
        .await?;
    Ok(object_response(answer))
}
