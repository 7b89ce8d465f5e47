//! Safe rollouts (`docs/rollouts.md`): a revision activated stage by
//! stage, each stage's edges judged by their reports before the next, and
//! every edge sent back to the previous revision when they fail. This
//! module holds every rule of it, on plain values: the plan and its
//! checks, which edges go in which stage, each edge's health, what the
//! rollout does next, and which revision an edge must run. The store keeps
//! and changes rollouts; it decides nothing of this.

use serde::{Deserialize, Serialize};
use twox_hash::XxHash3_64;

use super::edge::{Edge, EdgeStatus};
use super::object_tag;
use super::time::Timestamp;
use super::validate::FieldError;

object_tag!(RolloutTag, "rollout");
object_tag!(EdgeTargetTag, "edge_target");

/// Stages a plan names, at most (a last one of 100% may be added).
pub const MAX_STAGES: usize = 10;
/// Edges a stage of `{"edges": N}` names, at most: as many as a project
/// keeps reports of by default.
pub const MAX_STAGE_EDGES: u32 = 1000;
const MAX_SECONDS: u32 = 86_400;

/// How far a stage reaches, counted from the first edge of the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reach {
    /// This many edges.
    Edges(u32),
    /// This share of the edges, rounded up.
    Percent(u32),
}

impl Reach {
    /// How many of `edges` it reaches.
    fn of(self, edges: usize) -> usize {
        match self {
            Self::Edges(count) => (count as usize).min(edges),
            Self::Percent(percent) => (percent as usize * edges).div_ceil(100),
        }
    }

    fn is_everything(self) -> bool {
        self == Self::Percent(100)
    }
}

/// A stage as the plan gives it: `{"edges": N}` or `{"percent": P}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<u32>,
}

impl Stage {
    fn reach(self) -> Option<Reach> {
        match (self.edges, self.percent) {
            (Some(edges), None) => Some(Reach::Edges(edges)),
            (None, Some(percent)) => Some(Reach::Percent(percent)),
            _ => None,
        }
    }

    fn of(reach: Reach) -> Self {
        match reach {
            Reach::Edges(edges) => Self {
                edges: Some(edges),
                percent: None,
            },
            Reach::Percent(percent) => Self {
                edges: None,
                percent: Some(percent),
            },
        }
    }
}

/// createRollout's body.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutInput {
    pub revision: u32,
    #[serde(default)]
    pub stages: Option<Vec<Stage>>,
    #[serde(default)]
    pub bake_seconds: Option<u32>,
    #[serde(default)]
    pub min_healthy_percent: Option<u32>,
    #[serde(default)]
    pub max_failures: Option<u32>,
    #[serde(default)]
    pub report_timeout_seconds: Option<u32>,
}

/// A rollout's plan, as kept and answered: every member set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub stages: Vec<Stage>,
    pub bake_seconds: u32,
    pub min_healthy_percent: u32,
    pub max_failures: u32,
    pub report_timeout_seconds: u32,
}

/// A stage that names both reaches, or neither.
const ONE_REACH: &str = "must have exactly one of edges (a count) and percent";

