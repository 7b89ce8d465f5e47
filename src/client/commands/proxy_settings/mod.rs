//! `proxydeck proxy-settings`: a project's proxy settings revisions
//! (list, get, create, activate: [`revisions`]), what changed between two
//! of them ([`diff`]), who runs which ([`edges`]), and activating one in
//! stages ([`rollouts`]).

mod diff;
mod document;
mod edges;
mod revisions;
pub mod rollouts;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum ProxySettingsCommand {
    /// List a project's proxy settings revisions, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings list acme-corp/acme-shop\n  proxydeck proxy-settings list acme-shop --order-direction asc --all\n  proxydeck proxy-settings list acme-shop --jq '.[] | select(.is_active) | .revision'"
    )]
    List(revisions::List),
    /// Show one revision of a project's proxy settings.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings get acme-shop 2\n  proxydeck proxy-settings get acme-shop 2 --jq '.backends[].address'"
    )]
    Get(revisions::Get),
    /// Show what changed from revision A to revision B of a project's
    /// proxy settings: description, which is active, backends (paired by
    /// name) and routes (paired by path and regex; the order alone is no
    /// change). Exits 0 whatever the differences.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings diff acme-shop 1 3\n  proxydeck proxy-settings diff acme-shop 1 3 --json\n  proxydeck proxy-settings diff acme-shop 1 3 --jq '.backends[] | select(.change == \"changed\") | .name'"
    )]
    Diff(diff::DiffArgs),
    /// Create a new revision of a project's proxy settings from a JSON file
    /// (`description`, `backends`, `routes`). A project's first revision is
    /// active; later ones are not until activated. With --dry-run, nothing
    /// is stored: the API checks it and the diff against the active
    /// revision is printed, as `diff` prints one.
    #[command(
        after_help = concat!("Examples:\n  proxydeck proxy-settings create acme-shop --file revision.json --dry-run   # what it would change\n  proxydeck proxy-settings create acme-shop --file revision.json\n  cat revision.json | proxydeck proxy-settings create acme-shop --file - --jq .revision", retried_create_note!())
    )]
    Create(revisions::Create),
    /// Make a revision the active one (the one active before stops being
    /// so). To roll back, activate an older revision.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings activate acme-shop 3\n  proxydeck proxy-settings diff acme-shop 3 2 && proxydeck proxy-settings activate acme-shop 2   # roll back to 2"
    )]
    Activate(revisions::Activate),
    /// Who runs which revision: each edge's last report (`proxydeck
    /// follow --name` reports), every page of them. A table under a
    /// summary line on a terminal; the JSON array when piped.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings edges acme-corp/acme-shop\n  proxydeck proxy-settings edges acme-shop -o table | head -1   # the summary line\n  proxydeck proxy-settings edges acme-shop --jq '.[] | select(.status == \"failed\") | .error'"
    )]
    Edges(crate::client::listing::ProjectListing),
    /// Remove an edge's report from a project (an edge that no longer
    /// runs): needs the right to change the project. An edge that reports
    /// again comes back.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings delete-edge acme-shop edge-7.eu --yes"
    )]
    DeleteEdge(edges::DeleteEdge),
    /// Activate a revision in stages, a few edges first, back to the
    /// active revision at once when they do not report healthy
    /// (`docs/rollouts.md`): start, status (`--watch`), list, pause,
    /// resume, promote, abort.
    #[command(subcommand)]
    Rollout(rollouts::RolloutCommand),
}

/// Runs a `proxy-settings` command.
pub async fn run(command: ProxySettingsCommand) -> anyhow::Result<()> {
    match command {
        ProxySettingsCommand::List(args) => revisions::list(args).await,
        ProxySettingsCommand::Get(args) => revisions::get(args).await,
        ProxySettingsCommand::Diff(args) => diff::diff(args).await,
        ProxySettingsCommand::Create(args) => revisions::create(args).await,
        ProxySettingsCommand::Activate(args) => revisions::activate(args).await,
        ProxySettingsCommand::Edges(args) => edges::edges(args).await,
        ProxySettingsCommand::DeleteEdge(args) => edges::delete_edge(args).await,
        ProxySettingsCommand::Rollout(command) => rollouts::run(command).await,
    }
}
