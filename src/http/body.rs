//! Request bodies of the write operations: [`JsonBody`], the one extractor
//! every write takes. JSON only (`Content-Type: application/json`, a
//! `charset=utf-8` parameter accepted; else 415), at most 1 MiB (413),
//! UTF-8, an object. [`JsonBody::checked`] then fits it to the
//! operation's schema in the served document (`schema.rs`).

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::domain::FieldError;
use crate::domain::regexes::{RegexChecks, Stop};
use crate::http::error::ApiError;
use crate::http::schema;

/// The largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A write's body: a JSON object.
pub struct JsonBody {
    value: Value,
}

impl JsonBody {
    /// The body checked against `#/components/schemas/{schema}`: its
    /// members, read-only ones removed and integral floats made integers;
    /// a 400 naming every member at fault otherwise.
    /// `also` finds problems by the operation's own rules on members whose
    /// shape is right (a slug's characters, say): told with the schema's
    /// when there are some, so that one answer names every member at
    /// fault. (With none, the operation checks its rules itself.)
    pub fn checked(
        mut self,
        schema: &str,
        also: impl FnOnce(&Value) -> Vec<FieldError>,
    ) -> Result<Map<String, Value>, ApiError> {
        let mut problems = schema::check(schema, &mut self.value);
        if !problems.is_empty() {
            let extra: Vec<FieldError> = also(&self.value)
                .into_iter()
                .filter(|extra| !problems.iter().any(|p| p.field == extra.field))
                .collect();
            problems.extend(extra);
            return Err(ApiError::InvalidBody(problems));
        }
        match self.value {
            Value::Object(members) => Ok(members),
            _ => Err(body_problem("must be a JSON object")),
        }
    }

    /// A top-level member, if any: what a write reads of its body before
    /// its caller's rights are known (createProject's `organization_id`),
    /// at no cost that grows with the body.
    pub fn member(&self, name: &str) -> Option<&Value> {
        self.value.get(name)
    }

    /// SHA-256 (hex) of the body's content, whatever its spacing and the
    /// order of its members: what an idempotency key is bound to.
    pub fn digest(&self) -> String {
        let mut canonical = Vec::new();
        write_canonical(&self.value, &mut canonical);
        Sha256::digest(&canonical)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Runs a request's checks on a thread of the blocking pool, never on the
/// runtime's workers: those that compile regexes (a revision's 1,000
/// routes, a project's cache and rate-limiting rules) may take a second
/// (`domain::regexes::REGEX_BUDGET`), and the other requests go on
/// meanwhile. The checks get the request's [`RegexChecks`], which take
/// one of the process's few compiling slots before their first regex
/// (`domain::regexes::compiling_slots`), and stop before their next regex
/// when the request is given up: this future dropped because the caller
/// closed the connection or the request timed out (`transport::limits`).
/// docs/security.md, "What one request may cost".
pub async fn off_the_runtime<T: Send + 'static>(
    checks: impl FnOnce(&mut RegexChecks) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let stop = Stop::new();
    let _given_up = StopOnDrop(stop.clone());
    let mut regexes = RegexChecks::new(stop);
    tokio::task::spawn_blocking(move || checks(&mut regexes))
        .await
        .map_err(|_| ApiError::Internal)?
}

/// Stops a request's checks when the request's future is dropped (and,
/// harmlessly, when it ends).
struct StopOnDrop(Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

fn body_problem(message: &str) -> ApiError {
    ApiError::InvalidBody(vec![FieldError::new("body", message)])
}

/// Whether a `Content-Type` is JSON in UTF-8: `application/json`, with at
/// most a `charset=utf-8` parameter.
fn is_json(content_type: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(content_type) else {
        return false;
    };
    let mut parts = text.split(';').map(str::trim);
    let essence = parts.next().unwrap_or_default();
    essence.eq_ignore_ascii_case("application/json")
        && parts.all(|parameter| {
            parameter.split_once('=').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("charset")
                    && value.trim().trim_matches('"').eq_ignore_ascii_case("utf-8")
            })
        })
}

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, ApiError> {
        let headers = request.headers();
        let announced = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let too_large = announced.is_some_and(|length| length > MAX_BODY_BYTES as u64);
        let mut types = headers.get_all(CONTENT_TYPE).iter();
        match (types.next(), types.next()) {
            (Some(one), None) if is_json(one.as_bytes()) => {}
            _ => {
                // Read (within the limit) and dropped, so that the
                // connection stays open for the client's next request.
                if !too_large {
                    let _ = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES).await;
                }
                return Err(ApiError::UnsupportedMediaType);
            }
        }
        if too_large {
            return Err(ApiError::PayloadTooLarge);
        }
        // Fails past the limit, and at once for a chunked body whose chunk
        // sizes announce more (`body_framing.rs`).
        let bytes = axum::body::to_bytes(Body::new(request.into_body()), MAX_BODY_BYTES)
            .await
            .map_err(|_| ApiError::PayloadTooLarge)?;
        let text = std::str::from_utf8(&bytes).map_err(|_| body_problem("must be UTF-8 text"))?;
        let value: Value = serde_json::from_str(text).map_err(|e| {
            body_problem(&format!(
                "is not JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        if !value.is_object() {
            return Err(body_problem("must be a JSON object"));
        }
        Ok(Self { value })
    }
}

/// JSON with every object's members in name order and no spaces.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(members) => {
            let mut names: Vec<&String> = members.keys().collect();
            names.sort();
            out.push(b'{');
            for (i, name) in names.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, name).expect("writing to memory");
                out.push(b':');
                write_canonical(&members[name], out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        other => serde_json::to_writer(&mut *out, other).expect("writing to memory"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        for good in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
        ] {
            assert!(is_json(good.as_bytes()), "{good}");
        }
        for bad in [
            "text/plain",
            "application/json; charset=latin1",
            "application/jsonx",
            "application/json; q=1",
            "",
        ] {
            assert!(!is_json(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn digests_ignore_spacing_and_member_order() {
        let a = JsonBody {
            value: serde_json::from_str(r#"{"a": 1, "b": [{"y": 2, "x": 1}]}"#).unwrap(),
        };
        let b = JsonBody {
            value: serde_json::from_str(r#"{"b":[{"x":1,"y":2}],"a":1}"#).unwrap(),
        };
        let c = JsonBody {
            value: serde_json::from_str(r#"{"b":[{"x":1,"y":3}],"a":1}"#).unwrap(),
        };
        assert_eq!(a.digest(), b.digest());
        assert_ne!(a.digest(), c.digest());
    }
}
