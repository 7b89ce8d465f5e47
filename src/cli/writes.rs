//! The terminal client's single-object commands: `projects
//! create|get|update|delete`, `tokens create|delete`, `proxy-settings
//! create|activate`. Each sends one request (tried again on 429/503 with
//! the same headers, an `Idempotency-Key` included) and prints the object
//! the API answered: as text on a terminal, as the API wrote it when piped
//! or with `--json [FIELDS]`, through `--jq`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use reqwest::Method;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::api::{Answer, ApiClient, Request, v1};
use super::connection::{self, Connection};
use super::duration::parse_duration;
use super::names::{PROJECT_HELP, resolve_organization, resolve_project};
use super::output::{Jq, Json, Style, printable, schema_fields};

/// How the answered object is shown.
#[derive(Args)]
pub struct ObjectShape {
    /// Print the object as JSON: every member as the API wrote it, or only
    /// FIELDS (comma-separated). The default when stdout is not a terminal.
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "FIELDS")]
    json: Option<String>,
    /// Filter the object with a jq program, such as '.id' (strings print
    /// without quotes, as with jq -r).
    #[arg(long, value_name = "EXPR")]
    jq: Option<String>,
    /// Print the object's ETag (its version, for --if-match) on stderr.
    /// The text shown on a terminal has it anyway.
    #[arg(long)]
    show_etag: bool,
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
pub struct ProjectCreate {
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
pub struct ProjectGet {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct ProjectUpdate {
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
pub struct Precondition {
    /// Change it only if it is still at this version (an ETag that get,
    /// create or update showed); else nothing changes and the command fails.
    #[arg(long, value_name = "ETAG")]
    if_match: Option<String>,
}

#[derive(Args)]
pub struct ProjectDelete {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    #[command(flatten)]
    deletion: Deletion,
}

#[derive(Args)]
pub struct TokenDelete {
    /// The token's id.
    #[arg(value_name = "TOKEN_ID")]
    id: String,
    #[command(flatten)]
    deletion: Deletion,
}

#[derive(Args)]
pub struct EdgeDelete {
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

/// What a delete takes besides what it deletes.
#[derive(Args)]
pub struct Deletion {
    /// Do not ask. Without it the command asks on a terminal, and refuses
    /// when stdin is not one.
    #[arg(long, short)]
    yes: bool,
    #[command(flatten)]
    precondition: Precondition,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct TokenCreate {
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
pub struct RevisionCreate {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The revision: a JSON object with `description`, `backends` and
    /// `routes` (`-`: stdin).
    #[arg(long, value_name = "FILE")]
    file: PathBuf,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct RevisionActivate {
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

/// What the command answers with.
#[derive(Clone, Copy)]
enum Kind {
    Project,
    ApiToken,
    ProxySettings,
    Deleted,
}

impl Kind {
    /// The OpenAPI schema whose members `--json` may name.
    fn schema(self) -> &'static str {
        match self {
            Self::Project => "Project",
            Self::ApiToken => "ApiToken",
            Self::ProxySettings => "ProxySettings",
            Self::Deleted => "DeletedProject",
        }
    }

    /// What `object` is, for people.
    fn title(self, object: &Value) -> String {
        let id = shown(&object["id"]);
        match self {
            Self::Project => format!("project {id}"),
            Self::ApiToken => format!("API token {id}"),
            // A revision does not name its project.
            Self::ProxySettings => format!("revision {}", shown(&object["revision"])),
            Self::Deleted => {
                let what = match object["object"].as_str() {
                    Some("api_token") => "API token",
                    // An edge's report is named by the edge's name.
                    Some("edge") => return format!("edge {}", shown(&object["name"])),
                    Some(other) => other,
                    None => "object",
                };
                format!("{what} {id}")
            }
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Self::Project => "projects",
            Self::ApiToken => "API tokens",
            Self::ProxySettings => "proxy settings revisions",
            Self::Deleted => "deletions",
        }
    }
}

/// How the object will be printed, settled before anything is sent.
enum Printing {
    Text,
    Json(Json),
}

impl ObjectShape {
    fn printing(&self, kind: Kind) -> anyhow::Result<Printing> {
        if self.json.is_none() && self.jq.is_none() && std::io::stdout().is_terminal() {
            return Ok(Printing::Text);
        }
        let fields = match self.json.as_deref() {
            Some(given) => Json::fields(given, &schema_fields(kind.schema())?, kind.plural())?,
            None => None,
        };
        Ok(Printing::Json(Json {
            fields,
            jq: self.jq.as_deref().map(Jq::compile).transpose()?,
            style: Style::stdout(),
        }))
    }
}

/// A command's client, and how it prints the answer (settled before
/// anything is sent).
struct Session {
    client: ApiClient,
    printing: Printing,
    kind: Kind,
    show_etag: bool,
}

impl Session {
    fn open(connection: &Connection, shape: &ObjectShape, kind: Kind) -> anyhow::Result<Self> {
        let printing = shape.printing(kind)?;
        let client = ApiClient::new(&connection::resolve(connection)?)?;
        Ok(Self {
            client,
            printing,
            kind,
            show_etag: shape.show_etag,
        })
    }

    /// The id of the project `given` names ([`resolve_project`]).
    async fn project(&self, given: &str) -> anyhow::Result<String> {
        resolve_project(&self.client, given).await
    }

    /// Sends `request` and prints the answer; on a terminal the text
    /// starts with `done` and what the object is.
    async fn exchange(self, request: Request<'_>, done: &str) -> anyhow::Result<()> {
        let Answer { body, etag } = self.client.send(request).await?;
        let object: Value =
            serde_json::from_slice(&body).context("the server's answer is not a JSON object")?;
        let mut stdout = std::io::stdout().lock();
        match self.printing {
            Printing::Text => {
                let title = format!("{done} {}", printable(&self.kind.title(&object)));
                writeln!(stdout, "{}", title.trim_start())?;
                write!(stdout, "{}", text(&object, etag.as_deref()))?;
            }
            Printing::Json(json) => {
                let text =
                    std::str::from_utf8(&body).context("the server's answer is not UTF-8")?;
                json.write_one(text, &mut stdout)?;
            }
        }
        stdout.flush()?;
        if self.show_etag
            && let Some(etag) = &etag
        {
            eprintln!("{}", printable(etag));
        }
        Ok(())
    }
}

/// The object's members, one a line and aligned, for people: its id
/// first, the rest by name; strings bare, `-` for null, other values as
/// compact JSON; then its ETag. All of it [`printable`].
fn text(object: &Value, etag: Option<&str>) -> String {
    let mut lines: Vec<(String, String)> = object
        .as_object()
        .map(|members| {
            members
                .iter()
                .filter(|(name, _)| name.as_str() != "object")
                .map(|(name, value)| {
                    let shown = match value {
                        Value::Null => "-".to_owned(),
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    (printable(name).into_owned(), printable(&shown).into_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    // Stable: the rest stay in name order.
    lines.sort_by_key(|(name, _)| name != "id");
    lines.extend(etag.map(|etag| ("etag".to_owned(), printable(etag).into_owned())));
    let width = lines.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    lines
        .iter()
        .map(|(name, value)| format!("  {name:width$}  {value}\n"))
        .collect()
}

/// The JSON object of `--file` (`-`: stdin), or an empty one.
fn read_object(file: Option<&PathBuf>) -> anyhow::Result<Map<String, Value>> {
    let Some(path) = file else {
        return Ok(Map::new());
    };
    let (text, name) = if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("cannot read stdin")?;
        (text, "stdin".to_owned())
    } else {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        (text, path.display().to_string())
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(members)) => Ok(members),
        Ok(_) => bail!("{name} must hold one JSON object"),
        Err(error) => bail!("{name} is not JSON: {error}"),
    }
}

/// `members` with each flag that was given set.
fn with_flags(
    mut members: Map<String, Value>,
    flags: impl IntoIterator<Item = (&'static str, Option<String>)>,
) -> Map<String, Value> {
    for (name, value) in flags {
        if let Some(value) = value {
            members.insert(name.to_owned(), Value::String(value));
        }
    }
    members
}

/// A create: POST `members` to `path` with a fresh `Idempotency-Key`, one
/// per run. The command's retries send it again, so the server creates
/// once whatever happens to its answers.
fn create(path: &[String], members: Map<String, Value>) -> Request<'_> {
    let key = uuid::Uuid::new_v4().to_string();
    Request::new(Method::POST, path)
        .body(Value::Object(members))
        .header("Idempotency-Key", Some(key))
}

pub async fn project_create(args: ProjectCreate) -> anyhow::Result<()> {
    let mut members = args.members.body(None)?;
    let session = Session::open(&args.connection, &args.shape, Kind::Project)?;
    if let Some(given) = &args.organization {
        let id = resolve_organization(&session.client, given).await?;
        members.insert("organization_id".to_owned(), Value::String(id));
    }
    let path = v1(&["projects"]);
    session.exchange(create(&path, members), "created").await
}

pub async fn project_get(args: ProjectGet) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, Kind::Project)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id]);
    session.exchange(Request::new(Method::GET, &path), "").await
}

pub async fn project_update(args: ProjectUpdate) -> anyhow::Result<()> {
    let members = args.members.body(None)?;
    if members.is_empty() {
        bail!("nothing to change: give --slug, --description or --file");
    }
    let session = Session::open(&args.connection, &args.shape, Kind::Project)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id]);
    let request = Request::new(Method::POST, &path)
        .body(Value::Object(members))
        .header("If-Match", args.precondition.if_match);
    session.exchange(request, "updated").await
}

pub async fn project_delete(args: ProjectDelete) -> anyhow::Result<()> {
    let deletion = args.deletion;
    deletion.confirm(&format!("delete project {}", args.project))?;
    let session = Session::open(&deletion.connection, &deletion.shape, Kind::Deleted)?;
    let id = session.project(&args.project).await?;
    deletion.send(session, &v1(&["projects", &id])).await
}

pub async fn token_delete(args: TokenDelete) -> anyhow::Result<()> {
    let deletion = args.deletion;
    deletion.confirm(&format!("delete API token {}", args.id))?;
    let session = Session::open(&deletion.connection, &deletion.shape, Kind::Deleted)?;
    deletion.send(session, &v1(&["api_tokens", &args.id])).await
}

/// Removes an edge's report (deleteEdge): one the edges no longer run.
pub async fn edge_delete(args: EdgeDelete) -> anyhow::Result<()> {
    if !args.yes {
        confirm(&format!(
            "remove the report of edge {} from project {}",
            args.name, args.project
        ))?;
    }
    let session = Session::open(&args.connection, &args.shape, Kind::Deleted)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id, "edges", &args.name]);
    session
        .exchange(Request::new(Method::DELETE, &path), "deleted")
        .await
}

impl Deletion {
    /// Asks before `action` unless `--yes` was given.
    fn confirm(&self, action: &str) -> anyhow::Result<()> {
        if self.yes { Ok(()) } else { confirm(action) }
    }

