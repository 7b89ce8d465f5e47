//! A project's custom domains (`docs/domains.md`): the `Domain` object as
//! the API answers it, and where its verification stands. A name routes
//! (its `dns_status` is true) once a DNS check found the TXT record its
//! owner was shown, in one organization at most; it stops after the
//! record has been missing for the grace period. `ssl_status` says an edge
//! serves a valid certificate for it, as edges report.

use serde::{Deserialize, Serialize};

use super::FieldError;
use super::host_name::HostName;
use super::object_tag;
use super::time::Timestamp;

object_tag!(DomainTag, "domain");

/// The TXT record's name is this label over the name (a wildcard's base).
pub const CHALLENGE_LABEL: &str = "_proxydeck-challenge";
/// The TXT record's value is this prefix and the domain's own token.
pub const CHALLENGE_PREFIX: &str = "proxydeck-verification=";

/// A new domain's token: 128 random bits in hex, shown to those who may
/// read its project (the record's value), unguessable by anyone else.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The name a domain's TXT record is looked for under: its base name's
/// (`*.example.com`'s base name is `example.com`).
pub fn challenge_name(base: &str) -> String {
    format!("{CHALLENGE_LABEL}.{base}")
}

/// The value a domain's TXT record must hold.
pub fn challenge_value(token: &str) -> String {
    format!("{CHALLENGE_PREFIX}{token}")
}

/// Whether one of `records` is the challenge value for `token`: exactly,
/// once the ASCII whitespace around it is trimmed (which some DNS
/// providers' forms add).
pub fn holds(records: &[String], token: &str) -> bool {
    let expected = challenge_value(token);
    records.iter().any(|record| record.trim_ascii() == expected)
}

/// What the last DNS check of a name found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckResult {
    /// The record holds the domain's value.
    Found,
    /// No TXT record under the challenge name (or no such name).
    Absent,
    /// TXT records there, none with the domain's value (another
    /// organization's, or a stale one).
    Mismatch,
    /// The resolver did not answer, or answered with a failure: nothing is
    /// concluded (a verified name keeps routing).
    LookupFailed,
    /// The record is there, but another organization verified the name
    /// first: it keeps it until its own record is gone for the grace
    /// period.
    VerifiedElsewhere,
}

impl CheckResult {
    pub const ALL: [Self; 5] = [
        Self::Found,
        Self::Absent,
        Self::Mismatch,
        Self::LookupFailed,
        Self::VerifiedElsewhere,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Found => "found",
            Self::Absent => "absent",
            Self::Mismatch => "mismatch",
            Self::LookupFailed => "lookup_failed",
            Self::VerifiedElsewhere => "verified_elsewhere",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|result| result.as_str() == text)
    }

    /// What a person is told of it.
    pub fn message(self) -> &'static str {
        match self {
            Self::Found => "the TXT record holds this domain's value",
            Self::Absent => "no TXT record was found under the record's name",
            Self::Mismatch => "TXT records were found, none holding this domain's value",
            Self::LookupFailed => "the DNS resolver did not answer; the check will be tried again",
            Self::VerifiedElsewhere => "the name is verified by another organization",
        }
    }
}

/// Where a domain's verification stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerificationStatus {
    /// Not verified: the name does not route.
    Pending,
    /// Verified, the record found at the last check: the name routes.
    Verified,
    /// Verified, but the record was not found since `missing_since`: the
    /// name routes until `routes_until`, then is pending again.
    Failing,
}

/// The DNS record that proves a domain's owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DnsRecord {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    pub value: String,
}

/// A domain's verification, as the API answers it: the record to create,
/// what the last check found, and when the next one is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verification {
    pub status: VerificationStatus,
    pub record: DnsRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_result: Option<CheckResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_check_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routes_until: Option<Timestamp>,
}

/// A custom domain, as the API answers it (the public document's `Domain`,
/// and `verification`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Domain {
    pub object: DomainTag,
    pub name: String,
    pub project_id: String,
    /// The name is verified and routes.
    pub dns_status: bool,
    /// An edge serves a valid certificate for the name.
    pub ssl_status: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub verification: Verification,
}

