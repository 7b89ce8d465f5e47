//! Invitations (docs/teams.md, "Invitations" and "Accepting one"):
//! `GET/POST /v1/invitations` (listInvitations, createInvitation),
//! `GET/DELETE /v1/invitations/{id}` (getInvitation, deleteInvitation),
//! for the organization's admins, and proxydeck's own
//! `POST /v1/invitations/accept` (acceptInvitation), reachable without
//! `Authorization`.
//!
//! The secret is made here, stored as its digest, and shown in one place
//! only: the email, or createInvitation's answer when no email was sent.
//! Neither it nor the email reaches a log line, the audit or a kept
//! idempotency answer.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::domain::FieldError;
use crate::domain::directory::Role;
use crate::domain::ids;
use crate::domain::pagination::DEFAULT_LIMIT;
use crate::domain::teams::{self, Delivery};
use crate::domain::time::Timestamp;
use crate::http::body::JsonBody;
use crate::http::caller::{self, Caller, MaybeCaller};
use crate::http::error::ApiError;
use crate::http::observe::current_request_id;
use crate::http::operation_headers::OperationHeaders;
use crate::http::query::QueryParams;
use crate::http::respond::{json_body, list_response, object_response};
use crate::http::routes::{Routes, authenticated, get_only};
use crate::http::state::AppState;
use crate::mail::InvitationEmail;
use crate::store::operations::invitations::{
    AcceptInvitation, AcceptRefusal, CreateInvitation, DeleteInvitation, GetInvitation,
    ListInvitations, NewInvitation, NewUser,
};
use crate::store::operations::memberships::Me;
use crate::store::operations::write_request::ObjectAnswer;
use crate::store::{self, NewToken, StoreError};

pub fn routes(state: &AppState) -> Routes {
    Routes::new()
        .route(
            "/v1/invitations",
            authenticated(get(list).post(create), state),
        )
        .route(
            "/v1/invitations/accept",
            get_only(post(accept).route_layer(middleware::from_fn_with_state(
                state.clone(),
                caller::authenticate_if_given,
            ))),
        )
        .route(
            "/v1/invitations/{id}",
            authenticated(get(read).delete(delete), state),
        )
}

/// `GET /v1/invitations`
async fn list(
    State(app): State<AppState>,
    Caller(caller): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (params, page) =
        QueryParams::listing(query.as_deref(), &["organization_id"], DEFAULT_LIMIT)?;
    let organization_id = params
        .get("organization_id")
        .map(|raw| {
            ids::parse_organization_id(raw)
                .ok_or_else(|| ApiError::invalid("organization_id", ids::ORGANIZATION_ID_RULE))
        })
        .transpose()?;
    let page = app
        .store
        .run(ListInvitations {
            user_id: caller.user_id.clone(),
            organization_id,
            page,
        })
        .await?;
    Ok(list_response("/v1/invitations", page))
}

