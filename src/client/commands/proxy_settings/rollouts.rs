//! `proxy-settings rollout`: a revision activated in stages
//! (`docs/rollouts.md`): `start` (createRollout), `status` (getRollout,
//! the newest by default; `--watch` follows it to its end through the
//! change feed), `list` (listRollouts), and `pause`, `resume`, `promote`,
//! `abort` (the rollout's actions).
//!
//! A watch ends with [`Ended`] (exit status 5 rolled back, 6 aborted) so
//! that a script tells a health failure from a person's abort and both
//! from success (0) or another failure (1).

use std::io::Write;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::client::connection::Connection;
use crate::client::http::{ApiClient, Refused, Request, v1};
use crate::client::listing::{ListKind, ProjectListing};
use crate::client::names::PROJECT_HELP;
use crate::client::object::{
    ObjectKind, ObjectShape, Precondition, Session, confirm, create as create_request,
};
use crate::output::duration::parse_duration;
use crate::output::json::Json;
use crate::output::printable;
use crate::output::table::{self, Column};

#[derive(Subcommand)]
pub enum RolloutCommand {
    /// Start activating a revision in stages: a few edges first, the rest
    /// when those report healthy; back to the active revision at once when
    /// they do not (needs the right to activate).
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings rollout start acme-shop 5\n  proxydeck proxy-settings rollout start acme-shop 5 --stages 1,10%,50%,100% --bake 2m --watch"
    )]
    Start(Start),
    /// Show a rollout (the newest by default): its state, its stage, the
    /// time left in the bake, each stage's edges and their health.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings rollout status acme-shop\n  proxydeck proxy-settings rollout status acme-shop 3 --watch && echo done\n  proxydeck proxy-settings rollout status acme-shop --jq .state"
    )]
    Status(Status),
    /// List a project's rollouts, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings rollout list acme-shop\n  proxydeck proxy-settings rollout list acme-shop --jq '.[] | select(.state == \"rolled_back\") | .reason'"
    )]
    List(ProjectListing),
    /// Stop a running rollout from going on (failures still roll it back).
    #[command(after_help = "Examples:\n  proxydeck proxy-settings rollout pause acme-shop")]
    Pause(Act),
    /// Let a paused rollout go on again.
    #[command(after_help = "Examples:\n  proxydeck proxy-settings rollout resume acme-shop 3")]
    Resume(Act),
    /// Reach the next stage now, whatever its bake and its edges' health
    /// (the last stage: activate the revision).
    #[command(after_help = "Examples:\n  proxydeck proxy-settings rollout promote acme-shop")]
    Promote(Act),
    /// End a rollout: every edge back on the revision active before.
    #[command(after_help = "Examples:\n  proxydeck proxy-settings rollout abort acme-shop --yes")]
    Abort(Abort),
}

/// Runs a `proxy-settings rollout` command.
pub async fn run(command: RolloutCommand) -> anyhow::Result<()> {
    match command {
        RolloutCommand::Start(args) => start(args).await,
        RolloutCommand::Status(args) => status(args).await,
        RolloutCommand::List(args) => args.print_all(LISTING, "rollouts", None).await,
        RolloutCommand::Pause(args) => act(args, Action::Pause).await,
        RolloutCommand::Resume(args) => act(args, Action::Resume).await,
        RolloutCommand::Promote(args) => act(args, Action::Promote).await,
        RolloutCommand::Abort(args) => {
            if !args.yes {
                confirm(&format!(
                    "abort the rollout of project {}, every edge back on the revision active before",
                    args.act.project
                ))?;
            }
            act(args.act, Action::Abort).await
        }
    }
}

/// A watch that saw its rollout end otherwise than succeeded.
#[derive(Debug, thiserror::Error)]
pub enum Ended {
    #[error("rollout {0} was rolled back")]
    RolledBack(u64),
    #[error("rollout {0} was aborted")]
    Aborted(u64),
}

impl Ended {
    /// The exit status (`docs/cli.md`).
    pub fn status(&self) -> u8 {
        match self {
            Ended::RolledBack(_) => 5,
            Ended::Aborted(_) => 6,
        }
    }
}

const ROLLOUT: ObjectKind = ObjectKind {
    schema: "Rollout",
    plural: "rollouts",
    title: |rollout| format!("rollout {}", table::cell(&rollout["number"])),
};

