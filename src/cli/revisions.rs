//! `proxy-settings get` and `proxy-settings diff`: one revision of a
//! project's proxy settings, and what changed between two of them. Both
//! read the revisions through the listing, one short page positioned at
//! each (the API has no single-revision read).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};

use anyhow::{anyhow, bail};
use clap::Args;
use serde::Serialize;
use serde_json::{Map, Value};

use super::api::{ApiClient, Page, Refused};
use super::connection::{self, Connection};
use super::output::{Jq, Style, print_document};
use crate::domain::pagination::MAX_LIMIT;
use crate::telemetry;

/// How one document is shown: `--json`, `--jq`.
#[derive(Args)]
pub struct Document {
    /// Print the result as one JSON document (indented and coloured on a
    /// terminal, one line when piped).
    // The global flag's id and value ("" always): `proxydeck --json
    // proxy-settings diff ...` works too.
    #[arg(long, num_args = 0, default_missing_value = "")]
    json: Option<String>,
    /// Filter that JSON document with a jq program, such as
    /// '.backends[].name' (strings print without quotes, as with jq -r).
    #[arg(long, value_name = "EXPR")]
    jq: Option<String>,
}

impl Document {
    /// The `--jq` program, if any.
    pub(super) fn jq(&self) -> Option<&str> {
        self.jq.as_deref()
    }

    /// Whether a JSON document is asked for (`--json` or `--jq`).
    pub(super) fn wanted(&self) -> bool {
        self.json.is_some() || self.jq.is_some()
    }
}

