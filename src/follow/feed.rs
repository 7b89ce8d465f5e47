//! The feed loop of `follow`: from the saved cursor (or a full sync), the
//! change feed's stream, its changes gathered in batches and applied: the
//! files written (the projects', then the routing index), `--exec` run,
//! the edge reported, the cursor saved. A reset writes every file again; a service that cannot be reached is
//! tried again, later each time, while the files stay as they are.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::anyhow;

use super::answers::FeedChange;
use super::args::FollowArgs;
use super::files::{Folder, followable};
use super::reads::{self, Read, Touched};
use super::reload::{CheckFailed, ExecFailed, run_check, run_exec};
use super::reports::{Outcome, Reports};
use super::retry::{Ended, backoff, classify};
use super::routing::RoutingIndex;
use super::verified::Served;
use crate::client::http::{ApiClient, Refused, v1};
use crate::client::sse::{Event, EventStream};
use crate::domain::change::Cursor;
use crate::domain::ids;

/// Changes that come this close together are applied together (one
/// activation is two changes: the old revision's, then the new one's).
const SETTLE: Duration = Duration::from_millis(100);

/// How often `--once` tries before it fails (exit 1): with the backoff
/// between tries, it gives up within about 7 s of an unreachable service.
const ONCE_ATTEMPTS: u32 = 4;

pub struct Follower {
    client: ApiClient,
    args: FollowArgs,
    /// The folder (--dir): every file is reached through it.
    folder: Folder,
    reports: Reports,
    /// The verified names of the projects followed, as the folder's
    /// routing index holds them.
    routing: RoutingIndex,
    /// Where the index is published after each change, for `--ask-listen`
    /// and `--tls-check`.
    served: Served,
    /// The folder holds no routing index yet (a folder an older follow
    /// kept): the saved cursor is not enough, every file is written.
    routing_missing: bool,
    /// Failures in a row, for the backoff.
    failures: u32,
    /// `--exec` runs after the next change even if no file changed: it
    /// has not run since follow started (a run before may have failed
    /// after the files were written), or its last run failed.
    exec_owed: bool,
    /// `--project` and `--organization` are ids: made so from the names
    /// given, at the first round that reached the service.
    named: bool,
}

impl Follower {
    pub fn new(
        client: ApiClient,
        args: FollowArgs,
        folder: Folder,
        routing: Option<RoutingIndex>,
        reports: Reports,
        served: Served,
    ) -> Self {
        Self {
            served,
            client,
            args,
            folder,
            reports,
            routing_missing: routing.is_none(),
            routing: routing.unwrap_or_default(),
            failures: 0,
            exec_owed: true,
            named: false,
        }
    }

