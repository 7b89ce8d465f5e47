//! What an edge reports of a project (`docs/feed.md`, "Who runs which
//! revision"): the revision it applied, under a name it chooses, or that
//! applying it failed and why. An edge is stale when it has not reported
//! for [`STALE_AFTER_SECONDS`].

use serde::{Deserialize, Serialize};

use super::object_tag;
use super::time::Timestamp;
use super::token;
use super::validate::FieldError;

object_tag!(EdgeTag, "edge");

/// An edge that has not reported for this long is stale: `proxydeck
/// follow` reports after each change and at least once a minute.
pub const STALE_AFTER_SECONDS: i64 = 180;
/// Longest error text kept: the end of what the edge sent.
pub const MAX_ERROR_CHARS: usize = 1000;
/// An edge's name: 1 to 64 of A-Z, a-z, 0-9, `.`, `_`, `-`.
pub const NAME_RULE: &str = "must be 1 to 64 characters from A-Z, a-z, 0-9, '.', '_' and '-'";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeStatus {
    /// The edge runs the revision.
    Applied,
    /// The edge tried the revision and could not apply it.
    Failed,
}

impl EdgeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Applied, Self::Failed]
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

/// A report, as an edge sends it (`proxydeck follow` writes it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeReport {
    pub name: String,
    pub revision: u32,
    pub status: EdgeStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the edge's health check (`follow --check`) found after
    /// applying: only with `applied`; none when it runs no check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy: Option<bool>,
    /// The edge asks to be among a rollout's first (`follow --canary`,
    /// docs/rollouts.md, "Which edges go first").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub canary: bool,
}

impl EdgeReport {
    /// Every bad member, by name: the name's shape, an error only with a
    /// failure (cut to its last [`MAX_ERROR_CHARS`] characters).
    pub fn check(mut self) -> Result<Self, Vec<FieldError>> {
        let mut problems = Vec::new();
        if !valid_name(&self.name) {
            problems.push(FieldError::new("name", NAME_RULE));
        }
        if self.revision == 0 {
            problems.push(FieldError::new(
                "revision",
                "must be a revision number, from 1",
            ));
        }
        if self.status == EdgeStatus::Failed && self.healthy.is_some() {
            problems.push(FieldError::new(
                "healthy",
                "is only for a report whose status is applied (a health check runs on what was applied)",
            ));
        }
        // An error says why a revision failed, or why an applied one is
        // not healthy; nothing else.
        let needs_error = self.status == EdgeStatus::Failed || self.healthy == Some(false);
        match (needs_error, &mut self.error) {
            (false, Some(_)) => problems.push(FieldError::new(
                "error",
                "is only for a report whose status is failed, or whose healthy is false",
            )),
            (true, None) => problems.push(FieldError::new("error", self.missing_error())),
            (true, Some(error)) if error.trim().is_empty() => {
                problems.push(FieldError::new("error", self.missing_error()))
            }
            (true, Some(error)) => {
                // Shown to every reader of the project: an API token an
                // edge's tool printed by mistake is not kept.
                if let std::borrow::Cow::Owned(redacted) = token::redact(error) {
                    *error = redacted;
                }
                let count = error.chars().count();
                if count > MAX_ERROR_CHARS {
                    *error = error.chars().skip(count - MAX_ERROR_CHARS).collect();
                }
            }
            (false, None) => {}
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

impl EdgeReport {
    fn missing_error(&self) -> &'static str {
        match self.status {
            EdgeStatus::Failed => "must say why the revision could not be applied",
            EdgeStatus::Applied => "must say why the edge is not healthy",
        }
    }
}

pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// An edge of a project, as the API answers it (and as a rollout keeps
/// the reports that failed it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    pub object: EdgeTag,
    pub name: String,
    pub revision: u32,
    pub status: EdgeStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The edge's health check after applying (`null`: it runs none).
    pub healthy: Option<bool>,
    /// It asked to be among a rollout's first.
    pub canary: bool,
    pub reported_at: Timestamp,
    /// No report for [`STALE_AFTER_SECONDS`].
    pub stale: bool,
}

impl Edge {
    pub fn is_stale(reported_at: Timestamp, now: Timestamp) -> bool {
        now.as_millis() - reported_at.as_millis() > STALE_AFTER_SECONDS * 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: EdgeStatus, error: Option<&str>) -> EdgeReport {
        EdgeReport {
            name: "edge-1.eu".into(),
            revision: 4,
            status,
            error: error.map(str::to_owned),
            healthy: None,
            canary: false,
        }
    }

    #[test]
    fn reports_are_checked_member_by_member() {
        assert!(report(EdgeStatus::Applied, None).check().is_ok());
        assert!(report(EdgeStatus::Failed, Some("bad")).check().is_ok());
        let bad = EdgeReport {
            name: "no spaces".into(),
            revision: 0,
            ..report(EdgeStatus::Failed, None)
        };
        let fields: Vec<String> = bad
            .check()
            .unwrap_err()
            .into_iter()
            .map(|p| p.field)
            .collect();
        assert_eq!(fields, ["name", "revision", "error"]);
        assert!(report(EdgeStatus::Applied, Some("x")).check().is_err());
        // A health check's verdict: only on what was applied, and a
        // failed one says why.
        let checked = |status, healthy, error: Option<&str>| {
            EdgeReport {
                healthy: Some(healthy),
                ..report(status, error)
            }
            .check()
            .map_err(|problems| problems.into_iter().map(|p| p.field).collect::<Vec<_>>())
        };
        assert!(checked(EdgeStatus::Applied, true, None).is_ok());
        assert!(checked(EdgeStatus::Applied, false, Some("check: exit 1")).is_ok());
        assert_eq!(
            checked(EdgeStatus::Applied, false, None).unwrap_err(),
            ["error"]
        );
        assert_eq!(
            checked(EdgeStatus::Applied, true, Some("x")).unwrap_err(),
            ["error"]
        );
        assert_eq!(
            checked(EdgeStatus::Failed, true, Some("x")).unwrap_err(),
            ["healthy"]
        );
        let secret = token::generate();
        let told = report(
            EdgeStatus::Failed,
            Some(&format!("curl -H 'Bearer {secret}' failed")),
        );
        let kept = told.check().unwrap().error.unwrap();
        assert!(!kept.contains(&secret), "{kept}");
        assert!(kept.contains(token::REDACTED), "{kept}");
        let long = "x".repeat(MAX_ERROR_CHARS) + "the end";
        let kept = report(EdgeStatus::Failed, Some(&long)).check().unwrap();
        assert!(kept.error.unwrap().ends_with("the end"));
    }
}