#[derive(Args)]
pub struct GetArgs {
    /// The project's id.
    #[arg(value_name = "PROJECT_ID")]
    project_id: String,
    /// The revision's number.
    #[arg(value_name = "REVISION", value_parser = clap::value_parser!(u32).range(1..))]
    revision: u32,
    #[command(flatten)]
    document: Document,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct DiffArgs {
    /// The project's id.
    #[arg(value_name = "PROJECT_ID")]
    project_id: String,
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

/// `proxy-settings get`: the revision as the listing gives it.
pub async fn get(args: GetArgs) -> anyhow::Result<()> {
    let jq = args.document.jq.as_deref().map(Jq::compile).transpose()?;
    let client = ApiClient::new(&connection::resolve(&args.connection)?)?;
    let revision = fetch(&client, &args.project_id, args.revision).await?;
    let mut stdout = std::io::stdout().lock();
    print_document(
        &revision.to_string(),
        jq.as_ref(),
        Style::stdout(),
        &mut stdout,
    )?;
    stdout.flush()?;
    Ok(())
}

/// `proxy-settings diff`: text, or with `--json`/`--jq` the [`Diff`].
/// Exits 0 whatever the differences (non-zero is for errors).
pub async fn diff(args: DiffArgs) -> anyhow::Result<()> {
    let document = args.document.json.is_some() || args.document.jq.is_some();
    let jq = args.document.jq.as_deref().map(Jq::compile).transpose()?;
    let client = ApiClient::new(&connection::resolve(&args.connection)?)?;
    let from = fetch(&client, &args.project_id, args.from).await?;
    let to = if args.to == args.from {
        from.clone()
    } else {
        fetch(&client, &args.project_id, args.to).await?
    };
    let diff = Diff::between(&args.project_id, &from, &to)?;
    let mut stdout = std::io::stdout().lock();
    if document {
        let text = serde_json::to_string(&diff)?;
        print_document(&text, jq.as_ref(), Style::stdout(), &mut stdout)?;
    } else {
        let colour = telemetry::colour(std::io::stdout().is_terminal());
        write!(stdout, "{}", diff.text(colour))?;
    }
    stdout.flush()?;
    Ok(())
}

/// Revision `number` of `project`, read with pages of one item: ascending
/// after `number - 1`, else (that one is no revision) descending after
/// `number + 1`; either page answers whether `number` exists. Revisions
/// are numbered without gaps unless an import left some: when neither
/// neighbour exists, pages walk down from the newest revision to `number`.
async fn fetch(client: &ApiClient, project: &str, number: u32) -> anyhow::Result<Value> {
    let missing = || anyhow!("project {project:?} has no proxy settings revision {number}");
    // Revision 1 is the first item: no start key.
    let mut tries = vec![("ASC", (number > 1).then(|| (number - 1).to_string()))];
    tries.extend(
        number
            .checked_add(1)
            .map(|after| ("DESC", Some(after.to_string()))),
    );
    for (direction, after) in tries {
        if let Some(page) = page(client, project, direction, 1, after).await? {
            let first = page.items()?.into_iter().next();
            return first
                .filter(|item| revision_of(item) == Some(number))
                .ok_or_else(missing);
        }
    }
    let mut start_key = None;
    loop {
        let page = page(client, project, "DESC", MAX_LIMIT, start_key.take())
            .await?
            .ok_or_else(missing)?;
        let next = page.next_key(Some(MAX_LIMIT));
        for item in page.items()? {
            match revision_of(&item).map(|revision| revision.cmp(&number)) {
                Some(Ordering::Equal) => return Ok(item),
                Some(Ordering::Less) => return Err(missing()),
                _ => {}
            }
        }
        start_key = Some(next.ok_or_else(missing)?);
    }
}

/// One page of the project's revisions; `None` when `start_key` is no
/// revision of it.
async fn page(
    client: &ApiClient,
    project: &str,
    direction: &str,
    limit: u32,
    start_key: Option<String>,
) -> anyhow::Result<Option<Page>> {
    let segments = [
        "v1".to_owned(),
        "projects".to_owned(),
        project.to_owned(),
        "proxy-settings".to_owned(),
    ];
    let mut query = vec![
        ("limit", limit.to_string()),
        ("order_direction", direction.to_owned()),
    ];
    query.extend(start_key.map(|key| ("start_key", key)));
    match client.page(&segments, &query).await {
        Ok(page) => Ok(Some(page)),
        Err(error) => match error.downcast_ref::<Refused>() {
            Some(refused) if refused.is_unknown_start_key() => Ok(None),
            Some(refused) if refused.is_not_found() => Err(anyhow!(
                "no project {project:?} (or this token cannot see it)"
            )),
            _ => Err(error),
        },
    }
}

fn revision_of(item: &Value) -> Option<u32> {
    item["revision"]
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
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
    /// Matched by name, in name order.
    backends: Vec<BackendChange>,
    /// Compared in order (see [`route_changes`]).
    routes: Vec<RouteChange>,
    unchanged: Unchanged,
}

#[derive(Debug, Serialize, PartialEq)]
struct Side {
    revision: u32,
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
    fn between(project: &str, from: &Value, to: &Value) -> anyhow::Result<Self> {
        let side = |revision: &Value| -> anyhow::Result<Side> {
            Ok(Side {
                revision: revision_of(revision)
                    .ok_or_else(|| anyhow!("the server's revision has no number"))?,
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
        let (backends, same_backends) =
            backend_changes(&list(from, "backends"), &list(to, "backends"))?;
        let (routes, same_routes) = route_changes(&list(from, "routes"), &list(to, "routes"));
        let (from, to) = (side(from)?, side(to)?);
        Ok(Self {
            project_id: project.to_owned(),
            differs: from.description != to.description
                || !backends.is_empty()
                || !routes.is_empty(),
            from,
            to,
            backends,
            routes,
            unchanged: Unchanged {
                backends: same_backends,
                routes: same_routes,
            },
        })
    }
}

/// The backends of A and B matched by name: the changes in name order,
/// and how many are the same.
fn backend_changes(from: &[Value], to: &[Value]) -> anyhow::Result<(Vec<BackendChange>, usize)> {
    let by_name = |backends: &[Value]| -> anyhow::Result<BTreeMap<String, Value>> {
        backends
            .iter()
            .map(|backend| match backend["name"].as_str() {
                Some(name) => Ok((name.to_owned(), backend.clone())),
                None => bail!("the server sent a backend without a name"),
            })
            .collect()
    };
    let (mut from, to) = (by_name(from)?, by_name(to)?);
    let mut changes = Vec::new();
    let mut same = 0;
    for (name, after) in to {
        match from.remove(&name) {
            None => changes.push(BackendChange::Added { name, to: after }),
            Some(before) => {
                let members = member_changes(&before, &after);
                if members.is_empty() {
                    same += 1;
                } else {
                    changes.push(BackendChange::Changed { name, members });
                }
            }
        }
    }
    changes.extend(
        from.into_iter()
            .map(|(name, before)| BackendChange::Removed { name, from: before }),
    );
    changes.sort_by(|a, b| a.name().cmp(b.name()));
    Ok((changes, same))
}

impl BackendChange {
    fn name(&self) -> &str {
        match self {
            Self::Added { name, .. } | Self::Removed { name, .. } | Self::Changed { name, .. } => {
                name
            }
        }
    }
}

/// The routes of A and B in order, as diff(1) compares lines: the longest
/// common subsequence of equal routes stays. Between two routes that
/// stay, a route taken from A and one put in B with the same path are one
/// changed route, and so are the rest taken pairwise in order; what is
/// left is removed or added. Answers the changes and how many stayed.
fn route_changes(from: &[Value], to: &[Value]) -> (Vec<RouteChange>, usize) {
    // lcs[i * width + j]: the longest common subsequence of from[i..] and
    // to[j..]. At most 1,000 routes a revision: a million cells at most.
    let width = to.len() + 1;
    let mut lcs = vec![0u32; (from.len() + 1) * width];
    for i in (0..from.len()).rev() {
        for j in (0..to.len()).rev() {
            lcs[i * width + j] = if from[i] == to[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let mut changes = Vec::new();
    let mut same = 0;
    let (mut i, mut j) = (0, 0);
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    loop {
        let stays = i < from.len() && j < to.len() && from[i] == to[j];
        let end = i == from.len() && j == to.len();
        if stays || end {
            changes.extend(gap_changes(from, to, &removed, &added));
            removed.clear();
            added.clear();
        }
        if end {
            return (changes, same);
        }
        if stays {
            same += 1;
            (i, j) = (i + 1, j + 1);
        } else if j == to.len()
            || (i < from.len() && lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])
        {
            removed.push(i);
            i += 1;
        } else {
            added.push(j);
            j += 1;
        }
    }
}

/// The changes of one run of routes taken from A (`removed`, indexes) and
/// put in B (`added`): pairs by path, then in order; changed and removed
/// ones in A's order, then the added ones.
fn gap_changes(
    from: &[Value],
    to: &[Value],
    removed: &[usize],
    added: &[usize],
) -> Vec<RouteChange> {
    let mut partner: Vec<Option<usize>> = vec![None; removed.len()];
    let mut free: Vec<usize> = added.to_vec();
    for (k, &a) in removed.iter().enumerate() {
        if let Some(at) = free.iter().position(|&b| from[a]["path"] == to[b]["path"]) {
            partner[k] = Some(free.remove(at));
        }
    }
    let mut rest = free.iter();
    let mut changes = Vec::new();
    for (k, &a) in removed.iter().enumerate() {
        let b = partner[k].or_else(|| rest.next().copied());
        changes.push(match b {
            Some(b) => RouteChange::Changed {
                from_position: a + 1,
                to_position: b + 1,
                to: to[b].clone(),
                members: member_changes(&from[a], &to[b]),
            },
            None => RouteChange::Removed {
                from_position: a + 1,
                from: from[a].clone(),
            },
        });
    }
    changes.extend(rest.map(|&b| RouteChange::Added {
        to_position: b + 1,
        to: to[b].clone(),
    }));
    changes
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
    /// The diff for people: a heading, the description and which one is
    /// active, then the backends and routes that differ with their
    /// members (`-` removed, `+` added, `~` changed).
    fn text(&self, colour: bool) -> String {
        let paint = Paint { on: colour };
        let (a, b) = (self.from.revision, self.to.revision);
        let mut out = paint.bold(&format!(
            "proxy settings of project {}: revision {a} -> revision {b}",
            self.project_id
        ));
        out.push('\n');
        let quoted = |text: &str| Value::String(text.to_owned()).to_string();
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
            (true, true) if a == b => format!("revision {a}"),
            (true, true) => "both".to_owned(),
            (true, false) => format!("revision {a} (not revision {b})"),
            (false, true) => format!("revision {b} (not revision {a})"),
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
        Some(value) => value.to_string(),
        None => "unset".to_owned(),
    };
    for (kind, heading, members) in entries {
        out.push_str(&kind.line(paint, heading));
        out.push('\n');
        match members {
            Members::All(object) => {
                for member in member_changes(&Value::Object(Map::new()), object) {
                    let line = format!("    {}: {}", member.member, shown(&member.to));
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
                        change.member,
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

    fn route(path: &str, backend: &str) -> Value {
        json!({"path": path, "backend_name": backend})
    }

    /// (kind, from position, to position) of each change.
    fn places(changes: &[RouteChange]) -> Vec<(&str, usize, usize)> {
        changes
            .iter()
            .map(|change| match change {
                RouteChange::Added { to_position, .. } => ("added", 0, *to_position),
                RouteChange::Removed { from_position, .. } => ("removed", *from_position, 0),
                RouteChange::Changed {
                    from_position,
                    to_position,
                    ..
                } => ("changed", *from_position, *to_position),
            })
            .collect()
    }

    #[test]
    fn routes_pair_by_path_then_in_order() {
        let (a, b, c, x) = (
            route("/a", "o"),
            route("/b", "o"),
            route("/c", "o"),
            route("/x", "o"),
        );
        // Inserted at the top: one added, the rest unchanged.
        let (changes, same) =
            route_changes(&[a.clone(), b.clone()], &[c.clone(), a.clone(), b.clone()]);
        assert_eq!((places(&changes), same), (vec![("added", 0, 1)], 2));
        // /c changes its backend: paired with its old self by path, not
        // with /b that went away before it.
        let c2 = route("/c", "other");
        let (changes, same) = route_changes(
            &[a.clone(), b.clone(), c.clone(), x.clone()],
            &[a.clone(), c2.clone(), x.clone()],
        );
        assert_eq!(
            (places(&changes), same),
            (vec![("removed", 2, 0), ("changed", 3, 2)], 2)
        );
        // A path changes: paired in order.
        let (changes, _) = route_changes(&[a.clone(), b.clone()], &[a.clone(), route("/bb", "o")]);
        assert_eq!(places(&changes), vec![("changed", 2, 2)]);
        let RouteChange::Changed { members, .. } = &changes[0] else {
            unreachable!()
        };
        assert_eq!(members.len(), 1);
        assert_eq!(members[0].member, "path");
        // Everything the same; both empty.
        assert_eq!(route_changes(&[a.clone(), b.clone()], &[a, b]).1, 2);
        assert_eq!(route_changes(&[], &[]), (vec![], 0));
    }
}
