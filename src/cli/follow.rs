//! `proxydeck follow`: keeps a folder in step with a project's (or an
//! organization's projects') configuration, through the change feed
//! (`docs/feed.md`), as consul-template or confd keep files in step with
//! theirs. For each project, `PROJECT/project.json` (the project) and
//! `PROJECT/proxy-settings.json` (its active revision; absent when none
//! is), each written whole (a temporary file, fsync, rename); when what
//! they hold changed, `--exec`. The cursor the files stand at is saved
//! beside them (`.cursor`), so that a restart resumes where the last run
//! stopped; while the service cannot be reached the files stay as they are
//! and the command tries again, waiting longer each time (with jitter).
//!
//! What the service sends is not trusted with the folder: a project id is
//! a file name only when the API's id rule allows it, and every file is
//! reached through the folder's handle (`cap-std`), so that neither a name
//! nor a link leads out of it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use clap::{ArgGroup, Args};
use serde_json::Value;

use super::api::{ApiClient, Refused, Request};
use super::connection::{self, Connection};
use super::{names, revisions};
use crate::domain::change::Cursor;
use crate::domain::edge;
use crate::domain::ids;

/// `proxydeck follow --help`'s text after the flags.
pub(super) const AFTER_HELP: &str = "\
Examples:
  proxydeck follow --project acme-shop --dir /var/lib/proxydeck-edge \\
      --exec '/usr/share/proxydeck/edge/haproxy-apply acme-shop'
  proxydeck follow --organization 0190b7a4-0000-7000-8000-000000000001 --dir ./config --once

For each project: PROJECT/project.json and PROJECT/proxy-settings.json (its active revision),
each written whole. .cursor saves where the files stand: a restart resumes there.

--exec runs (sh -c, in --dir) after a change that changed what the files hold, after follow
starts, and after a run that failed; not after one that left them as they were (an inactive
revision created). Its environment is follow's without any PROXYDECK_* variable (the token
stays with follow), with PROXYDECK_FOLLOW_DIR set to the folder.

Exit status: 0 (--once) the files are written and --exec succeeded; 1 an error (the token
refused, the project gone, the folder unusable); 2 a bad command line; 3 (--once) --exec
failed: the files are written, the cursor is not saved, the edge is reported failed.";

#[derive(Args)]
#[command(group(ArgGroup::new("followed").required(true).args(["project", "organization"])))]
pub struct FollowArgs {
    /// Follow this project: its id, ORG/SLUG (such as
    /// acme-corp/acme-shop), or its slug alone when no other project of
    /// yours has it. Its files go in a folder named by its id.
    #[arg(long, value_name = "PROJECT")]
    project: Option<String>,
    /// Follow every project of this organization of yours: its slug or
    /// its id.
    #[arg(long, value_name = "ORGANIZATION")]
    organization: Option<String>,
    /// The folder the files are kept in (made when missing). Nothing is
    /// written outside it, and no link in it is followed out of it.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Run this (with `sh -c`, in the folder) when the files changed (see
    /// below), with PROXYDECK_FOLLOW_DIR set to the folder and no other
    /// PROXYDECK_* variable.
    #[arg(long, value_name = "COMMAND")]
    exec: Option<String>,
    /// The name this edge reports under (reportEdge) after each change it
    /// applied, or failed to [default: the host's name].
    #[arg(long, value_name = "EDGE")]
    name: Option<String>,
    /// Report nothing.
    #[arg(long, conflicts_with = "name")]
    no_report: bool,
    /// Write every file and run --exec once, whatever the saved cursor,
    /// print where they stand (`{"cursor": ..., "projects": [...]}`), then
    /// stop (exit status 3 when --exec failed).
    #[arg(long)]
    once: bool,
    #[command(flatten)]
    connection: Connection,
}

/// `--exec` failed under `--once`: exit status 3 (`mod.rs`, `fail`).
#[derive(Debug, thiserror::Error)]
#[error("{0}; the cursor is not saved")]
pub(super) struct ExecFailed(String);