impl RolloutInput {
    /// The stages of a body whose other members may be wrong, each that
    /// names both reaches or neither (which no schema says): so that one
    /// 400 names every member at fault.
    pub fn stage_problems(body: &serde_json::Value) -> Vec<FieldError> {
        let stages = body.get("stages").and_then(serde_json::Value::as_array);
        stages
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(index, stage)| {
                let stage = Stage::deserialize(stage).ok()?;
                stage
                    .reach()
                    .is_none()
                    .then(|| FieldError::new(format!("stages[{index}]"), ONE_REACH))
            })
            .collect()
    }

    /// The revision and the plan, every member checked (each bad one
    /// named), the defaults filled in, and a last stage of every edge
    /// added when the plan's last reaches fewer.
    pub fn check(self) -> Result<(u32, Plan), Vec<FieldError>> {
        let mut problems = Vec::new();
        if self.revision == 0 {
            problems.push(FieldError::new(
                "revision",
                "must be a revision number, from 1",
            ));
        }
        let given = self
            .stages
            .unwrap_or_else(|| vec![Stage::of(Reach::Percent(100))]);
        if given.is_empty() || given.len() > MAX_STAGES {
            problems.push(FieldError::new(
                "stages",
                format!("must hold 1 to {MAX_STAGES} stages"),
            ));
        }
        let mut stages = Vec::with_capacity(given.len() + 1);
        for (index, stage) in given.into_iter().enumerate() {
            let field = format!("stages[{index}]");
            match stage.reach() {
                None => problems.push(FieldError::new(field, ONE_REACH)),
                Some(Reach::Edges(count)) if !(1..=MAX_STAGE_EDGES).contains(&count) => problems
                    .push(FieldError::new(
                        format!("{field}.edges"),
                        format!("must be 1 to {MAX_STAGE_EDGES}"),
                    )),
                Some(Reach::Percent(percent)) if !(1..=100).contains(&percent) => problems.push(
                    FieldError::new(format!("{field}.percent"), "must be 1 to 100"),
                ),
                Some(reach) => stages.push(reach),
            }
        }
        let mut bounded =
            |field: &str, value: Option<u32>, range: std::ops::RangeInclusive<u32>, default| {
                let value = value.unwrap_or(default);
                if !range.contains(&value) {
                    problems.push(FieldError::new(
                        field,
                        format!("must be {} to {}", range.start(), range.end()),
                    ));
                }
                value
            };
        let bake_seconds = bounded("bake_seconds", self.bake_seconds, 0..=MAX_SECONDS, 60);
        let min_healthy_percent = bounded(
            "min_healthy_percent",
            self.min_healthy_percent,
            0..=100,
            100,
        );
        let max_failures = bounded("max_failures", self.max_failures, 0..=1000, 0);
        let report_timeout_seconds = bounded(
            "report_timeout_seconds",
            self.report_timeout_seconds,
            1..=MAX_SECONDS,
            300,
        );
        if !problems.is_empty() {
            return Err(problems);
        }
        if !stages.last().is_some_and(|last| last.is_everything()) {
            stages.push(Reach::Percent(100));
        }
        let plan = Plan {
            stages: stages.into_iter().map(Stage::of).collect(),
            bake_seconds,
            min_healthy_percent,
            max_failures,
            report_timeout_seconds,
        };
        Ok((self.revision, plan))
    }
}

/// The edges placed when the rollout started, in their order, and where
/// each stage ends in it (a count of edges, cumulative).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub edges: Vec<PlacedEdge>,
    pub ends: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedEdge {
    pub name: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub canary: bool,
}

/// Where an edge stands in the order: canaries first, then by a hash of
/// the name (the same edges first in every rollout and every project),
/// then the name.
fn order_key(name: &str, canary: bool) -> (bool, u64, &str) {
    (!canary, XxHash3_64::oneshot(name.as_bytes()), name)
}

impl Placement {
    /// Places `live` (the edges that reported lately: name, canary) in
    /// the plan's stages.
    pub fn new(plan: &Plan, mut live: Vec<PlacedEdge>) -> Self {
        live.sort_by(|a, b| order_key(&a.name, a.canary).cmp(&order_key(&b.name, b.canary)));
        live.dedup_by(|a, b| a.name == b.name);
        let count = live.len();
        let mut end = 0;
        let ends = plan
            .stages
            .iter()
            .filter_map(|stage| stage.reach())
            .map(|reach| {
                end = end.max(reach.of(count));
                end
            })
            .collect();
        Self { edges: live, ends }
    }

    /// The stage (from 0) of the edge named `name`: its own when it was
    /// placed; else the first for a canary, and for another edge the
    /// stage of the first placed edge after it in the order, or the last
    /// stage.
    pub fn stage_of(&self, name: &str, canary: bool) -> usize {
        let last = self.ends.len().saturating_sub(1);
        let position = match self.edges.iter().position(|edge| edge.name == name) {
            Some(index) => index,
            None if canary => return 0,
            None => {
                let key = order_key(name, canary);
                self.edges
                    .partition_point(|edge| order_key(&edge.name, edge.canary) < key)
            }
        };
        self.ends
            .iter()
            .position(|end| position < *end)
            .unwrap_or(last)
    }
}

