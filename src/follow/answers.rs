//! What `follow` reads of the service's answers, typed: a change of the
//! feed (`domain::change`), where the feed stands, a revision's number and
//! whether it is active, a listed project's id. The objects follow writes
//! (a project, a revision) stay as the service sent them: follow reads
//! from them only what it decides by.

use serde::Deserialize;
use serde_json::Value;

use crate::domain::change::{ChangeKind, Cursor};

/// A change of the feed (`docs/feed.md`, "The events"), as much of it as
/// follow reads: the project it names, what happened, and the revision of
/// a `proxy_settings.*` change.
#[derive(Deserialize)]
pub struct FeedChange {
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    pub revision: Option<u32>,
}

impl FeedChange {
    /// Whether the change is a revision's (a `proxy_settings.*` change)
    /// rather than the project's own; a kind this follow does not know is
    /// taken as the project's (follow reads the project again).
    pub fn is_revision(&self) -> bool {
        match ChangeKind::parse(&self.kind) {
            Some(
                ChangeKind::ProxySettingsCreated
                | ChangeKind::ProxySettingsUpdated
                | ChangeKind::ProxySettingsActivated
                | ChangeKind::ProxySettingsDeactivated,
            ) => true,
            Some(
                ChangeKind::ProjectCreated
                | ChangeKind::ProjectUpdated
                | ChangeKind::ProjectDeleted
                | ChangeKind::DomainCreated
                | ChangeKind::DomainUpdated
                | ChangeKind::DomainDeleted,
            )
            | None => false,
        }
    }
}

/// The feed's answer without a stream: where it stands now.
#[derive(Deserialize)]
pub struct FeedHead {
    #[serde(default)]
    cursor: Option<String>,
}

impl FeedHead {
    pub fn cursor(&self) -> Option<Cursor> {
        self.cursor.as_deref().and_then(Cursor::parse)
    }
}

/// What follow reads of a revision (`domain::proxy_settings`): its
/// number, and whether it is the active one.
#[derive(Deserialize)]
struct RevisionState {
    revision: u32,
    #[serde(default)]
    is_active: bool,
}

/// The active revision of a project, as the API answered it.
pub struct ActiveRevision {
    /// Its number.
    pub number: u32,
    /// The object, written to `proxy-settings.json` as it came.
    pub body: Value,
}

impl ActiveRevision {
    /// `body`, when it is a revision that is active.
    pub fn of(body: Value) -> Option<Self> {
        let state = RevisionState::deserialize(&body).ok()?;
        state.is_active.then_some(Self {
            number: state.revision,
            body,
        })
    }
}

/// The revision number a `proxy-settings.json` holds.
#[derive(Deserialize)]
pub struct HeldRevision {
    pub revision: u32,
}

/// A project of a listing, as much of it as follow reads: its id.
#[derive(Deserialize)]
pub struct ListedProject {
    pub id: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_names_a_revision_only_for_proxy_settings_kinds() {
        for kind in ChangeKind::ALL {
            let change: FeedChange = serde_json::from_value(serde_json::json!({
                "type": kind.as_str(), "project_id": "p1"
            }))
            .unwrap();
            let expected = kind.as_str().starts_with("proxy_settings.");
            assert_eq!(change.is_revision(), expected, "{}", kind.as_str());
        }
        let unknown: FeedChange =
            serde_json::from_value(serde_json::json!({"type": "domain.created"})).unwrap();
        assert!(!unknown.is_revision());
    }

    #[test]
    fn only_an_active_revision_is_taken() {
        let active = serde_json::json!({"revision": 3, "is_active": true, "routes": []});
        assert_eq!(ActiveRevision::of(active).map(|r| r.number), Some(3));
        let inactive = serde_json::json!({"revision": 2, "is_active": false});
        assert!(ActiveRevision::of(inactive).is_none());
    }
}