/// The first wait after a failure, and the longest.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const LONGEST_BACKOFF: Duration = Duration::from_secs(30);
/// Changes that come this close together are applied together (one
/// activation is two changes: the old revision's, then the new one's).
const SETTLE: Duration = Duration::from_millis(100);
const CURSOR_FILE: &str = ".cursor";
const PROJECT_FILE: &str = "project.json";
const SETTINGS_FILE: &str = "proxy-settings.json";
/// The variable `--exec` finds the folder in; every other PROXYDECK_*
/// variable (the token, the URL, the profile...) is kept from it.
const FOLLOW_DIR_VARIABLE: &str = "PROXYDECK_FOLLOW_DIR";
/// How often the last reports are sent again (the service calls an edge
/// stale after 3 minutes without one).
const REPORT_EVERY: Duration = Duration::from_secs(60);

/// Runs `proxydeck follow` until stopped (or once, with `--once`).
pub async fn follow(mut args: FollowArgs) -> anyhow::Result<()> {
    let client = ApiClient::new(&connection::resolve(&args.connection)?)?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot make {}", args.dir.display()))?;
    // Absolute: --exec runs in the folder, and finds it in
    // PROXYDECK_FOLLOW_DIR whatever its own working folder.
    args.dir = std::fs::canonicalize(&args.dir)
        .with_context(|| format!("cannot open {}", args.dir.display()))?;
    let root = Dir::open_ambient_dir(&args.dir, ambient_authority())
        .with_context(|| format!("cannot open {}", args.dir.display()))?;
    let edge = match (&args.name, args.no_report) {
        (_, true) => None,
        (Some(name), false) if !edge::valid_name(name) => {
            bail!("--name {name:?} {}", edge::NAME_RULE)
        }
        (Some(name), false) => Some(name.clone()),
        (None, false) => Some(host_name()),
    };
    let follower = Follower {
        client,
        args,
        root,
        failures: 0,
        exec_owed: true,
        edge,
        reported: BTreeMap::new(),
        reported_at: Instant::now(),
        named: false,
    };
    follower.run().await
}

struct Follower {
    client: ApiClient,
    args: FollowArgs,
    /// The folder (--dir): every file is reached through it.
    root: Dir,
    /// Failures in a row, for the backoff.
    failures: u32,
    /// `--exec` runs after the next change even if no file changed: it
    /// has not run since follow started (a run before may have failed
    /// after the files were written), or its last run failed.
    exec_owed: bool,
    /// The name reports go under; `None` with --no-report.
    edge: Option<String>,
    /// The last report on each project, sent again every
    /// [`REPORT_EVERY`] so that the edge does not go stale.
    reported: BTreeMap<String, Value>,
    reported_at: Instant,
    /// `--project` and `--organization` are ids: made so from the names
    /// given, at the first round that reached the service.
    named: bool,
}

/// Why a round ended.
enum Ended {
    /// The service is unreachable or failing: try again later.
    Retry(anyhow::Error),
    /// Nothing to try again: the token, the project, the folder, or
    /// `--once`'s `--exec`.
    Fatal(anyhow::Error),
}

/// What a batch of changes says of one project: what to read again.
#[derive(Clone, Default)]
struct Touched {
    /// The project itself changed: read it again.
    project: bool,
    /// The revisions the changes named, in the order they came.
    revisions: Vec<u32>,
    /// Look at every revision: the listing says which is active.
    all_revisions: bool,
    /// The project is no longer followed (an organization's project gone
    /// from its listing): remove its folder without asking.
    stale: bool,
}

impl Touched {
    /// Everything read again (a full sync).
    fn everything() -> Self {
        Self {
            project: true,
            all_revisions: true,
            ..Self::default()
        }
    }

    /// Notes what `change` (`docs/feed.md`, "The events") says.
    fn note(&mut self, change: &Value) {
        let is_revision = change["type"]
            .as_str()
            .is_some_and(|kind| kind.starts_with("proxy_settings."));
        let revision = change["revision"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok());
        match (is_revision, revision) {
            (false, _) => self.project = true,
            (true, Some(revision)) => self.revisions.push(revision),
            (true, None) => self.all_revisions = true,
        }
    }
}

/// A project as the service shows it now.
enum Read {
    /// Deleted, or this token cannot see it.
    Gone,
    /// Its object (`None`: unchanged, not read) and its active revision.
    Found {
        project: Option<Value>,
        active: Active,
    },
}

