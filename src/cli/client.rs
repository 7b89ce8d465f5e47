//! The terminal client's commands under `proxydeck projects`, `tokens` and
//! `proxy-settings`, which call a running proxydeck over HTTP: their help,
//! and which command runs each. The commands themselves stand below:
//! the listings, the single-object writes and the revisions, all on the
//! HTTP client of `api`. A project is named as `names` reads it: its id,
//! `ORG/SLUG` or a slug of its own.

use clap::Subcommand;

use super::{edges, listings, revisions, writes};

/// The note ending the help of each create that sends an Idempotency-Key
/// (a macro so that `concat!` can put it after each command's examples).
macro_rules! retried_create_note {
    () => {
        "\n\nIt sends a fresh Idempotency-Key, kept across the client's own retries: a retried create never creates twice."
    };
}

#[derive(Subcommand)]
pub enum ProjectsCommand {
    /// List the projects of your organizations, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck login --url http://127.0.0.1:8080  # once, or set PROXYDECK_TOKEN\n  proxydeck projects list\n  proxydeck projects list --all --json id,slug\n  proxydeck projects list --all --jq '.[] | select(.type == \"mcp\") | .slug'\n  proxydeck projects list --organization-id 0190b7a4-0000-7000-8000-000000000001 -o ndjson"
    )]
    List(listings::ProjectsList),
    /// Create a project in one of your organizations (you need the admin
    /// or editor role there).
    #[command(
        after_help = concat!("Examples:\n  proxydeck projects create --org acme-corp --slug my-shop --description 'My shop'\n  proxydeck projects create --org 0190b7a4-0000-7000-8000-000000000001 --file project.json --json id", retried_create_note!())
    )]
    Create(writes::ProjectCreate),
    /// Show one project, with its ETag on a terminal (or --show-etag).
    #[command(
        after_help = "Examples:\n  proxydeck projects get acme-corp/acme-shop   # ORG/SLUG\n  proxydeck projects get acme-shop --jq .id    # a slug no other project of yours has, or an id"
    )]
    Get(writes::ProjectGet),
    /// Change a project's members; the ones not given stay.
    #[command(
        after_help = "Examples:\n  proxydeck projects update acme-shop --description 'The shop'\n  proxydeck projects update acme-shop --file changes.json --if-match '\"ETAG\"'"
    )]
    Update(writes::ProjectUpdate),
    /// Delete a project (asks first on a terminal; --yes does not ask).
    #[command(after_help = "Example:\n  proxydeck projects delete acme-corp/my-shop --yes")]
    Delete(writes::ProjectDelete),
}

#[derive(Subcommand)]
pub enum TokensCommand {
    /// List your own API tokens (never their secrets), newest first.
    #[command(
        after_help = "Examples:\n  proxydeck tokens list\n  proxydeck tokens list --name demo --json id,name,expires_at"
    )]
    List(listings::TokensList),
    /// Create an API token of your own. Its secret is printed this once
    /// (`token` in the JSON): store it now.
    #[command(
        after_help = "Examples:\n  proxydeck tokens create --name ci --expires-in 90d\n  proxydeck tokens create --name deploy --expires-at 2027-01-01T00:00:00Z --jq .token"
    )]
    Create(writes::TokenCreate),
    /// Delete one of your API tokens: it stops working (asks first on a
    /// terminal; --yes does not ask).
    #[command(after_help = "Example:\n  proxydeck tokens delete TOKEN_ID --yes")]
    Delete(writes::TokenDelete),
}

#[derive(Subcommand)]
pub enum ProxySettingsCommand {
    /// List a project's proxy settings revisions, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings list acme-corp/acme-shop\n  proxydeck proxy-settings list acme-shop --order-direction asc --all\n  proxydeck proxy-settings list acme-shop --jq '.[] | select(.is_active) | .revision'"
    )]
    List(listings::ProxySettingsList),
    /// Show one revision of a project's proxy settings.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings get acme-shop 2\n  proxydeck proxy-settings get acme-shop 2 --jq '.backends[].address'"
    )]
    Get(revisions::GetArgs),
    /// Show what changed from revision A to revision B of a project's
    /// proxy settings: description, which is active, backends (paired by
    /// name) and routes (paired by path and regex; the order alone is no
    /// change). Exits 0 whatever the differences.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings diff acme-shop 1 3\n  proxydeck proxy-settings diff acme-shop 1 3 --json\n  proxydeck proxy-settings diff acme-shop 1 3 --jq '.backends[] | select(.change == \"changed\") | .name'"
    )]
    Diff(revisions::DiffArgs),
    /// Create a new revision of a project's proxy settings from a JSON file
    /// (`description`, `backends`, `routes`). A project's first revision is
    /// active; later ones are not until activated.
    #[command(
        after_help = concat!("Examples:\n  proxydeck proxy-settings create acme-shop --file revision.json\n  cat revision.json | proxydeck proxy-settings create acme-shop --file - --jq .revision", retried_create_note!())
    )]
    Create(writes::RevisionCreate),
    /// Make a revision the active one (the one active before stops being
    /// so). To roll back, activate an older revision.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings activate acme-shop 3\n  proxydeck proxy-settings diff acme-shop 3 2 && proxydeck proxy-settings activate acme-shop 2   # roll back to 2"
    )]
    Activate(writes::RevisionActivate),
    /// Who runs which revision: each edge's last report (`proxydeck
    /// follow --name` reports), every page of them. A table under a
    /// summary line on a terminal; the JSON array when piped.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings edges acme-corp/acme-shop\n  proxydeck proxy-settings edges acme-shop -o table | head -1   # the summary line\n  proxydeck proxy-settings edges acme-shop --jq '.[] | select(.status == \"failed\") | .error'"
    )]
    Edges(edges::EdgesArgs),
    /// Remove an edge's report from a project (an edge that no longer
    /// runs): needs the right to change the project. An edge that reports
    /// again comes back.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings delete-edge acme-shop edge-7.eu --yes"
    )]
    DeleteEdge(writes::EdgeDelete),
}

/// Runs a `projects` command.
pub async fn projects(command: ProjectsCommand) -> anyhow::Result<()> {
    match command {
        ProjectsCommand::List(args) => listings::projects(args).await,
        ProjectsCommand::Create(args) => writes::project_create(args).await,
        ProjectsCommand::Get(args) => writes::project_get(args).await,
        ProjectsCommand::Update(args) => writes::project_update(args).await,
        ProjectsCommand::Delete(args) => writes::project_delete(args).await,
    }
}

/// Runs a `tokens` command.
pub async fn tokens(command: TokensCommand) -> anyhow::Result<()> {
    match command {
        TokensCommand::List(args) => listings::tokens(args).await,
        TokensCommand::Create(args) => writes::token_create(args).await,
        TokensCommand::Delete(args) => writes::token_delete(args).await,
    }
}

/// Runs a `proxy-settings` command.
pub async fn proxy_settings(command: ProxySettingsCommand) -> anyhow::Result<()> {
    match command {
        ProxySettingsCommand::List(args) => listings::proxy_settings(args).await,
        ProxySettingsCommand::Get(args) => revisions::get(args).await,
        ProxySettingsCommand::Diff(args) => revisions::diff(args).await,
        ProxySettingsCommand::Create(args) => writes::revision_create(args).await,
        ProxySettingsCommand::Activate(args) => writes::revision_activate(args).await,
        ProxySettingsCommand::Edges(args) => edges::edges(args).await,
        ProxySettingsCommand::DeleteEdge(args) => writes::edge_delete(args).await,
    }
}