    /// Runs until stopped (or once, with `--once`).
    pub async fn run(mut self) -> anyhow::Result<()> {
        loop {
            match self.round().await {
                Ok(()) => return Ok(()),
                Err(Ended::Fatal(error)) => return Err(error),
                Err(Ended::Retry(error)) => {
                    self.failures += 1;
                    // A run that must end (a provisioning script's) says
                    // so after a few tries rather than waiting for ever.
                    if self.args.once && self.failures >= ONCE_ATTEMPTS {
                        return Err(error.context(format!(
                            "--once: giving up after {ONCE_ATTEMPTS} attempts; the files stay as they are"
                        )));
                    }
                    let wait = backoff(self.failures);
                    eprintln!(
                        "follow: {error:#}; the files stay as they are; trying again in {:.1} s",
                        wait.as_secs_f64()
                    );
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// From the saved cursor (or a full sync) until the stream fails; with
    /// `--once`, a full sync alone.
    async fn round(&mut self) -> Result<(), Ended> {
        if !self.named {
            reads::name_ids(&self.client, &mut self.args).await?;
            self.named = true;
        }
        let saved = match self.args.once {
            true => None,
            false => self.folder.saved_cursor().map_err(Ended::Fatal)?,
        };
        let saved = match (saved, self.routing_missing) {
            (Some(_), true) => {
                eprintln!("follow: the folder has no routing index yet");
                None
            }
            (saved, _) => saved,
        };
        let mut cursor = match saved {
            Some(cursor) => {
                eprintln!("follow: resuming after cursor {cursor}");
                cursor
            }
            None => {
                eprintln!("follow: writing every file");
                let (cursor, projects) = self.sync_all().await?;
                if self.args.once {
                    let summary = serde_json::json!({"cursor": cursor, "projects": projects});
                    println!("{summary}");
                    return Ok(());
                }
                cursor
            }
        };
        loop {
            self.follow_stream(cursor).await?;
            eprintln!("follow: the service no longer keeps our cursor; writing every file again");
            cursor = self.sync_all().await?.0;
        }
    }

    /// One stream from `cursor`, applying its changes; `Ok` when it says
    /// the cursor is older than the changes the service keeps (a reset).
    async fn follow_stream(&mut self, mut cursor: Cursor) -> Result<(), Ended> {
        let mut stream = self.open(cursor).await?;
        self.failures = 0;
        let mut dirty = BTreeMap::new();
        loop {
            // Wait without limit for a change, then `SETTLE` for the ones
            // that come with it.
            let event = if dirty.is_empty() {
                stream.next().await
            } else {
                match tokio::time::timeout(SETTLE, stream.next()).await {
                    Ok(event) => event,
                    Err(_) => {
                        self.apply(std::mem::take(&mut dirty), cursor).await?;
                        continue;
                    }
                }
            };
            let Some(event) = event.map_err(Ended::Retry)? else {
                if !dirty.is_empty() {
                    self.apply(std::mem::take(&mut dirty), cursor).await?;
                }
                return Err(Ended::Retry(anyhow!("the service ended the stream")));
            };
            match event.name.as_str() {
                "change" => {
                    let change: FeedChange = serde_json::from_str(&event.data)
                        .map_err(|e| Ended::Retry(anyhow!("a change that cannot be read: {e}")))?;
                    if let Some(project) = change.project_id.as_deref().filter(|p| followable(p)) {
                        let touched: &mut Touched = dirty.entry(project.to_owned()).or_default();
                        touched.note(&change);
                    }
                    cursor = event_cursor(&event)?;
                }
                "reset" => return Ok(()),
                // Past changes this follow does not see; saved with the
                // next change.
                "heartbeat" if dirty.is_empty() => {
                    cursor = event_cursor(&event)?;
                    self.reports.again_when_due(&self.client).await;
                }
                "error" => {
                    let refused = Refused::from_event(&event.data);
                    return Err(Ended::Fatal(anyhow!(
                        "the service ended the stream: {refused}"
                    )));
                }
                _ => {}
            }
        }
    }

    /// The project(s) followed, written whole; answers the cursor they
    /// stand at, and the projects.
    async fn sync_all(&mut self) -> Result<(Cursor, Vec<String>), Ended> {
        // Where the feed stands before the listing: a change made while
        // it is read comes again after, and applying it twice is harmless.
        let cursor = reads::feed_head(&self.client).await?;
        let projects = match (&self.args.project, &self.args.organization) {
            (Some(project), _) if !ids::is_valid_id(project) => {
                let rule = ids::ID_RULE;
                return Err(Ended::Fatal(anyhow!("--project {project:?} {rule}")));
            }
            (Some(project), _) => vec![project.clone()],
            (None, Some(organization)) => {
                let listed = reads::projects_of(&self.client, organization).await?;
                listed.into_iter().filter(|p| followable(p)).collect()
            }
            (None, None) => unreachable!("clap requires one"),
        };
        let mut batch: BTreeMap<String, Touched> = projects
            .iter()
            .map(|project| (project.clone(), Touched::everything()))
            .collect();
        // Projects of the folder the organization no longer has.
        if self.args.organization.is_some() {
            for stale in self.folder.project_folders().map_err(Ended::Fatal)? {
                batch.entry(stale).or_insert_with(Touched::stale);
            }
        }
        // The index names only the projects followed (a stale one's names
        // go with its folder, below).
        self.routing.retain(|project| batch.contains_key(project));
        self.apply(batch, cursor).await?;
        Ok((cursor, projects))
    }

    /// Reads what the changes name, writes the files that changed, runs
    /// `--exec` when one did (or it is owed), reports, saves the cursor.
    ///
    /// The order keeps the routing index true to the folder at every
    /// moment, for any reader (an `--exec`, an edge reloading on its own):
    /// the projects' files first, then the index (each map renamed into
    /// place), then the folders of the projects gone: a host the index
    /// names always has its project's files.
    async fn apply(
        &mut self,
        batch: BTreeMap<String, Touched>,
        cursor: Cursor,
    ) -> Result<(), Ended> {
        let mut changed = false;
        // The revision each project of the batch now runs, for the reports.
        let mut running = Vec::new();
        // Projects gone: their folders go once the index no longer names them.
        let mut gone = Vec::new();
        for (project, touched) in &batch {
            let read = match touched.is_stale() {
                true => Read::Gone,
                false => {
                    let edge = self.reports.edge();
                    reads::read_project(&self.client, &self.folder, project, touched, edge).await?
                }
            };
            match read {
                Read::Found {
                    project: body,
                    served,
                    names,
                } => {
                    let (wrote, revision) = self
                        .folder
                        .write_project(project, body, served)
                        .map_err(Ended::Fatal)?;
                    changed |= wrote;
                    match revision {
                        Some(revision) => running.push((project.clone(), revision)),
                        None => self.reports.forget(project),
                    }
                    if let Some(names) = names {
                        self.routing
                            .set(project, names.iter().map(|d| d.name.as_str()));
                        self.served.heard(&names);
                    }
                }
                Read::Gone if self.args.project.is_some() => {
                    return Err(Ended::Fatal(anyhow!(
                        "no project {project:?} (deleted, or this token cannot see it)"
                    )));
                }
                Read::Gone => {
                    self.reports.forget(project);
                    self.routing.remove(project);
                    gone.push(project);
                }
            }
        }
        changed |= self
            .folder
            .write_routing(&self.routing)
            .map_err(Ended::Fatal)?;
        self.routing_missing = false;
        self.served.publish(&self.routing);
        for project in gone {
            if self.folder.remove(project).map_err(Ended::Fatal)? {
                eprintln!("follow: {project}: gone");
                changed = true;
            }
        }
        if !changed && !self.exec_owed {
            // What the edge serves is what it served: nothing to run.
            return self.folder.save_cursor(cursor).map_err(Ended::Fatal);
        }
        let failure = match &self.args.exec {
            Some(command) => run_exec(command, self.folder.path()).await?,
            None => None,
        };
        self.exec_owed = failure.is_some();
        // The health of what the edge serves, once it serves it.
        let unhealthy = match (&failure, &self.args.check) {
            (None, Some(command)) => Some(run_check(command, self.folder.path()).await?),
            _ => None,
        };
        if failure.is_none() {
            // A run that succeeded applied every file: the projects it
            // failed on before run their revision now, as healthy as the
            // check just said.
            running.extend(self.reports.failed_before(&batch));
        }
        let outcome = match (&failure, &unhealthy) {
            (Some(error), _) => Outcome::Failed(error),
            (None, None) => Outcome::Applied,
            (None, Some(None)) => Outcome::Healthy,
            (None, Some(Some(error))) => Outcome::Unhealthy(error),
        };
        for (project, revision) in running {
            self.reports
                .send(&self.client, &project, revision, outcome)
                .await;
        }
        if let Some(error) = failure {
            // The cursor stays where it was: a restart runs it again.
            if self.args.once {
                return Err(Ended::Fatal(ExecFailed(error).into()));
            }
            eprintln!("follow: {error}; the cursor is not saved");
            return Ok(());
        }
        // The edge serves the files, healthy or not: the cursor moves on
        // (a rollback is a change of its own, which writes them again).
        self.folder.save_cursor(cursor).map_err(Ended::Fatal)?;
        match unhealthy.flatten() {
            Some(error) if self.args.once => Err(Ended::Fatal(CheckFailed(error).into())),
            Some(error) => {
                eprintln!("follow: {error}; the edge is reported unhealthy");
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// The stream of changes after `cursor`.
    async fn open(&self, cursor: Cursor) -> Result<EventStream, Ended> {
        let mut query = vec![("after", cursor.to_string())];
        match (&self.args.project, &self.args.organization) {
            (Some(project), _) => query.push(("project_id", project.clone())),
            (None, Some(organization)) => query.push(("organization_id", organization.clone())),
            (None, None) => {}
        }
        self.client
            .stream(&v1(&["changes"]), &query)
            .await
            .map_err(classify)
    }
}

fn event_cursor(event: &Event) -> Result<Cursor, Ended> {
    event
        .id
        .as_deref()
        .and_then(Cursor::parse)
        .ok_or_else(|| Ended::Retry(anyhow!("an event without a cursor")))
}
