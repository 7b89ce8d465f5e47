//! `proxydeck follow`: keeps a folder in step with a project's (or an
//! organization's projects') configuration, through the change feed
//! (`docs/feed.md`), as consul-template or confd keep files in step with
//! theirs. For each project, `PROJECT/project.json` (the project) and
//! `PROJECT/proxy-settings.json` (its active revision; absent when none
//! is), each written whole (a temporary file, fsync, rename); after each
//! change, `--exec`. The cursor the files stand at is saved beside them
//! (`.cursor`), so that a restart resumes where the last run stopped;
//! while the service cannot be reached the files stay as they are and
//! the command tries again, waiting longer each time (with jitter).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use serde_json::Value;

use super::api::{ApiClient, Refused, Request};
use super::connection::{self, Connection};
use crate::domain::change::Cursor;
use crate::domain::edge;

#[derive(Args)]
pub struct FollowArgs {
    /// Follow this project.
    #[arg(
        long,
        value_name = "PROJECT_ID",
        required_unless_present = "organization"
    )]
    project: Option<String>,
    /// Follow every project of this organization of yours.
    #[arg(long, value_name = "ORGANIZATION_ID", conflicts_with = "project")]
    organization: Option<String>,
    /// The folder the files are kept in (made when missing).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Run this (with `sh -c`) after each change is written, in the
    /// folder, with PROXYDECK_FOLLOW_DIR set to it.
    #[arg(long, value_name = "COMMAND")]
    exec: Option<String>,
    /// The name this edge reports under (reportEdge) after each change it
    /// applied, or failed to [default: the host's name].
    #[arg(long, value_name = "EDGE")]
    name: Option<String>,
    /// Report nothing.
    #[arg(long, conflicts_with = "name")]
    no_report: bool,
    /// Write every file (and run --exec) once, whatever the saved cursor,
    /// print where they stand (`{"cursor": ..., "projects": [...]}`), then
    /// stop.
    #[arg(long)]
    once: bool,
    #[command(flatten)]
    connection: Connection,
}

/// The first wait after a failure, and the longest.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const LONGEST_BACKOFF: Duration = Duration::from_secs(30);
/// Changes that come this close together are applied together (one
/// activation is two changes: the old revision's, then the new one's).
const SETTLE: Duration = Duration::from_millis(100);
const CURSOR_FILE: &str = ".cursor";
/// How often the last reports are sent again (the service calls an edge
/// stale after 3 minutes without one).
const REPORT_EVERY: Duration = Duration::from_secs(60);

/// Runs `proxydeck follow` until stopped (or once, with `--once`).
pub async fn follow(args: FollowArgs) -> anyhow::Result<()> {
    let client = ApiClient::new(&connection::resolve(&args.connection)?)?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot make {}", args.dir.display()))?;
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
        failures: 0,
        edge,
        reported: BTreeMap::new(),
        reported_at: Instant::now(),
    };
    follower.run().await
}

struct Follower {
    client: ApiClient,
    args: FollowArgs,
    /// Failures in a row, for the backoff.
    failures: u32,
    /// The name reports go under; `None` with --no-report.
    edge: Option<String>,
    /// The last report on each project, sent again every
    /// [`REPORT_EVERY`] so that the edge does not go stale.
    reported: BTreeMap<String, Value>,
    reported_at: Instant,
}

/// Why a round ended.
enum Ended {
    /// The service is unreachable or failing: try again later.
    Retry(anyhow::Error),
    /// Nothing to try again: the token, the project or the folder.
    Fatal(anyhow::Error),
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

    /// One stream from `cursor`, applying its changes; `Ok` when it says
    /// the cursor is older than the changes the service keeps (a reset).
    async fn follow_stream(&mut self, mut cursor: Cursor) -> Result<(), Ended> {
        let mut stream = self.open(cursor).await?;
        self.failures = 0;
        let mut dirty = BTreeSet::new();
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
                    if let Some(project) = change["project_id"].as_str() {
                        dirty.insert(project.to_owned());
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
            (Some(project), _) => vec![project.clone()],
            (None, Some(organization)) => self.projects_of(organization).await?,
            (None, None) => unreachable!("clap requires one"),
        };
        let kept: BTreeSet<String> = projects.iter().cloned().collect();
        self.apply(kept.clone(), cursor).await?;
        // Projects of the folder the organization no longer has.
        if self.args.organization.is_some() {
            for stale in self.project_folders().map_err(Ended::Fatal)? {
                if !kept.contains(&stale) {
                    self.remove(&stale).map_err(Ended::Fatal)?;
                }
            }
        }
        Ok((cursor, projects))
    }

