//! The authenticated caller, as an extractor: a handler that takes
//! [`Caller`] answers 401 before it runs when the token is not good.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::AppState;
use super::error::ApiError;
use super::observe::CallerNote;
use crate::auth::{AuthError, Principal};

pub struct Caller(pub Arc<Principal>);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        let mut headers = parts.headers.get_all(AUTHORIZATION).iter();
        let authorization = match (headers.next(), headers.next()) {
            (None, _) => None,
            (Some(value), None) => Some(value.as_bytes()),
            // Two credentials: refuse rather than guess which one counts.
            (Some(_), Some(_)) => return Err(AuthError::Malformed.into()),
        };
        let principal = app.auth.authenticate(authorization).await?;
        if let Some(note) = parts.extensions.get::<CallerNote>() {
            note.record(&principal);
        }
        Ok(Self(principal))
    }
}
