//! What the terminal client's single-object commands share (`projects
//! create|get|update|delete`, `tokens create|delete`, `proxy-settings
//! create|activate|delete-edge`): each sends one request (tried again on
//! 429/503 with the same headers, an `Idempotency-Key` included) and
//! prints the object the API answered: as text on a terminal, as the API
//! wrote it when piped or with `--json [FIELDS]`, through `--jq`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use reqwest::Method;
use serde_json::{Map, Value};

use super::connection::{self, Connection};
use super::http::{Answer, ApiClient, Request};
use super::names::resolve_project;
use crate::output::json::{Jq, Json, Style, schema_fields};
use crate::output::printable;
use crate::output::table;

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

#[derive(Args)]
pub struct Precondition {
    /// Change it only if it is still at this version (an ETag that get,
    /// create or update showed); else nothing changes and the command fails.
    #[arg(long, value_name = "ETAG")]
    pub if_match: Option<String>,
}

/// What a delete takes besides what it deletes.
#[derive(Args)]
pub struct Deletion {
    /// Do not ask. Without it the command asks on a terminal, and refuses
    /// when stdin is not one.
    #[arg(long, short)]
    pub yes: bool,
    #[command(flatten)]
    pub precondition: Precondition,
    #[command(flatten)]
    pub shape: ObjectShape,
    #[command(flatten)]
    pub connection: Connection,
}

/// What the command answers with: each command group declares its own
/// beside its commands (`projects::PROJECT`...); a deletion's answer is
/// [`DELETED`]'s, whatever it deleted.
#[derive(Clone, Copy)]
pub struct ObjectKind {
    /// The OpenAPI schema whose members `--json` may name.
    pub schema: &'static str,
    /// What the objects are, for `--json`'s errors.
    pub plural: &'static str,
    /// What one object is, for people ("project p1").
    pub title: fn(&Value) -> String,
}

/// A deletion's answer (`{"object": KIND, "id": ..., "deleted": true}`).
pub const DELETED: ObjectKind = ObjectKind {
    schema: "DeletedProject",
    plural: "deletions",
    title: |deleted| {
        let what = match deleted["object"].as_str() {
            Some("api_token") => "API token",
            // An edge's report is named by the edge's name.
            Some("edge") => return format!("edge {}", table::cell(&deleted["name"])),
            Some(other) => other,
            None => "object",
        };
        format!("{what} {}", table::cell(&deleted["id"]))
    },
};

/// How the object will be printed, settled before anything is sent.
enum Printing {
    Text,
    Json(Json),
}

impl ObjectShape {
    /// For a command that prints a document of its own instead of the
    /// object (`proxy-settings create --dry-run` prints a diff): whether
    /// `--json` was given, and `--jq`'s program. `--json FIELDS` and
    /// `--show-etag` name the object's members and version, which `what`
    /// has not: refused.
    pub fn document(&self, what: &str) -> anyhow::Result<(bool, Option<Jq>)> {
        if self
            .json
            .as_deref()
            .is_some_and(|fields| !fields.is_empty())
        {
            bail!("--json FIELDS does not go with {what}: use --json alone, or --jq");
        }
        if self.show_etag {
            bail!("--show-etag does not go with {what}: nothing is stored, so there is no version");
        }
        let jq = self.jq.as_deref().map(Jq::compile).transpose()?;
        Ok((self.json.is_some() || jq.is_some(), jq))
    }

    /// For a command that prints the object again and again (`rollout
    /// status --watch`): `None` for text on a terminal, else how each
    /// JSON line is written.
    pub fn lines(&self, kind: ObjectKind) -> anyhow::Result<Option<Json>> {
        if self.show_etag {
            bail!("--show-etag does not go with --watch: the object changes as it is watched");
        }
        Ok(match self.printing(kind)? {
            Printing::Text => None,
            Printing::Json(json) => Some(json),
        })
    }

    fn printing(&self, kind: ObjectKind) -> anyhow::Result<Printing> {
        if self.json.is_none() && self.jq.is_none() && std::io::stdout().is_terminal() {
            return Ok(Printing::Text);
        }
        let fields = match self.json.as_deref() {
            Some(given) => Json::fields(given, &schema_fields(kind.schema)?, kind.plural)?,
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
pub struct Session {
    pub client: ApiClient,
    printing: Printing,
    kind: ObjectKind,
    show_etag: bool,
}

impl Session {
    pub fn open(
        connection: &Connection,
        shape: &ObjectShape,
        kind: ObjectKind,
    ) -> anyhow::Result<Self> {
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
    pub async fn project(&self, given: &str) -> anyhow::Result<String> {
        resolve_project(&self.client, given).await
    }

    /// Sends `request` and prints the answer; on a terminal the text
    /// starts with `done` and what the object is, then its members.
    pub async fn exchange(self, request: Request<'_>, done: &str) -> anyhow::Result<()> {
        let title = self.kind.title;
        self.exchange_told(request, |object, etag| {
            let title = format!("{done} {}", printable(&title(object)));
            format!("{}\n{}", title.trim_start(), text(object, etag))
        })
        .await
        .map(drop)
    }

    /// Sends `request` and prints the answer: on a terminal the text
    /// `tell` makes of the object and its ETag (the caller makes it
    /// [`printable`]), else the JSON the shape asks for. Answers the object.
    pub async fn exchange_told(
        self,
        request: Request<'_>,
        tell: impl FnOnce(&Value, Option<&str>) -> String,
    ) -> anyhow::Result<Value> {
        let Answer { body, etag } = self.client.send(request).await?;
        let object: Value =
            serde_json::from_slice(&body).context("the server's answer is not a JSON object")?;
        let mut stdout = std::io::stdout().lock();
        match self.printing {
            Printing::Text => write!(stdout, "{}", tell(&object, etag.as_deref()))?,
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
        Ok(object)
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
pub fn read_object(file: Option<&PathBuf>) -> anyhow::Result<Map<String, Value>> {
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
pub fn with_flags(
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
pub fn create(path: &[String], members: Map<String, Value>) -> Request<'_> {
    let key = uuid::Uuid::new_v4().to_string();
    Request::new(Method::POST, path)
        .body(Value::Object(members))
        .header("Idempotency-Key", Some(key))
}

impl Deletion {
    /// Asks before `action` unless `--yes` was given.
    pub fn confirm(&self, action: &str) -> anyhow::Result<()> {
        if self.yes { Ok(()) } else { confirm(action) }
    }

    /// Deletes what is at `path`.
    pub async fn send(self, session: Session, path: &[String]) -> anyhow::Result<()> {
        let request =
            Request::new(Method::DELETE, path).header("If-Match", self.precondition.if_match);
        session.exchange(request, "deleted").await
    }
}

/// Asks on the terminal whether to `action`; an answer other than `y` or
/// `yes` stops the command. Without a terminal on stdin there is no one
/// to ask: `--yes` is needed.
pub fn confirm(action: &str) -> anyhow::Result<()> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

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
