//! A caller's own API tokens: the page of them, and createApiToken,
//! getApiToken, deleteApiToken (`docs/management.md`). The secret never reaches the store (only its
//! digest and hint, as `admin token create` stores them), so neither the
//! audit nor an idempotency answer can hold it.
//!
//! A token's version (its strong `ETag`) is the millisecond of its latest
//! change: `updated_at`, or `last_used_at` when later, so that the tag
//! moves whenever the answer's body does.

use super::write_request::{ObjectAnswer, WriteRequest};
use super::write_steps::{self, Change, Target};
use crate::domain::access::{self, Action, Facts, Standing};
use crate::domain::api_token::{ApiToken, ApiTokenTag};
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::{Conflict, StoreError};
use crate::store::listing::ApiTokensQuery;
use crate::store::page::JsonPage;
use crate::store::sql::db::{Db, Param, Row, exists, query_opt, to_json, transaction};
use crate::store::sql::keyset::{objects_page, timestamp, timestamp_opt};
use crate::store::tokens::NewToken;

/// getApiToken: one of the caller's tokens, not revoked, its hint in
/// `token`.
#[derive(Clone, Debug)]
pub struct GetApiToken {
    pub user_id: String,
    pub id: String,
}

/// The columns [`api_token`] reads, in its order (a macro, for `concat!`).
macro_rules! token_columns {
    () => {
        "id, user_id, name, from_browser, last_used_at, expires_at, created_at, updated_at, hint"
    };
}
pub(crate) use token_columns;

/// What a caller is told it could not find.
const KIND: &str = "api token";

