//! What this edge tells the service it runs (reportEdge, `docs/feed.md`,
//! "Who runs which revision"): after each change it applied, or failed
//! to, under the name `--name` gives (the host's by default), and every
//! minute again so that the edge does not go stale.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::bail;

use crate::client::http::{ApiClient, Request, v1};
use crate::domain::edge::{self, EdgeReport, EdgeStatus};

/// How often the last reports are sent again (the service calls an edge
/// stale after 3 minutes without one).
const REPORT_EVERY: Duration = Duration::from_secs(60);

/// The name reports go under, and the last report on each project.
pub struct Reports {
    /// `None` with `--no-report`.
    edge: Option<String>,
    /// Sent again every [`REPORT_EVERY`].
    last: BTreeMap<String, EdgeReport>,
    sent_at: Instant,
}

impl Reports {
    /// Reports under `name` (the host's when `None`), or none at all.
    pub fn new(name: Option<&str>, no_report: bool) -> anyhow::Result<Self> {
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
            last: BTreeMap::new(),
            sent_at: Instant::now(),
        })
    }

    /// Tells the service that this edge runs `revision` of `project`, or
    /// failed to apply it (`failure`); a report that fails is only said:
    /// the next change or minute sends it again.
    pub async fn send(
        &mut self,
        client: &ApiClient,
        project: &str,
        revision: u32,
        failure: Option<&str>,
    ) {
        let Some(edge) = &self.edge else {
            return;
        };
        let report = EdgeReport {
            name: edge.clone(),
            revision,
            status: match failure {
                Some(_) => EdgeStatus::Failed,
                None => EdgeStatus::Applied,
            },
            error: failure.map(str::to_owned),
            healthy: None,
            canary: false,
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

    /// The projects whose last report said their revision failed, but
    /// those of `batch`, with that revision.
    pub fn failed_before<T>(&self, batch: &BTreeMap<String, T>) -> Vec<(String, u32)> {
        self.last
            .iter()
            .filter(|(project, report)| {
                report.status == EdgeStatus::Failed && !batch.contains_key(*project)
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
