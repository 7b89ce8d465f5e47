//! `proxy-settings edges`: who runs which revision of a project, from
//! the edges' reports (listEdges), every page of them, shown as the other
//! listings are: on a terminal a summary line ("2 edges on revision 4, 1
//! failed on 4: REASON") then a table; piped or with `--json`/`--jq`, the
//! JSON array of the edges. `proxy-settings delete-edge` removes an
//! edge's report.

use std::collections::BTreeMap;

use clap::Args;
use serde_json::Value;

use reqwest::Method;

use crate::client::connection::Connection;
use crate::client::http::{Request, v1};
use crate::client::listing::{ListKind, ProjectListing};
use crate::client::names::PROJECT_HELP;
use crate::client::object::{DELETED, ObjectShape, Session, confirm};
use crate::output::table::{self, Column};

/// The edges' table, under its summary line.
const LISTING: ListKind = ListKind {
    columns: &[
        Column::kept("EDGE"),
        Column::kept("REVISION"),
        Column::kept("STATUS"),
        Column::dropped("REPORTED (UTC)", 2),
        Column::dropped("STALE", 1),
    ],
    row: |edge, _| {
        let cell = |field: &str| table::cell(&edge[field]);
        vec![
            cell("name"),
            cell("revision"),
            cell("status"),
            table::when(&edge["reported_at"], "-"),
            if edge["stale"] == true { "yes" } else { "no" }.to_owned(),
        ]
    },
    schema: "Edge",
    plural: "edges",
    names_organizations: false,
};

pub async fn edges(args: ProjectListing) -> anyhow::Result<()> {
    args.print_all(LISTING, "edges", Some(summary)).await
}

#[derive(Args)]
pub struct DeleteEdge {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The edge's name, as it reports (`proxydeck follow --name`).
    #[arg(value_name = "EDGE")]
    name: String,
    /// Do not ask. Without it the command asks on a terminal, and refuses
    /// when stdin is not one.
    #[arg(long, short)]
    yes: bool,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

/// Removes an edge's report (deleteEdge): one the edges no longer run.
pub async fn delete_edge(args: DeleteEdge) -> anyhow::Result<()> {
    if !args.yes {
        confirm(&format!(
            "remove the report of edge {} from project {}",
            args.name, args.project
        ))?;
    }
    let session = Session::open(&args.connection, &args.shape, DELETED)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id, "edges", &args.name]);
    session
        .exchange(Request::new(Method::DELETE, &path), "deleted")
        .await
}

/// "2 edges on revision 4, 1 on revision 3, 1 failed on 4: REASON" (the
/// newest revisions first; stale edges counted apart).
fn summary(edges: &[Value]) -> String {
    if edges.is_empty() {
        return "no edge has reported".into();
    }
    let mut applied: BTreeMap<std::cmp::Reverse<u64>, usize> = BTreeMap::new();
    let mut parts = Vec::new();
    let mut stale = 0;
    for edge in edges {
        let revision = edge["revision"].as_u64().unwrap_or_default();
        if edge["stale"] == true {
            stale += 1;
        } else if edge["status"] == "failed" {
            let reason = edge["error"].as_str().unwrap_or_default();
            parts.push(format!("1 failed on {revision}: {reason}"));
        } else {
            *applied.entry(std::cmp::Reverse(revision)).or_default() += 1;
        }
    }
    let mut counted: Vec<String> = applied
        .into_iter()
        .enumerate()
        .map(|(i, (std::cmp::Reverse(revision), count))| {
            let noun = match (i, count) {
                (0, 1) => "edge ",
                (0, _) => "edges ",
                _ => "",
            };
            format!("{count} {noun}on revision {revision}")
        })
        .collect();
    counted.append(&mut parts);
    if stale > 0 {
        counted.push(format!("{stale} stale"));
    }
    counted.join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_summary_counts_edges_by_revision() {
        let edge = |revision: u64, status: &str, stale: bool| json!({"revision": revision, "status": status, "stale": stale, "error": "no backend"});
        let edges = [
            edge(4, "applied", false),
            edge(3, "applied", false),
            edge(4, "applied", false),
            edge(4, "failed", false),
            edge(2, "applied", true),
        ];
        assert_eq!(
            summary(&edges),
            "2 edges on revision 4, 1 on revision 3, 1 failed on 4: no backend, 1 stale"
        );
        assert_eq!(summary(&[]), "no edge has reported");
    }
}
