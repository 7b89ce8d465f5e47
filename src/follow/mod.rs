//! `proxydeck follow`: keeps a folder in step with a project's (or an
//! organization's projects') configuration, through the change feed
//! (`docs/feed.md`), as consul-template or confd keep files in step with
//! theirs. For each project, `PROJECT/project.json` (the project) and
//! `PROJECT/proxy-settings.json` (the revision meant for this edge, its
//! target, which a rollout decides; without a name, the active revision;
//! absent when none is), each written whole (a temporary file, fsync,
//! rename); beside them the routing index, every verified name of theirs
//! to its project (`routing.map`, `routing-wildcards.map`); when what they
//! hold changed, `--exec`, then `--check`, whose status the reports carry
//! as the edge's health. The cursor the files stand at is saved beside
//! them (`.cursor`), so that a restart resumes where the last run
//! stopped; while the service cannot be reached the files stay as they are
//! and the command tries again, waiting longer each time (with jitter).
//!
//! One file per concern: its command line ([`args`]), the feed loop
//! ([`feed`]), what it reads of the service ([`reads`], through the
//! typed [`answers`]), the folder and its dir-confined writes ([`files`]),
//! the routing index's content ([`routing`]), the `--exec` reload and the `--check` ([`reload`]), the reports to the service
//! ([`reports`]), and when to try again ([`retry`]); for an edge that
//! obtains its own certificates, the verified names as published after
//! each change ([`verified`]), the answer to its `ask` ([`ask`]) and the
//! probe that reports each name's `ssl_status` ([`certificates`]). It calls the service
//! as the terminal client does (`client::http`, whose `sse` reads the
//! feed), and names projects as it does (`client::names`).

mod answers;
mod args;
mod ask;
mod certificates;
mod feed;
mod files;
mod reads;
mod reload;
mod reports;
mod retry;
mod routing;
mod verified;

pub use args::{AFTER_HELP, FollowArgs};
pub use reload::{CheckFailed, ExecFailed};

use crate::client::connection;
use crate::client::http::ApiClient;

/// Runs `proxydeck follow` until stopped (or once, with `--once`).
pub async fn follow(args: FollowArgs) -> anyhow::Result<()> {
    let client = ApiClient::new(&connection::resolve(&args.connection)?)?;
    let folder = files::Folder::open(&args.dir)?;
    let routing = folder.routing_index()?;
    let reports = reports::Reports::new(args.name.as_deref(), args.no_report, args.canary)?;
    let served = verified::Served::default();
    if let Some(addr) = args.ask_listen {
        let listener = ask::bind(addr).await?;
        eprintln!("follow: answering the edge's ask on http://{addr}/ask");
        tokio::spawn(ask::serve(listener, served.subscribe()));
    }
    if let Some(edge) = &args.tls_check {
        let probe = certificates::Probe::new(edge, args.tls_check_ca.as_deref())?;
        // A client of its own: the probe reports while the feed streams.
        let reporter = ApiClient::new(&connection::resolve(&args.connection)?)?;
        tokio::spawn(certificates::run(
            probe,
            reporter,
            served.subscribe(),
            served.said(),
        ));
    }
    // What the folder holds, until the service is reached.
    if let Some(routing) = &routing {
        served.publish(routing);
    }
    feed::Follower::new(client, args, folder, routing, reports, served)
        .run()
        .await
}
