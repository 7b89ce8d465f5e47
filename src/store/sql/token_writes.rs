//! createApiToken, getApiToken, deleteApiToken (`management.md`): a
//! caller's own tokens only. The secret never reaches the store (only its
//! digest and hint, as `admin token create` stores them), so neither the
//! audit nor an idempotency answer can hold it.
//!
//! A token's version (its strong `ETag`) is the millisecond of its latest
//! change: `updated_at`, or `last_used_at` when later, so that the tag
//! moves whenever the answer's body does.

use super::admin::insert_token;
use super::listings::{api_token, token_columns};
use super::writes::{self, Change, Target};
use super::{Db, Param, query_opt, to_json, transaction};
use crate::domain::access::Action;
use crate::domain::api_token::ApiToken;
use crate::domain::time::Timestamp;
use crate::store::writes::{ObjectAnswer, WriteRequest};
use crate::store::{NewToken, StoreError};

/// What getApiToken reads: the caller's user and the token's id.
#[derive(Clone, Debug)]
pub struct TokenRead {
    pub user_id: String,
    pub id: String,
}

fn no_token() -> StoreError {
    StoreError::NotFound {
        kind: "api token",
        id: String::new(),
    }
}

fn version_of(token: &ApiToken) -> i64 {
    let updated = token.updated_at.as_millis();
    token
        .last_used_at
        .map_or(updated, |used| used.as_millis().max(updated))
}

fn answer(token: &ApiToken) -> Result<ObjectAnswer, StoreError> {
    Ok(ObjectAnswer {
        body: to_json(token)?,
        version: version_of(token),
    })
}

/// The user's token, unless revoked.
async fn own_token(db: &mut dyn Db, user_id: &str, id: &str) -> Result<ApiToken, StoreError> {
    query_opt(
        db,
        concat!(
            "SELECT ",
            token_columns!(),
            " FROM api_tokens WHERE id = ?1 AND user_id = ?2 AND revoked_at IS NULL"
        ),
        &[Param::Text(id), Param::Text(user_id)],
        api_token,
    )
    .await?
    .ok_or_else(no_token)
}

/// The caller's token is still good ([`writes::authorize`]): any role
/// changes its own tokens.
async fn authorize(
    db: &mut dyn Db,
    request: &WriteRequest,
    now: Timestamp,
) -> Result<(), StoreError> {
    writes::authorize(db, request, Action::ChangeOwnTokens, Target::OwnTokens, now).await?;
    Ok(())
}

pub(super) async fn get(db: &mut dyn Db, read: &TokenRead) -> Result<ObjectAnswer, StoreError> {
    let token = own_token(db, &read.user_id, &read.id).await?;
    answer(&token)
}

pub(super) async fn create(
    db: &mut dyn Db,
    input: &(WriteRequest, NewToken),
) -> Result<ObjectAnswer, StoreError> {
    let (request, token) = input;
    transaction!(db, begin_write, {
        authorize(db, request, token.created_at).await?;
        let stored = insert_token(db, token).await?;
        let answer = answer(&stored)?;
        writes::record(
            db,
            request,
            token.created_at,
            Change {
                object: "api_token",
                object_id: &token.id,
                version_before: None,
                version_after: Some(answer.version),
            },
        )
        .await?;
        Ok(answer)
    })
}

pub(super) async fn delete(
    db: &mut dyn Db,
    input: &(WriteRequest, String),
) -> Result<ObjectAnswer, StoreError> {
    let (request, id) = input;
    let user_id = &request.actor.user_id;
    transaction!(db, begin_write, {
        authorize(db, request, Timestamp::now()).await?;
        let token = own_token(db, user_id, id).await?;
        let before = version_of(&token);
        // Forward, even when the clock is not.
        let now = Timestamp::now().as_millis().max(before + 1);
        let changed = db
            .execute(
                "UPDATE api_tokens SET revoked_at = ?3, updated_at = ?3
                  WHERE id = ?1 AND user_id = ?2 AND revoked_at IS NULL",
                &[Param::Text(id), Param::Text(user_id), Param::Int(now)],
            )
            .await?;
        if changed == 0 {
            return Err(no_token());
        }
        let at = Timestamp::from_millis(now)
            .ok_or_else(|| StoreError::Internal("the clock is out of range".into()))?;
        writes::record(
            db,
            request,
            at,
            Change {
                object: "api_token",
                object_id: id,
                version_before: Some(before),
                version_after: Some(now),
            },
        )
        .await?;
        let body = to_json(&serde_json::json!({"object": "api_token", "id": id, "deleted": true}))?;
        Ok(ObjectAnswer { body, version: now })
    })
}