/// Where a rollout stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RolloutState {
    Running,
    Paused,
    Succeeded,
    RolledBack,
    Aborted,
}

impl RolloutState {
    pub const ALL: [Self; 5] = [
        Self::Running,
        Self::Paused,
        Self::Succeeded,
        Self::RolledBack,
        Self::Aborted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Succeeded => "succeeded",
            Self::RolledBack => "rolled_back",
            Self::Aborted => "aborted",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == text)
    }

    /// Running or paused: its edges' targets are its own.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Running | Self::Paused)
    }
}

/// A rollout as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rollout {
    pub project_id: String,
    pub number: u32,
    pub revision: u32,
    pub previous_revision: u32,
    pub state: RolloutState,
    /// The current stage, from 0.
    pub stage: usize,
    pub plan: Plan,
    pub placement: Placement,
    /// When each stage reached began, in order (the current one last).
    pub stage_started: Vec<Timestamp>,
    pub reason: Option<String>,
    pub failed_edges: Vec<Edge>,
    pub created_by: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub version: i64,
}

/// How an edge of a stage reached stands toward the rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// It applied the rollout's revision since its stage began, and its
    /// check (if any) passed; not stale.
    Healthy,
    /// It failed to apply the revision, or its check failed, since its
    /// stage began.
    Failed,
    /// Not yet either (no report of the revision since, or stale).
    Pending,
    /// Its stage is not reached: it runs the previous revision.
    Waiting,
}

/// What the rollout does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The next stage begins.
    Advance,
    /// The last stage passed: the revision becomes the active one.
    Succeed,
    /// Every edge goes back to the previous revision.
    RollBack { reason: String, failed: Vec<Edge> },
}

/// An edge in a rollout: placed when it started, or come since.
#[derive(Clone, Debug)]
pub struct RolloutEdge<'a> {
    pub name: &'a str,
    pub canary: bool,
    pub stage: usize,
    pub report: Option<&'a Edge>,
    pub health: Health,
}

impl Rollout {
    /// The rollout's edges as they stand at `now`: those placed when it
    /// started, then those that reported since and were not placed, each
    /// with its stage and health, in their order.
    pub fn edges<'a>(&'a self, reports: &'a [Edge], now: Timestamp) -> Vec<RolloutEdge<'a>> {
        let report_of = |name: &str| reports.iter().find(|report| report.name == name);
        let placed = self
            .placement
            .edges
            .iter()
            .map(|edge| (edge.name.as_str(), edge.canary));
        let newcomers = reports
            .iter()
            .filter(|report| !report.stale || report.revision == self.revision)
            .filter(|report| {
                !self
                    .placement
                    .edges
                    .iter()
                    .any(|edge| edge.name == report.name)
            })
            .map(|report| (report.name.as_str(), report.canary));
        let mut edges: Vec<RolloutEdge<'a>> = placed
            .chain(newcomers)
            .map(|(name, canary)| {
                let stage = self.placement.stage_of(name, canary);
                let report = report_of(name);
                let health = self.health(stage, report, now);
                RolloutEdge {
                    name,
                    canary,
                    stage,
                    report,
                    health,
                }
            })
            .collect();
        edges.sort_by(|a, b| {
            (a.stage, order_key(a.name, a.canary)).cmp(&(b.stage, order_key(b.name, b.canary)))
        });
        edges
    }

    /// How an edge of `stage` stands, by its last report.
    fn health(&self, stage: usize, report: Option<&Edge>, now: Timestamp) -> Health {
        let Some(began) = self.stage_started.get(stage) else {
            return Health::Waiting;
        };
        let Some(report) = report else {
            return Health::Pending;
        };
        let since = report.revision == self.revision && report.reported_at >= *began;
        match (since, report.status, report.healthy) {
            (false, _, _) => Health::Pending,
            (true, EdgeStatus::Failed, _) | (true, _, Some(false)) => Health::Failed,
            (true, EdgeStatus::Applied, _) if Edge::is_stale(report.reported_at, now) => {
                Health::Pending
            }
            (true, EdgeStatus::Applied, _) => Health::Healthy,
        }
    }

