//! `proxydeck tokens`: list, create and delete your API tokens.

use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::client::connection::Connection;
use crate::client::http::{Request, v1};
use crate::client::listing::{ListKind, ListingArgs, Printer, list};
use crate::client::object::{DELETED, Deletion, ObjectKind, ObjectShape, Session};
use crate::output::duration::parse_duration;
use crate::output::table::{self, Column};

#[derive(Subcommand)]
pub enum TokensCommand {
    /// List your own API tokens (never their secrets), newest first.
    #[command(
        after_help = "Examples:\n  proxydeck tokens list\n  proxydeck tokens list --name demo --json id,name,expires_at"
    )]
    List(List),
    /// Create an API token of your own. Its secret is printed this once
    /// (`token` in the JSON): store it now.
    #[command(
        after_help = "Examples:\n  proxydeck tokens create --name ci --expires-in 90d\n  proxydeck tokens create --name deploy --expires-at 2027-01-01T00:00:00Z --jq .token"
    )]
    Create(Create),
    /// Delete one of your API tokens: it stops working (asks first on a
    /// terminal; --yes does not ask).
    #[command(after_help = "Example:\n  proxydeck tokens delete TOKEN_ID --yes")]
    Delete(Delete),
}

/// Runs a `tokens` command.
pub async fn run(command: TokensCommand) -> anyhow::Result<()> {
    match command {
        TokensCommand::List(args) => list_tokens(args).await,
        TokensCommand::Create(args) => create(args).await,
        TokensCommand::Delete(args) => delete(args).await,
    }
}

/// The tokens' table: an expired token says so.
const LISTING: ListKind = ListKind {
    columns: &[
        Column::kept("ID"),
        Column::cut("NAME", 20),
        Column::dropped("TOKEN", 2),
        Column::dropped("LAST USED (UTC)", 3),
        Column::dropped("EXPIRES (UTC)", 4),
        Column::dropped("CREATED (UTC)", 1),
    ],
    row: |token, context| {
        let cell = |field: &str| table::cell(&token[field]);
        let expired = token["expires_at"]
            .as_str()
            .and_then(|text| OffsetDateTime::parse(text, &Rfc3339).ok())
            .is_some_and(|at| at <= context.now);
        let mut expires = table::when(&token["expires_at"], "never");
        if expired {
            expires.push_str(" (expired)");
        }
        vec![
            cell("id"),
            cell("name"),
            cell("token"),
            table::when(&token["last_used_at"], "never"),
            expires,
            table::when(&token["created_at"], "-"),
        ]
    },
    schema: "ApiToken",
    plural: "API tokens",
    names_organizations: false,
};

const API_TOKEN: ObjectKind = ObjectKind {
    schema: "ApiToken",
    plural: "API tokens",
    title: |token| format!("API token {}", table::cell(&token["id"])),
};

#[derive(Args)]
pub struct List {
    /// Only tokens with exactly this name.
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    listing: ListingArgs,
}

/// `tokens list`.
async fn list_tokens(args: List) -> anyhow::Result<()> {
    let filter = args.name.map(|name| ("name", name));
    let (client, printing, paging) = args.listing.open(LISTING)?;
    let segments = v1(&["api_tokens"]);
    let printer = Printer::new(printing, LISTING);
    list(&client, &segments, filter, paging, printer).await
}

#[derive(Args)]
pub struct Create {
    /// The token's name (1 to 200 characters).
    #[arg(long)]
    name: String,
    /// When it stops working: an RFC 3339 time, such as 2027-01-01T00:00:00Z.
    #[arg(long, value_name = "TIME", conflicts_with = "expires_in")]
    expires_at: Option<String>,
    /// When it stops working, from now: such as 90d or 12h.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    expires_in: Option<Duration>,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct Delete {
    /// The token's id.
    #[arg(value_name = "TOKEN_ID")]
    id: String,
    #[command(flatten)]
    deletion: Deletion,
}

async fn create(args: Create) -> anyhow::Result<()> {
    let expires_at = match (args.expires_at, args.expires_in) {
        (Some(at), _) => Some(at),
        (None, Some(lifetime)) => {
            let at = time::Duration::try_from(lifetime)
                .ok()
                .and_then(|lifetime| OffsetDateTime::now_utc().checked_add(lifetime))
                .context("--expires-in is too long")?;
            Some(at.format(&Rfc3339)?)
        }
        (None, None) => None,
    };
    let mut body = json!({"name": args.name});
    if let Some(at) = expires_at {
        body["expires_at"] = Value::String(at);
    }
    let path = v1(&["api_tokens"]);
    // No Idempotency-Key: the API refuses it here (the answer holds a
    // secret it never stores, so it cannot replay it).
    let request = Request::new(Method::POST, &path).body(body);
    Session::open(&args.connection, &args.shape, API_TOKEN)?
        .exchange(request, "created")
        .await?;
    eprintln!("The secret (`token`) is shown this once and never again: store it now.");
    Ok(())
}

async fn delete(args: Delete) -> anyhow::Result<()> {
    let deletion = args.deletion;
    deletion.confirm(&format!("delete API token {}", args.id))?;
    let session = Session::open(&deletion.connection, &deletion.shape, DELETED)?;
    deletion.send(session, &v1(&["api_tokens", &args.id])).await
}
