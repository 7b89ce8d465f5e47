//! The terminal client: the API's three listings, read from a running
//! proxydeck over HTTP and shown as a table, JSON or NDJSON; one page, or
//! every page with `--all`. Objects are printed exactly as the server sent
//! them.

use std::io::{IsTerminal, Write};

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand, ValueEnum};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Output, table};
use crate::domain::pagination::MAX_LIMIT;

#[derive(Args)]
pub struct Connection {
    /// Base URL of the proxydeck API.
    #[arg(
        long,
        env = "PROXYDECK_URL",
        default_value = "http://127.0.0.1:8080",
        value_name = "URL"
    )]
    url: String,
    /// API token. Prefer the environment variable: flags show in process lists.
    #[arg(
        long,
        env = "PROXYDECK_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    token: String,
}

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
    /// Follow the pages to the end of the list.
    #[arg(long)]
    all: bool,
    /// table (the default on a terminal), json (one array; the default
    /// otherwise) or ndjson (one object per line).
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
    Json,
    Ndjson,
}

#[derive(Subcommand)]
pub enum ProjectsCommand {
    /// List the projects of your organizations, newest first.
    #[command(
        after_help = "Examples:\n  export PROXYDECK_URL=http://127.0.0.1:8080 PROXYDECK_TOKEN=pxd_...\n  proxydeck projects list\n  proxydeck projects list --organization-id 0190b7a4-0000-7000-8000-000000000002 --all --output ndjson"
    )]
    List {
        /// Only this organization's projects.
        #[arg(long, value_name = "ORG_ID")]
        organization_id: Option<String>,
        #[command(flatten)]
        paging: Paging,
        #[command(flatten)]
        connection: Connection,
    },
}

#[derive(Subcommand)]
pub enum TokensCommand {
    /// List your own API tokens (never their secrets), newest first.
    #[command(
        after_help = "Examples:\n  proxydeck tokens list\n  proxydeck tokens list --name demo --output json"
    )]
    List {
        /// Only tokens with exactly this name.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        paging: Paging,
        #[command(flatten)]
        connection: Connection,
    },
}

#[derive(Subcommand)]
pub enum ProxySettingsCommand {
    /// List a project's proxy settings revisions, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings list acme-shop\n  proxydeck proxy-settings list acme-shop --order-direction asc --all"
    )]
    List {
        #[arg(value_name = "PROJECT_ID")]
        project_id: String,
        #[command(flatten)]
        paging: Paging,
        #[command(flatten)]
        connection: Connection,
    },
}

pub enum Listing {
    Projects(ProjectsCommand),
    Tokens(TokensCommand),
    ProxySettings(ProxySettingsCommand),
}

/// What differs between the three listings.
#[derive(Clone, Copy)]
enum Kind {
    Projects,
    Tokens,
    ProxySettings,
}

impl Kind {
    fn headers(self) -> &'static [&'static str] {
        match self {
            Self::Projects => &["ID", "SLUG", "TYPE", "ORGANIZATION", "CREATED"],
            Self::Tokens => &["ID", "NAME", "TOKEN", "LAST USED", "EXPIRES", "CREATED"],
            Self::ProxySettings => &["REVISION", "ACTIVE", "BACKENDS", "ROUTES", "DESCRIPTION"],
        }
    }

    fn row(self, item: &Value) -> Vec<String> {
        let fields: &[&str] = match self {
            Self::Projects => &["id", "slug", "type", "organization_id", "created_at"],
            Self::Tokens => &[
                "id",
                "name",
                "token",
                "last_used_at",
                "expires_at",
                "created_at",
            ],
            Self::ProxySettings => {
                let count = |field: &str| item[field].as_array().map_or(0, Vec::len).to_string();
                return vec![
                    table::cell(&item["revision"]),
                    table::cell(&item["is_active"]),
                    count("backends"),
                    count("routes"),
                    table::cell(&item["description"]),
                ];
            }
        };
        fields.iter().map(|f| table::cell(&item[*f])).collect()
    }
}

/// A page of any listing. The token listing has no `has_more`/`last_key`:
/// a full page may be followed by more, keyed by its last item's id.
#[derive(Deserialize)]
struct Page {
    data: Vec<Box<RawValue>>,
    #[serde(default)]
    has_more: Option<bool>,
    #[serde(default)]
    last_key: Option<String>,
}