    /// Deletes what is at `path`.
    async fn send(self, session: Session, path: &[String]) -> anyhow::Result<()> {
        let request =
            Request::new(Method::DELETE, path).header("If-Match", self.precondition.if_match);
        session.exchange(request, "deleted").await
    }
}

/// Asks on the terminal whether to `action`; an answer other than `y` or
/// `yes` stops the command. Without a terminal on stdin there is no one
/// to ask: `--yes` is needed.
fn confirm(action: &str) -> anyhow::Result<()> {
    if !std::io::stdin().is_terminal() {
        bail!("stdin is not a terminal, so there is no one to confirm: pass --yes to {action}");
    }
    eprint!("{action}? It cannot be undone. [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(anyhow!("not confirmed: nothing was deleted")),
    }
}

pub async fn token_create(args: TokenCreate) -> anyhow::Result<()> {
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
    Session::open(&args.connection, &args.shape, Kind::ApiToken)?
        .exchange(request, "created")
        .await?;
    eprintln!("The secret (`token`) is shown this once and never again: store it now.");
    Ok(())
}

pub async fn revision_create(args: RevisionCreate) -> anyhow::Result<()> {
    let members = read_object(Some(&args.file))?;
    let session = Session::open(&args.connection, &args.shape, Kind::ProxySettings)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id, "proxy-settings"]);
    session.exchange(create(&path, members), "created").await
}

/// Makes the revision the active one (`{"is_active": true}`); rolling
/// back is activating an older one.
pub async fn revision_activate(args: RevisionActivate) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, Kind::ProxySettings)?;
    let id = session.project(&args.project).await?;
    let revision = args.revision.to_string();
    let path = v1(&["projects", &id, "proxy-settings", &revision]);
    let request = Request::new(Method::POST, &path)
        .body(json!({"is_active": true}))
        .header("If-Match", args.precondition.if_match);
    session.exchange(request, "activated").await
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_aligns_members_and_ends_with_the_etag() {
        let object = json!({"object": "project", "id": "p1", "slug": "shop",
                            "description": null, "n": [1, 2]});
        assert_eq!(
            text(&object, Some("\"v1\"")),
            "  id           p1\n  description  -\n  n            [1,2]\n  slug         shop\n  etag         \"v1\"\n"
        );
    }
}
