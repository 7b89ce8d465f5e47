//! What `follow` reads of the service: the ids the names given stand
//! for, where the feed stands, an organization's projects, and what a
//! batch of changes changed of a project: its object, the revision this
//! edge serves (its target, or the active revision), its verified names.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::anyhow;
use serde::Deserialize as _;
use serde_json::Value;

use super::answers::{
    EdgeTarget, FeedChange, FeedHead, ListedDomain, ListedProject, Revision, Subject,
};
use super::args::FollowArgs;
use super::files::{Folder, Served};
use super::retry::{Ended, classify, is_not_found};
use crate::client::http::{ApiClient, Request, v1};
use crate::client::names;
use crate::client::revision_read::{self, Project};
use crate::domain::change::Cursor;
use crate::domain::ids;

/// What a batch of changes says of one project: what to read again.
#[derive(Clone, Default)]
pub struct Touched {
    /// The project itself changed: read it again.
    project: bool,
    /// The revisions the changes named, in the order they came.
    revisions: Vec<u32>,
    /// Look at every revision: the listing says which is active.
    all_revisions: bool,
    /// A rollout changed: an edge's target may have.
    rollouts: bool,
    /// Its custom domains changed: list them again.
    domains: bool,
    /// The project is no longer followed (an organization's project gone
    /// from its listing): remove its folder without asking.
    stale: bool,
}

impl Touched {
    /// Whether the project is no longer followed.
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// Everything read again (a full sync).
    pub fn everything() -> Self {
        Self {
            project: true,
            all_revisions: true,
            domains: true,
            ..Self::default()
        }
    }

    /// A project no longer followed (an organization's project gone from
    /// its listing): its folder is removed.
    pub fn stale() -> Self {
        Self {
            stale: true,
            ..Self::default()
        }
    }

    /// Notes what `change` (`docs/feed.md`, "The events") says.
    pub fn note(&mut self, change: &FeedChange) {
        match (change.subject(), change.revision) {
            (Subject::Project, _) => self.project = true,
            (Subject::Revision, Some(revision)) => self.revisions.push(revision),
            (Subject::Revision, None) => self.all_revisions = true,
            (Subject::Rollout, _) => self.rollouts = true,
            (Subject::Domain, _) => self.domains = true,
        }
    }

    /// Whether the revision `edge` serves may have changed: any change of
    /// the revisions, and for an edge that has a target (one that reports
    /// under a name), any change of the rollouts.
    fn revision_may_change(&self, edge: Option<&str>) -> bool {
        let revisions = self.all_revisions || !self.revisions.is_empty();
        revisions || (edge.is_some() && self.rollouts)
    }
}

/// A project as the service shows it now.
pub enum Read {
    /// Deleted, or this token cannot see it.
    Gone,
    /// Its object (`None`: unchanged, not read), the revision this edge
    /// serves and its verified domains (`None`: unchanged, not read).
    Found {
        project: Option<Value>,
        served: Served,
        names: Option<Vec<ListedDomain>>,
    },
}

/// `--project` (an id, `ORG/SLUG` or a slug) and `--organization` (an id
/// or a slug) made ids; a name that names nothing of the caller's ends
/// follow, a service it cannot reach is tried again.
pub async fn name_ids(client: &ApiClient, args: &mut FollowArgs) -> Result<(), Ended> {
    let ended = |error: anyhow::Error| match error.is::<names::Unnamed>() {
        true => Ended::Fatal(error),
        false => classify(error),
    };
    if let Some(given) = args.project.clone() {
        let id = names::resolve_project(client, &given)
            .await
            .map_err(ended)?;
        args.project = Some(id);
    }
    // An organization's id is taken as it is (the feed refuses one that is
    // not the caller's): no request.
    if let Some(given) = args.organization.clone()
        && ids::parse_organization_id(&given).is_none()
    {
        let id = names::resolve_organization(client, &given)
            .await
            .map_err(ended)?;
        args.organization = Some(id);
    }
    Ok(())
}

/// Where the feed stands now: a change made after comes in the stream
/// from there.
pub async fn feed_head(client: &ApiClient) -> Result<Cursor, Ended> {
    let path = v1(&["changes"]);
    let answer = client
        .send(Request::new(reqwest::Method::GET, &path))
        .await
        .map_err(classify)?;
    let head: FeedHead = serde_json::from_slice(&answer.body)
        .map_err(|e| Ended::Retry(anyhow!("the feed's answer is not JSON: {e}")))?;
    head.cursor()
        .ok_or_else(|| Ended::Retry(anyhow!("the feed's answer has no cursor")))
}

/// Every project of the organization.
pub async fn projects_of(client: &ApiClient, organization: &str) -> Result<Vec<String>, Ended> {
    let mut projects = Vec::new();
    let query = [("organization_id", organization.to_owned())];
    client
        .walk(&v1(&["projects"]), &query, |items| {
            let listed = items
                .iter()
                .filter_map(|item| ListedProject::deserialize(item).ok());
            projects.extend(listed.map(|project| project.id));
            ControlFlow::<()>::Continue(())
        })
        .await
        .map_err(classify)?;
    Ok(projects)
}

