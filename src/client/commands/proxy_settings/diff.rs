//! `proxy-settings diff`: what changed between two revisions of a
//! project's proxy settings, read as `proxy-settings get` reads one
//! ([`crate::client::revision_read`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{IsTerminal, Write};

use anyhow::anyhow;
use clap::Args;
use serde::Serialize;
use serde_json::{Map, Value};

use super::document::Document;
use crate::client::connection::{self, Connection};
use crate::client::http::ApiClient;
use crate::client::names::PROJECT_HELP;
use crate::client::revision_read::{Project, fetch, revision_of};
use crate::output::json::{Jq, Style, print_document};
use crate::output::printable;
use crate::telemetry;

#[derive(Args)]
pub struct DiffArgs {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The revision compared from (the older one, usually).
    #[arg(value_name = "A", value_parser = clap::value_parser!(u32).range(1..))]
    from: u32,
    /// The revision compared to.
    #[arg(value_name = "B", value_parser = clap::value_parser!(u32).range(1..))]
    to: u32,
    #[command(flatten)]
    document: Document,
    #[command(flatten)]
    connection: Connection,
}

/// `proxy-settings diff`: text, or with `--json`/`--jq` the [`Diff`].
/// Exits 0 whatever the differences (non-zero is for errors).
pub async fn diff(args: DiffArgs) -> anyhow::Result<()> {
    let document = args.document.json.is_some() || args.document.jq.is_some();
    let jq = args.document.jq.as_deref().map(Jq::compile).transpose()?;
    let client = ApiClient::new(&connection::resolve(&args.connection)?)?;
    let project = Project::resolve(&client, args.project).await?;
    let from = fetch(&client, &project, args.from).await?;
    let to = if args.to == args.from {
        from.clone()
    } else {
        fetch(&client, &project, args.to).await?
    };
    let diff = Diff::between(&project.id, Some(&from), &to)?;
    diff.print(&project.given, document, jq.as_ref())
}

/// What changed from one revision to another; `--json` prints it.
#[derive(Debug, Serialize, PartialEq)]
pub struct Diff {
    project_id: String,
    from: Side,
    to: Side,
    /// Whether the description, the backends or the routes differ
    /// (`is_active` aside: two revisions seldom share it).
    differs: bool,
    /// Paired by name (see [`backend_changes`]).
    backends: Vec<BackendChange>,
    /// Paired by path and regex (see [`route_changes`]).
    routes: Vec<RouteChange>,
    /// The ranks whose routes B evaluates in another order (see
    /// [`reordered_ranks`]).
    reordered: Vec<Reordered>,
    unchanged: Unchanged,
}

/// Routes of one rank, unchanged or not, that B lists (so evaluates) in
/// another order than A: routes of one rank go in the order of the list.
#[derive(Debug, Serialize, PartialEq)]
struct Reordered {
    rank: Value,
    /// Their paths, in A's order.
    from: Vec<String>,
    /// Their paths, in B's order.
    to: Vec<String>,
}

#[derive(Debug, Serialize, PartialEq)]
struct Side {
    /// `None` (`null`): no revision, the empty one a dry run compares with
    /// when the project has no active revision.
    revision: Option<u32>,
    description: String,
    is_active: bool,
}

#[derive(Debug, Serialize, PartialEq)]
struct Unchanged {
    backends: usize,
    routes: usize,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "change", rename_all = "lowercase")]
enum BackendChange {
    Added {
        name: String,
        to: Value,
    },
    Removed {
        name: String,
        from: Value,
    },
    Changed {
        name: String,
        members: Vec<MemberChange>,
    },
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "change", rename_all = "lowercase")]
enum RouteChange {
    Added {
        to_position: usize,
        to: Value,
    },
    Removed {
        from_position: usize,
        from: Value,
    },
    Changed {
        from_position: usize,
        to_position: usize,
        /// The route as it is in B (for its path and backend).
        to: Value,
        members: Vec<MemberChange>,
    },
}

/// One member of a backend or route: its value in A and in B; a side
/// where the member is unset has no `from` (or `to`).
#[derive(Debug, Serialize, PartialEq)]
struct MemberChange {
    member: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<Value>,
}