const LISTING: ListKind = ListKind {
    columns: &[
        Column::kept("ROLLOUT"),
        Column::kept("REVISION"),
        Column::kept("STATE"),
        Column::kept("STAGE"),
        Column::dropped("FROM", 2),
        Column::dropped("CREATED (UTC)", 1),
        Column::cut("REASON", 20),
    ],
    row: |rollout, _| {
        let cell = |field: &str| table::cell(&rollout[field]);
        vec![
            cell("number"),
            cell("revision"),
            cell("state"),
            format!("{} of {}", cell("stage"), stages_of(rollout).len()),
            cell("previous_revision"),
            table::when(&rollout["created_at"], "-"),
            cell("reason"),
        ]
    },
    schema: "Rollout",
    plural: "rollouts",
    names_organizations: false,
};

#[derive(Args)]
pub struct Start {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The revision to activate.
    #[arg(value_name = "REVISION", value_parser = clap::value_parser!(u32).range(1..))]
    revision: u32,
    /// How far each stage reaches, cumulative, comma-separated: a bare
    /// number is that many edges, N% that share of them (rounded up)
    /// [the service's default: 100%].
    #[arg(long, value_name = "STAGES", value_delimiter = ',', value_parser = stage)]
    stages: Option<Vec<Value>>,
    /// How long a stage runs before it may go on, like 60s or 5m [the
    /// service's default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = whole_seconds)]
    bake: Option<u64>,
    /// The share (percent) of the rollout's edges so far that must report
    /// healthy for a stage to go on [the service's default: 100].
    #[arg(long, value_name = "PERCENT")]
    min_healthy: Option<u32>,
    /// Failed edges the rollout tolerates; one more rolls it back [the
    /// service's default: 0].
    #[arg(long, value_name = "N")]
    max_failures: Option<u32>,
    /// How long after its bake a stage waits for enough healthy reports
    /// before the rollout fails [the service's default: 5m].
    #[arg(long, value_name = "DURATION", value_parser = whole_seconds)]
    report_timeout: Option<u64>,
    /// Then follow it to its end, as `rollout status --watch` does.
    #[arg(long)]
    watch: bool,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct Status {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The rollout's number [default: the newest].
    #[arg(value_name = "NUMBER", value_parser = clap::value_parser!(u64).range(1..))]
    number: Option<u64>,
    /// Follow it until it ends, redrawn on each step (JSON lines of the
    /// rollout when piped); exit status 0 when it succeeded, 5 when it was
    /// rolled back, 6 when it was aborted.
    #[arg(long)]
    watch: bool,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct Act {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The rollout's number [default: the newest].
    #[arg(value_name = "NUMBER", value_parser = clap::value_parser!(u64).range(1..))]
    number: Option<u64>,
    #[command(flatten)]
    precondition: Precondition,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct Abort {
    #[command(flatten)]
    act: Act,
    /// Do not ask. Without it the command asks on a terminal, and refuses
    /// when stdin is not one.
    #[arg(long, short)]
    yes: bool,
}

#[derive(Clone, Copy)]
enum Action {
    Pause,
    Resume,
    Promote,
    Abort,
}

impl Action {
    fn path(self) -> &'static str {
        match self {
            Action::Pause => "pause",
            Action::Resume => "resume",
            Action::Promote => "promote",
            Action::Abort => "abort",
        }
    }

    fn done(self) -> &'static str {
        match self {
            Action::Pause => "paused",
            Action::Resume => "resumed",
            Action::Promote => "promoted",
            Action::Abort => "aborted",
        }
    }
}

/// One stage of `--stages`: `N` edges or `P%`.
fn stage(text: &str) -> Result<Value, String> {
    let text = text.trim();
    let (number, unit) = match text.strip_suffix('%') {
        Some(percent) => (percent, "percent"),
        None => (text, "edges"),
    };
    let number: u32 = number.trim().parse().map_err(|_| {
        format!("{text:?} is not a stage: write a number of edges (10) or a share of them (10%)")
    })?;
    Ok(json!({ unit: number }))
}

/// A duration the API takes in whole seconds.
fn whole_seconds(text: &str) -> Result<u64, String> {
    let duration = parse_duration(text)?;
    if duration.subsec_nanos() != 0 {
        return Err(format!("{text:?}: the service counts whole seconds"));
    }
    Ok(duration.as_secs())
}

async fn start(args: Start) -> anyhow::Result<()> {
    // Only what was given: the service's defaults are the plan's.
    let mut plan = Map::new();
    plan.insert("revision".into(), json!(args.revision));
    let given = [
        ("stages", args.stages.map(Value::from)),
        ("bake_seconds", args.bake.map(Value::from)),
        ("min_healthy_percent", args.min_healthy.map(Value::from)),
        ("max_failures", args.max_failures.map(Value::from)),
        (
            "report_timeout_seconds",
            args.report_timeout.map(Value::from),
        ),
    ];
    plan.extend(
        given
            .into_iter()
            .filter_map(|(name, value)| Some((name.to_owned(), value?))),
    );
    let watch = args.watch.then(|| args.shape.lines(ROLLOUT)).transpose()?;
    let session = Session::open(&args.connection, &args.shape, ROLLOUT)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id, "rollouts"]);
    let project = args.project;
    let Some(lines) = watch else {
        let rollout = session
            .exchange_told(create_request(&path, plan), |rollout, _| {
                let number = table::cell(&rollout["number"]);
                let followed = format!(
                    "`proxydeck proxy-settings rollout status {project} {number} --watch` follows it"
                );
                format!(
                    "started {}\n{}\n",
                    view(rollout, OffsetDateTime::now_utc()),
                    printable(&followed)
                )
            })
            .await;
        return rollout.map(drop).map_err(|error| explain(error, &project));
    };
    let answer = session
        .client
        .send(create_request(&path, plan))
        .await
        .map_err(|error| explain(error, &project))?;
    let rollout: Value =
        serde_json::from_slice(&answer.body).context("the server's answer is not a rollout")?;
    let number = rollout["number"]
        .as_u64()
        .context("the server's answer has no rollout number")?;
    watch_rollout(&session.client, &id, number, lines).await
}