/// What the changes in `touched` changed of `project`: its object when
/// it changed (or `folder` has none yet), the revision this edge serves
/// when a change named one (or a rollout): with `edge` (the name it
/// reports under), its target; without, the active revision.
pub async fn read_project(
    client: &ApiClient,
    folder: &Folder,
    project: &str,
    touched: &Touched,
    edge: Option<&str>,
) -> Result<Read, Ended> {
    let body = match touched.project || !folder.has_project(project) {
        true => {
            let path = v1(&["projects", project]);
            match client.send(Request::new(reqwest::Method::GET, &path)).await {
                Ok(answer) => Some(
                    serde_json::from_slice(&answer.body)
                        .map_err(|e| Ended::Retry(anyhow!("a project that is not JSON: {e}")))?,
                ),
                Err(error) if is_not_found(&error) => return Ok(Read::Gone),
                Err(error) => return Err(classify(error)),
            }
        }
        false => None,
    };
    let served = match (touched.revision_may_change(edge), edge) {
        (false, _) => Served::Unchanged,
        (true, Some(edge)) => match target(client, project, edge).await? {
            Some(revision) => Served::Now(revision),
            None => match active(client, folder, project, touched).await? {
                Some(served) => {
                    if !SAID_NO_TARGETS.swap(true, Ordering::Relaxed) {
                        eprintln!(
                            "follow: the service has no edge targets (an older version): \
                             following the active revision"
                        );
                    }
                    served
                }
                None => return Ok(Read::Gone),
            },
        },
        (true, None) => match active(client, folder, project, touched).await? {
            Some(served) => served,
            None => return Ok(Read::Gone),
        },
    };
    let names = match touched.domains {
        true => match verified_names(client, project).await? {
            Some(names) => Some(names),
            None => return Ok(Read::Gone),
        },
        false => None,
    };
    Ok(Read::Found {
        project: body,
        served,
        names,
    })
}

/// The service said once that it has no edge targets.
static SAID_NO_TARGETS: AtomicBool = AtomicBool::new(false);

/// The revision meant for `edge` (getEdgeTarget), `Some(None)` when none
/// is active; `None` when the service answered 404: the project is gone,
/// or the service is older than targets (the active revision decides).
async fn target(
    client: &ApiClient,
    project: &str,
    edge: &str,
) -> Result<Option<Option<Revision>>, Ended> {
    let path = v1(&["projects", project, "edges", edge, "target"]);
    let answer = match client.send(Request::new(reqwest::Method::GET, &path)).await {
        Ok(answer) => answer,
        Err(error) if is_not_found(&error) => return Ok(None),
        Err(error) => return Err(classify(error)),
    };
    let target: EdgeTarget = serde_json::from_slice(&answer.body)
        .map_err(|e| Ended::Retry(anyhow!("{project}: a target that cannot be read: {e}")))?;
    target
        .into_revision()
        .map(Some)
        .map_err(|why| Ended::Retry(anyhow!("{project}: a target with {why}")))
}

/// The active revision, read from what the changes in `touched` name
/// when they name revisions, else from the listing; `None` when the
/// project is gone.
async fn active(
    client: &ApiClient,
    folder: &Folder,
    project: &str,
    touched: &Touched,
) -> Result<Option<Served>, Ended> {
    if !touched.all_revisions && !touched.revisions.is_empty() {
        let held = folder.held_revision(project);
        if let Some(active) = named_active(client, project, &touched.revisions, held).await {
            return Ok(Some(Served::Now(Some(active))));
        }
    }
    Ok(listed_active(client, project).await?.map(Served::Now))
}

/// `project`'s custom domains that route (`dns_status`), every page of
/// them; `None` when the project is gone.
async fn verified_names(
    client: &ApiClient,
    project: &str,
) -> Result<Option<Vec<ListedDomain>>, Ended> {
    let path = v1(&["projects", project, "domains"]);
    let mut names = Vec::new();
    let walked = client
        .walk(&path, &[], |items| {
            let listed = items
                .iter()
                .filter_map(|item| ListedDomain::deserialize(item).ok());
            names.extend(listed.filter(|d| d.dns_status));
            ControlFlow::<()>::Continue(())
        })
        .await;
    match walked {
        Ok(_) => Ok(Some(names)),
        Err(error) if is_not_found(&error) => Ok(None),
        Err(error) => Err(classify(error)),
    }
}

/// The active revision among those the changes named (the latest first:
/// an activation's change names the revision it made active) and the one
/// the folder holds, each read alone; `None` when none of them is active,
/// or one cannot be read: then the listing decides.
async fn named_active(
    client: &ApiClient,
    project: &str,
    named: &[u32],
    held: Option<u32>,
) -> Option<Revision> {
    let mut looked = BTreeSet::new();
    for revision in named.iter().rev().copied().chain(held) {
        if !looked.insert(revision) {
            continue;
        }
        let read = revision_read::fetch(client, &Project::by_id(project), revision)
            .await
            .ok()?;
        if let Some(active) = Revision::active(read) {
            return Some(active);
        }
    }
    None
}

/// The active revision (`Some(None)`: none is) from the listing, newest
/// first, page by page; `None` when the project is gone.
async fn listed_active(
    client: &ApiClient,
    project: &str,
) -> Result<Option<Option<Revision>>, Ended> {
    let path = v1(&["projects", project, "proxy-settings"]);
    let active = client
        .walk(&path, &[], |items| {
            match items.into_iter().find_map(Revision::active) {
                Some(active) => ControlFlow::Break(active),
                None => ControlFlow::Continue(()),
            }
        })
        .await;
    match active {
        Ok(active) => Ok(Some(active)),
        Err(error) if is_not_found(&error) => Ok(None),
        Err(error) => Err(classify(error)),
    }
}