/// The active revision, as far as the changes tell.
enum Active {
    /// No change named a revision: the file stays as it is.
    Unchanged,
    /// This one, or none.
    Now(Option<Value>),
}

impl Follower {
    async fn run(mut self) -> anyhow::Result<()> {
        loop {
            match self.round().await {
                Ok(()) => return Ok(()),
                Err(Ended::Fatal(error)) => return Err(error),
                Err(Ended::Retry(error)) => {
                    self.failures += 1;
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
        self.name_ids().await?;
        let saved = match self.args.once {
            true => None,
            false => self.saved_cursor().map_err(Ended::Fatal)?,
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

    /// `--project` (an id, `ORG/SLUG` or a slug) and `--organization` (an
    /// id or a slug) made ids, once; a name that names nothing of the
    /// caller's ends follow, a service it cannot reach is tried again.
    async fn name_ids(&mut self) -> Result<(), Ended> {
        if self.named {
            return Ok(());
        }
        let ended = |error: anyhow::Error| match error.is::<names::Unnamed>() {
            true => Ended::Fatal(error),
            false => classify(error),
        };
        if let Some(given) = self.args.project.clone() {
            let id = names::resolve_project(&self.client, &given)
                .await
                .map_err(ended)?;
            self.args.project = Some(id);
        }
        // An organization's id is taken as it is (the feed refuses one
        // that is not the caller's): no request.
        if let Some(given) = self.args.organization.clone()
            && ids::parse_organization_id(&given).is_none()
        {
            let id = names::resolve_organization(&self.client, &given)
                .await
                .map_err(ended)?;
            self.args.organization = Some(id);
        }
        self.named = true;
        Ok(())
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
                    let change: Value = serde_json::from_str(&event.data)
                        .map_err(|e| Ended::Retry(anyhow!("a change that is not JSON: {e}")))?;
                    if let Some(project) = change["project_id"].as_str().filter(|p| followable(p)) {
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
                    if self.reported_at.elapsed() >= REPORT_EVERY {
                        self.report_again().await;
                    }
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
        let path = segments(&["v1", "changes"]);
        let head = self.client.send(Request::new(reqwest::Method::GET, &path));
        let head: Value = serde_json::from_slice(&head.await.map_err(classify)?.body)
            .map_err(|e| Ended::Retry(anyhow!("the feed's answer is not JSON: {e}")))?;
        let cursor = head["cursor"]
            .as_str()
            .and_then(Cursor::parse)
            .ok_or_else(|| Ended::Retry(anyhow!("the feed's answer has no cursor")))?;
        let projects = match (&self.args.project, &self.args.organization) {
            (Some(project), _) if !ids::is_valid_id(project) => {
                let rule = ids::ID_RULE;
                return Err(Ended::Fatal(anyhow!("--project {project:?} {rule}")));
            }
            (Some(project), _) => vec![project.clone()],
            (None, Some(organization)) => {
                let listed = self.projects_of(organization).await?;
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
            for stale in self.project_folders().map_err(Ended::Fatal)? {
                batch.entry(stale).or_insert_with(|| Touched {
                    stale: true,
                    ..Touched::default()
                });
            }
        }
        self.apply(batch, cursor).await?;
        Ok((cursor, projects))
    }

    /// Reads what the changes name, writes the files that changed, runs
    /// `--exec` when one did (or it is owed), reports, saves the cursor.
    async fn apply(
        &mut self,
        batch: BTreeMap<String, Touched>,
        cursor: Cursor,
    ) -> Result<(), Ended> {
        let mut changed = false;
        // The revision each project of the batch now runs, for the reports.
        let mut running = Vec::new();
        for (project, touched) in &batch {
            let read = match touched.stale {
                true => Read::Gone,
                false => self.read_project(project, touched).await?,
            };
            match read {
                Read::Found {
                    project: body,
                    active,
                } => {
                    let (wrote, revision) = self.write_project(project, body, active)?;
                    changed |= wrote;
                    match revision {
                        Some(revision) => running.push((project.clone(), revision)),
                        None => drop(self.reported.remove(project)),
                    }
                }
                Read::Gone if self.args.project.is_some() => {
                    return Err(Ended::Fatal(anyhow!(
                        "no project {project:?} (deleted, or this token cannot see it)"
                    )));
                }
                Read::Gone => {
                    self.reported.remove(project);
                    if self.remove(project).map_err(Ended::Fatal)? {
                        eprintln!("follow: {project}: gone");
                        changed = true;
                    }
                }
            }
        }
        if !changed && !self.exec_owed {
            // What the edge serves is what it served: nothing to run.
            return self.save_cursor(cursor).map_err(Ended::Fatal);
        }
        let failure = match &self.args.exec {
            Some(command) => run_exec(command, &self.args.dir).await?,
            None => None,
        };
        self.exec_owed = failure.is_some();
        if failure.is_none() {
            // A run that succeeded applied every file: the projects it
            // failed on before run their revision now.
            let failed_before = self.reported.iter().filter(|(project, report)| {
                report["status"] == "failed" && !batch.contains_key(*project)
            });
            let failed_before: Vec<_> = failed_before
                .map(|(project, report)| (project.clone(), report["revision"].clone()))
                .collect();
            running.extend(failed_before);
        }
        for (project, revision) in running {
            let mut report = serde_json::json!({"revision": revision, "status": "applied"});
            if let Some(error) = &failure {
                report["status"] = "failed".into();
                report["error"] = error.clone().into();
            }
            self.report(&project, report).await;
        }
        if let Some(error) = failure {
            // The cursor stays where it was: a restart runs it again.
            if self.args.once {
                return Err(Ended::Fatal(ExecFailed(error).into()));
            }
            eprintln!("follow: {error}; the cursor is not saved");
            return Ok(());
        }
        self.save_cursor(cursor).map_err(Ended::Fatal)
    }

    /// Writes what was read of `project` in its folder (made when
    /// missing); answers whether a file's content changed, and the
    /// revision the folder now holds.
    fn write_project(
        &self,
        project: &str,
        body: Option<Value>,
        active: Active,
    ) -> Result<(bool, Option<Value>), Ended> {
        let fatal = |error: anyhow::Error| {
            let folder = self.args.dir.join(project);
            Ended::Fatal(error.context(format!("{}", folder.display())))
        };
        let folder = self.project_folder(project).map_err(fatal)?;
        let mut changed = false;
        if let Some(body) = body {
            changed |= write_if_changed(&folder, PROJECT_FILE, &pretty(&body)).map_err(fatal)?;
        }
        let revision = match active {
            Active::Unchanged => held_revision(&folder),
            Active::Now(Some(revision)) => {
                let text = pretty(&revision);
                if write_if_changed(&folder, SETTINGS_FILE, &text).map_err(fatal)? {
                    eprintln!(
                        "follow: {project}: revision {} written",
                        revision["revision"]
                    );
                    changed = true;
                }
                Some(revision["revision"].clone())
            }
            Active::Now(None) => {
                if remove_file(&folder, SETTINGS_FILE).map_err(fatal)? {
                    eprintln!("follow: {project}: no active revision");
                    changed = true;
                }
                None
            }
        };
        Ok((changed, revision))
    }

    /// Tells the service what this edge runs of `project` (reportEdge);
    /// a report that fails is only said: the next change or minute sends
    /// it again.
    async fn report(&mut self, project: &str, mut report: Value) {
        let Some(edge) = &self.edge else {
            return;
        };
        report["name"] = edge.clone().into();
        let path = segments(&["v1", "projects", project, "edges"]);
        let request = Request::new(reqwest::Method::POST, &path).body(report.clone());
        if let Err(error) = self.client.send(request).await {
            eprintln!("follow: {project}: cannot report what this edge runs: {error:#}");
        }
        self.reported.insert(project.to_owned(), report);
        self.reported_at = Instant::now();
    }

    /// Every last report again, so that the edge does not go stale.
    async fn report_again(&mut self) {
        for (project, report) in std::mem::take(&mut self.reported) {
            self.report(&project, report).await;
        }
        self.reported_at = Instant::now();
    }

    /// What the changes in `touched` changed of `project`: its object when
    /// it changed (or its folder has none yet), its active revision when a
    /// change named one.
    async fn read_project(&self, project: &str, touched: &Touched) -> Result<Read, Ended> {
        let written = self.root.is_file(Path::new(project).join(PROJECT_FILE));
        let body =
            match touched.project || !written {
                true => {
                    let path = segments(&["v1", "projects", project]);
                    let request = Request::new(reqwest::Method::GET, &path);
                    match self.client.send(request).await {
                        Ok(answer) => Some(serde_json::from_slice(&answer.body).map_err(|e| {
                            Ended::Retry(anyhow!("a project that is not JSON: {e}"))
                        })?),
                        Err(error) if is_not_found(&error) => return Ok(Read::Gone),
                        Err(error) => return Err(classify(error)),
                    }
                }
                false => None,
            };
        let held = self
            .root
            .open_dir(project)
            .ok()
            .and_then(|folder| held_revision(&folder))
            .and_then(|revision| revision.as_u64())
            .and_then(|n| u32::try_from(n).ok());
        let active = match (touched.all_revisions, touched.revisions.is_empty()) {
            (false, true) => Active::Unchanged,
            (false, false) => match self.named_active(project, &touched.revisions, held).await {
                Some(active) => Active::Now(Some(active)),
                None => match self.listed_active(project).await? {
                    Some(active) => Active::Now(active),
                    None => return Ok(Read::Gone),
                },
            },
            (true, _) => match self.listed_active(project).await? {
                Some(active) => Active::Now(active),
                None => return Ok(Read::Gone),
            },
        };
        Ok(Read::Found {
            project: body,
            active,
        })
    }

    /// The active revision among those the changes named (the latest
    /// first: an activation's change names the revision it made active)
    /// and the one the folder holds, each read alone; `None` when none of
    /// them is active, or one cannot be read: then the listing decides.
    async fn named_active(&self, project: &str, named: &[u32], held: Option<u32>) -> Option<Value> {
        let mut looked = BTreeSet::new();
        for revision in named.iter().rev().copied().chain(held) {
            if !looked.insert(revision) {
                continue;
            }
            let read =
                revisions::fetch(&self.client, &revisions::Project::by_id(project), revision)
                    .await
                    .ok()?;
            if read["is_active"] == true {
                return Some(read);
            }
        }
        None
    }

    /// The active revision (`Some(None)`: none is) from the listing,
    /// newest first, page by page; `None` when the project is gone.
    async fn listed_active(&self, project: &str) -> Result<Option<Option<Value>>, Ended> {
        let path = segments(&["v1", "projects", project, "proxy-settings"]);
        let active = self
            .client
            .walk(&path, &[], |items| {
                match items.into_iter().find(|item| item["is_active"] == true) {
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

    /// Every project of the organization.
    async fn projects_of(&self, organization: &str) -> Result<Vec<String>, Ended> {
        let mut projects = Vec::new();
        let query = [("organization_id", organization.to_owned())];
        self.client
            .walk(&segments(&["v1", "projects"]), &query, |items| {
                let ids = items.iter().filter_map(|item| item["id"].as_str());
                projects.extend(ids.map(str::to_owned));
                ControlFlow::<()>::Continue(())
            })
            .await
            .map_err(classify)?;
        Ok(projects)
    }

    /// The stream of changes after `cursor`.
    async fn open(&self, cursor: Cursor) -> Result<EventStream, Ended> {
        let mut query = vec![("after", cursor.to_string())];
        match (&self.args.project, &self.args.organization) {
            (Some(project), _) => query.push(("project_id", project.clone())),
            (None, Some(organization)) => query.push(("organization_id", organization.clone())),
            (None, None) => {}
        }
        let response = self
            .client
            .stream(&segments(&["v1", "changes"]), &query)
            .await
            .map_err(classify)?;
        Ok(EventStream {
            response,
            buffer: String::new(),
        })
    }

    fn saved_cursor(&self) -> anyhow::Result<Option<Cursor>> {
        let path = self.args.dir.join(CURSOR_FILE);
        match self.root.read_to_string(CURSOR_FILE) {
            Ok(text) => Cursor::parse(text.trim()).map(Some).ok_or_else(|| {
                anyhow!(
                    "{} holds no cursor; remove it to start over",
                    path.display()
                )
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(anyhow!("cannot read {}: {error}", path.display())),
        }
    }

    fn save_cursor(&self, cursor: Cursor) -> anyhow::Result<()> {
        let mut text = cursor.to_string();
        text.push('\n');
        write_if_changed(&self.root, CURSOR_FILE, &text)
            .map(drop)
            .with_context(|| format!("{}", self.args.dir.join(CURSOR_FILE).display()))
    }

    /// The folders of the folder that are a project's: a real folder (not
    /// a link), named as a project id, holding a project.json.
    fn project_folders(&self) -> anyhow::Result<Vec<String>> {
        let mut found = Vec::new();
        let unreadable = || format!("cannot read {}", self.args.dir.display());
        for entry in self.root.entries().with_context(unreadable)? {
            let entry = entry.with_context(unreadable)?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if ids::is_valid_id(&name)
                && entry.file_type().is_ok_and(|kind| kind.is_dir())
                && self.root.is_file(Path::new(&name).join(PROJECT_FILE))
            {
                found.push(name);
            }
        }
        Ok(found)
    }

    /// The folder of `project` (a valid id: see [`followable`]), made when
    /// missing; a link there is followed only within the folder.
    fn project_folder(&self, project: &str) -> anyhow::Result<Dir> {
        match self.root.create_dir(project) {
            Ok(()) => sync_folder(&self.root)?,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(anyhow!("cannot make it: {error}")),
        }
        self.root.open_dir(project).map_err(|error| {
            anyhow!("cannot open it (a link out of --dir is not followed): {error}")
        })
    }

    /// Removes the folder of `project`, a link in it removed, never
    /// followed; answers whether there was one.
    fn remove(&self, project: &str) -> anyhow::Result<bool> {
        let folder = self.args.dir.join(project);
        match self.root.remove_dir_all(project) {
            Ok(()) => {
                sync_folder(&self.root)?;
                Ok(true)
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(anyhow!("cannot remove {}: {error}", folder.display())),
        }
    }
}

/// Whether `project`, as the service named it, may be followed: only an
/// id the API's rule allows (letters, digits, `_`, `-`) is a file name,
/// so that no id of a service (or of anyone between it and us) names a
/// path out of the folder, such as `../x` or `/x`.
fn followable(project: &str) -> bool {
    let valid = ids::is_valid_id(project);
    if !valid {
        eprintln!(
            "follow: the service named a project {project:?}, which is no project id ({}): not followed",
            ids::ID_RULE
        );
    }
    valid
}

/// The revision the folder's proxy-settings.json holds, if any.
fn held_revision(folder: &Dir) -> Option<Value> {
    let text = folder.read_to_string(SETTINGS_FILE).ok()?;
    let held: Value = serde_json::from_str(&text).ok()?;
    Some(held["revision"].clone()).filter(|revision| !revision.is_null())
}

/// Runs `--exec` in the folder; `Some(why)` when it fails: its exit
/// status and the end of what it wrote on stderr (passed on to ours).
async fn run_exec(command: &str, dir: &Path) -> Result<Option<String>, Ended> {
    let mut run = std::process::Command::new("sh");
    run.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // The token (and every other client setting) stays with follow.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PROXYDECK_") {
            run.env_remove(name);
        }
    }
    run.env(FOLLOW_DIR_VARIABLE, dir);
    let output = tokio::task::spawn_blocking(move || run.output())
        .await
        .map_err(|e| Ended::Fatal(anyhow!("cannot run --exec: {e}")))?
        .map_err(|e| Ended::Fatal(anyhow!("cannot run --exec: {e}")))?;
    let _ = std::io::stderr().write_all(&output.stderr);
    if output.status.success() {
        return Ok(None);
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let said = said.trim();
    let tail: String = said
        .chars()
        .skip(
            said.chars()
                .count()
                .saturating_sub(edge::MAX_ERROR_CHARS - 100),
        )
        .collect();
    Ok(Some(match tail.is_empty() {
        true => format!("--exec {}", output.status),
        false => format!("--exec {}: {tail}", output.status),
    }))
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

/// A stream of Server-Sent Events, read as they come.
struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

struct Event {
    name: String,
    id: Option<String>,
    data: String,
}

impl EventStream {
    /// The next event; `None` when the stream ends.
    async fn next(&mut self) -> anyhow::Result<Option<Event>> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = parse_event(&frame) {
                    return Ok(Some(event));
                }
                continue;
            }
            match self.response.chunk().await.context("the stream broke")? {
                Some(bytes) => self
                    .buffer
                    .push_str(std::str::from_utf8(&bytes).context("the stream is not UTF-8")?),
                None => return Ok(None),
            }
        }
    }
}

fn parse_event(frame: &str) -> Option<Event> {
    let mut event = Event {
        name: "message".into(),
        id: None,
        data: String::new(),
    };
    let mut any = false;
    for line in frame.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event.name = value.to_owned(),
            "id" => event.id = Some(value.to_owned()),
            "data" => {
                if any && !event.data.is_empty() {
                    event.data.push('\n');
                }
                event.data.push_str(value);
            }
            _ => continue,
        }
        any = true;
    }
    any.then_some(event)
}

fn event_cursor(event: &Event) -> Result<Cursor, Ended> {
    event
        .id
        .as_deref()
        .and_then(Cursor::parse)
        .ok_or_else(|| Ended::Retry(anyhow!("an event without a cursor")))
}

fn segments(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|part| (*part).to_owned()).collect()
}

fn is_not_found(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<Refused>()
        .is_some_and(Refused::is_not_found)
}

/// A refusal that trying again will not change ends the command; anything
/// else (unreachable, 5xx) is tried again.
fn classify(error: anyhow::Error) -> Ended {
    match error.downcast_ref::<Refused>() {
        Some(refused) if refused.is_permanent() => Ended::Fatal(error),
        _ => Ended::Retry(error),
    }
}

/// The wait after `failures` failures in a row: doubling from
/// [`FIRST_BACKOFF`] to [`LONGEST_BACKOFF`], each between half and all of
/// it at random, so that followers restarted together come back apart.
fn backoff(failures: u32) -> Duration {
    let full = FIRST_BACKOFF
        .saturating_mul(1 << failures.saturating_sub(1).min(5))
        .min(LONGEST_BACKOFF);
    full.mul_f64(rand::random_range(0.5..=1.0))
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value writes");
    text.push('\n');
    text
}

/// Writes `name` in `folder` whole unless it already holds `text`: a
/// temporary file beside it, flushed to the disk, renamed over it (a link
/// there is replaced, not followed), the folder flushed: a reader sees the
/// old file or the new one, never a part, even across a crash. Answers
/// whether it wrote.
fn write_if_changed(folder: &Dir, name: &str, text: &str) -> anyhow::Result<bool> {
    if folder.read_to_string(name).is_ok_and(|held| held == text) {
        return Ok(false);
    }
    let cannot = || format!("cannot write {name}");
    let mut file = cap_tempfile::TempFile::new(folder).with_context(cannot)?;
    file.write_all(text.as_bytes()).with_context(cannot)?;
    file.as_file().sync_all().with_context(cannot)?;
    file.replace(name).with_context(cannot)?;
    sync_folder(folder)?;
    Ok(true)
}

/// Removes `name` from `folder` (a link: the link); answers whether it was
/// there.
fn remove_file(folder: &Dir, name: &str) -> anyhow::Result<bool> {
    match folder.remove_file(name) {
        Ok(()) => sync_folder(folder).map(|()| true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => bail!("cannot remove {name}: {error}"),
    }
}

fn sync_folder(folder: &Dir) -> anyhow::Result<()> {
    // The handle itself is O_PATH, which fsync refuses: open it to read.
    folder
        .open(".")
        .and_then(|opened| opened.sync_all())
        .context("cannot flush the folder")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_as_eventsource_reads_them() {
        let event = parse_event("event: change\nid: 7\ndata: {\"a\":1}\n\n").unwrap();
        assert_eq!(
            (event.name.as_str(), event.id.as_deref()),
            ("change", Some("7"))
        );
        assert_eq!(event.data, "{\"a\":1}");
        assert!(parse_event(": a comment\n\n").is_none());
        let retry = parse_event("retry: 1000\n\n");
        assert!(retry.is_none());
    }

    #[test]
    fn backoff_doubles_up_to_its_longest_with_jitter() {
        for failures in 1..20 {
            let wait = backoff(failures);
            let full = FIRST_BACKOFF * (1 << (failures - 1).min(5));
            let full = full.min(LONGEST_BACKOFF);
            assert!(wait >= full / 2 && wait <= full, "{failures}: {wait:?}");
        }
    }
}