/// A domain as the store keeps it: its columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDomain {
    pub name: String,
    pub project_id: String,
    pub token: String,
    pub verified: bool,
    pub ssl: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub version: i64,
    pub last_result: Option<CheckResult>,
    pub checked_at: Option<Timestamp>,
    pub next_check_at: Option<Timestamp>,
    pub missing_since: Option<Timestamp>,
    /// Checks in a row that did not find the record: the backoff's step.
    pub misses: i64,
}

/// When names are checked (`docs/domains.md`, "Checks"): a pending name
/// soon after it is added, then later each time it is not found, up to
/// `most_retry_millis`, and no more once it has been pending for
/// `give_up_after_millis` (until asked); a verified name every
/// `recheck_millis`, and as a pending one while its record is missing.
/// A verified name whose record has been missing for `grace_millis` stops
/// routing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckSchedule {
    pub first_retry_millis: i64,
    pub most_retry_millis: i64,
    pub recheck_millis: i64,
    pub grace_millis: i64,
    pub give_up_after_millis: i64,
}

impl Default for CheckSchedule {
    fn default() -> Self {
        const MINUTE: i64 = 60 * 1000;
        Self {
            first_retry_millis: MINUTE,
            most_retry_millis: 60 * MINUTE,
            recheck_millis: 60 * MINUTE,
            grace_millis: 24 * 60 * MINUTE,
            give_up_after_millis: 7 * 24 * 60 * MINUTE,
        }
    }
}

impl CheckSchedule {
    /// The wait before the next check after `misses` misses in a row.
    fn backoff(&self, misses: i64) -> i64 {
        let doubled = self
            .first_retry_millis
            .saturating_mul(1_i64 << misses.clamp(0, 30));
        doubled.min(self.most_retry_millis).max(1)
    }
}

/// A domain after a check found `result` at `now`: the one rule of what a
/// check does to a name.
/// - Found (and not verified elsewhere): verified, routes; rechecked later.
/// - Absent or mismatch, for a verified name: failing from the first miss;
///   pending (no longer routing, its certificate no longer counted) once
///   the record has been missing for the grace period. Checked again
///   soon, and at the latest when its grace ends.
/// - Absent, mismatch or verified elsewhere, for a pending name: still
///   pending, checked again later each time.
/// - Lookup failed: nothing is concluded; checked again soon.
pub fn after_check(
    domain: &StoredDomain,
    result: CheckResult,
    now: Timestamp,
    schedule: &CheckSchedule,
) -> StoredDomain {
    let mut after = domain.clone();
    let at = now.as_millis();
    after.last_result = Some(result);
    after.checked_at = Some(now);
    let next = match result {
        CheckResult::Found => {
            after.verified = true;
            after.missing_since = None;
            after.misses = 0;
            Some(at + schedule.recheck_millis)
        }
        CheckResult::LookupFailed => Some(at + schedule.backoff(0)),
        CheckResult::Absent | CheckResult::Mismatch | CheckResult::VerifiedElsewhere => {
            after.misses = domain.misses + 1;
            let retry = at + schedule.backoff(domain.misses);
            if domain.verified {
                let since = domain.missing_since.unwrap_or(now);
                let routes_until = since.as_millis() + schedule.grace_millis;
                if at >= routes_until {
                    after.verified = false;
                    after.ssl = false;
                    after.missing_since = None;
                    Some(retry)
                } else {
                    after.missing_since = Some(since);
                    Some(retry.min(routes_until))
                }
            } else {
                let pending_for = at - domain.created_at.as_millis();
                (pending_for < schedule.give_up_after_millis).then_some(retry)
            }
        }
    };
    after.next_check_at = next.and_then(Timestamp::from_millis);
    after
}

