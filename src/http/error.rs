//! Every error answer, in the one body shape of `docs/decisions.md` section 3:
//! `{"error": {"type", "message", "params"?, "code"?}}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::auth::AuthError;
use crate::domain::access::Refusal;
use crate::domain::token;
use crate::http::observe::current_request_id;
use crate::http::respond::json_body;
use crate::store::{Conflict, StoreError};

#[derive(Debug)]
pub enum ApiError {
    /// 400: a query or path parameter is wrong. `rule` completes a sentence
    /// that starts with the parameter's name.
    InvalidParameter { param: String, rule: String },
    /// 400: a request body's members are wrong; every one is named.
    InvalidBody(Vec<crate::domain::FieldError>),
    /// 400: the stored revision an activation names breaks checks made
    /// after it was stored; every member at fault is named, by its path in
    /// the revision.
    StoredBeforeRules {
        revision: u32,
        problems: Vec<crate::domain::FieldError>,
    },
    /// 400: a request header is wrong (`api-version`, `Idempotency-Key`...).
    InvalidHeader { header: &'static str, rule: String },
    /// 403: the caller may not do this.
    Forbidden(String),
    /// 409: the write would break a uniqueness rule, or reuses an
    /// idempotency key with another body (`code`).
    Conflict {
        message: String,
        code: Option<&'static str>,
    },
    /// 412: `If-Match` does not hold the object's version.
    PreconditionFailed,
    /// 413: the request body is over the limit.
    PayloadTooLarge,
    /// 415: the request body is not JSON.
    UnsupportedMediaType,
    /// 401, with `WWW-Authenticate: Bearer`.
    Unauthenticated(String),
    /// 404: unknown route, or an object the caller cannot see.
    NotFound(String),
    /// 405; the router adds `Allow`.
    MethodNotAllowed,
    /// 414.
    UriTooLong,
    /// 431.
    HeadersTooLarge,
    /// 400: the bytes are not an HTTP/1.1 request (answered by the
    /// connection layer, `http::client_stream`).
    MalformedRequest,
    /// 429: the caller's token went over its rate, or the client's address
    /// failed to authenticate too often. Carries `Retry-After` (whole
    /// seconds, at least 1) and `"code": "rate_limit"`.
    RateLimited {
        retry_after_seconds: u64,
        by: Throttle,
    },
    /// 503: the store did not answer (in time). Carries `Retry-After`.
    Unavailable,
    /// 500.
    Internal,
}

impl ApiError {
    pub fn invalid(param: impl Into<String>, rule: impl Into<String>) -> Self {
        Self::InvalidParameter {
            param: param.into(),
            rule: rule.into(),
        }
    }

    /// The answer to an action the access rule refused
    /// (`domain::access`): 401 for a token that no longer authenticates
    /// anyone, 404 naming `kind` for an object the caller may not see (as
    /// for one that does not exist), 403 naming the role that may not.
    pub fn refused(refusal: Refusal, kind: &'static str) -> Self {
        match refusal {
            Refusal::Token(state) => Self::Unauthenticated(state.refusal().into()),
            Refusal::NotFound => Self::no_such(kind),
            Refusal::Forbidden { role, may_not } => {
                Self::Forbidden(format!("the {} role may not {may_not}", role.as_str()))
            }
        }
    }

    /// 404 for an object that does not exist or the caller may not see.
    /// The id is not repeated: it is the caller's input, which may be
    /// anything, a pasted secret included.
    pub fn no_such(kind: &str) -> Self {
        Self::NotFound(format!("no such {kind}"))
    }

