//! The api_token resource as listings show it.

use serde::Serialize;

use super::object_tag;
use super::time::Timestamp;
use super::validate::{self, FieldError};

object_tag!(ApiTokenTag, "api_token");

/// Longest token name.
pub const MAX_NAME_CHARS: usize = 200;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApiToken {
    pub object: ApiTokenTag,
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub from_browser: bool,
    /// Omitted while the token was never used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<Timestamp>,
    /// Omitted when the token never expires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// In listings the redacted hint; only the answer to creation carries
    /// the secret itself.
    pub token: String,
}

/// A token as the operator sees it: the api_token object, and when it was
/// revoked (revoked tokens leave the API's listing, not the operator's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TokenRecord {
    #[serde(flatten)]
    pub token: ApiToken,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Timestamp>,
}

pub fn validate_name(name: &str) -> Result<(), FieldError> {
    validate::text("name", name, MAX_NAME_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_timestamps_are_omitted_never_null() {
        let t = Timestamp::from_millis(1_700_000_000_000).unwrap();
        let token = ApiToken {
            object: ApiTokenTag::Tag,
            id: "t1".into(),
            user_id: "u1".into(),
            name: "ci".into(),
            from_browser: false,
            last_used_at: None,
            expires_at: None,
            created_at: t,
            updated_at: t,
            token: "pxd_****abcd".into(),
        };
        let json = serde_json::to_value(&token).unwrap();
        assert_eq!(json["object"], "api_token");
        assert!(json.get("last_used_at").is_none());
        assert!(json.get("expires_at").is_none());
        assert_eq!(json.as_object().unwrap().len(), 8);
    }
}