/// A refusal of one rollout because another runs, said with the way out.
fn explain(error: anyhow::Error, project: &str) -> anyhow::Error {
    match error.downcast_ref::<Refused>() {
        Some(refused) if refused.code() == Some("rollout_in_progress") => anyhow!(
            "{refused}; `proxydeck proxy-settings rollout status {project}` shows it, \
             `rollout abort {project}` or `rollout promote {project}` ends it",
            project = printable(project)
        ),
        _ => error,
    }
}

async fn status(args: Status) -> anyhow::Result<()> {
    let watch = args.watch.then(|| args.shape.lines(ROLLOUT)).transpose()?;
    let session = Session::open(&args.connection, &args.shape, ROLLOUT)?;
    let id = session.project(&args.project).await?;
    let number = match args.number {
        Some(number) => number,
        None => newest(&session.client, &id, &args.project).await?,
    };
    if let Some(lines) = watch {
        return watch_rollout(&session.client, &id, number, lines).await;
    }
    let path = rollout_path(&id, number);
    session
        .exchange_told(Request::new(Method::GET, &path), |rollout, _| {
            format!("{}\n", view(rollout, OffsetDateTime::now_utc()))
        })
        .await
        .map(drop)
}

async fn act(args: Act, action: Action) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, ROLLOUT)?;
    let id = session.project(&args.project).await?;
    let number = match args.number {
        Some(number) => number,
        None => newest(&session.client, &id, &args.project).await?,
    };
    let mut path = rollout_path(&id, number);
    path.push(action.path().to_owned());
    let request = Request::new(Method::POST, &path).header("If-Match", args.precondition.if_match);
    session
        .exchange_told(request, |rollout, _| {
            format!(
                "{} {}\n",
                action.done(),
                view(rollout, OffsetDateTime::now_utc())
            )
        })
        .await
        .map(drop)
}

fn rollout_path(project: &str, number: u64) -> Vec<String> {
    v1(&["projects", project, "rollouts", &number.to_string()])
}

/// The number of the project's newest rollout.
async fn newest(client: &ApiClient, project: &str, given: &str) -> anyhow::Result<u64> {
    let path = v1(&["projects", project, "rollouts"]);
    let page = client.page(&path, &[("limit", "1".to_owned())]).await?;
    let items = page.items()?;
    let Some(newest) = items.first() else {
        bail!(
            "project {} has no rollout yet: start one with `proxydeck proxy-settings rollout start`",
            printable(given)
        );
    };
    newest["number"]
        .as_u64()
        .context("the server's rollout has no number")
}

