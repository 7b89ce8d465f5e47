//! Invitations (docs/teams.md, "Invitations"): their secret, their answer
//! object, the email they are bound to, and the link that accepts one.
//! Nothing here reads the store or knows HTTP.

use email_address::{EmailAddress, Options};
use serde::Serialize;

use super::directory::Role;
use super::object_tag;
use super::time::Timestamp;
use super::token::{self, INVITATION_PREFIX, TokenDigest};
use super::validate::FieldError;

object_tag!(InvitationTag, "invitation");

/// Longest email address (RFC 5321's path limit, as users' emails).
pub const MAX_EMAIL_LEN: usize = 254;
/// Longest name a new user gives itself when it accepts.
pub const MAX_NAME_CHARS: usize = 100;
/// How long an invitation is valid by default (`--invitation-ttl`).
pub const DEFAULT_TTL_SECONDS: u64 = 7 * 24 * 3600;
/// Invitations one organization may create in an hour by default
/// (`--invitations-per-organization-per-hour`).
pub const DEFAULT_PER_ORGANIZATION_PER_HOUR: u32 = 20;
/// The one answer to an invitation that cannot be accepted, whatever the
/// reason (deleted, used, expired, unknown, another email).
pub const NOT_ACCEPTABLE: &str = "this invitation cannot be accepted: it may have been revoked, \
     used or expired, or it was sent to another email address; ask for a new one";
/// The answer to an acceptance without `Authorization` for an email that
/// has an account.
pub const ACCOUNT_EXISTS: &str =
    "an account with this email exists: sign in and accept the invitation again";

/// A new invitation's secret: `pxi_` + 32 random base62 characters + a
/// 6-character checksum (`token.rs`). Shown once, never stored.
pub fn new_secret() -> String {
    token::generate_with(INVITATION_PREFIX)
}

/// Whether `candidate` has an invitation secret's shape and checksum.
pub fn is_secret(candidate: &str) -> bool {
    token::is_well_formed_with(INVITATION_PREFIX, candidate)
}

/// What the store keeps of a secret.
pub fn digest(secret: &str) -> TokenDigest {
    token::digest(secret)
}

/// An email as an invitation takes it: RFC 5322's `addr-spec` (no display
/// name), at most 254 characters. Kept as given; compared in lower case.
pub fn check_email(field: &str, email: &str) -> Result<(), FieldError> {
    let options = Options::default().without_display_text();
    if email.len() > MAX_EMAIL_LEN || EmailAddress::parse_with_options(email, options).is_err() {
        return Err(FieldError::new(
            field,
            "must be an email address such as name@example.com (at most 254 characters)",
        ));
    }
    Ok(())
}

/// The name of a user made by an acceptance that gives none: the email's
/// part before `@`.
pub fn default_name(email: &str) -> &str {
    email.rsplit_once('@').map_or(email, |(local, _)| local)
}

/// Whether an invitation is still valid or past its expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InvitationStatus {
    Pending,
    Expired,
}

impl InvitationStatus {
    pub fn at(expires_at: Timestamp, now: Timestamp) -> Self {
        if now >= expires_at {
            Self::Expired
        } else {
            Self::Pending
        }
    }
}

/// An invitation as the API answers it (never its secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Invitation {
    pub object: InvitationTag,
    pub id: String,
    pub organization_id: String,
    pub email: String,
    pub role: Role,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub status: InvitationStatus,
}

/// How a new invitation reached its addressee (createInvitation's
/// `delivery`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// Sent by email: the answer holds no secret.
    Email,
    /// Not sent: the answer holds the link and the secret, once.
    Link,
}

/// The console's page that accepts an invitation: `BASE/console/#/accept?invitation=SECRET`.
pub fn accept_url(base: &str, secret: &str) -> String {
    format!(
        "{}/console/#/accept?invitation={secret}",
        base.trim_end_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_addr_specs_only() {
        for good in [
            "a@example.com",
            "First.Last+tag@sub.example.org",
            "x@localhost",
        ] {
            assert!(check_email("email", good).is_ok(), "{good}");
        }
        let long = format!("{}@example.com", "a".repeat(250));
        for bad in [
            "",
            "no-at-sign",
            "@example.com",
            "a@",
            "Ann <ann@example.com>",
            "a b@example.com",
            long.as_str(),
        ] {
            assert!(check_email("email", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secrets_are_pxi_with_a_checksum() {
        let secret = new_secret();
        assert!(secret.starts_with("pxi_") && is_secret(&secret));
        assert!(!is_secret(&token::generate()));
        assert_ne!(secret, new_secret());
    }

    #[test]
    fn status_and_names_and_links() {
        let t = Timestamp::from_millis(1_000).unwrap();
        let later = Timestamp::from_millis(2_000).unwrap();
        assert_eq!(InvitationStatus::at(later, t), InvitationStatus::Pending);
        assert_eq!(InvitationStatus::at(t, t), InvitationStatus::Expired);
        assert_eq!(default_name("ann.lee@example.com"), "ann.lee");
        assert_eq!(
            accept_url("https://deck.example.com/", "pxi_x"),
            "https://deck.example.com/console/#/accept?invitation=pxi_x"
        );
    }
}