    /// `start_key` never named an item of the list as the caller sees it.
    pub fn unknown_start_key() -> Self {
        Self::invalid("start_key", "does not name an item of this list")
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::InvalidParameter { .. }
            | Self::InvalidBody(_)
            | Self::StoredBeforeRules { .. }
            | Self::InvalidHeader { .. } => StatusCode::BAD_REQUEST,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::UriTooLong => StatusCode::URI_TOO_LONG,
            Self::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::MalformedRequest => StatusCode::BAD_REQUEST,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_type(&self) -> &'static str {
        match self {
            Self::InvalidParameter { .. }
            | Self::InvalidBody(_)
            | Self::StoredBeforeRules { .. }
            | Self::InvalidHeader { .. }
            | Self::PayloadTooLarge
            | Self::UnsupportedMediaType
            | Self::MethodNotAllowed
            | Self::UriTooLong
            | Self::HeadersTooLarge
            | Self::MalformedRequest
            | Self::RateLimited { .. } => "invalid_request_error",
            Self::Unauthenticated(_) => "authentication_error",
            Self::NotFound(_) => "not_found_error",
            Self::Forbidden(_) => "forbidden_error",
            Self::Conflict { .. } | Self::PreconditionFailed => "conflict_error",
            Self::Unavailable | Self::Internal => "api_error",
        }
    }

    fn message(&self) -> String {
        match self {
            Self::InvalidParameter { param, rule } => format!("{param} {rule}"),
            Self::InvalidBody(problems) => match problems.as_slice() {
                [one] => format!("{} {}", one.field, one.message),
                _ => format!(
                    "{} members of the request body are wrong; see params",
                    problems.len()
                ),
            },
            Self::StoredBeforeRules { revision, problems } => {
                let broken = match problems.as_slice() {
                    [one] => format!("{} {}", one.field, one.message),
                    _ => format!("{} of its members break them; see params", problems.len()),
                };
                format!(
                    "revision {revision} cannot be activated: it was stored before the checks it breaks (create a revision that passes them): {broken}"
                )
            }
            Self::InvalidHeader { header, rule } => format!("{header} {rule}"),
            Self::Unauthenticated(message) | Self::NotFound(message) | Self::Forbidden(message) => {
                message.clone()
            }
            Self::Conflict { message, .. } => message.clone(),
            Self::PreconditionFailed => {
                "If-Match does not match the object's current ETag; read it again".into()
            }
            Self::PayloadTooLarge => "the request body is larger than 1 MiB".into(),
            Self::UnsupportedMediaType => {
                "the request body must be JSON (Content-Type: application/json)".into()
            }
            Self::MethodNotAllowed => "this path does not answer this method; see Allow".into(),
            Self::UriTooLong => "the request URI is too long".into(),
            Self::HeadersTooLarge => "the request headers are too large".into(),
            Self::MalformedRequest => {
                "the request is not valid HTTP/1.1 (its request line or a header is malformed)"
                    .into()
            }
            Self::RateLimited {
                retry_after_seconds,
                by: Throttle::Token,
            } => format!("too many requests with this API token; retry in {retry_after_seconds} s"),
            Self::RateLimited {
                retry_after_seconds,
                by: Throttle::FailedAuthentications,
            } => format!(
                "too many failed authentications from this address; retry in {retry_after_seconds} s"
            ),
            Self::RateLimited {
                retry_after_seconds,
                by: Throttle::Follows(crate::quotas::FollowRefusal::Token(most)),
            } => format!(
                "this API token holds its most change feed streams and long polls open at once \
                 ({most}); close one, then retry in {retry_after_seconds} s"
            ),
            Self::RateLimited {
                retry_after_seconds,
                by: Throttle::Follows(crate::quotas::FollowRefusal::User(most)),
            } => format!(
                "this user holds their most change feed streams and long polls open at once \
                 ({most}, whatever the token); close one, then retry in {retry_after_seconds} s"
            ),
            Self::RateLimited {
                retry_after_seconds,
                by: Throttle::NewTokens(most),
            } => format!(
                "this user created their most API tokens in an hour ({most}); retry in \
                 {retry_after_seconds} s"
            ),
            Self::RateLimited {
                retry_after_seconds,
                by: Throttle::NewOrganizations(most),
            } => format!(
                "this user created their most organizations in an hour ({most}); retry in \
                 {retry_after_seconds} s"
            ),
            Self::RateLimited {
                retry_after_seconds,
                by: Throttle::NewInvitations(most),
            } => format!(
                "this organization created its most invitations in an hour ({most}, deleted and \
                 accepted ones included); retry in {retry_after_seconds} s"
            ),
            Self::Unavailable => "the service cannot reach its store; try again shortly".into(),
            Self::Internal => "an internal error occurred".into(),
        }
    }
}

/// What a 429 limits.
#[derive(Debug, Clone, Copy)]
pub enum Throttle {
    /// The caller's token's rate.
    Token,
    /// The client address's failed authentications.
    FailedAuthentications,
    /// The change feed's streams and long polls open at once, by the
    /// caller's token or its user (`quotas.rs`).
    Follows(crate::quotas::FollowRefusal),
    /// The API tokens the user created in the last hour.
    NewTokens(u32),
    /// The organizations the user created in the last hour.
    NewOrganizations(u32),
    /// The invitations the organization created in the last hour.
    NewInvitations(u32),
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    #[serde(rename = "type")]
    error_type: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<Vec<ParamError<'a>>>,
    /// A finer reason beside `type`, which generated clients check.
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
}

#[derive(Serialize)]
struct ParamError<'a> {
    param: &'a str,
    message: &'a str,
}