fn no_token() -> StoreError {
    StoreError::NotFound {
        kind: KIND,
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

/// A page of the caller's tokens that are not revoked (of a name, when
/// asked), each an api_token object with its hint in `token`.
pub(crate) async fn page(db: &mut dyn Db, query: &ApiTokensQuery) -> Result<JsonPage, StoreError> {
    let found = api_tokens_page(db, query).await?;
    if found.count > 0 || query.page.start_key.is_none() {
        return Ok(found);
    }
    // An empty page after a start key: the end of the list, or a start key
    // that names none of the caller's tokens (of that name). Told in one
    // snapshot, with the page read again in it.
    transaction!(db, begin_read, {
        let Some(start) = &query.page.start_key else {
            return Ok(JsonPage::default());
        };
        let name = query_opt(
            db,
            "SELECT name FROM api_tokens WHERE id = ?1 AND user_id = ?2",
            &[Param::Text(start), Param::Text(&query.user_id)],
            |row| row.text(0),
        )
        .await?;
        let of_the_list = match (name, &query.name) {
            (Some(name), Some(asked)) => name == *asked,
            (found, None) => found.is_some(),
            (None, Some(_)) => false,
        };
        if !of_the_list {
            return Err(StoreError::UnknownStartKey);
        }
        api_tokens_page(db, query).await
    })
}

/// One statement (one snapshot): the start token, a revoked one too, found
/// by a subquery among the caller's (of the name asked for). The page's
/// items are api_token objects written here from their rows.
async fn api_tokens_page(db: &mut dyn Db, query: &ApiTokensQuery) -> Result<JsonPage, StoreError> {
    let page = &query.page;
    let mut params = vec![Param::Text(&query.user_id)];
    let (select, start) = match &query.name {
        None => (
            concat!(
                "SELECT ",
                token_columns!(),
                " FROM api_tokens WHERE revoked_at IS NULL AND user_id = ?1"
            ),
            "SELECT created_at, id FROM api_tokens WHERE id = ?2 AND user_id = ?1",
        ),
        Some(name) => {
            params.push(Param::Text(name));
            (
                concat!(
                    "SELECT ",
                    token_columns!(),
                    " FROM api_tokens WHERE revoked_at IS NULL AND user_id = ?1 AND name = ?2"
                ),
                "SELECT created_at, id FROM api_tokens WHERE id = ?3 AND user_id = ?1 AND name = ?2",
            )
        }
    };
    objects_page(
        db,
        (select, start),
        &["created_at", "id"],
        params,
        page,
        |row| {
            let token = api_token(row)?;
            Ok((token.id.clone(), to_json(&token)?))
        },
    )
    .await
}

/// An api_token object from a row selected with [`token_columns`] first.
pub(crate) fn api_token(row: &dyn Row) -> Result<ApiToken, StoreError> {
    Ok(ApiToken {
        object: ApiTokenTag::Tag,
        id: row.text(0)?,
        user_id: row.text(1)?,
        name: row.text(2)?,
        from_browser: row.boolean(3)?,
        last_used_at: timestamp_opt(row, 4)?,
        expires_at: timestamp_opt(row, 5)?,
        created_at: timestamp(row, 6)?,
        updated_at: timestamp(row, 7)?,
        token: row.text(8)?,
    })
}

/// Token `id` unless revoked, when the caller (`user_id`) may do `action`
/// to it: the caller's own. Another user's token is refused as an unknown
/// one, by the same statement.
async fn own_token(
    db: &mut dyn Db,
    user_id: &str,
    id: &str,
    action: Action,
) -> Result<ApiToken, StoreError> {
    let found = query_opt(
        db,
        concat!(
            "SELECT ",
            token_columns!(),
            " FROM api_tokens WHERE id = ?1 AND revoked_at IS NULL"
        ),
        &[Param::Text(id)],
        api_token,
    )
    .await?;
    let standing = match &found {
        Some(token) if token.user_id == user_id => Standing::Owner,
        _ => Standing::Stranger,
    };
    access::decide(action, Facts::live(standing)).map_err(|r| StoreError::refused(r, KIND))?;
    found.ok_or_else(no_token)
}

operation!(GetApiToken => get, Read, "get_api_token" -> ObjectAnswer);

async fn get(db: &mut dyn Db, read: &GetApiToken) -> Result<ObjectAnswer, StoreError> {
    let token = own_token(db, &read.user_id, &read.id, Action::ReadOwn).await?;
    answer(&token)
}

/// createApiToken: stores `token` (its digest and hint; the secret is the
/// caller's to show) and answers it with its hint in `token`.
#[derive(Clone, Debug)]
pub struct CreateApiToken {
    pub request: WriteRequest,
    pub token: NewToken,
    /// Tokens the user may create in an hour (`--tokens-per-user-per-hour`).
    pub most_per_hour: u32,
}

operation!(CreateApiToken => create, Write, "create_api_token" -> ObjectAnswer);

async fn create(
    db: &mut dyn Db,
    CreateApiToken {
        request,
        token,
        most_per_hour,
    }: &CreateApiToken,
) -> Result<ObjectAnswer, StoreError> {
    transaction!(db, begin_write, {
        let target = Target::OwnTokens;
        write_steps::authorize(
            db,
            request,
            Action::ChangeOwnTokens,
            target,
            token.created_at,
        )
        .await?;
        within_hourly_bound(db, &token.user_id, *most_per_hour, token.created_at).await?;
        let stored = insert_token(db, token).await?;
        let answer = answer(&stored)?;
        write_steps::record(
            db,
            request,
            token.created_at,
            Change {
                object: "api_token",
                object_id: &token.id,
                version_before: None,
                version_after: Some(answer.version),
                feed: None,
            },
        )
        .await?;
        Ok(answer)
    })
}

/// Refuses a new token when the user created `most` in the last hour,
/// revoked ones included (creating and revoking again and again would
/// make a fresh rate-limit bucket each time), under the user's row lock
/// ([`write_steps::lock_user`]).
async fn within_hourly_bound(
    db: &mut dyn Db,
    user_id: &str,
    most: u32,
    now: Timestamp,
) -> Result<(), StoreError> {
    write_steps::lock_user(db, user_id).await?;
    match write_steps::hourly_bound_full(
        db,
        "SELECT created_at FROM api_tokens WHERE user_id = ?1 AND created_at > ?2
          ORDER BY created_at DESC LIMIT 1 OFFSET ?3",
        user_id,
        most,
        now,
    )
    .await?
    {
        None => Ok(()),
        Some(retry_after_seconds) => Err(StoreError::TooManyNewTokens {
            most,
            retry_after_seconds,
        }),
    }
}

/// deleteApiToken: revokes one of the caller's tokens.
#[derive(Clone, Debug)]
pub struct DeleteApiToken {
    pub request: WriteRequest,
    pub id: String,
}

operation!(DeleteApiToken => delete, Write, "delete_api_token" -> ObjectAnswer);

async fn delete(
    db: &mut dyn Db,
    DeleteApiToken { request, id }: &DeleteApiToken,
) -> Result<ObjectAnswer, StoreError> {
    let user_id = &request.actor.user_id;
    transaction!(db, begin_write, {
        let target = Target::Token(id);
        write_steps::authorize(
            db,
            request,
            Action::ChangeOwnTokens,
            target,
            Timestamp::now(),
        )
        .await?;
        let token = own_token(db, user_id, id, Action::ChangeOwnTokens).await?;
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
        write_steps::record(
            db,
            request,
            at,
            Change {
                object: "api_token",
                object_id: id,
                version_before: Some(before),
                version_after: Some(now),
                feed: None,
            },
        )
        .await?;
        let body = to_json(&serde_json::json!({"object": "api_token", "id": id, "deleted": true}))?;
        Ok(ObjectAnswer { body, version: now })
    })
}

/// Stores a new token inside the caller's transaction; answers the
/// api_token object with its hint in `token`.
pub(crate) async fn insert_token(
    db: &mut dyn Db,
    token: &NewToken,
) -> Result<ApiToken, StoreError> {
    if !exists(
        db,
        "SELECT 1 FROM users WHERE id = ?1",
        &[Param::Text(&token.user_id)],
    )
    .await?
    {
        return Err(StoreError::NotFound {
            kind: "user",
            id: token.user_id.clone(),
        });
    }
    db.execute(
        "INSERT INTO api_tokens
           (id, user_id, name, from_browser, digest, hint, created_at, updated_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
        &[
            Param::Text(&token.id),
            Param::Text(&token.user_id),
            Param::Text(&token.name),
            Param::Bool(token.from_browser),
            Param::Bytes(&token.digest.0),
            Param::Text(&token.hint),
            Param::Int(token.created_at.as_millis()),
            Param::OptInt(token.expires_at.map(Timestamp::as_millis)),
        ],
    )
    .await
    .map_err(|e| {
        e.conflict_named(|| Conflict::Exists {
            kind: "api token",
            id: token.id.clone(),
        })
    })?;
    Ok(ApiToken {
        object: ApiTokenTag::Tag,
        id: token.id.clone(),
        user_id: token.user_id.clone(),
        name: token.name.clone(),
        from_browser: token.from_browser,
        last_used_at: None,
        expires_at: token.expires_at,
        created_at: token.created_at,
        updated_at: token.created_at,
        token: token.hint.clone(),
    })
}