    /// When the current stage's bake time ends.
    pub fn bake_ends_at(&self) -> Option<Timestamp> {
        let began = self.stage_started.get(self.stage)?;
        Timestamp::from_millis(began.as_millis() + i64::from(self.plan.bake_seconds) * 1000)
    }

    /// What the rollout does next at `now`, judged by the project's edge
    /// reports; `None`: nothing yet. A paused rollout still rolls back on
    /// failures, and goes on only when resumed.
    pub fn next_step(&self, reports: &[Edge], now: Timestamp) -> Option<Step> {
        if !self.state.is_live() {
            return None;
        }
        let edges = self.edges(reports, now);
        let reached: Vec<&RolloutEdge> = edges.iter().filter(|e| e.stage <= self.stage).collect();
        let failed: Vec<Edge> = reached
            .iter()
            .filter(|edge| edge.health == Health::Failed)
            .filter_map(|edge| edge.report.cloned())
            .collect();
        let stage = self.stage + 1;
        if failed.len() > self.plan.max_failures as usize {
            let names: Vec<&str> = failed.iter().map(|edge| edge.name.as_str()).collect();
            let reason = format!(
                "{} failed revision {} in stage {stage} (at most {} tolerated): {}",
                count(failed.len(), "edge"),
                self.revision,
                self.plan.max_failures,
                names.join(", ")
            );
            return Some(Step::RollBack { reason, failed });
        }
        if self.state == RolloutState::Paused {
            return None;
        }
        let bake_ends = self.bake_ends_at()?;
        if now < bake_ends {
            return None;
        }
        let healthy = reached
            .iter()
            .filter(|e| e.health == Health::Healthy)
            .count();
        let needed = (self.plan.min_healthy_percent as usize * reached.len()).div_ceil(100);
        if healthy >= needed {
            return Some(match self.stage + 1 >= self.plan.stages.len() {
                true => Step::Succeed,
                false => Step::Advance,
            });
        }
        let timeout = i64::from(self.plan.report_timeout_seconds) * 1000;
        if now.as_millis() >= bake_ends.as_millis() + timeout {
            let missing: Vec<&str> = reached
                .iter()
                .filter(|e| e.health != Health::Healthy)
                .map(|e| e.name)
                .collect();
            let reason = format!(
                "only {healthy} of {} reported healthy on revision {} within {} s of stage {stage}'s \
                 bake time (at least {needed} needed); not healthy: {}",
                count(reached.len(), "edge"),
                self.revision,
                self.plan.report_timeout_seconds,
                missing.join(", ")
            );
            let failed = reached
                .iter()
                .filter_map(|e| e.report.cloned())
                .filter(|report| missing.contains(&report.name.as_str()));
            return Some(Step::RollBack {
                reason,
                failed: failed.collect(),
            });
        }
        None
    }

    /// The revision the edge named `name` must run now (with the stage it
    /// is in), while the rollout is live.
    pub fn target_of(&self, name: &str, canary: bool) -> (u32, usize) {
        let stage = self.placement.stage_of(name, canary);
        match stage <= self.stage {
            true => (self.revision, stage),
            false => (self.previous_revision, stage),
        }
    }
}

/// Where a stage stands, as a rollout's answer says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StageState {
    /// Its edges were judged healthy, or a person promoted past it.
    Passed,
    /// The stage the rollout stands at.
    Current,
    /// The stage the rollout failed at (rolled back) or was aborted at.
    Stopped,
    /// Not reached yet.
    Waiting,
    /// Never reached: the rollout ended before.
    Skipped,
}