impl ApiError {
    /// The JSON error body (`docs/decisions.md` section 3).
    pub fn body(&self) -> Vec<u8> {
        let message = self.message();
        let params = match self {
            Self::InvalidParameter { param, rule } => Some(vec![ParamError {
                param,
                message: rule,
            }]),
            Self::InvalidHeader { header, rule } => Some(vec![ParamError {
                param: header,
                message: rule,
            }]),
            Self::InvalidBody(problems) | Self::StoredBeforeRules { problems, .. } => Some(
                problems
                    .iter()
                    .map(|problem| ParamError {
                        param: &problem.field,
                        message: &problem.message,
                    })
                    .collect(),
            ),
            _ => None,
        };
        let body = ErrorBody {
            error: ErrorDetail {
                error_type: self.error_type(),
                message: &message,
                params,
                code: match self {
                    Self::RateLimited { .. } => Some("rate_limit"),
                    Self::PreconditionFailed => Some("precondition_failed"),
                    Self::Conflict { code, .. } => *code,
                    _ => None,
                },
            },
        };
        let text = serde_json::to_string(&body).expect("an error body serializes");
        // Member and parameter names, and any value an error repeats, are
        // the caller's: a token sent there by mistake is not sent back.
        token::redact(&text).into_owned().into_bytes()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = json_body(self.status(), self.body().into());
        let headers = response.headers_mut();
        match self {
            Self::Unauthenticated(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::Unavailable => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            Self::RateLimited {
                retry_after_seconds,
                ..
            } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_seconds));
            }
            _ => {}
        }
        response
    }
}

impl From<AuthError> for ApiError {
    fn from(error: AuthError) -> Self {
        match error {
            AuthError::Store(store) => store.into(),
            AuthError::Throttled {
                retry_after_seconds,
            } => Self::RateLimited {
                retry_after_seconds,
                by: Throttle::FailedAuthentications,
            },
            other => Self::Unauthenticated(other.to_string()),
        }
    }
}

