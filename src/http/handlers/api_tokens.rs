//! The caller's own API tokens: `GET /v1/api_tokens` (listApiTokens),
//! createApiToken, getApiToken, deleteApiToken (`docs/interface.md`,
//! `docs/management.md`): any role manages its own tokens. The secret is made here, as `admin token
//! create` makes it (`NewToken::mint`), put in this one answer and nowhere
//! else: the store, the audit and the log see its digest and hint only.

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::routing::get;
use serde_json::Value;

use crate::domain::FieldError;
use crate::domain::api_token;
use crate::domain::pagination::DEFAULT_LIMIT;
use crate::domain::time::Timestamp;
use crate::http::body::JsonBody;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::operation_headers::OperationHeaders;
use crate::http::query::QueryParams;
use crate::http::respond::{object_response, token_list_response};
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::store::NewToken;
use crate::store::operations::api_tokens::{CreateApiToken, DeleteApiToken, GetApiToken};
use crate::store::{ApiTokensQuery, Listing};

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route(
            "/v1/api_tokens",
            authenticated(get(list).post(create), state),
        )
        .route(
            "/v1/api_tokens/{id}",
            authenticated(get(read).delete(delete), state),
        )
}

/// `GET /v1/api_tokens`
async fn list(
    State(app): State<AppState>,
    Caller(caller): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (params, page) = QueryParams::listing(query.as_deref(), &["name"], DEFAULT_LIMIT)?;
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

async fn create(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    body: JsonBody,
) -> Result<Response, ApiError> {
    if headers.idempotency_key.is_some() {
        // A replay would have to keep the secret.
        return Err(ApiError::InvalidHeader {
            header: "Idempotency-Key",
            rule:
                "is not accepted by createApiToken: its answer holds a secret that is never stored"
                    .into(),
        });
    }
    let members = body.checked("ApiTokenCreateInput", |_| Vec::new())?;
    let name = members
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut problems: Vec<FieldError> = api_token::validate_name(name).err().into_iter().collect();
    let expires_at = match members.get("expires_at").and_then(Value::as_str) {
        None => None,
        Some(text) => match Timestamp::parse(text) {
            Ok(at) if at > Timestamp::now() => Some(at),
            Ok(_) => {
                problems.push(FieldError::new("expires_at", "must be in the future"));
                None
            }
            Err(error) => {
                problems.push(FieldError::new("expires_at", error.to_string()));
                None
            }
        },
    };
    if !problems.is_empty() {
        return Err(ApiError::InvalidBody(problems));
    }
    let (token, secret) = NewToken::mint(caller.0.user_id.clone(), name.to_owned(), expires_at);
    let hint = token.hint.clone();
    let request = headers.write_request(&caller, "createApiToken", None);
    let mut answer = app
        .store
        .run(CreateApiToken {
            request,
            token,
            most_per_hour: app.quotas.tokens_per_user_per_hour,
        })
        .await?;
    // The stored answer holds the hint; this one answer shows the secret
    // (both are base62 with a fixed prefix: nothing to escape).
    answer.body = answer.body.replacen(
        &format!("\"token\":\"{hint}\""),
        &format!("\"token\":\"{secret}\""),
        1,
    );
    Ok(object_response(answer))
}

async fn read(
    State(app): State<AppState>,
    caller: Caller,
    _: OperationHeaders,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let read = GetApiToken {
        user_id: caller.0.user_id.clone(),
        id,
    };
    Ok(object_response(app.store.run(read).await?))
}

async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let request = headers.write_request(&caller, "deleteApiToken", None);
    let answer = app
        .store
        .run(DeleteApiToken {
            request,
            id: id.clone(),
        })
        .await?;
    // At once on this instance; others trust their cache for at most
    // `--token-cache-ttl`.
    app.auth.forget_token(&id);
    Ok(object_response(answer))
}