    /// Reads each project again, writes its files, runs `--exec`, saves
    /// the cursor.
    async fn apply(&mut self, projects: BTreeSet<String>, cursor: Cursor) -> Result<(), Ended> {
        // The revision each project now runs, for the reports.
        let mut applied = Vec::new();
        for project in &projects {
            match self.read_project(project).await? {
                Some((body, active)) => {
                    let folder = self.args.dir.join(project);
                    std::fs::create_dir_all(&folder).map_err(|e| {
                        Ended::Fatal(anyhow!("cannot make {}: {e}", folder.display()))
                    })?;
                    write_whole(&folder.join("project.json"), &pretty(&body))
                        .map_err(Ended::Fatal)?;
                    let settings = folder.join("proxy-settings.json");
                    match active {
                        Some(revision) => {
                            write_whole(&settings, &pretty(&revision)).map_err(Ended::Fatal)?;
                            applied.push((project.clone(), revision["revision"].clone()));
                            eprintln!(
                                "follow: {project}: revision {} written",
                                revision["revision"]
                            );
                        }
                        None => {
                            remove_file(&settings).map_err(Ended::Fatal)?;
                            eprintln!("follow: {project}: no active revision");
                        }
                    }
                }
                None => {
                    if self.args.project.is_some() {
                        return Err(Ended::Fatal(anyhow!(
                            "no project {project:?} (deleted, or this token cannot see it)"
                        )));
                    }
                    self.remove(project).map_err(Ended::Fatal)?;
                    eprintln!("follow: {project}: gone");
                }
            }
        }
        let failure = match &self.args.exec {
            Some(command) => run_exec(command, &self.args.dir).await?,
            None => None,
        };
        for (project, revision) in applied {
            let mut report = serde_json::json!({"revision": revision, "status": "applied"});
            if let Some(error) = &failure {
                report["status"] = "failed".into();
                report["error"] = error.clone().into();
            }
            self.report(&project, report).await;
        }
        if let Some(error) = failure {
            // The cursor stays where it was: a restart runs it again.
            eprintln!("follow: --exec failed ({error}); the cursor is not saved");
            return Ok(());
        }
        let mut text = cursor.to_string();
        text.push('\n');
        write_whole(&self.args.dir.join(CURSOR_FILE), &text).map_err(Ended::Fatal)
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

    /// A project and its active revision; `None` when it is gone.
    async fn read_project(&self, project: &str) -> Result<Option<(Value, Option<Value>)>, Ended> {
        let path = segments(&["v1", "projects", project]);
        let body = match self
            .client
            .send(Request::new(reqwest::Method::GET, &path))
            .await
        {
            Ok(answer) => serde_json::from_slice(&answer.body)
                .map_err(|e| Ended::Retry(anyhow!("a project that is not JSON: {e}")))?,
            Err(error) if is_not_found(&error) => return Ok(None),
            Err(error) => return Err(classify(error)),
        };
        // The active revision: the listing, newest first, page by page.
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
            Ok(active) => Ok(Some((body, active))),
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
        match std::fs::read_to_string(&path) {
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

    /// The project folders the folder holds (those with a project.json).
    fn project_folders(&self) -> anyhow::Result<Vec<String>> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&self.args.dir)? {
            let entry = entry?;
            if entry.path().join("project.json").is_file()
                && let Some(name) = entry.file_name().to_str()
            {
                found.push(name.to_owned());
            }
        }
        Ok(found)
    }

    fn remove(&self, project: &str) -> anyhow::Result<()> {
        let folder = self.args.dir.join(project);
        match std::fs::remove_dir_all(&folder) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                Err(anyhow!("cannot remove {}: {error}", folder.display()))
            }
            _ => sync_folder(&self.args.dir),
        }
    }
}

/// Runs `--exec` in the folder; `Some(why)` when it fails: its exit
/// status and the end of what it wrote on stderr (passed on to ours).
async fn run_exec(command: &str, dir: &Path) -> Result<Option<String>, Ended> {
    let mut run = std::process::Command::new("sh");
    run.arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PROXYDECK_FOLLOW_DIR", dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
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

/// Writes `path` whole: a temporary file beside it, flushed to the disk,
/// renamed over it, the folder flushed: a reader sees the old file or the
/// new one, never a part, even across a crash.
fn write_whole(path: &Path, text: &str) -> anyhow::Result<()> {
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(folder)
        .with_context(|| format!("cannot write in {}", folder.display()))?;
    file.write_all(text.as_bytes())?;
    file.as_file().sync_all()?;
    file.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    sync_folder(folder)
}

fn remove_file(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => sync_folder(path.parent().unwrap_or(Path::new("."))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => bail!("cannot remove {}: {error}", path.display()),
    }
}

fn sync_folder(folder: &Path) -> anyhow::Result<()> {
    std::fs::File::open(folder)
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("cannot flush {}", folder.display()))
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