/// Store faults are logged here, where they turn into a bare 500/503: the
/// client learns nothing of their cause.
/// Checks stopped because the request was given up (its caller went
/// away, or it timed out): nobody reads this answer.
impl From<crate::domain::regexes::Stopped> for ApiError {
    fn from(_: crate::domain::regexes::Stopped) -> Self {
        Self::Unavailable
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::UnknownStartKey => Self::unknown_start_key(),
            StoreError::NotFound { kind, .. } => Self::no_such(kind),
            StoreError::Unavailable(cause) => {
                tracing::warn!(%cause, request_id = current_request_id(), "store unavailable");
                Self::Unavailable
            }
            // Logged once for the whole outage, where it is tracked.
            StoreError::Down => Self::Unavailable,
            StoreError::Internal(cause) => {
                tracing::error!(%cause, request_id = current_request_id(), "store fault");
                Self::Internal
            }
            StoreError::Conflict(Conflict::Rollout(refusal)) => Self::Conflict {
                code: Some(refusal.code()),
                message: refusal.to_string(),
            },
            StoreError::Conflict(conflict) => Self::Conflict {
                message: conflict_message(conflict),
                code: None,
            },
            StoreError::Invalid(problem) => Self::InvalidBody(vec![problem]),
            StoreError::Refused { refusal, kind } => Self::refused(refusal, kind),
            StoreError::TooManyNewTokens {
                most,
                retry_after_seconds,
            } => Self::RateLimited {
                retry_after_seconds,
                by: Throttle::NewTokens(most),
            },
            StoreError::TooManyNewOrganizations {
                most,
                retry_after_seconds,
            } => Self::RateLimited {
                retry_after_seconds,
                by: Throttle::NewOrganizations(most),
            },
            StoreError::TooManyNewInvitations {
                most,
                retry_after_seconds,
            } => Self::RateLimited {
                retry_after_seconds,
                by: Throttle::NewInvitations(most),
            },
            StoreError::VersionMismatch => Self::PreconditionFailed,
            StoreError::IdempotencyKeyReused => Self::Conflict {
                message: "this Idempotency-Key was used with another request body".into(),
                code: Some("idempotency_key_reused"),
            },
            StoreError::Retry => {
                tracing::error!(
                    request_id = current_request_id(),
                    "a write met a concurrent one twice"
                );
                Self::Internal
            }
        }
    }
}

/// The words of a 409 for what a write conflicted with in the store.
fn conflict_message(conflict: Conflict) -> String {
    match conflict {
        Conflict::SlugTaken { slug } => {
            format!("the organization already has a project with the slug {slug}")
        }
        Conflict::EdgeReportsFull { most } => format!(
            "the project keeps at most {most} edge reports and too few are stale to make room: \
             remove one first"
        ),
        Conflict::NoRevisionNumberLeft => "the project has no revision number left".into(),
        // The caller may read the other project: it is of its organization.
        Conflict::DomainInOrganization { name, project_id } => format!(
            "{name} is already a domain of project {project_id} of this organization: \
             a name is in one project of an organization"
        ),
        Conflict::DomainVerifiedElsewhere { name } => format!(
            "{name} is verified by another organization: it routes there until its DNS \
             record there is gone"
        ),
        Conflict::DeactivatedWhileChecked { revision } => format!(
            "revision {revision} was deactivated while this request was being checked; send it again"
        ),
        Conflict::Exists { kind, id } => format!("{kind} {id} already exists"),
        // The database's own description names its tables and columns:
        // logged, never answered.
        Conflict::Unique(cause) => {
            tracing::warn!(%cause, request_id = current_request_id(), "unnamed uniqueness conflict");
            "the write conflicts with an object that exists".into()
        }
        Conflict::OrganizationExists { .. } => "the organization exists already".into(),
        Conflict::OrganizationSlugTaken { slug } => {
            format!("another organization has the slug {slug}: slugs are unique across the service")
        }
        Conflict::OrganizationHasProjects { projects } => format!(
            "the organization has {projects} project{}: delete {} first",
            if projects == 1 { "" } else { "s" },
            if projects == 1 { "it" } else { "each" }
        ),
        Conflict::Rollout(refusal) => refusal.to_string(),
        Conflict::LastAdmin => "the organization's last admin cannot leave, be removed or become \
             editor or member; make another member admin first"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A uniqueness conflict no operation named is answered in general
    /// words: the driver's description names the database's tables and
    /// columns, which no answer shows.
    #[test]
    fn an_unnamed_conflict_shows_nothing_of_the_database() {
        let cause = "UNIQUE constraint failed: projects.organization_id, projects.slug";
        let answer = ApiError::from(StoreError::Conflict(Conflict::Unique(cause.into())));
        assert_eq!(answer.status(), StatusCode::CONFLICT);
        let message = conflict_message(Conflict::Unique(cause.into()));
        for leak in ["UNIQUE", "projects", "slug", "constraint"] {
            assert!(!message.contains(leak), "{message}");
        }
    }
}