impl StoredDomain {
    /// The object the API answers, `grace` being how long a verified name
    /// routes once its record is missing.
    pub fn answer(&self, grace_millis: i64) -> Domain {
        let base = self.name.strip_prefix("*.").unwrap_or(&self.name);
        let (status, routes_until) = match (self.verified, self.missing_since) {
            (false, _) => (VerificationStatus::Pending, None),
            (true, None) => (VerificationStatus::Verified, None),
            (true, Some(since)) => (
                VerificationStatus::Failing,
                Timestamp::from_millis(since.as_millis() + grace_millis),
            ),
        };
        Domain {
            object: DomainTag::Tag,
            name: self.name.clone(),
            project_id: self.project_id.clone(),
            dns_status: self.verified,
            ssl_status: self.ssl,
            created_at: self.created_at,
            updated_at: self.updated_at,
            verification: Verification {
                status,
                record: DnsRecord {
                    kind: "TXT",
                    name: challenge_name(base),
                    value: challenge_value(&self.token),
                },
                last_result: self.last_result,
                message: self.last_result.map(CheckResult::message),
                checked_at: self.checked_at,
                next_check_at: self.next_check_at,
                routes_until,
            },
        }
    }
}

/// A domain as the import and export format writes it (`docs/cli.md`):
/// what a store needs to keep the claim, its token and its statuses, so
/// that a restore routes what routed. What the checks found last is not
/// kept: the imported names are checked again at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainLine {
    #[serde(default)]
    pub object: DomainTag,
    pub project_id: String,
    pub name: String,
    /// The value its TXT record holds, after `proxydeck-verification=`.
    /// Absent: a new one (a line from elsewhere); an existing claim keeps
    /// its own.
    #[serde(
        default,
        rename = "verification_token",
        skip_serializing_if = "Option::is_none"
    )]
    pub token: Option<String>,
    #[serde(default)]
    pub dns_status: bool,
    #[serde(default)]
    pub ssl_status: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

/// A token as [`new_token`] makes them: what an imported one must look like.
pub const TOKEN_RULE: &str = "must be 16 to 64 letters and digits";