/// A rollout as the API answers it (`docs/rollouts.md`, "Reading
/// rollouts"): stages and stage numbers from 1.
#[derive(Debug, Serialize)]
pub struct RolloutView<'a> {
    pub object: RolloutTag,
    pub project_id: &'a str,
    pub number: u32,
    pub revision: u32,
    pub previous_revision: u32,
    pub state: RolloutState,
    pub stage: usize,
    pub stage_started_at: Option<Timestamp>,
    /// When the current stage's bake time ends; null once ended.
    pub bake_ends_at: Option<Timestamp>,
    pub plan: &'a Plan,
    pub stages: Vec<StageView<'a>>,
    pub reason: Option<&'a str>,
    pub failed_edges: &'a [Edge],
    pub created_by: &'a str,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub ended_at: Option<Timestamp>,
}

#[derive(Debug, Serialize)]
pub struct StageView<'a> {
    pub number: usize,
    pub reach: Stage,
    pub state: StageState,
    pub started_at: Option<Timestamp>,
    pub edge_count: usize,
    pub healthy: usize,
    pub failed: usize,
    pub pending: usize,
    /// Each edge of the stage; left out of a listing's items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edges: Option<Vec<EdgeView<'a>>>,
}

/// An edge of a stage: where it stands, and its last report.
#[derive(Debug, Serialize)]
pub struct EdgeView<'a> {
    pub name: &'a str,
    pub canary: bool,
    pub health: Health,
    pub revision: Option<u32>,
    pub status: Option<EdgeStatus>,
    pub healthy: Option<bool>,
    pub error: Option<&'a str>,
    pub reported_at: Option<Timestamp>,
}

impl Rollout {
    /// The answer: every stage with its counts, and (`with_edges`) each
    /// of its edges, as they stand at `now`.
    pub fn view<'a>(
        &'a self,
        reports: &'a [Edge],
        now: Timestamp,
        with_edges: bool,
    ) -> RolloutView<'a> {
        let edges = self.edges(reports, now);
        let live = self.state.is_live();
        let stages = self
            .plan
            .stages
            .iter()
            .enumerate()
            .map(|(index, reach)| {
                let state = match (index.cmp(&self.stage), self.state) {
                    (std::cmp::Ordering::Less, _) | (_, RolloutState::Succeeded) => {
                        StageState::Passed
                    }
                    (std::cmp::Ordering::Equal, _) if live => StageState::Current,
                    (std::cmp::Ordering::Equal, _) => StageState::Stopped,
                    (std::cmp::Ordering::Greater, _) if live => StageState::Waiting,
                    (std::cmp::Ordering::Greater, _) => StageState::Skipped,
                };
                let mine: Vec<&RolloutEdge> =
                    edges.iter().filter(|edge| edge.stage == index).collect();
                let counted = |health| mine.iter().filter(|edge| edge.health == health).count();
                StageView {
                    number: index + 1,
                    reach: *reach,
                    state,
                    started_at: self.stage_started.get(index).copied(),
                    edge_count: mine.len(),
                    healthy: counted(Health::Healthy),
                    failed: counted(Health::Failed),
                    pending: counted(Health::Pending),
                    edges: with_edges.then(|| {
                        mine.iter()
                            .map(|edge| EdgeView {
                                name: edge.name,
                                canary: edge.canary,
                                health: edge.health,
                                revision: edge.report.map(|r| r.revision),
                                status: edge.report.map(|r| r.status),
                                healthy: edge.report.and_then(|r| r.healthy),
                                error: edge.report.and_then(|r| r.error.as_deref()),
                                reported_at: edge.report.map(|r| r.reported_at),
                            })
                            .collect()
                    }),
                }
            })
            .collect();
        RolloutView {
            object: RolloutTag::Tag,
            project_id: &self.project_id,
            number: self.number,
            revision: self.revision,
            previous_revision: self.previous_revision,
            state: self.state,
            stage: self.stage + 1,
            stage_started_at: self.stage_started.get(self.stage).copied(),
            bake_ends_at: self.bake_ends_at().filter(|_| live),
            plan: &self.plan,
            stages,
            reason: self.reason.as_deref(),
            failed_edges: &self.failed_edges,
            created_by: &self.created_by,
            created_at: self.created_at,
            updated_at: self.updated_at,
            ended_at: self.ended_at,
        }
    }
}

