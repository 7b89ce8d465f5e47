//! What this edge tells the service it runs (reportEdge, `docs/feed.md`,
//! "Who runs which revision"): after each change it applied, or failed
//! to, under the name `--name` gives (the host's by default), and every
//! minute again so that the edge does not go stale. With `--check`, a
//! report also says whether the edge is healthy on what it applied; with
//! `--canary`, that the edge asks to be in a rollout's first stage
//! (`docs/rollouts.md`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::bail;

use crate::client::http::{ApiClient, Request, v1};
use crate::domain::edge::{self, EdgeReport, EdgeStatus};

/// How often the last reports are sent again (the service calls an edge
/// stale after 3 minutes without one).
const REPORT_EVERY: Duration = Duration::from_secs(60);

/// What applying a revision came to.
#[derive(Clone, Copy)]
pub enum Outcome<'a> {
    /// `--exec` failed: why.
    Failed(&'a str),
    /// Applied, no `--check` to tell more.
    Applied,
    /// Applied, and `--check` succeeded.
    Healthy,
    /// Applied, and `--check` failed: why.
    Unhealthy(&'a str),
}

/// The name reports go under, and the last report on each project.
pub struct Reports {
    /// `None` with `--no-report`.
    edge: Option<String>,
    /// `--canary`.
    canary: bool,
    /// Sent again every [`REPORT_EVERY`].
    last: BTreeMap<String, EdgeReport>,
    sent_at: Instant,
}

impl Reports {
    /// Reports under `name` (the host's when `None`), or none at all; as a
    /// canary with `canary`.
    pub fn new(name: Option<&str>, no_report: bool, canary: bool) -> anyhow::Result<Self> {
        let edge = match (name, no_report) {
            (_, true) => None,
            (Some(name), false) if !edge::valid_name(name) => {
                bail!("--name {name:?} {}", edge::NAME_RULE)
            }
            (Some(name), false) => Some(name.to_owned()),
            (None, false) => Some(host_name()),
        };
        Ok(Self {
            edge,
            canary,
            last: BTreeMap::new(),
            sent_at: Instant::now(),
        })
    }

    /// The name this edge reports under: the one its target is read for.
    pub fn edge(&self) -> Option<&str> {
        self.edge.as_deref()
    }

    /// Tells the service what applying `revision` of `project` came to; a
    /// report that fails is only said: the next change or minute sends it
    /// again.
    pub async fn send(
        &mut self,
        client: &ApiClient,
        project: &str,
        revision: u32,
        outcome: Outcome<'_>,
    ) {
        let Some(edge) = &self.edge else {
            return;
        };
        let (status, healthy, error) = match outcome {
            Outcome::Failed(why) => (EdgeStatus::Failed, None, Some(why)),
            Outcome::Applied => (EdgeStatus::Applied, None, None),
            Outcome::Healthy => (EdgeStatus::Applied, Some(true), None),
            Outcome::Unhealthy(why) => (EdgeStatus::Applied, Some(false), Some(why)),
        };
        let report = EdgeReport {
            name: edge.clone(),
            revision,
            status,
            error: error.map(str::to_owned),
            // `healthy` and `canary` are written only when set (`EdgeReport`):
            // a service older than rollouts refuses members it does not
            // know, and an edge without --check or --canary still reports.
            healthy,
            canary: self.canary,
        };
        self.post(client, project, report).await;
    }

    async fn post(&mut self, client: &ApiClient, project: &str, report: EdgeReport) {
        let path = v1(&["projects", project, "edges"]);
        let body = serde_json::to_value(&report).expect("a report serializes");
        let request = Request::new(reqwest::Method::POST, &path).body(body);
        if let Err(error) = client.send(request).await {
            eprintln!("follow: {project}: cannot report what this edge runs: {error:#}");
        }
        self.last.insert(project.to_owned(), report);
        self.sent_at = Instant::now();
    }

    /// The project no longer has a revision here: nothing to report again.
    pub fn forget(&mut self, project: &str) {
        self.last.remove(project);
    }

    /// The projects whose last report said their revision failed, or
    /// that the edge was unhealthy on it, but those of `batch`, with that
    /// revision: a run of `--exec` and `--check` is the whole edge's, their
    /// outcome is theirs too.
    pub fn failed_before<T>(&self, batch: &BTreeMap<String, T>) -> Vec<(String, u32)> {
        self.last
            .iter()
            .filter(|(project, report)| {
                let failed = report.status == EdgeStatus::Failed || report.healthy == Some(false);
                failed && !batch.contains_key(*project)
            })
            .map(|(project, report)| (project.clone(), report.revision))
            .collect()
    }

    /// Every last report again when [`REPORT_EVERY`] passed since one was
    /// sent, so that the edge does not go stale.
    pub async fn again_when_due(&mut self, client: &ApiClient) {
        if self.sent_at.elapsed() < REPORT_EVERY {
            return;
        }
        for (project, report) in std::mem::take(&mut self.last) {
            self.post(client, &project, report).await;
        }
        self.sent_at = Instant::now();
    }
}

/// The host's name, made an edge name (what the rule does not allow
/// becomes `-`); `edge` when there is none.
fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default();
    let name: String = name
        .trim()
        .chars()
        .take(64)
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                true => c,
                false => '-',
            },
        )
        .collect();
    if name.is_empty() { "edge".into() } else { name }
}
