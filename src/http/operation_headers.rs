//! What every management operation shares besides its body (`body.rs`):
//! the request headers it reads (`api-version`, `If-Match`,
//! `Idempotency-Key`), the store's [`WriteRequest`] made from them and the
//! caller, and the single-object answer with its strong `ETag`.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};

use crate::domain::token;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::observe::current_request_id;
use crate::store::operations::write_request::{Actor, IdempotencyKey, IfMatch, WriteRequest};

const API_VERSION: &str = "api-version";
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The headers of a management operation: `api-version` checked (`1` or
/// absent), `If-Match` and `Idempotency-Key` read.
pub struct OperationHeaders {
    pub if_match: Option<IfMatch>,
    /// The key as sent (1 to 255 printable characters).
    pub idempotency_key: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for OperationHeaders {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let headers = &parts.headers;
        match only(headers, API_VERSION)? {
            None => {}
            Some(version) if version.as_bytes() == b"1" => {}
            Some(_) => return Err(header_problem(API_VERSION, "must be 1 (or absent)")),
        }
        let if_match = headers
            .get_all(header::IF_MATCH)
            .iter()
            .next()
            .map(|_| if_match(headers))
            .transpose()?;
        let idempotency_key = only(headers, IDEMPOTENCY_KEY)?
            .map(idempotency_key)
            .transpose()?;
        Ok(Self {
            if_match,
            idempotency_key,
        })
    }
}

/// An `Idempotency-Key` fit to be stored (for a day): 1 to 255 printable
/// ASCII characters, without an API token's prefix (a token sent there by
/// mistake is refused, not kept).
fn idempotency_key(value: &HeaderValue) -> Result<String, ApiError> {
    let key = value.as_bytes();
    if token::may_hold_a_token(key) {
        return Err(header_problem(
            "Idempotency-Key",
            "must not hold an API token (it holds its prefix)",
        ));
    }
    if (1..=255).contains(&key.len()) && key.iter().all(|b| (0x20..0x7f).contains(b)) {
        Ok(String::from_utf8_lossy(key).into_owned())
    } else {
        Err(header_problem(
            "Idempotency-Key",
            "must be 1 to 255 printable ASCII characters",
        ))
    }
}

fn header_problem(header: &'static str, rule: &str) -> ApiError {
    ApiError::InvalidHeader {
        header,
        rule: rule.to_owned(),
    }
}

/// The one value of a header that may appear once.
fn only<'a>(
    headers: &'a HeaderMap,
    name: &'static str,
) -> Result<Option<&'a HeaderValue>, ApiError> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (first, None) => Ok(first),
        _ => Err(header_problem(name, "must be sent once")),
    }
}

/// Every `If-Match` value, joined: `*`, or the versions its strong tags
/// name. A weak tag or another's never matches (strong comparison, RFC
/// 9110 section 13.1.1). `*` stands alone (`If-Match = "*" /
/// #entity-tag`): beside any other member, in one header or across
/// several, it is a 400 naming `If-Match`, never a match-any.
fn if_match(headers: &HeaderMap) -> Result<IfMatch, ApiError> {
    let mut versions = Vec::new();
    let (mut any, mut members) = (false, 0);
    for value in headers.get_all(header::IF_MATCH) {
        for tag in value
            .as_bytes()
            .split(|&b| b == b',')
            .map(<[u8]>::trim_ascii)
            .filter(|tag| !tag.is_empty())
        {
            members += 1;
            if tag == b"*" {
                any = true;
            } else if let Some(version) = version_of(tag) {
                versions.push(version);
            }
        }
    }
    match (any, members) {
        (true, 1) => Ok(IfMatch::Any),
        (true, _) => Err(header_problem(
            "If-Match",
            "must be * alone or a list of entity tags, not both",
        )),
        (false, _) => Ok(IfMatch::Versions(versions)),
    }
}

fn version_of(tag: &[u8]) -> Option<i64> {
    let digits = tag.strip_prefix(b"\"v")?.strip_suffix(b"\"")?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

impl OperationHeaders {
    /// The store's view of a write by `caller`: `digest` is the body's,
    /// given by operations that take an idempotency key (the others
    /// ignore the header).
    pub fn write_request(
        &self,
        caller: &Caller,
        operation: &'static str,
        digest: Option<String>,
    ) -> WriteRequest {
        WriteRequest {
            actor: Actor {
                user_id: caller.0.user_id.clone(),
                token_id: caller.0.token_id.clone(),
                request_id: current_request_id().unwrap_or_default(),
            },
            operation,
            if_match: self.if_match.clone(),
            idempotency: digest.and_then(|digest| {
                self.idempotency_key
                    .clone()
                    .map(|key| IdempotencyKey { key, digest })
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::respond::strong_tag;

    #[test]
    fn if_match_reads_strong_tags_only() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::IF_MATCH,
            HeaderValue::from_static("\"v3\", W/\"v4\""),
        );
        headers.append(header::IF_MATCH, HeaderValue::from_static("\"x\",\"v12\""));
        assert_eq!(
            if_match(&headers).ok(),
            Some(IfMatch::Versions(vec![3, 12]))
        );
        assert_eq!(version_of(strong_tag(41).as_bytes()), Some(41));
    }
}