/// How long a watch waits for a change before it reads the rollout again:
/// the bake's countdown and the edges' health (reports are not in the
/// feed) stay at most this old.
const REDRAW: Duration = Duration::from_secs(1);

/// Follows rollout `number` until it ends: read again on each change of
/// the project in the feed and every [`REDRAW`]; on a terminal redrawn in
/// place, else (or with `--json`/`--jq`) one JSON line each time it
/// changed. `Ok` when it succeeded, [`Ended`] otherwise.
async fn watch_rollout(
    client: &ApiClient,
    project: &str,
    number: u64,
    lines: Option<Json>,
) -> anyhow::Result<()> {
    // Opened before the first read: a step between the two is not missed.
    let stream = client
        .stream(&v1(&["changes"]), &[("project_id", project.to_owned())])
        .await?;
    let (changes, mut changed) = tokio::sync::mpsc::channel::<anyhow::Result<()>>(16);
    let feed = tokio::spawn(async move {
        let mut stream = stream;
        loop {
            let said = match stream.next().await {
                Ok(Some(event)) if event.name == "error" => {
                    Err(Refused::from_event(&event.data).into())
                }
                Ok(Some(_)) => Ok(()),
                Ok(None) => Err(anyhow!("the service ended the change feed")),
                Err(error) => Err(error),
            };
            let failed = said.is_err();
            if changes.send(said).await.is_err() || failed {
                return;
            }
        }
    });
    let outcome = follow(client, project, number, lines, &mut changed).await;
    feed.abort();
    outcome
}

async fn follow(
    client: &ApiClient,
    project: &str,
    number: u64,
    lines: Option<Json>,
    changed: &mut tokio::sync::mpsc::Receiver<anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let path = rollout_path(project, number);
    let mut last_printed = String::new();
    let mut feed_open = true;
    loop {
        let answer = client.send(Request::new(Method::GET, &path)).await?;
        let text = std::str::from_utf8(&answer.body).context("the server's answer is not UTF-8")?;
        let rollout: Value =
            serde_json::from_str(text).context("the server's answer is not a rollout")?;
        let mut stdout = std::io::stdout().lock();
        match &lines {
            Some(json) if text != last_printed => {
                json.write_one(text, &mut stdout)?;
                last_printed = text.to_owned();
            }
            Some(_) => {}
            // Home and clear, then the view: redrawn in place as `watch` does.
            None => writeln!(
                stdout,
                "\x1b[H\x1b[2J{}",
                view(&rollout, OffsetDateTime::now_utc())
            )?,
        }
        stdout.flush()?;
        drop(stdout);
        match rollout["state"].as_str() {
            Some("succeeded") => return Ok(()),
            Some("rolled_back") => return Err(Ended::RolledBack(number).into()),
            Some("aborted") => return Err(Ended::Aborted(number).into()),
            _ => {}
        }
        if !feed_open {
            tokio::time::sleep(REDRAW).await;
            continue;
        }
        // A change, or a second gone by, whichever comes first.
        match tokio::time::timeout(REDRAW, changed.recv()).await {
            Err(_) | Ok(Some(Ok(()))) => {}
            Ok(Some(Err(error))) => {
                // The reads every second still see it to its end.
                eprintln!("note: {error}; reading the rollout every second");
                feed_open = false;
            }
            Ok(None) => feed_open = false,
        }
    }
}

/// The plan's stages (`{"edges": N}` or `{"percent": P}`).
fn stages_of(rollout: &Value) -> &[Value] {
    rollout["plan"]["stages"]
        .as_array()
        .or_else(|| rollout["stages"].as_array())
        .map_or(&[], Vec::as_slice)
}

/// How far a stage of the plan reaches, in words: "1 edge", "10%".
fn reach(stage: &Value) -> String {
    match (stage["edges"].as_u64(), stage["percent"].as_u64()) {
        (Some(1), _) => "1 edge".into(),
        (Some(edges), _) => format!("{edges} edges"),
        (None, Some(percent)) => format!("{percent}%"),
        (None, None) => "?".into(),
    }
}

