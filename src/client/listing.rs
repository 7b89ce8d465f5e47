//! What the API's listings share (`projects list`, `tokens list`,
//! `proxy-settings list`, every page of `proxy-settings edges` and of
//! `domains list`): read
//! from a running proxydeck over HTTP and shown as a table, JSON or
//! NDJSON; one page, or every page with `--all`. Objects are printed
//! exactly as the server sent them, unless `--json FIELDS` or `--jq` asks
//! for less.

use std::io::{IsTerminal, Write};

use anyhow::bail;
use clap::{Args, ValueEnum};
use serde_json::Value;
use serde_json::value::RawValue;
use time::OffsetDateTime;

use super::connection::{self, Connection};
use super::http::{ApiClient, Request, v1};
use super::names::{PROJECT_HELP, resolve_project};
use crate::domain::pagination::MAX_LIMIT;
use crate::output::json::{Jq, Json, Style, schema_fields, write_json_line};
use crate::output::printable;
use crate::output::table::{self, Column};

#[derive(Args, Debug)]
pub struct Paging {
    /// Items per page, 1 to 100 (the API's default when omitted; 100 with --all).
    #[arg(long, value_name = "N")]
    limit: Option<u32>,
    /// Start after this item: a page's last key (for tokens, the last id).
    #[arg(long, value_name = "KEY")]
    start_key: Option<String>,
    /// asc (oldest first) or desc (newest first, the default).
    #[arg(long, value_enum, ignore_case = true, value_name = "DIRECTION")]
    order_direction: Option<OrderDirection>,
    /// Follow the pages to the end of the list (waiting as the server asks
    /// when it answers 429 or 503).
    #[arg(long)]
    all: bool,
}

/// How the items are shown.
#[derive(Args)]
pub struct Shape {
    /// Print one JSON array: every field, or only FIELDS (comma-separated,
    /// such as --json id,slug). The default when stdout is not a terminal.
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "FIELDS")]
    json: Option<String>,
    /// Filter the JSON array with a jq program, such as '.[].slug'
    /// (strings print without quotes, as with jq -r).
    #[arg(long, value_name = "EXPR")]
    jq: Option<String>,
    /// table (the default on a terminal; fitted to its width or COLUMNS)
    /// or ndjson (one object per line, printed page by page).
    #[arg(long, short, value_enum, value_name = "FORMAT")]
    output: Option<Format>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OrderDirection {
    Asc,
    Desc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Table,
    Ndjson,
    /// Refused with a pointer to --json: one switch for JSON.
    #[value(hide = true)]
    Json,
}

/// What every listing takes: which pages, how they are shown, and from
/// where.
#[derive(Args)]
pub struct ListingArgs {
    #[command(flatten)]
    paging: Paging,
    #[command(flatten)]
    shape: Shape,
    #[command(flatten)]
    connection: Connection,
}

/// What differs between the listings: each command group declares its
/// own beside its commands (`projects::LISTING`, `domains::LISTING`...),
/// so that a new listing adds a value there and nothing here.
#[derive(Clone, Copy)]
pub struct ListKind {
    /// The columns of the table; when the terminal is narrow the ranked
    /// ones go, lowest first.
    pub columns: &'static [Column],
    /// One item's cells, in the columns' order.
    pub row: fn(&Value, &RowContext) -> Vec<String>,
    /// The OpenAPI schema of the items, whose members `--json` may name.
    pub schema: &'static str,
    /// The items, in words.
    pub plural: &'static str,
    /// The items name an organization (`organization_id`), which the
    /// table shows by its name: one more request per organization.
    pub names_organizations: bool,
}

/// What a row may show besides its item.
pub struct RowContext {
    /// The time the table is printed (what has expired, how long ago).
    pub now: OffsetDateTime,
    /// The organizations' names by id, when the kind names organizations.
    pub organizations: OrganizationNames,
}