impl DomainLine {
    /// The name in its one form, and the members' rules.
    pub fn normalize_and_validate(&mut self) -> Result<(), FieldError> {
        self.name = HostName::parse(&self.name)
            .map_err(|rule| FieldError::new("name", rule))?
            .into_string();
        if !super::ids::is_valid_id(&self.project_id) {
            return Err(FieldError::new("project_id", super::ids::ID_RULE));
        }
        if let Some(token) = &self.token
            && !((16..=64).contains(&token.len())
                && token.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            return Err(FieldError::new("verification_token", TOKEN_RULE));
        }
        if self.ssl_status && !self.dns_status {
            return Err(FieldError::new(
                "ssl_status",
                "can be true only for a name whose dns_status is true",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(created_at: Timestamp) -> StoredDomain {
        StoredDomain {
            name: "shop.example.com".into(),
            project_id: "p".into(),
            token: "t".into(),
            verified: false,
            ssl: false,
            created_at,
            updated_at: created_at,
            version: 1,
            last_result: None,
            checked_at: None,
            next_check_at: Some(created_at),
            missing_since: None,
            misses: 0,
        }
    }

    fn at(millis: i64) -> Timestamp {
        Timestamp::from_millis(millis).unwrap()
    }

    #[test]
    fn a_pending_name_is_checked_later_each_time_then_given_up() {
        let schedule = CheckSchedule {
            first_retry_millis: 10,
            most_retry_millis: 35,
            recheck_millis: 1000,
            grace_millis: 100,
            give_up_after_millis: 500,
        };
        let mut domain = pending(at(1000));
        let mut waits = Vec::new();
        for _ in 0..4 {
            domain = after_check(&domain, CheckResult::Absent, at(1100), &schedule);
            waits.push(domain.next_check_at.unwrap().as_millis() - 1100);
        }
        assert_eq!(waits, [10, 20, 35, 35]);
        assert!(!domain.verified);
        let given_up = after_check(&domain, CheckResult::Absent, at(1500), &schedule);
        assert_eq!(given_up.next_check_at, None);
        let failed = after_check(&domain, CheckResult::LookupFailed, at(1100), &schedule);
        assert_eq!(failed.misses, domain.misses);
    }

    #[test]
    fn a_verified_name_routes_through_its_grace_period_then_stops() {
        let schedule = CheckSchedule {
            first_retry_millis: 10,
            most_retry_millis: 1000,
            recheck_millis: 1000,
            grace_millis: 100,
            give_up_after_millis: 100_000,
        };
        let found = after_check(&pending(at(1000)), CheckResult::Found, at(1001), &schedule);
        assert!(found.verified);
        assert_eq!(found.next_check_at, Some(at(2001)));
        let mut ssl = found.clone();
        ssl.ssl = true;
        let missing = after_check(&ssl, CheckResult::Absent, at(2001), &schedule);
        assert!(missing.verified && missing.ssl);
        assert_eq!(missing.missing_since, Some(at(2001)));
        assert_eq!(
            missing.answer(100).verification.status,
            VerificationStatus::Failing
        );
        // A lookup that fails concludes nothing.
        let unsure = after_check(&missing, CheckResult::LookupFailed, at(2050), &schedule);
        assert!(unsure.verified);
        assert_eq!(unsure.missing_since, Some(at(2001)));
        // Checked again at the latest when the grace ends.
        let later = after_check(&missing, CheckResult::Absent, at(2090), &schedule);
        assert_eq!(later.next_check_at, Some(at(2101)));
        let gone = after_check(&later, CheckResult::Mismatch, at(2101), &schedule);
        assert!(!gone.verified && !gone.ssl);
        assert_eq!(
            gone.answer(100).verification.status,
            VerificationStatus::Pending
        );
        // Back before the grace ends: verified as before.
        let back = after_check(&missing, CheckResult::Found, at(2050), &schedule);
        assert!(back.verified && back.missing_since.is_none() && back.misses == 0);
    }

    #[test]
    fn the_challenge_lives_under_its_label_of_the_base_name() {
        assert_eq!(
            challenge_name("example.com"),
            "_proxydeck-challenge.example.com"
        );
        assert_eq!(challenge_value("t0k3n"), "proxydeck-verification=t0k3n");
    }

    #[test]
    fn a_record_holds_the_token_only_exactly() {
        let token = "abc123";
        let held = |records: &[&str]| {
            let records: Vec<String> = records.iter().map(|r| r.to_string()).collect();
            holds(&records, token)
        };
        assert!(held(&["proxydeck-verification=abc123"]));
        assert!(held(&["v=spf1 -all", "proxydeck-verification=abc123"]));
        assert!(held(&[" \tproxydeck-verification=abc123\r\n"]));
        assert!(!held(&[]));
        assert!(!held(&["proxydeck-verification=abc1234"]));
        assert!(!held(&["proxydeck-verification=abc12"]));
        assert!(!held(&["proxydeck-verification=ABC123"]));
        assert!(!held(&["Proxydeck-Verification=abc123"]));
        assert!(!held(&["abc123"]));
        assert!(!held(&["proxydeck-verification= abc123"]));
        assert!(!held(&["x proxydeck-verification=abc123"]));
        // Only ASCII whitespace is trimmed: a no-break space is text.
        assert!(!held(&["proxydeck-verification=abc123\u{a0}"]));
    }

    #[test]
    fn check_results_are_named_as_serde_names_them() {
        for result in CheckResult::ALL {
            assert_eq!(
                serde_json::to_value(result).unwrap(),
                serde_json::Value::from(result.as_str())
            );
            assert_eq!(CheckResult::parse(result.as_str()), Some(result));
        }
    }

    #[test]
    fn a_wildcard_is_proven_under_its_base() {
        let now = Timestamp::now();
        let stored = StoredDomain {
            name: "*.example.com".into(),
            project_id: "p".into(),
            token: "t0k".into(),
            verified: true,
            ssl: false,
            created_at: now,
            updated_at: now,
            version: 1,
            last_result: Some(CheckResult::Absent),
            checked_at: Some(now),
            next_check_at: None,
            missing_since: Some(now),
            misses: 1,
        };
        let answer = stored.answer(1000);
        assert_eq!(
            answer.verification.record.name,
            "_proxydeck-challenge.example.com"
        );
        assert_eq!(
            answer.verification.record.value,
            "proxydeck-verification=t0k"
        );
        assert_eq!(answer.verification.status, VerificationStatus::Failing);
        assert_eq!(
            answer.verification.routes_until.map(Timestamp::as_millis),
            Some(now.as_millis() + 1000)
        );
    }
}