fn count(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

/// Why a rollout's rule refused a write (409 `conflict_error`, with the
/// code).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RolloutRefusal {
    #[error(
        "rollout {number} of revision {revision} is in progress on this project: abort it or \
         promote it to its end first (docs/rollouts.md)"
    )]
    InProgress { number: u32, revision: u32 },
    #[error(
        "the project has no active revision to go back to: activate revision {revision} directly"
    )]
    NoActiveRevision { revision: u32 },
    #[error("revision {revision} is already the active one")]
    AlreadyActive { revision: u32 },
    #[error("rollout {number} has ended ({state}): nothing to {action}")]
    Ended {
        number: u32,
        state: &'static str,
        action: &'static str,
    },
    #[error("rollout {number} is not paused: nothing to resume")]
    NotPaused { number: u32 },
    #[error("rollout {number} is paused already")]
    AlreadyPaused { number: u32 },
}

impl RolloutRefusal {
    /// The error body's `code`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InProgress { .. } => "rollout_in_progress",
            Self::NoActiveRevision { .. } => "no_active_revision",
            Self::AlreadyActive { .. } => "already_active",
            Self::Ended { .. } => "rollout_ended",
            Self::NotPaused { .. } => "rollout_not_paused",
            Self::AlreadyPaused { .. } => "rollout_paused",
        }
    }
}

/// A person's action on a live rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Pause,
    Resume,
    Promote,
    Abort,
}

impl Control {
    pub const ALL: [Self; 4] = [Self::Pause, Self::Resume, Self::Promote, Self::Abort];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Promote => "promote",
            Self::Abort => "abort",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|control| control.as_str() == text)
    }

    /// Its route.
    pub fn path(self) -> &'static str {
        match self {
            Self::Pause => "/v1/projects/{id}/rollouts/{number}/pause",
            Self::Resume => "/v1/projects/{id}/rollouts/{number}/resume",
            Self::Promote => "/v1/projects/{id}/rollouts/{number}/promote",
            Self::Abort => "/v1/projects/{id}/rollouts/{number}/abort",
        }
    }

    /// The operationId, for the audit.
    pub fn operation(self) -> &'static str {
        match self {
            Self::Pause => "pauseRollout",
            Self::Resume => "resumeRollout",
            Self::Promote => "promoteRollout",
            Self::Abort => "abortRollout",
        }
    }

    /// What it does to `rollout`: the state after, and whether the next
    /// stage begins (promote); refused when the rollout's state does not
    /// allow it.
    pub fn apply(self, rollout: &Rollout) -> Result<ControlStep, RolloutRefusal> {
        let number = rollout.number;
        if !rollout.state.is_live() {
            return Err(RolloutRefusal::Ended {
                number,
                state: rollout.state.as_str(),
                action: self.as_str(),
            });
        }
        match (self, rollout.state) {
            (Self::Pause, RolloutState::Paused) => Err(RolloutRefusal::AlreadyPaused { number }),
            (Self::Pause, _) => Ok(ControlStep::State(RolloutState::Paused)),
            (Self::Resume, RolloutState::Running) => Err(RolloutRefusal::NotPaused { number }),
            (Self::Resume, _) => Ok(ControlStep::State(RolloutState::Running)),
            (Self::Promote, _) => Ok(ControlStep::Promote),
            (Self::Abort, _) => Ok(ControlStep::State(RolloutState::Aborted)),
        }
    }
}

