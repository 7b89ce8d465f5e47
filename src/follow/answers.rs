//! What `follow` reads of the service's answers, typed: a change of the
//! feed (`domain::change`), where the feed stands, a revision's number and
//! whether it is active, an edge's target, a listed project's id, a listed
//! domain's name and whether it routes. The objects follow writes
//! (a project, a revision) stay as the service sent them: follow reads
//! from them only what it decides by.

use serde::Deserialize;
use serde_json::Value;

use crate::domain::change::{ChangeKind, Cursor};

/// A change of the feed (`docs/feed.md`, "The events"), as much of it as
/// follow reads: the project it names, what happened, and the revision of
/// a `proxy_settings.*` or `rollout.*` change.
#[derive(Deserialize)]
pub struct FeedChange {
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    pub revision: Option<u32>,
}

/// What of a project a change is about: what follow reads again.
#[derive(Debug, PartialEq, Eq)]
pub enum Subject {
    /// The project itself (and a kind this follow does not know: it reads
    /// the project again).
    Project,
    /// One of its revisions (a `proxy_settings.*` change).
    Revision,
    /// One of its rollouts (a `rollout.*` change): which revision an edge
    /// runs may have changed, not which is active.
    Rollout,
    /// One of its custom domains (a `domain.*` change).
    Domain,
}

impl FeedChange {
    pub fn subject(&self) -> Subject {
        match ChangeKind::parse(&self.kind) {
            Some(
                ChangeKind::ProxySettingsCreated
                | ChangeKind::ProxySettingsUpdated
                | ChangeKind::ProxySettingsActivated
                | ChangeKind::ProxySettingsDeactivated,
            ) => Subject::Revision,
            Some(ChangeKind::RolloutCreated | ChangeKind::RolloutUpdated) => Subject::Rollout,
            Some(
                ChangeKind::DomainCreated | ChangeKind::DomainUpdated | ChangeKind::DomainDeleted,
            ) => Subject::Domain,
            Some(
                ChangeKind::ProjectCreated
                | ChangeKind::ProjectUpdated
                | ChangeKind::ProjectDeleted,
            )
            | None => Subject::Project,
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

/// A revision of a project, as the API answered it: the one this edge is
/// to serve.
pub struct Revision {
    /// Its number.
    pub number: u32,
    /// The object, written to `proxy-settings.json` as it came.
    pub body: Value,
}

impl Revision {
    /// `body`, when it is a revision that is active.
    pub fn active(body: Value) -> Option<Self> {
        let state = RevisionState::deserialize(&body).ok()?;
        state.is_active.then_some(Self {
            number: state.revision,
            body,
        })
    }
}

/// An edge's target (getEdgeTarget, `docs/rollouts.md`): the revision
/// meant for it, active or a rollout's, as much of it as follow reads.
#[derive(Deserialize)]
pub struct EdgeTarget {
    #[serde(default)]
    revision: Option<u32>,
    #[serde(default)]
    proxy_settings: Option<Value>,
}

impl EdgeTarget {
    /// The revision to serve (`None`: none is active); an error when the
    /// answer's revision is not the object it carries.
    pub fn into_revision(self) -> Result<Option<Revision>, String> {
        let Some(body) = self.proxy_settings else {
            return match self.revision {
                None => Ok(None),
                Some(number) => Err(format!("revision {number} without its proxy_settings")),
            };
        };
        let state = RevisionState::deserialize(&body)
            .map_err(|e| format!("proxy_settings that is no revision: {e}"))?;
        match self.revision == Some(state.revision) {
            true => Ok(Some(Revision {
                number: state.revision,
                body,
            })),
            false => Err(format!(
                "revision {:?} whose proxy_settings is revision {}",
                self.revision, state.revision
            )),
        }
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

/// A custom domain of a project's listing (`domain::domains`), as much of
/// it as follow reads: its name, whether it routes (`dns_status`:
/// verified, or within its grace period), and whether an edge reported
/// its certificate (`ssl_status`, which `--tls-check` compares with).
#[derive(Deserialize)]
pub struct ListedDomain {
    pub name: String,
    #[serde(default)]
    pub dns_status: bool,
    #[serde(default)]
    pub ssl_status: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_a_revisions_for_proxy_settings_kinds_a_domains_for_domain_kinds() {
        for kind in ChangeKind::ALL {
            let change: FeedChange = serde_json::from_value(serde_json::json!({
                "type": kind.as_str(), "project_id": "p1"
            }))
            .unwrap();
            let expected = match kind.as_str().split_once('.').unwrap().0 {
                "proxy_settings" => Subject::Revision,
                "rollout" => Subject::Rollout,
                "domain" => Subject::Domain,
                _ => Subject::Project,
            };
            assert_eq!(change.subject(), expected, "{}", kind.as_str());
        }
        let unknown: FeedChange =
            serde_json::from_value(serde_json::json!({"type": "certificate.issued"})).unwrap();
        assert_eq!(unknown.subject(), Subject::Project);
    }

    #[test]
    fn only_an_active_revision_is_taken() {
        let active = serde_json::json!({"revision": 3, "is_active": true, "routes": []});
        assert_eq!(Revision::active(active).map(|r| r.number), Some(3));
        let inactive = serde_json::json!({"revision": 2, "is_active": false});
        assert!(Revision::active(inactive).is_none());
    }

    #[test]
    fn a_target_is_its_revision_active_or_not_and_must_be_the_one_it_names() {
        let target = |revision: Value, settings: Value| {
            let answer = serde_json::json!({"object": "edge_target", "project_id": "p1",
                "name": "edge-1", "revision": revision, "rollout": 3, "stage": 1,
                "proxy_settings": settings});
            EdgeTarget::deserialize(&answer).unwrap().into_revision()
        };
        let inactive = serde_json::json!({"revision": 5, "is_active": false});
        let read = target(5.into(), inactive).unwrap().unwrap();
        assert_eq!(read.number, 5);
        assert!(target(Value::Null, Value::Null).unwrap().is_none());
        let other = serde_json::json!({"revision": 4, "is_active": true});
        assert!(target(5.into(), other).is_err());
        assert!(target(5.into(), Value::Null).is_err());
    }
}