/// How the items are printed.
pub enum Printing {
    Table,
    Json(Json),
    Ndjson,
}

impl Shape {
    /// What the flags ask for; a pair that cannot go together is refused.
    pub fn printing(self, kind: ListKind) -> anyhow::Result<Printing> {
        let json = self.json.is_some() || self.jq.is_some();
        match self.output {
            Some(Format::Json) => bail!(
                "--output json is gone: --json prints the JSON array (--json FIELDS only those fields)"
            ),
            Some(format) if json => {
                let name = match format {
                    Format::Table => "table",
                    _ => "ndjson",
                };
                let flag = if self.json.is_some() {
                    "--json"
                } else {
                    "--jq"
                };
                bail!("{flag} prints one JSON document: it cannot go with --output {name}")
            }
            Some(Format::Table) => Ok(Printing::Table),
            Some(Format::Ndjson) => Ok(Printing::Ndjson),
            None if !json && std::io::stdout().is_terminal() => Ok(Printing::Table),
            None => {
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
    }
}

impl ListingArgs {
    /// The client, and how and which pages to print, settled before
    /// anything is sent.
    pub fn open(self, kind: ListKind) -> anyhow::Result<(ApiClient, Printing, Paging)> {
        let printing = self.shape.printing(kind)?;
        let client = ApiClient::new(&connection::resolve(&self.connection)?)?;
        Ok((client, printing, self.paging))
    }
}

/// A listing of one project's every item (`proxy-settings edges`,
/// `domains list`): all its pages, printed as the other listings are.
#[derive(Args)]
pub struct ProjectListing {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    #[command(flatten)]
    shape: Shape,
    #[command(flatten)]
    connection: Connection,
}

impl ProjectListing {
    /// Prints every page of the project's `resource`
    /// (`/v1/projects/{id}/RESOURCE`) as `kind` says, a table under
    /// `heading`'s line when one is given.
    pub async fn print_all(
        self,
        kind: ListKind,
        resource: &str,
        heading: Option<fn(&[Value]) -> String>,
    ) -> anyhow::Result<()> {
        let printing = self.shape.printing(kind)?;
        let client = ApiClient::new(&connection::resolve(&self.connection)?)?;
        let id = resolve_project(&client, &self.project).await?;
        let printer = Printer {
            heading,
            ..Printer::new(printing, kind)
        };
        list_all(&client, &v1(&["projects", &id, resource]), printer).await
    }
}

/// Prints every page of the listing at `segments` with `printer`.
pub async fn list_all(
    client: &ApiClient,
    segments: &[String],
    printer: Printer,
) -> anyhow::Result<()> {
    let paging = Paging {
        limit: None,
        start_key: None,
        order_direction: None,
        all: true,
    };
    list(client, segments, None, paging, printer).await
}

/// Prints the listing at `segments` (narrowed by `filter`, a query
/// parameter, when given) page by page as `paging` asks.
pub async fn list(
    client: &ApiClient,
    segments: &[String],
    filter: Option<(&'static str, String)>,
    paging: Paging,
    mut printer: Printer,
) -> anyhow::Result<()> {
    let limit = paging.limit.or(paging.all.then_some(MAX_LIMIT));
    let mut start_key = paging.start_key.clone();
    loop {
        let mut query: Vec<(&str, String)> = filter.iter().cloned().collect();
        query.extend(limit.map(|l| ("limit", l.to_string())));
        query.extend(start_key.clone().map(|k| ("start_key", k)));
        query.extend(paging.order_direction.map(|d| {
            let word = match d {
                OrderDirection::Asc => "ASC",
                OrderDirection::Desc => "DESC",
            };
            ("order_direction", word.to_owned())
        }));
        let page = client.page(segments, &query).await?;
        let next = page.next_key(limit);
        printer.items(page.data)?;
        match next {
            Some(key) if paging.all => start_key = Some(key),
            Some(key) => {
                let table = matches!(printer.printing, Printing::Table);
                printer.finish(client).await?;
                if table {
                    eprintln!(
                        "more may follow: --start-key {} (or --all)",
                        printable(&key)
                    );
                }
                return Ok(());
            }
            None => return printer.finish(client).await,
        }
    }
}

/// Prints the items. NDJSON streams each page as it arrives (the format
/// for walks too long to hold); JSON and tables are printed whole at the
/// end, so a walk that fails half-way leaves no broken document.
pub struct Printer {
    printing: Printing,
    kind: ListKind,
    /// A line above the table, made from the items; the table starts
    /// with it even when it has no rows.
    heading: Option<fn(&[Value]) -> String>,
    items: Vec<Box<RawValue>>,
}

impl Printer {
    pub fn new(printing: Printing, kind: ListKind) -> Self {
        Self {
            printing,
            kind,
            heading: None,
            items: Vec::new(),
        }
    }

    fn items(&mut self, items: Vec<Box<RawValue>>) -> anyhow::Result<()> {
        if let Printing::Ndjson = self.printing {
            let mut stdout = std::io::stdout().lock();
            let style = Style::stdout();
            for item in &items {
                write_json_line(item.get(), style, &mut stdout)?;
            }
            stdout.flush()?;
        } else {
            self.items.extend(items);
        }
        Ok(())
    }

    async fn finish(self, client: &ApiClient) -> anyhow::Result<()> {
        let objects = match &self.printing {
            Printing::Table => self
                .items
                .iter()
                .map(|item| serde_json::from_str::<Value>(item.get()))
                .collect::<Result<Vec<_>, _>>()?,
            _ => Vec::new(),
        };
        let context = RowContext {
            now: OffsetDateTime::now_utc(),
            organizations: if self.kind.names_organizations {
                organization_names(client, &objects).await
            } else {
                OrganizationNames::new()
            },
        };
        let mut stdout = std::io::stdout().lock();
        if let (Printing::Table, Some(heading)) = (&self.printing, self.heading) {
            writeln!(stdout, "{}", printable(&heading(&objects)))?;
        }
        match &self.printing {
            Printing::Table if self.items.is_empty() && self.heading.is_some() => {}
            Printing::Table if self.items.is_empty() => {
                eprintln!("no {}", self.kind.plural);
            }
            Printing::Table => {
                let rows: Vec<_> = objects
                    .iter()
                    .map(|object| (self.kind.row)(object, &context))
                    .collect();
                let text = table::fit(self.kind.columns, rows, table::stdout_width());
                writeln!(stdout, "{text}")?;
            }
            Printing::Json(json) => json.write(&self.items, &mut stdout)?,
            Printing::Ndjson => {}
        }
        stdout.flush()?;
        Ok(())
    }
}

/// Organization names by id.
pub type OrganizationNames = std::collections::HashMap<String, String>;

/// The names of the organizations of `projects`: one request per distinct
/// organization (a few at a time), so a table costs at most one request
/// per row more. An organization whose name cannot be had (an older
/// server, a membership that just ended) is shown by its id.
async fn organization_names(client: &ApiClient, projects: &[Value]) -> OrganizationNames {
    use futures_util::StreamExt as _;
    let mut ids: Vec<&str> = projects
        .iter()
        .filter_map(|project| project["organization_id"].as_str())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    futures_util::stream::iter(ids)
        .map(|id| async move {
            let segments = ["v1".into(), "organizations".into(), id.to_owned()];
            let answer = client
                .send(Request::new(reqwest::Method::GET, &segments))
                .await
                .ok()?;
            let organization: Value = serde_json::from_slice(&answer.body).ok()?;
            let name = organization["name"].as_str()?;
            Some((id.to_owned(), name.to_owned()))
        })
        .buffer_unordered(4)
        .filter_map(|named| async move { named })
        .collect()
        .await
}
