//! The change feed's events (`docs/feed.md`): what a write did to a
//! project, to one of its proxy-settings revisions or to one of its
//! custom domains, at which position
//! of the feed. Events name their object; they do not carry it (a client
//! reads the object, so that applying an event twice changes nothing).

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

use super::object_tag;
use super::time::Timestamp;

object_tag!(ChangeTag, "change");

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ChangeKind {
    #[serde(rename = "project.created")]
    ProjectCreated,
    #[serde(rename = "project.updated")]
    ProjectUpdated,
    #[serde(rename = "project.deleted")]
    ProjectDeleted,
    /// A new revision; a project's first one is active from the start.
    #[serde(rename = "proxy_settings.created")]
    ProxySettingsCreated,
    /// A revision changed and stayed as active or inactive as it was.
    #[serde(rename = "proxy_settings.updated")]
    ProxySettingsUpdated,
    #[serde(rename = "proxy_settings.activated")]
    ProxySettingsActivated,
    #[serde(rename = "proxy_settings.deactivated")]
    ProxySettingsDeactivated,
    /// A custom domain added to the project (pending: it does not route).
    #[serde(rename = "domain.created")]
    DomainCreated,
    /// A domain's status changed: verified (it routes), unverified (it no
    /// longer does), failing, its certificate.
    #[serde(rename = "domain.updated")]
    DomainUpdated,
    #[serde(rename = "domain.deleted")]
    DomainDeleted,
    /// A rollout began (docs/rollouts.md): edges of its first stage run
    /// its revision.
    #[serde(rename = "rollout.created")]
    RolloutCreated,
    /// A rollout's step: a stage reached, paused, resumed, succeeded,
    /// rolled back, aborted. Edges read their target again.
    #[serde(rename = "rollout.updated")]
    RolloutUpdated,
}

impl ChangeKind {
    pub const ALL: [Self; 12] = [
        Self::ProjectCreated,
        Self::ProjectUpdated,
        Self::ProjectDeleted,
        Self::ProxySettingsCreated,
        Self::ProxySettingsUpdated,
        Self::ProxySettingsActivated,
        Self::ProxySettingsDeactivated,
        Self::DomainCreated,
        Self::DomainUpdated,
        Self::DomainDeleted,
        Self::RolloutCreated,
        Self::RolloutUpdated,
    ];

    /// The name on the wire and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ProjectCreated => "project.created",
            Self::ProjectUpdated => "project.updated",
            Self::ProjectDeleted => "project.deleted",
            Self::ProxySettingsCreated => "proxy_settings.created",
            Self::ProxySettingsUpdated => "proxy_settings.updated",
            Self::ProxySettingsActivated => "proxy_settings.activated",
            Self::ProxySettingsDeactivated => "proxy_settings.deactivated",
            Self::DomainCreated => "domain.created",
            Self::DomainUpdated => "domain.updated",
            Self::DomainDeleted => "domain.deleted",
            Self::RolloutCreated => "rollout.created",
            Self::RolloutUpdated => "rollout.updated",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// What a change of a revision's activity from `before` to `after` is.
    pub fn of_revision_activity(before: bool, after: bool) -> Self {
        match (before, after) {
            (false, true) => Self::ProxySettingsActivated,
            (true, false) => Self::ProxySettingsDeactivated,
            _ => Self::ProxySettingsUpdated,
        }
    }
}

/// A position in the feed. Every change has its own, and they increase in
/// the order the changes committed; a position names "every change up to
/// here". On the wire it is a string of decimal digits that clients pass
/// back as they got it (`Last-Event-ID`, `after`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cursor(pub i64);

impl Cursor {
    /// The feed's start, before any change.
    pub const START: Self = Self(0);

    /// A cursor as the feed writes it: decimal digits, no sign, no leading
    /// zero (`0` itself aside).
    pub fn parse(text: &str) -> Option<Self> {
        let canonical = !text.is_empty()
            && text.len() <= 18
            && text.bytes().all(|b| b.is_ascii_digit())
            && (text == "0" || !text.starts_with('0'));
        canonical.then(|| text.parse().ok().map(Self)).flatten()
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for Cursor {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One event of the feed.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub object: ChangeTag,
    pub cursor: Cursor,
    #[serde(rename = "type")]
    pub kind: ChangeKind,
    /// When the write committed, by the clock of the instance that made it.
    pub at: Timestamp,
    pub organization_id: String,
    pub project_id: String,
    /// The revision, for a proxy-settings change; absent for a project's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
    /// The domain's name, for a domain's change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The rollout's number, for a rollout's change (`revision` is its
    /// revision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout: Option<u32>,
    /// The object's version after the change: its ETag's value.
    pub version: i64,
    /// The organization's number, for deciding who may see the change.
    #[serde(skip)]
    pub organization_number: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_canonical_decimals() {
        assert_eq!(Cursor::parse("0"), Some(Cursor(0)));
        assert_eq!(Cursor::parse("42"), Some(Cursor(42)));
        for bad in [
            "",
            "00",
            "042",
            "-1",
            "+1",
            "1.0",
            " 1",
            "1234567890123456789",
            "x",
        ] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn kinds_are_named_as_serde_names_them() {
        for kind in ChangeKind::ALL {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::from(kind.as_str())
            );
            assert_eq!(ChangeKind::parse(kind.as_str()), Some(kind));
        }
    }
}