/// `POST /v1/invitations`
async fn create(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    request_headers: HeaderMap,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let digest = body.digest();
    let members = body.checked("InvitationCreateInput", |_| Vec::new())?;
    let text = |name: &str| {
        members
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let mut problems = Vec::new();
    let organization_id = ids::parse_organization_id(text("organization_id"));
    if organization_id.is_none() {
        problems.push(FieldError::new(
            "organization_id",
            ids::ORGANIZATION_ID_RULE,
        ));
    }
    let email = text("email");
    problems.extend(teams::check_email("email", email).err());
    let role = Role::parse(text("role"));
    if role.is_none() {
        problems.push(FieldError::new("role", "must be admin, editor or member"));
    }
    let (Some(organization_id), Some(role), true) = (organization_id, role, problems.is_empty())
    else {
        return Err(ApiError::InvalidBody(problems));
    };
    let options = &app.invitations.options;
    let now = Timestamp::now();
    let ttl = i64::try_from(options.ttl.as_secs()).unwrap_or(i64::MAX);
    let expires_at = now
        .plus_seconds(ttl)
        .ok_or_else(|| ApiError::invalid("--invitation-ttl", "is too long"))?;
    let secret = teams::new_secret();
    let invitation = NewInvitation {
        id: ids::new_id(),
        organization_id: organization_id.clone(),
        email: email.to_owned(),
        role,
        digest: teams::digest(&secret),
        created_at: now,
        expires_at,
    };
    let invitation_id = invitation.id.clone();
    let request = headers.write_request(&caller, "createInvitation", Some(digest));
    let created = app
        .store
        .run(CreateInvitation {
            request,
            invitation,
            most_per_hour: options.per_organization_per_hour,
        })
        .await?;
    if created.replayed {
        // The kept answer: the invitation, never its secret.
        return Ok(object_response(created.answer));
    }
    let base = match &options.public_url {
        Some(url) => url.clone(),
        None => own_origin(&request_headers),
    };
    let link = teams::accept_url(&base, &secret);
    let delivery = match &app.invitations.mailer {
        None => Delivery::Link,
        Some(mailer) => {
            let email_text = InvitationEmail {
                inviter: &created.inviter_name,
                organization: &created.organization_name,
                role,
                link: &link,
                expires_at,
            };
            match mailer.send(email, &email_text).await {
                Ok(()) => Delivery::Email,
                Err(why) => {
                    tracing::warn!(
                        invitation_id,
                        organization_id,
                        reason = why.as_str(),
                        request_id = current_request_id(),
                        "the invitation's email was not sent: the answer carries its link"
                    );
                    Delivery::Link
                }
            }
        }
    };
    let mut answer: Value = serde_json::from_str(&created.answer.body).map_err(|_| {
        tracing::error!("a stored invitation answer is not JSON");
        ApiError::Internal
    })?;
    answer["delivery"] = json!(delivery);
    if delivery == Delivery::Link {
        answer["accept_url"] = json!(link);
        answer["secret"] = json!(secret);
    }
    Ok(object_response(ObjectAnswer {
        body: answer.to_string(),
        version: created.answer.version,
    }))
}

/// The request's own origin, as the link's base when `--public-url` is not
/// set: `http://` and its `Host`.
fn own_origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .filter(|host| {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// `GET /v1/invitations/{id}`
async fn read(
    State(app): State<AppState>,
    caller: Caller,
    _: OperationHeaders,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let read = GetInvitation {
        user_id: caller.0.user_id.clone(),
        id,
    };
    Ok(object_response(app.store.run(read).await?))
}

/// `DELETE /v1/invitations/{id}`
async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    headers: OperationHeaders,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let request = headers.write_request(&caller, "deleteInvitation", None);
    let answer = app.store.run(DeleteInvitation { request, id }).await?;
    Ok(object_response(answer))
}

/// `POST /v1/invitations/accept`
async fn accept(
    State(app): State<AppState>,
    who: MaybeCaller,
    headers: OperationHeaders,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let members = body.checked("InvitationAcceptInput", |_| Vec::new())?;
    let text = |name: &str| members.get(name).and_then(Value::as_str);
    let secret = text("secret").unwrap_or_default();
    let email = text("email").unwrap_or_default();
    let mut problems: Vec<FieldError> = teams::check_email("email", email)
        .err()
        .into_iter()
        .collect();
    let name = match text("name") {
        Some(name) => {
            let chars = name.chars().count();
            if chars == 0 || chars > teams::MAX_NAME_CHARS || name.chars().any(char::is_control) {
                problems.push(FieldError::new(
                    "name",
                    "must be 1 to 100 characters, none a control character",
                ));
            }
            name
        }
        None => teams::default_name(email),
    };
    if !problems.is_empty() {
        return Err(ApiError::InvalidBody(problems));
    }
    let not_acceptable = || {
        who.record_failure(&app);
        ApiError::NotFound(teams::NOT_ACCEPTABLE.into())
    };
    // A mistyped secret is refused without a look-up.
    if !teams::is_secret(secret) {
        return Err(not_acceptable());
    }
    let user_id = ids::new_id();
    let (token, token_secret) = NewToken::mint(user_id.clone(), "console".into(), None);
    let caller_request = who
        .caller
        .as_ref()
        .map(|caller| headers.write_request(caller, "acceptInvitation", None));
    let outcome = app
        .store
        .run(AcceptInvitation {
            digest: teams::digest(secret),
            email: email.to_owned(),
            caller: caller_request,
            new_user: NewUser {
                id: user_id,
                name: name.to_owned(),
                token,
            },
            request_id: current_request_id().unwrap_or_default(),
        })
        .await;
    let accepted = match outcome {
        Ok(Ok(accepted)) => accepted,
        Ok(Err(AcceptRefusal::NotAcceptable)) | Err(StoreError::NotFound { .. }) => {
            return Err(not_acceptable());
        }
        Ok(Err(AcceptRefusal::AccountExists)) => {
            return Err(ApiError::Conflict {
                message: teams::ACCOUNT_EXISTS.into(),
                code: None,
            });
        }
        Err(other) => return Err(other.into()),
    };
    if let Some(caller) = &who.caller {
        app.auth.forget_user(&caller.0.user_id);
    }
    let read_user = app.store.run(Me {
        user_id: accepted.user_id.clone(),
    });
    let user = if app.store.follows_callers() {
        store::for_caller(accepted.user_id.as_str().into(), read_user).await?
    } else {
        read_user.await?
    };
    let mut answer = json!({
        "object": "invitation_acceptance",
        "organization_id": accepted.organization_id,
        "role": accepted.role,
        "user": user,
    });
    if let Some(mut token) = accepted.token {
        // The stored token holds the hint; this one answer the secret.
        token.token = token_secret;
        answer["api_token"] = json!(token);
    }
    Ok(json_body(StatusCode::OK, answer.to_string().into()))
}
