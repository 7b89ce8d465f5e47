//! Identifier rules of `docs/decisions.md` section 1.

use uuid::Uuid;

/// Longest id the service accepts.
pub const MAX_ID_LEN: usize = 64;

/// Ids (`id`, `user_id`, project ids) are opaque strings of 1 to 64
/// characters from `[A-Za-z0-9_-]`.
pub fn is_valid_id(candidate: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&candidate.len())
        && candidate
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub const ID_RULE: &str = "must be 1 to 64 characters from A-Z, a-z, 0-9, '_' and '-'";

/// A new id: UUIDv7, time-ordered, lower-case hyphenated.
pub fn new_id() -> String {
    Uuid::now_v7().hyphenated().to_string()
}

/// Organization ids are UUIDs written lower-case and hyphenated. Upper-case
/// input is accepted and normalised; other UUID spellings (braces, no
/// hyphens, `urn:`) are not, so one organization has exactly one spelling.
pub fn parse_organization_id(candidate: &str) -> Option<String> {
    if candidate.len() != 36 {
        return None;
    }
    Uuid::try_parse(candidate)
        .ok()
        .map(|uuid| uuid.hyphenated().to_string())
}

pub const ORGANIZATION_ID_RULE: &str =
    "must be a UUID written with hyphens, such as 0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_rule() {
        assert!(is_valid_id("a"));
        assert!(is_valid_id("Proj_01-x"));
        assert!(is_valid_id(&"x".repeat(64)));
        for bad in ["", "with space", "slash/", "dot.", "é", &"x".repeat(65)] {
            assert!(!is_valid_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn new_ids_are_uuid_v7_and_valid() {
        let id = new_id();
        assert!(is_valid_id(&id));
        assert_eq!(Uuid::parse_str(&id).unwrap().get_version_num(), 7);
        assert_eq!(id, id.to_lowercase());
    }

    #[test]
    fn organization_ids_are_hyphenated_uuids() {
        let lower = "0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f";
        assert_eq!(parse_organization_id(lower).as_deref(), Some(lower));
        assert_eq!(
            parse_organization_id(&lower.to_uppercase()).as_deref(),
            Some(lower)
        );
        for bad in [
            "0190b7a49a6e7c3e8f001a2b3c4d5e6f",
            "{0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f}",
            "0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6g",
            "",
        ] {
            assert!(parse_organization_id(bad).is_none(), "{bad}");
        }
    }
}
