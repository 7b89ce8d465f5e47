//! `proxy-settings edges`: who runs which revision of a project, from
//! the edges' reports (listEdges): a summary line ("2 edges on revision 4,
//! 1 failed on 4: REASON"), then a table; `--json`/`--jq`: the edges.

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::ControlFlow;

use clap::Args;
use serde_json::Value;

use super::api::ApiClient;
use super::connection::{self, Connection};
use super::output::{Jq, Style, print_document};
use super::revisions::Document;
use super::table;

#[derive(Args)]
pub struct EdgesArgs {
    /// The project's id.
    #[arg(value_name = "PROJECT_ID")]
    project_id: String,
    #[command(flatten)]
    document: Document,
    #[command(flatten)]
    connection: Connection,
}

pub async fn edges(args: EdgesArgs) -> anyhow::Result<()> {
    let jq = args.document.jq().map(Jq::compile).transpose()?;
    let client = ApiClient::new(&connection::resolve(&args.connection)?)?;
    let edges = every_edge(&client, &args.project_id).await?;
    let mut stdout = std::io::stdout().lock();
    if args.document.wanted() {
        let text = serde_json::to_string(&edges)?;
        print_document(&text, jq.as_ref(), Style::stdout(), &mut stdout)?;
    } else {
        writeln!(stdout, "{}", summary(&edges))?;
        if !edges.is_empty() {
            let rows = edges.iter().map(|edge| {
                vec![
                    table::cell(&edge["name"]),
                    table::cell(&edge["revision"]),
                    table::cell(&edge["status"]),
                    table::when(&edge["reported_at"], ""),
                    if edge["stale"] == true { "stale" } else { "" }.to_owned(),
                ]
            });
            let headers = ["EDGE", "REVISION", "STATUS", "REPORTED (UTC)", ""];
            write!(stdout, "{}", table::render(&headers, rows))?;
        }
    }
    stdout.flush()?;
    Ok(())
}

async fn every_edge(client: &ApiClient, project: &str) -> anyhow::Result<Vec<Value>> {
    let path = [
        "v1".to_owned(),
        "projects".to_owned(),
        project.to_owned(),
        "edges".to_owned(),
    ];
    let mut edges = Vec::new();
    client
        .walk(&path, &[], |items| {
            edges.extend(items);
            ControlFlow::<()>::Continue(())
        })
        .await?;
    Ok(edges)
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
