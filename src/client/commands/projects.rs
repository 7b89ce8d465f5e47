//! `proxydeck projects`: list, create, show, change and delete projects.

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Map, Value};

use crate::client::connection::Connection;
use crate::client::http::{Request, v1};
use crate::client::listing::{ListKind, ListingArgs, Printer, list};
use crate::client::names::{PROJECT_HELP, resolve_organization};
use crate::client::object::{
    DELETED, Deletion, ObjectKind, ObjectShape, Precondition, Session, create, read_object,
    with_flags,
};
use crate::output::table::{self, Column};

#[derive(Subcommand)]
pub enum ProjectsCommand {
    /// List the projects of your organizations, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck login --url http://127.0.0.1:8080  # once, or set PROXYDECK_TOKEN\n  proxydeck projects list\n  proxydeck projects list --all --json id,slug\n  proxydeck projects list --all --jq '.[] | select(.type == \"mcp\") | .slug'\n  proxydeck projects list --organization-id 0190b7a4-0000-7000-8000-000000000001 -o ndjson"
    )]
    List(List),
    /// Create a project in one of your organizations (you need the admin
    /// or editor role there).
    #[command(
        after_help = concat!("Examples:\n  proxydeck projects create --org acme-corp --slug my-shop --description 'My shop'\n  proxydeck projects create --org 0190b7a4-0000-7000-8000-000000000001 --file project.json --json id", retried_create_note!())
    )]
    Create(Create),
    /// Show one project, with its ETag on a terminal (or --show-etag).
    #[command(
        after_help = "Examples:\n  proxydeck projects get acme-corp/acme-shop   # ORG/SLUG\n  proxydeck projects get acme-shop --jq .id    # a slug no other project of yours has, or an id"
    )]
    Get(Get),
    /// Change a project's members; the ones not given stay.
    #[command(
        after_help = "Examples:\n  proxydeck projects update acme-shop --description 'The shop'\n  proxydeck projects update acme-shop --file changes.json --if-match '\"ETAG\"'"
    )]
    Update(Update),
    /// Delete a project (asks first on a terminal; --yes does not ask).
    #[command(after_help = "Example:\n  proxydeck projects delete acme-corp/my-shop --yes")]
    Delete(Delete),
}

/// Runs a `projects` command.
pub async fn run(command: ProjectsCommand) -> anyhow::Result<()> {
    match command {
        ProjectsCommand::List(args) => list_projects(args).await,
        ProjectsCommand::Create(args) => create_project(args).await,
        ProjectsCommand::Get(args) => get(args).await,
        ProjectsCommand::Update(args) => update(args).await,
        ProjectsCommand::Delete(args) => delete(args).await,
    }
}

/// The projects' table: the organization by name, not its id.
const LISTING: ListKind = ListKind {
    columns: &[
        Column::kept("ID"),
        Column::cut("SLUG", 20),
        Column::dropped("TYPE", 1),
        Column::dropped("ORGANIZATION", 3),
        Column::dropped("CREATED (UTC)", 2),
    ],
    row: |project, context| {
        let cell = |field: &str| table::cell(&project[field]);
        let organization = cell("organization_id");
        vec![
            cell("id"),
            cell("slug"),
            cell("type"),
            context
                .organizations
                .get(&organization)
                .cloned()
                .unwrap_or(organization),
            table::when(&project["created_at"], "-"),
        ]
    },
    schema: "Project",
    plural: "projects",
    names_organizations: true,
};

const PROJECT: ObjectKind = ObjectKind {
    schema: "Project",
    plural: "projects",
    title: |project| format!("project {}", table::cell(&project["id"])),
};

#[derive(Args)]
pub struct List {
    /// Only this organization's projects.
    #[arg(long, value_name = "ORG_ID")]
    organization_id: Option<String>,
    #[command(flatten)]
    listing: ListingArgs,
}

/// `projects list`.
async fn list_projects(args: List) -> anyhow::Result<()> {
    let filter = args.organization_id.map(|id| ("organization_id", id));
    let (client, printing, paging) = args.listing.open(LISTING)?;
    let segments = v1(&["projects"]);
    let printer = Printer::new(printing, LISTING);
    list(&client, &segments, filter, paging, printer).await
}

/// A project's members: flags, and a JSON object from a file.
#[derive(Args)]
pub struct ProjectMembers {
    /// The project's slug: a-z, 0-9 and -, unique in its organization.
    #[arg(long)]
    slug: Option<String>,
    /// The project's description.
    #[arg(long)]
    description: Option<String>,
    /// Read the request's members from this JSON object (`-`: stdin);
    /// the flags given beside it win over its members.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
}

impl ProjectMembers {
    /// The file's members with the flags' set over them (and `more`).
    fn body(
        self,
        more: Option<(&'static str, Option<String>)>,
    ) -> anyhow::Result<Map<String, Value>> {
        let mut flags = vec![("slug", self.slug), ("description", self.description)];
        flags.extend(more);
        Ok(with_flags(read_object(self.file.as_ref())?, flags))
    }
}

#[derive(Args)]
pub struct Create {
    /// The organization the project belongs to: its slug or its id.
    #[arg(long = "org", value_name = "ORG")]
    organization: Option<String>,
    #[command(flatten)]
    members: ProjectMembers,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct Get {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct Update {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    #[command(flatten)]
    members: ProjectMembers,
    #[command(flatten)]
    precondition: Precondition,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct Delete {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    #[command(flatten)]
    deletion: Deletion,
}

async fn create_project(args: Create) -> anyhow::Result<()> {
    let mut members = args.members.body(None)?;
    let session = Session::open(&args.connection, &args.shape, PROJECT)?;
    if let Some(given) = &args.organization {
        let id = resolve_organization(&session.client, given).await?;
        members.insert("organization_id".to_owned(), Value::String(id));
    }
    let path = v1(&["projects"]);
    session.exchange(create(&path, members), "created").await
}

async fn get(args: Get) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, PROJECT)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id]);
    session.exchange(Request::new(Method::GET, &path), "").await
}

async fn update(args: Update) -> anyhow::Result<()> {
    let members = args.members.body(None)?;
    if members.is_empty() {
        bail!("nothing to change: give --slug, --description or --file");
    }
    let session = Session::open(&args.connection, &args.shape, PROJECT)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id]);
    let request = Request::new(Method::POST, &path)
        .body(Value::Object(members))
        .header("If-Match", args.precondition.if_match);
    session.exchange(request, "updated").await
}

async fn delete(args: Delete) -> anyhow::Result<()> {
    let deletion = args.deletion;
    deletion.confirm(&format!("delete project {}", args.project))?;
    let session = Session::open(&deletion.connection, &deletion.shape, DELETED)?;
    let id = session.project(&args.project).await?;
    deletion.send(session, &v1(&["projects", &id])).await
}