/// "42 s", "3 m 05 s", "1 h 02 m".
fn span(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} m {:02} s", seconds / 60, seconds % 60),
        _ => format!("{} h {:02} m", seconds / 3600, seconds % 3600 / 60),
    }
}

fn moment(value: &Value) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(value.as_str()?, &Rfc3339).ok()
}

/// A rollout for people, as of `now`: a line of what it is and its state,
/// one of where it stands (the bake's time left, the health it waits
/// for), then each stage with its edges and their health; after a
/// rollback, why, and the failed edges' reports. All of it [`printable`].
fn view(rollout: &Value, now: OffsetDateTime) -> String {
    let cell = |field: &str| table::cell(&rollout[field]);
    let plan = &rollout["plan"];
    let planned = stages_of(rollout);
    let total = planned.len();
    let state = cell("state").replace('_', " ");
    let mut out = format!(
        "rollout {} of revision {} (from {}): {}\n",
        cell("number"),
        cell("revision"),
        cell("previous_revision"),
        state
    );
    let stage = rollout["stage"].as_u64().unwrap_or(0);
    let stages = rollout["stages"].as_array().map_or(&[][..], Vec::as_slice);
    // The rollout's edges so far, and the healthy ones: the stages
    // reached, as the service counts them.
    let counted = |member: &str| -> u64 {
        stages
            .iter()
            .filter(|s| s["number"].as_u64().is_some_and(|n| n <= stage))
            .filter_map(|s| s[member].as_u64())
            .sum()
    };
    let (reached, healthy) = (counted("edge_count"), counted("healthy"));
    let min_percent = plan["min_healthy_percent"].as_u64().unwrap_or(100);
    let needed = (reached * min_percent).div_ceil(100);
    let bake = plan["bake_seconds"].as_i64().unwrap_or(0);
    let timeout = plan["report_timeout_seconds"].as_i64().unwrap_or(0);
    // Seconds to the bake's end (the service's `bake_ends_at`), below 0 after it.
    let left = moment(&rollout["bake_ends_at"]).map(|at| (at - now).whole_seconds());
    match rollout["state"].as_str() {
        Some("running" | "paused") => {
            let mut line = format!("stage {stage} of {total}");
            match left {
                Some(left) if left > 0 => {
                    line.push_str(&format!(": bake {} left of {}", span(left), span(bake)));
                }
                Some(left) => {
                    line.push_str(&format!(
                        ": baked; waiting for healthy edges (fails in {})",
                        span(timeout + left)
                    ));
                }
                None => {}
            }
            if rollout["state"] == "paused" {
                line.push_str(" (paused: it does not go on until resumed)");
            }
            out.push_str(&format!(
                "{line}\nhealthy: {healthy} of {reached} edges so far (needs {needed}); failures tolerated: {}\n",
                table::cell(&plan["max_failures"])
            ));
        }
        Some("succeeded") => out.push_str(&format!(
            "revision {} is active (succeeded {} UTC)\n",
            cell("revision"),
            table::when(&rollout["ended_at"], "-")
        )),
        Some(_) => out.push_str(&format!(
            "every edge is back on revision {} ({} {} UTC)\n",
            cell("previous_revision"),
            state,
            table::when(&rollout["ended_at"], "-")
        )),
        None => {}
    }
    if !rollout["reason"].is_null() {
        out.push_str(&format!("reason: {}\n", cell("reason")));
    }
    let failed = rollout["failed_edges"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if !failed.is_empty() {
        out.push_str("failed edges:\n");
        for edge in failed {
            let health = match edge["healthy"].as_bool() {
                Some(false) => ", unhealthy",
                _ => "",
            };
            out.push_str(&format!(
                "  {} on revision {}: {}{}: {} ({} UTC)\n",
                table::cell(&edge["name"]),
                table::cell(&edge["revision"]),
                table::cell(&edge["status"]),
                health,
                table::cell(&edge["error"]),
                table::when(&edge["reported_at"], "-"),
            ));
        }
    }
    // One column of names for every stage's edges.
    let width = stages
        .iter()
        .flat_map(|s| s["edges"].as_array().map_or(&[][..], Vec::as_slice))
        .map(|e| table::cell(&e["name"]).chars().count())
        .max()
        .unwrap_or(0);
    for (i, planned) in planned.iter().enumerate() {
        let number = i as u64 + 1;
        let served = stages.iter().find(|s| s["number"].as_u64() == Some(number));
        let served_state = served.map_or("-".to_owned(), |s| table::cell(&s["state"]));
        let edges = served
            .and_then(|s| s["edges"].as_array())
            .map_or(&[][..], Vec::as_slice);
        out.push_str(&format!(
            "stage {number} ({}): {served_state}",
            reach(planned)
        ));
        if edges.is_empty() {
            out.push_str(", no edge\n");
            continue;
        }
        out.push('\n');
        for edge in edges {
            let mut line = format!(
                "  {:width$}  {:8}",
                table::cell(&edge["name"]),
                table::cell(&edge["health"])
            );
            if !edge["revision"].is_null() {
                line.push_str(&format!("  on revision {}", table::cell(&edge["revision"])));
            }
            if edge["canary"] == true {
                line.push_str("  canary");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    // Line by line: the server's text may hold control characters, ours
    // are the line ends.
    out.trim_end()
        .lines()
        .map(printable)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn stages_read_as_edges_or_percents() {
        assert_eq!(stage("1"), Ok(json!({"edges": 1})));
        assert_eq!(stage("10%"), Ok(json!({"percent": 10})));
        assert!(stage("ten").is_err());
        assert!(stage("5 %x").is_err());
        assert_eq!(whole_seconds("5m"), Ok(300));
        assert!(whole_seconds("1500ms").is_err());
    }

    #[test]
    fn a_running_rollout_shows_its_bake_and_each_stage() {
        let rollout = json!({
            "number": 3, "revision": 5, "previous_revision": 4,
            "state": "running", "stage": 2,
            "stage_started_at": "2026-11-28T12:00:00Z",
            "bake_ends_at": "2026-11-28T12:01:00Z",
            "plan": {"stages": [{"edges": 1}, {"percent": 50}, {"percent": 100}],
                     "bake_seconds": 60, "min_healthy_percent": 100,
                     "max_failures": 0, "report_timeout_seconds": 300},
            "stages": [
                {"number": 1, "state": "passed", "edge_count": 1, "healthy": 1, "edges": [
                    {"name": "edge-3", "canary": true, "health": "healthy", "revision": 5}]},
                {"number": 2, "state": "current", "edge_count": 1, "healthy": 0, "edges": [
                    {"name": "edge-10", "canary": false, "health": "pending", "revision": 4}]},
                {"number": 3, "state": "waiting", "edges": []}],
            "reason": null, "failed_edges": []
        });
        let now = datetime!(2026-11-28 12:00:18 UTC);
        assert_eq!(
            view(&rollout, now),
            "rollout 3 of revision 5 (from 4): running\n\
             stage 2 of 3: bake 42 s left of 1 m 00 s\n\
             healthy: 1 of 2 edges so far (needs 2); failures tolerated: 0\n\
             stage 1 (1 edge): passed\n  edge-3   healthy   on revision 5  canary\n\
             stage 2 (50%): current\n  edge-10  pending   on revision 4\n\
             stage 3 (100%): waiting, no edge"
        );
    }

    #[test]
    fn a_rollback_says_why_and_which_edges_failed() {
        let rollout = json!({
            "number": 1, "revision": 2, "previous_revision": 1,
            "state": "rolled_back", "stage": 1, "ended_at": "2026-11-28T12:01:00Z",
            "plan": {"stages": [{"percent": 100}]},
            "stages": [{"number": 1, "state": "failed", "edges": []}],
            "reason": "1 edge failed, more than the 0 tolerated",
            "failed_edges": [{"name": "edge-1", "revision": 2, "status": "failed",
                              "healthy": null, "error": "no backend",
                              "reported_at": "2026-11-28T12:00:30Z"}]
        });
        let text = view(&rollout, datetime!(2026-11-28 12:02 UTC));
        assert!(
            text.starts_with(
                "rollout 1 of revision 2 (from 1): rolled back\n\
                 every edge is back on revision 1 (rolled back 2026-11-28 12:01 UTC)\n\
                 reason: 1 edge failed, more than the 0 tolerated\n\
                 failed edges:\n  edge-1 on revision 2: failed: no backend (2026-11-28 12:00 UTC)\n"
            ),
            "{text}"
        );
    }
}