/// What a person's action does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlStep {
    /// The rollout's state becomes this (paused, running, aborted).
    State(RolloutState),
    /// The next stage begins now (after the last: succeeded).
    Promote,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::edge::EdgeTag;

    fn plan(stages: &[Reach]) -> Plan {
        Plan {
            stages: stages.iter().copied().map(Stage::of).collect(),
            bake_seconds: 10,
            min_healthy_percent: 100,
            max_failures: 0,
            report_timeout_seconds: 60,
        }
    }

    fn placed(names: &[&str]) -> Vec<PlacedEdge> {
        names
            .iter()
            .map(|name| PlacedEdge {
                name: (*name).to_owned(),
                canary: name.starts_with("canary"),
            })
            .collect()
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_millis(1_800_000_000_000 + seconds * 1000).unwrap()
    }

    fn report(name: &str, revision: u32, seconds: i64, healthy: Option<bool>) -> Edge {
        Edge {
            object: EdgeTag::Tag,
            name: name.into(),
            revision,
            status: EdgeStatus::Applied,
            error: healthy.filter(|h| !h).map(|_| "check failed".into()),
            healthy,
            canary: name.starts_with("canary"),
            reported_at: at(seconds),
            stale: false,
        }
    }

    fn rollout(stages: &[Reach], names: &[&str]) -> Rollout {
        let plan = plan(stages);
        Rollout {
            project_id: "p".into(),
            number: 1,
            revision: 5,
            previous_revision: 4,
            state: RolloutState::Running,
            stage: 0,
            placement: Placement::new(&plan, placed(names)),
            plan,
            stage_started: vec![at(0)],
            reason: None,
            failed_edges: Vec::new(),
            created_by: "u".into(),
            created_at: at(0),
            updated_at: at(0),
            ended_at: None,
            version: 1,
        }
    }

    #[test]
    fn plans_are_checked_member_by_member_and_end_with_every_edge() {
        let input = |body: serde_json::Value| {
            serde_json::from_value::<RolloutInput>(body)
                .unwrap()
                .check()
        };
        let (revision, plan) =
            input(serde_json::json!({"revision": 5, "stages": [{"edges": 1}, {"percent": 50}]}))
                .unwrap();
        assert_eq!(revision, 5);
        assert_eq!(
            plan.stages,
            [Reach::Edges(1), Reach::Percent(50), Reach::Percent(100)].map(Stage::of)
        );
        assert_eq!((plan.bake_seconds, plan.min_healthy_percent), (60, 100));
        let (_, plan) = input(serde_json::json!({"revision": 5})).unwrap();
        assert_eq!(plan.stages, [Stage::of(Reach::Percent(100))]);
        let fields = |body| {
            input(body)
                .unwrap_err()
                .into_iter()
                .map(|p| p.field)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            fields(
                serde_json::json!({"revision": 0, "stages": [{"edges": 0}, {"percent": 101},
                {"edges": 1, "percent": 5}], "bake_seconds": 86401, "report_timeout_seconds": 0})
            ),
            [
                "revision",
                "stages[0].edges",
                "stages[1].percent",
                "stages[2]",
                "bake_seconds",
                "report_timeout_seconds"
            ]
        );
        assert_eq!(
            fields(serde_json::json!({"revision": 1, "stages": []})),
            ["stages"]
        );
    }

    #[test]
    fn canaries_go_first_then_the_same_order_by_name_every_time() {
        let names = [
            "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "canary-a",
        ];
        let plan = plan(&[Reach::Edges(1), Reach::Percent(50), Reach::Percent(100)]);
        let placement = Placement::new(&plan, placed(&names));
        assert_eq!(placement.edges[0].name, "canary-a");
        assert_eq!(placement.ends, [1, 5, 10]);
        // The order is the names' and nothing else's: given in another
        // order, the same placement.
        let mut reversed = names;
        reversed.reverse();
        assert_eq!(Placement::new(&plan, placed(&reversed)), placement);
        // A newcomer takes the stage of the first placed edge after it,
        // and moves none of them.
        for name in ["new-1", "new-2", "new-3", "canary-b"] {
            let stage = placement.stage_of(name, name.starts_with("canary"));
            let key = order_key(name, name.starts_with("canary"));
            let after = placement
                .edges
                .iter()
                .position(|e| order_key(&e.name, e.canary) > key);
            let expected = match name.starts_with("canary") {
                true => 0,
                false => after.map_or(2, |i| placement.stage_of(&placement.edges[i].name, false)),
            };
            assert_eq!(stage, expected, "{name}");
        }
        assert_eq!(placement.stage_of("canary-b", true), 0);
        // No edge at all: every stage empty, newcomers in the last.
        let empty = Placement::new(&plan, Vec::new());
        assert_eq!(empty.ends, [0, 0, 0]);
        assert_eq!(empty.stage_of("late", false), 2);
    }

    #[test]
    fn a_stage_goes_on_after_its_bake_when_its_edges_are_healthy() {
        let rollout = rollout(
            &[Reach::Edges(1), Reach::Percent(100)],
            &["canary-a", "e1", "e2"],
        );
        let (revision, stage) = rollout.target_of("canary-a", true);
        assert_eq!((revision, stage), (5, 0));
        assert_eq!(rollout.target_of("e1", false).0, 4);
        // Healthy before the bake ends: nothing yet; after: the next stage.
        let reports = [report("canary-a", 5, 2, Some(true))];
        assert_eq!(rollout.next_step(&reports, at(5)), None);
        assert_eq!(rollout.next_step(&reports, at(10)), Some(Step::Advance));
        // A report from before the stage began counts for nothing.
        let early = [report("canary-a", 5, -1, Some(true))];
        assert_eq!(rollout.next_step(&early, at(10)), None);
        // Nothing healthy past the bake and the timeout: rolled back.
        match rollout.next_step(&early, at(70)) {
            Some(Step::RollBack { reason, .. }) => {
                assert!(reason.contains("only 0 of 1 edge"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        // The last stage passing is a success.
        let last = Rollout {
            stage: 1,
            stage_started: vec![at(0), at(10)],
            ..rollout.clone()
        };
        let all = ["canary-a", "e1", "e2"].map(|name| report(name, 5, 12, Some(true)));
        assert_eq!(last.next_step(&all, at(20)), Some(Step::Succeed));
        assert_eq!(
            last.next_step(&all[..2], at(20)),
            None,
            "e2 has not reported"
        );
    }

    #[test]
    fn a_failure_past_the_tolerated_rolls_back_at_once_even_paused() {
        let rollout = rollout(
            &[Reach::Edges(2), Reach::Percent(100)],
            &["canary-a", "canary-b", "e1"],
        );
        let failing = [
            report("canary-a", 5, 1, Some(false)),
            report("canary-b", 5, 1, Some(true)),
        ];
        for state in [RolloutState::Running, RolloutState::Paused] {
            let rollout = Rollout {
                state,
                ..rollout.clone()
            };
            match rollout.next_step(&failing, at(1)) {
                Some(Step::RollBack { reason, failed }) => {
                    assert!(reason.contains("canary-a"), "{reason}");
                    assert_eq!(failed.len(), 1);
                    assert_eq!(failed[0].name, "canary-a");
                }
                other => panic!("{other:?}"),
            }
        }
        let tolerant = Rollout {
            plan: Plan {
                max_failures: 1,
                min_healthy_percent: 50,
                ..rollout.plan.clone()
            },
            ..rollout.clone()
        };
        assert_eq!(tolerant.next_step(&failing, at(1)), None);
        assert_eq!(tolerant.next_step(&failing, at(10)), Some(Step::Advance));
        // Paused: no step forward, whatever the bake.
        let paused = Rollout {
            state: RolloutState::Paused,
            ..tolerant
        };
        assert_eq!(paused.next_step(&failing, at(100)), None);
    }

    #[test]
    fn controls_follow_the_state() {
        let running = rollout(&[Reach::Percent(100)], &[]);
        assert_eq!(
            Control::Pause.apply(&running),
            Ok(ControlStep::State(RolloutState::Paused))
        );
        assert_eq!(
            Control::Resume.apply(&running).unwrap_err().code(),
            "rollout_not_paused"
        );
        let ended = Rollout {
            state: RolloutState::RolledBack,
            ..running
        };
        for control in Control::ALL {
            assert_eq!(control.apply(&ended).unwrap_err().code(), "rollout_ended");
        }
    }
}
