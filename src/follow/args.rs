//! `proxydeck follow`'s command line: what it follows, where it keeps the
//! files, what it runs after a change, and the name it reports under.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgGroup, Args};

use crate::client::connection::Connection;

/// `proxydeck follow --help`'s text after the flags.
pub const AFTER_HELP: &str = "\
Examples:
  proxydeck follow --organization acme-corp --dir /var/lib/proxydeck-edge \\
      --exec /usr/share/proxydeck/edge/haproxy-apply
  proxydeck follow --organization 0190b7a4-0000-7000-8000-000000000001 --dir ./config --once

For each project: PROJECT/project.json and PROJECT/proxy-settings.json, each written whole.
proxy-settings.json holds the revision meant for this edge, its target (getEdgeTarget): the
active revision, or a rollout's while it runs and has reached this edge (docs/rollouts.md).
With --no-report, the active revision. Beside them the routing index, each verified custom domain to its project,
as two HAProxy maps: routing.map (HOST PROJECT) and routing-wildcards.map (BASE PROJECT for
*.BASE), written after the projects' files and before a project's folder is removed.
.cursor saves where the files stand: a restart resumes there.

For an edge that obtains certificates itself (Caddy's on-demand TLS), --ask-listen answers its
`ask` from the verified names followed, and --tls-check reports each name's ssl_status as the
edge serves it (docs/domains.md, \"Certificates\"):
  proxydeck follow --organization acme-corp --dir /var/lib/proxydeck-edge \\
      --ask-listen 127.0.0.1:9180 --tls-check 127.0.0.1:443

--exec runs (sh -c, in --dir) after a change that changed what the files hold, after follow
starts, and after a run that failed; not after one that left them as they were (an inactive
revision created). Its environment is follow's without any PROXYDECK_* variable (the token
stays with follow), with PROXYDECK_FOLLOW_DIR set to the folder.

--check runs after each --exec that succeeded (each change applied, without --exec), in the
same folder and environment, for 30 s at most: its exit status is the edge's health in its
reports (\"healthy\"), which a rollout goes on or rolls back by; the report every minute
repeats the last one. --canary asks for a rollout's first stage:
  proxydeck follow --project acme-corp/acme-shop --dir /var/lib/proxydeck-edge --name edge-7 \\
      --canary --exec ./reload --check 'curl -fsS --max-time 5 http://127.0.0.1/healthz'

Exit status: 0 (--once) the files are written and --exec succeeded; 1 an error (the token
refused, the project gone, the folder unusable; with --once, also the service unreachable or
failing after 4 attempts, about 7 s); 2 a bad command line; 3 (--once) --exec
failed: the files are written, the cursor is not saved, the edge is reported failed; 4 (--once)
--check failed: the files are written and --exec succeeded, the cursor is saved, the edge is
reported unhealthy.";

#[derive(Args)]
#[command(group(ArgGroup::new("followed").required(true).args(["project", "organization"])))]
pub struct FollowArgs {
    /// Follow this project: its id, ORG/SLUG (such as
    /// acme-corp/acme-shop), or its slug alone when no other project of
    /// yours has it. Its files go in a folder named by its id.
    #[arg(long, value_name = "PROJECT")]
    pub project: Option<String>,
    /// Follow every project of this organization of yours: its slug or
    /// its id.
    #[arg(long, value_name = "ORGANIZATION")]
    pub organization: Option<String>,
    /// The folder the files are kept in (made when missing). Nothing is
    /// written outside it, and no link in it is followed out of it.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Run this (with `sh -c`, in the folder) when the files changed (see
    /// below), with PROXYDECK_FOLLOW_DIR set to the folder and no other
    /// PROXYDECK_* variable.
    #[arg(long, value_name = "COMMAND")]
    pub exec: Option<String>,
    /// After --exec succeeded (or the files were written, without
    /// --exec), run this (as --exec runs) to tell whether the edge is
    /// healthy on what it now serves: status 0 reports it healthy, another
    /// unhealthy with its status and the end of its stderr; one still
    /// running after 30 s is killed and counts as failed.
    #[arg(long, value_name = "COMMAND")]
    pub check: Option<String>,
    /// The name this edge reports under (reportEdge) after each change it
    /// applied, or failed to [default: the host's name]; it also names the
    /// edge whose target (the revision a rollout means for it) follow
    /// writes.
    #[arg(long, value_name = "EDGE")]
    pub name: Option<String>,
    /// Report nothing of what this edge runs (--tls-check still reports
    /// the names' ssl_status), and follow the active revision rather than
    /// this edge's target.
    #[arg(long, conflicts_with_all = ["name", "canary"])]
    pub no_report: bool,
    /// Report this edge as a canary: a rollout's first stage takes the
    /// canaries first.
    #[arg(long)]
    pub canary: bool,
    /// Write every file and run --exec (and --check) once, whatever the
    /// saved cursor, print where they stand (`{"cursor": ...,
    /// "projects": [...]}`), then stop (exit status 3 when --exec failed, 4
    /// when --check did).
    #[arg(long)]
    pub once: bool,
    /// Answer Caddy's on-demand TLS `ask` on ADDR (such as
    /// 127.0.0.1:9180): GET /ask?domain=NAME is 200 when NAME routes here
    /// (a verified name, or one label under a verified wildcard), 404
    /// otherwise.
    #[arg(long, value_name = "ADDR", conflicts_with = "once")]
    pub ask_listen: Option<SocketAddr>,
    /// After each change and every minute, make a TLS handshake with the
    /// edge at ADDR (HOST:PORT) for each verified name (not wildcards),
    /// and report its ssl_status when it differs from the service's: true
    /// when the edge serves a certificate for the name that the roots
    /// trust.
    #[arg(long, value_name = "ADDR", conflicts_with = "once",
          value_parser = crate::follow::certificates::parse_edge)]
    pub tls_check: Option<String>,
    /// The authorities (PEM) a --tls-check certificate must chain to
    /// [default: the system's].
    #[arg(long, value_name = "PEM_FILE", requires = "tls_check")]
    pub tls_check_ca: Option<PathBuf>,
    #[command(flatten)]
    pub connection: Connection,
}