impl Diff {
    /// What changed from `from` to `to`; `from` is `None` when there is
    /// no revision to compare with (a dry run on a project without an
    /// active revision): the empty revision then, as the API's dry run
    /// takes it.
    pub fn between(project: &str, from: Option<&Value>, to: &Value) -> anyhow::Result<Self> {
        let empty = serde_json::json!({"description": "", "backends": [], "routes": []});
        let side = |revision: &Value, numbered: bool| -> anyhow::Result<Side> {
            let number = revision_of(revision);
            if numbered && number.is_none() {
                return Err(anyhow!("the server's revision has no number"));
            }
            Ok(Side {
                revision: number,
                description: revision["description"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                is_active: revision["is_active"].as_bool().unwrap_or(false),
            })
        };
        let list = |revision: &Value, field: &str| -> Vec<Value> {
            revision[field].as_array().cloned().unwrap_or_default()
        };
        let numbered = from.is_some();
        let from = from.unwrap_or(&empty);
        let (backends, same_backends) =
            backend_changes(&list(from, "backends"), &list(to, "backends"));
        let (from_routes, to_routes) = (list(from, "routes"), list(to, "routes"));
        let (routes, same_routes) = route_changes(&from_routes, &to_routes);
        let reordered = reordered_ranks(&from_routes, &to_routes);
        let (from, to) = (side(from, numbered)?, side(to, true)?);
        Ok(Self {
            project_id: project.to_owned(),
            differs: from.description != to.description
                || !backends.is_empty()
                || !routes.is_empty()
                || !reordered.is_empty(),
            from,
            to,
            backends,
            routes,
            reordered,
            unchanged: Unchanged {
                backends: same_backends,
                routes: same_routes,
            },
        })
    }
}

/// The items of A and B paired by `key` (docs/management.md, "Comparing
/// revisions"): the k-th item of A with a key and the k-th item of B with
/// the same key are a pair. Answers each item of A with its partner in B,
/// if any, and the items of B left alone, in B's order.
fn pair_up<K: Ord>(
    from: &[Value],
    to: &[Value],
    key: impl Fn(&Value) -> K,
) -> (Vec<Option<usize>>, Vec<usize>) {
    let mut waiting: BTreeMap<K, VecDeque<usize>> = BTreeMap::new();
    for (b, item) in to.iter().enumerate() {
        waiting.entry(key(item)).or_default().push_back(b);
    }
    let partners: Vec<Option<usize>> = from
        .iter()
        .map(|item| waiting.get_mut(&key(item)).and_then(VecDeque::pop_front))
        .collect();
    let mut alone: Vec<usize> = waiting.into_values().flatten().collect();
    alone.sort_unstable();
    (partners, alone)
}

/// A backend's key: its name.
fn backend_key(backend: &Value) -> String {
    backend["name"].to_string()
}

/// A route's key: what it matches, its path and whether that is a regex.
fn route_key(route: &Value) -> (String, bool) {
    (route["path"].to_string(), route["regex"] == true)
}

/// What became of an item of A or B (its places in A and B, from 0).
enum Fate {
    Removed(usize),
    Changed(usize, usize, Vec<MemberChange>),
    Added(usize),
}

/// The items of A and B paired by `key` ([`pair_up`]) and judged: the
/// removed and changed ones in A's order, then the added ones in B's
/// order; and how many pairs are the same.
fn fates<K: Ord>(from: &[Value], to: &[Value], key: impl Fn(&Value) -> K) -> (Vec<Fate>, usize) {
    let (partners, added) = pair_up(from, to, key);
    let mut fates = Vec::new();
    let mut same = 0;
    for (a, partner) in partners.into_iter().enumerate() {
        match partner {
            None => fates.push(Fate::Removed(a)),
            Some(b) => {
                let members = member_changes(&from[a], &to[b]);
                if members.is_empty() {
                    same += 1;
                } else {
                    fates.push(Fate::Changed(a, b, members));
                }
            }
        }
    }
    fates.extend(added.into_iter().map(Fate::Added));
    (fates, same)
}

/// The backends of A and B paired by name: the changes, and how many are
/// the same.
fn backend_changes(from: &[Value], to: &[Value]) -> (Vec<BackendChange>, usize) {
    let name = |backend: &Value| match &backend["name"] {
        Value::String(name) => name.clone(),
        other => other.to_string(),
    };
    let (fates, same) = fates(from, to, backend_key);
    let changes = fates
        .into_iter()
        .map(|fate| match fate {
            Fate::Removed(a) => BackendChange::Removed {
                name: name(&from[a]),
                from: from[a].clone(),
            },
            Fate::Changed(a, _, members) => BackendChange::Changed {
                name: name(&from[a]),
                members,
            },
            Fate::Added(b) => BackendChange::Added {
                name: name(&to[b]),
                to: to[b].clone(),
            },
        })
        .collect();
    (changes, same)
}

/// The routes of A and B paired by what they match (path and regex): the
/// changes, and how many are the same. Positions count from 1.
fn route_changes(from: &[Value], to: &[Value]) -> (Vec<RouteChange>, usize) {
    let (fates, same) = fates(from, to, route_key);
    let changes = fates
        .into_iter()
        .map(|fate| match fate {
            Fate::Removed(a) => RouteChange::Removed {
                from_position: a + 1,
                from: from[a].clone(),
            },
            Fate::Changed(a, b, members) => RouteChange::Changed {
                from_position: a + 1,
                to_position: b + 1,
                to: to[b].clone(),
                members,
            },
            Fate::Added(b) => RouteChange::Added {
                to_position: b + 1,
                to: to[b].clone(),
            },
        })
        .collect();
    (changes, same)
}

/// The ranks whose paired routes (the same rank in A and B) B lists in
/// another order than A, in the order each rank first comes in A: the
/// edges evaluate routes of one rank in the order of the list, so such a
/// reorder is a change although no route changed.
fn reordered_ranks(from: &[Value], to: &[Value]) -> Vec<Reordered> {
    let (partners, _) = pair_up(from, to, route_key);
    // Each rank's pairs (place in A, place in B), in A's order.
    let mut ranks: Vec<(&Value, Vec<(usize, usize)>)> = Vec::new();
    for (a, b) in partners
        .into_iter()
        .enumerate()
        .filter_map(|(a, b)| Some((a, b?)))
        .filter(|&(a, b)| from[a]["rank"] == to[b]["rank"])
    {
        let rank = &from[a]["rank"];
        match ranks.iter_mut().find(|(seen, _)| *seen == rank) {
            Some((_, pairs)) => pairs.push((a, b)),
            None => ranks.push((rank, vec![(a, b)])),
        }
    }
    let path = |route: &Value| route["path"].as_str().unwrap_or_default().to_owned();
    ranks
        .into_iter()
        .filter(|(_, pairs)| pairs.windows(2).any(|two| two[0].1 > two[1].1))
        .map(|(rank, mut pairs)| {
            let from_order = pairs.iter().map(|&(a, _)| path(&from[a])).collect();
            pairs.sort_by_key(|&(_, b)| b);
            Reordered {
                rank: rank.clone(),
                from: from_order,
                to: pairs.iter().map(|&(_, b)| path(&to[b])).collect(),
            }
        })
        .collect()
}

/// The members whose values differ, in name order.
fn member_changes(from: &Value, to: &Value) -> Vec<MemberChange> {
    let empty = Map::new();
    let (from, to) = (
        from.as_object().unwrap_or(&empty),
        to.as_object().unwrap_or(&empty),
    );
    let names: BTreeSet<&String> = from.keys().chain(to.keys()).collect();
    names
        .into_iter()
        .filter(|name| from.get(*name) != to.get(*name))
        .map(|name| MemberChange {
            member: name.clone(),
            from: from.get(name).cloned(),
            to: to.get(name).cloned(),
        })
        .collect()
}

/// ANSI colours, or none.
struct Paint {
    on: bool,
}

impl Paint {
    fn with(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    fn bold(&self, text: &str) -> String {
        self.with("1", text)
    }
    fn removed(&self, text: &str) -> String {
        self.with("31", text)
    }
    fn added(&self, text: &str) -> String {
        self.with("32", text)
    }
    fn changed(&self, text: &str) -> String {
        self.with("33", text)
    }
}

/// What happened to a backend or route, for the text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Added,
    Removed,
    Changed,
}

impl Kind {
    /// Its line: marked and coloured.
    fn line(self, paint: &Paint, text: &str) -> String {
        match self {
            Self::Added => paint.added(&format!("+ {text}")),
            Self::Removed => paint.removed(&format!("- {text}")),
            Self::Changed => paint.changed(&format!("~ {text}")),
        }
    }
}

/// `1 added, 2 changed, 3 unchanged` (`none` when there is nothing).
fn tally(kinds: &[Kind], same: usize) -> String {
    let n = |kind: Kind| kinds.iter().filter(|&&k| k == kind).count();
    let said: Vec<String> = [
        (n(Kind::Added), "added"),
        (n(Kind::Removed), "removed"),
        (n(Kind::Changed), "changed"),
        (same, "unchanged"),
    ]
    .into_iter()
    .filter(|(count, _)| *count > 0)
    .map(|(count, word)| format!("{count} {word}"))
    .collect();
    if said.is_empty() {
        "none".to_owned()
    } else {
        said.join(", ")
    }
}

impl Diff {
    /// Prints the diff: the text for people, or with `document`
    /// (`--json`) the JSON, filtered by `jq` when given.
    pub fn print(&self, given: &str, document: bool, jq: Option<&Jq>) -> anyhow::Result<()> {
        let mut stdout = std::io::stdout().lock();
        if document {
            let text = serde_json::to_string(self)?;
            print_document(&text, jq, Style::stdout(), &mut stdout)?;
        } else {
            let colour = telemetry::colour(std::io::stdout().is_terminal());
            write!(stdout, "{}", self.text(given, colour))?;
        }
        stdout.flush()?;
        Ok(())
    }