pub async fn run(listing: Listing, out: &Output) -> anyhow::Result<()> {
    let (kind, segments, filter, paging, connection) = match listing {
        Listing::Projects(ProjectsCommand::List {
            organization_id,
            paging,
            connection,
        }) => (
            Kind::Projects,
            vec!["v1".to_owned(), "projects".to_owned()],
            organization_id.map(|id| ("organization_id", id)),
            paging,
            connection,
        ),
        Listing::Tokens(TokensCommand::List {
            name,
            paging,
            connection,
        }) => (
            Kind::Tokens,
            vec!["v1".to_owned(), "api_tokens".to_owned()],
            name.map(|name| ("name", name)),
            paging,
            connection,
        ),
        Listing::ProxySettings(ProxySettingsCommand::List {
            project_id,
            paging,
            connection,
        }) => (
            Kind::ProxySettings,
            vec![
                "v1".into(),
                "projects".into(),
                project_id,
                "proxy-settings".into(),
            ],
            None,
            paging,
            connection,
        ),
    };
    let format = match (out.json, paging.output) {
        (true, None | Some(Format::Json)) => Format::Json,
        (true, Some(_)) => {
            bail!("--json prints one JSON document: it cannot go with --output table or ndjson")
        }
        (false, Some(format)) => format,
        (false, None) if std::io::stdout().is_terminal() => Format::Table,
        (false, None) => Format::Json,
    };
    let client = ApiClient::new(&connection)?;
    let limit = paging.limit.or(paging.all.then_some(MAX_LIMIT));
    let mut printer = Printer::new(format, kind);
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
        let page = client.get(&segments, &query).await?;
        let next = match page.has_more {
            Some(more) => page.last_key.filter(|_| more),
            // Tokens: a full page may have more after its last item.
            None if page.data.len() == limit.unwrap_or(20) as usize => page
                .data
                .last()
                .and_then(|last| serde_json::from_str::<Value>(last.get()).ok())
                .and_then(|last| last["id"].as_str().map(str::to_owned)),
            None => None,
        };
        printer.items(page.data)?;
        match next {
            Some(key) if paging.all => start_key = Some(key),
            Some(key) => {
                printer.finish()?;
                if format == Format::Table {
                    eprintln!("more may follow: --start-key {key} (or --all)");
                }
                return Ok(());
            }
            None => return printer.finish(),
        }
    }
}

struct ApiClient {
    http: reqwest::Client,
    base: url::Url,
    token: String,
}

impl ApiClient {
    fn new(connection: &Connection) -> anyhow::Result<Self> {
        // TLS for https:// URLs; installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = url::Url::parse(&connection.url)
            .with_context(|| format!("--url {:?} is not a URL", connection.url))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            bail!("--url must be an http:// or https:// URL");
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("proxydeck/", env!("CARGO_PKG_VERSION")))
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Self {
            http,
            base,
            token: connection.token.clone(),
        })
    }

    /// One page; an error answer becomes its message.
    async fn get(&self, segments: &[String], query: &[(&str, String)]) -> anyhow::Result<Page> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| anyhow::anyhow!("--url cannot take a path"))?
            .pop_if_empty()
            .extend(segments);
        url.query_pairs_mut()
            .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        let response = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .with_context(|| format!("cannot reach {}", self.base))?;
        let status = response.status();
        let body = response.bytes().await.context("the answer was cut short")?;
        if !status.is_success() {
            let message = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|error| error["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("the server answered {status}"));
            bail!("{message}");
        }
        serde_json::from_slice(&body).context("the server's answer is not a listing")
    }
}

/// Prints the items. NDJSON streams each page as it arrives (the format
/// for walks too long to hold); JSON and tables are printed whole at the
/// end, so a walk that fails half-way leaves no broken document.
struct Printer {
    format: Format,
    kind: Kind,
    rows: Vec<Vec<String>>,
    documents: Vec<Box<RawValue>>,
}

impl Printer {
    fn new(format: Format, kind: Kind) -> Self {
        Self {
            format,
            kind,
            rows: Vec::new(),
            documents: Vec::new(),
        }
    }

    fn items(&mut self, items: Vec<Box<RawValue>>) -> anyhow::Result<()> {
        match self.format {
            Format::Table => {
                for item in &items {
                    let object = serde_json::from_str(item.get())?;
                    self.rows.push(self.kind.row(&object));
                }
            }
            Format::Json => self.documents.extend(items),
            Format::Ndjson => {
                let mut stdout = std::io::stdout().lock();
                for item in &items {
                    writeln!(stdout, "{}", item.get())?;
                }
                stdout.flush()?;
            }
        }
        Ok(())
    }

    fn finish(self) -> anyhow::Result<()> {
        let mut stdout = std::io::stdout().lock();
        match self.format {
            Format::Table => writeln!(stdout, "{}", table::render(self.kind.headers(), self.rows))?,
            // The objects as the server sent them, one per line.
            Format::Json if self.documents.is_empty() => writeln!(stdout, "[]")?,
            Format::Json => {
                let lines: Vec<&str> = self.documents.iter().map(|d| d.get()).collect();
                writeln!(stdout, "[\n{}\n]", lines.join(",\n"))?;
            }
            Format::Ndjson => {}
        }
        stdout.flush()?;
        Ok(())
    }
}
