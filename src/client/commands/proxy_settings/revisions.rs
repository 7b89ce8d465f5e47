//! `proxy-settings list`, `get`, `create` and `activate`: a project's
//! revisions, one of them, a new one, and which is active.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use reqwest::Method;
use serde_json::{Value, json};

use super::diff::Diff;
use super::document::Document;
use crate::client::connection::{self, Connection};
use crate::client::http::{ApiClient, Request, v1};
use crate::client::listing::{ListKind, ListingArgs, Printer, list as list_pages};
use crate::client::names::{PROJECT_HELP, resolve_project};
use crate::client::object::{
    ObjectKind, ObjectShape, Precondition, Session, create as create_request, read_object,
};
use crate::client::revision_read::{Project, fetch, revision_of};
use crate::output::json::{Jq, Style, print_document};
use crate::output::table::{self, Column};

/// The revisions' table: their backends and routes counted.
const LISTING: ListKind = ListKind {
    columns: &[
        Column::kept("REVISION"),
        Column::kept("ACTIVE"),
        Column::dropped("BACKENDS", 2),
        Column::dropped("ROUTES", 1),
        Column::cut("DESCRIPTION", 20),
    ],
    row: |revision, _| {
        let cell = |field: &str| table::cell(&revision[field]);
        let count = |field: &str| revision[field].as_array().map_or(0, Vec::len).to_string();
        vec![
            cell("revision"),
            cell("is_active"),
            count("backends"),
            count("routes"),
            cell("description"),
        ]
    },
    schema: "ProxySettings",
    plural: "proxy settings revisions",
    names_organizations: false,
};

/// A revision does not name its project.
const REVISION: ObjectKind = ObjectKind {
    schema: "ProxySettings",
    plural: "proxy settings revisions",
    title: |revision| format!("revision {}", table::cell(&revision["revision"])),
};

#[derive(Args)]
pub struct List {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    #[command(flatten)]
    listing: ListingArgs,
}

/// `proxy-settings list`.
pub async fn list(args: List) -> anyhow::Result<()> {
    let (client, printing, paging) = args.listing.open(LISTING)?;
    let id = resolve_project(&client, &args.project).await?;
    let segments = v1(&["projects", &id, "proxy-settings"]);
    let printer = Printer::new(printing, LISTING);
    list_pages(&client, &segments, None, paging, printer).await
}

#[derive(Args)]
pub struct Get {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The revision's number.
    #[arg(value_name = "REVISION", value_parser = clap::value_parser!(u32).range(1..))]
    revision: u32,
    #[command(flatten)]
    document: Document,
    #[command(flatten)]
    connection: Connection,
}

/// `proxy-settings get`: the revision as the listing gives it.
pub async fn get(args: Get) -> anyhow::Result<()> {
    let jq = args.document.jq.as_deref().map(Jq::compile).transpose()?;
    let client = ApiClient::new(&connection::resolve(&args.connection)?)?;
    let project = Project::resolve(&client, args.project).await?;
    let revision = fetch(&client, &project, args.revision).await?;
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

#[derive(Args)]
pub struct Create {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The revision: a JSON object with `description`, `backends` and
    /// `routes` (`-`: stdin).
    #[arg(long, value_name = "FILE")]
    file: PathBuf,
    /// Store nothing: ask the API whether it takes the revision
    /// (`dry_run=true`) and print what it would change against the active
    /// revision, as `proxy-settings diff` prints (`--json`, `--jq`: the
    /// diff's JSON).
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct Activate {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The revision's number.
    #[arg(value_name = "REVISION", value_parser = clap::value_parser!(u32).range(1..))]
    revision: u32,
    #[command(flatten)]
    precondition: Precondition,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

pub async fn create(args: Create) -> anyhow::Result<()> {
    if args.dry_run {
        return create_dry_run(args).await;
    }
    let members = read_object(Some(&args.file))?;
    let session = Session::open(&args.connection, &args.shape, REVISION)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id, "proxy-settings"]);
    session
        .exchange(create_request(&path, members), "created")
        .await
}

/// `create --dry-run`: the API's checks (`dry_run=true`: a refusal is
/// the write's own, and nothing is stored), then the would-be revision
/// against the active one, printed by `proxy-settings diff`'s code (from
/// the empty revision when none is active, as the API compares). No
/// `Idempotency-Key`: the API refuses one on a dry run.
async fn create_dry_run(args: Create) -> anyhow::Result<()> {
    let (document, jq) = args.shape.document("--dry-run")?;
    let members = read_object(Some(&args.file))?;
    let client = ApiClient::new(&connection::resolve(&args.connection)?)?;
    let project = Project::resolve(&client, args.project).await?;
    let path = v1(&["projects", &project.id, "proxy-settings"]);
    let query = [("dry_run", "true".to_owned())];
    let request = Request::new(Method::POST, &path)
        .query(&query)
        .body(Value::Object(members));
    let answer: Value = serde_json::from_slice(&client.send(request).await?.body)
        .context("the server's answer is not JSON")?;
    let would_be = &answer["revision"];
    let active = match answer["active_revision"].as_u64() {
        Some(number) => {
            let number = u32::try_from(number).context("the active revision's number")?;
            Some(fetch(&client, &project, number).await?)
        }
        None => None,
    };
    let diff = Diff::between(&project.id, active.as_ref(), would_be)?;
    diff.print(&project.given, document, jq.as_ref())?;
    let number = revision_of(would_be).map_or_else(|| "?".to_owned(), |n| n.to_string());
    let activity = if would_be["is_active"] == true {
        "active: the project's first"
    } else {
        "inactive until activated"
    };
    eprintln!(
        "dry run: nothing was stored; the API takes it, and it would be revision {number} ({activity})"
    );
    Ok(())
}

/// Makes the revision the active one (`{"is_active": true}`); rolling
/// back is activating an older one.
pub async fn activate(args: Activate) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, REVISION)?;
    let id = session.project(&args.project).await?;
    let revision = args.revision.to_string();
    let path = v1(&["projects", &id, "proxy-settings", &revision]);
    let request = Request::new(Method::POST, &path)
        .body(json!({"is_active": true}))
        .header("If-Match", args.precondition.if_match);
    session.exchange(request, "activated").await
}
