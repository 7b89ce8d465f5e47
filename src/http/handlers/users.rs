//! The caller itself: getMe.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;

use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::respond::content_tagged_response;
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::operations::memberships::Me;

pub fn routes(state: &AppState) -> Routes {
    Routes::new().route("/v1/users/me", authenticated(get(me), state))
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