    /// The diff for people: a heading naming the project as `given`, the
    /// description and which one is active, then the backends and routes
    /// that differ with their members (`-` removed, `+` added, `~`
    /// changed). What the server sent is shown [`printable`].
    fn text(&self, given: &str, colour: bool) -> String {
        let paint = Paint { on: colour };
        let named = |side: &Side| match side.revision {
            Some(number) => format!("revision {number}"),
            None => "no revision".to_owned(),
        };
        let (a, b) = (named(&self.from), named(&self.to));
        let mut out = paint.bold(&format!(
            "proxy settings of project {}: {a} -> {b}",
            printable(given)
        ));
        out.push('\n');
        let quoted =
            |text: &str| printable(&Value::String(text.to_owned()).to_string()).into_owned();
        if self.from.description == self.to.description {
            out.push_str(&format!(
                "description: {} (the same)\n",
                quoted(&self.to.description)
            ));
        } else {
            out.push_str(&format!(
                "description: {} -> {}\n",
                paint.removed(&quoted(&self.from.description)),
                paint.added(&quoted(&self.to.description))
            ));
        }
        let active = match (self.from.is_active, self.to.is_active) {
            (true, true) if a == b => a.clone(),
            (true, true) => "both".to_owned(),
            (true, false) => format!("{a} (not {b})"),
            // Nothing to compare with: B alone (a project's first revision).
            (false, true) if self.from.revision.is_none() => b.clone(),
            (false, true) => format!("{b} (not {a})"),
            (false, false) => "neither".to_owned(),
        };
        out.push_str(&format!("active: {active}\n"));

        let entries: Vec<(Kind, String, Members)> = self
            .backends
            .iter()
            .map(|change| match change {
                BackendChange::Added { name, to } => (Kind::Added, name.clone(), Members::All(to)),
                BackendChange::Removed { name, from } => {
                    (Kind::Removed, name.clone(), Members::All(from))
                }
                BackendChange::Changed { name, members } => {
                    (Kind::Changed, name.clone(), Members::Changed(members))
                }
            })
            .collect();
        section(
            &mut out,
            &paint,
            "backends",
            &entries,
            self.unchanged.backends,
        );

        let entries: Vec<(Kind, String, Members)> = self
            .routes
            .iter()
            .map(|change| match change {
                RouteChange::Added { to_position, to } => (
                    Kind::Added,
                    format!("route {to_position}: {}", route_label(to)),
                    Members::All(to),
                ),
                RouteChange::Removed {
                    from_position,
                    from,
                } => (
                    Kind::Removed,
                    format!("route {from_position}: {}", route_label(from)),
                    Members::All(from),
                ),
                RouteChange::Changed {
                    from_position,
                    to_position,
                    to,
                    members,
                } => {
                    let moved = if from_position == to_position {
                        String::new()
                    } else {
                        format!(" (was {from_position})")
                    };
                    (
                        Kind::Changed,
                        format!("route {to_position}{moved}: {}", route_label(to)),
                        Members::Changed(members),
                    )
                }
            })
            .collect();
        section(&mut out, &paint, "routes", &entries, self.unchanged.routes);
        for reordered in &self.reordered {
            let rank = match &reordered.rank {
                Value::String(rank) => rank.clone(),
                other => other.to_string(),
            };
            let line = format!(
                "routes of rank {rank}, evaluated in the order of the list: {} -> {}",
                reordered.from.join(", "),
                reordered.to.join(", ")
            );
            out.push_str(&Kind::Changed.line(&paint, &printable(&line)));
            out.push('\n');
        }
        out
    }
}

/// The members shown under a backend or route.
enum Members<'a> {
    /// Every member of one added or removed, in name order.
    All(&'a Value),
    /// Those that changed: `member: A -> B` ("unset" for a side where it
    /// has no value).
    Changed(&'a [MemberChange]),
}

/// A blank line, `backends: 1 added, ...`, then each entry and its members.
fn section(
    out: &mut String,
    paint: &Paint,
    title: &str,
    entries: &[(Kind, String, Members)],
    same: usize,
) {
    let kinds: Vec<Kind> = entries.iter().map(|(kind, _, _)| *kind).collect();
    out.push_str(&format!(
        "\n{} {}\n",
        paint.bold(&format!("{title}:")),
        tally(&kinds, same)
    ));
    let shown = |value: &Option<Value>| match value {
        Some(value) => printable(&value.to_string()).into_owned(),
        None => "unset".to_owned(),
    };
    for (kind, heading, members) in entries {
        out.push_str(&kind.line(paint, &printable(heading)));
        out.push('\n');
        match members {
            Members::All(object) => {
                for member in member_changes(&Value::Object(Map::new()), object) {
                    let line = format!("    {}: {}", printable(&member.member), shown(&member.to));
                    out.push_str(&match kind {
                        Kind::Added => paint.added(&line),
                        _ => paint.removed(&line),
                    });
                    out.push('\n');
                }
            }
            Members::Changed(changes) => {
                for change in changes.iter() {
                    out.push_str(&format!(
                        "    {}: {} -> {}\n",
                        printable(&change.member),
                        paint.removed(&shown(&change.from)),
                        paint.added(&shown(&change.to))
                    ));
                }
            }
        }
    }
}

/// A route in a few words: its path, and the backend it goes to.
fn route_label(route: &Value) -> String {
    let path = route["path"].as_str().unwrap_or_default();
    let backend = route["backend_name"].as_str().unwrap_or_default();
    format!("{path} -> {backend}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The cases the console runs too (tests/integration/console/).
    const CASES: &str =
        include_str!("../../../../tests/integration/fixtures/revision-diff-cases.json");

    #[test]
    fn the_diff_follows_the_shared_cases() {
        let cases: Value = serde_json::from_str(CASES).unwrap();
        for case in cases["cases"].as_array().unwrap() {
            let revision = |side: &str, number: u32| {
                let mut revision = case[side].clone();
                revision["revision"] = json!(number);
                revision
            };
            let diff = Diff::between("p", Some(&revision("from", 1)), &revision("to", 2)).unwrap();
            let diff = serde_json::to_value(&diff).unwrap();
            let said = json!({
                "backends": diff["backends"],
                "routes": diff["routes"],
                "reordered": diff["reordered"],
                "unchanged": diff["unchanged"],
            });
            assert_eq!(said, case["expected"], "{}", case["name"]);
        }
    }
}
