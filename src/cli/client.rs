//! The terminal client: the API's three listings, read from a running
//! proxydeck over HTTP and shown as a table, JSON or NDJSON; one page, or
//! every page with `--all`. Objects are printed exactly as the server sent
//! them, unless `--json FIELDS` or `--jq` asks for less.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::output::{Jq, Json, Style, schema_fields};
use super::profile::{self, ProfileArg, Target};
use super::table::{self, Column};
use crate::domain::pagination::{DEFAULT_LIMIT, MAX_LIMIT};

/// Where the API is and as whom to call it. Unset, they come from the
/// profile `proxydeck login` saved.
#[derive(Args)]
pub struct Connection {
    /// Base URL of the proxydeck API [default: the profile's, else
    /// http://127.0.0.1:8080].
    #[arg(long, env = "PROXYDECK_URL", value_name = "URL")]
    pub url: Option<String>,
    /// API token [default: the profile's]. Prefer PROXYDECK_TOKEN or
    /// `proxydeck login`: flags show in process lists.
    #[arg(
        long,
        env = "PROXYDECK_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    pub token: Option<String>,
    #[command(flatten)]
    pub profile: ProfileArg,
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

#[derive(Subcommand)]
pub enum ProjectsCommand {
    /// List the projects of your organizations, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck login --url http://127.0.0.1:8080  # once, or set PROXYDECK_TOKEN\n  proxydeck projects list\n  proxydeck projects list --all --json id,slug\n  proxydeck projects list --all --jq '.[] | select(.type == \"mcp\") | .slug'\n  proxydeck projects list --organization-id 0190b7a4-0000-7000-8000-000000000001 -o ndjson"
    )]
    List {
        /// Only this organization's projects.
        #[arg(long, value_name = "ORG_ID")]
        organization_id: Option<String>,
        #[command(flatten)]
        paging: Paging,
        #[command(flatten)]
        shape: Shape,
        #[command(flatten)]
        connection: Connection,
    },
}

#[derive(Subcommand)]
pub enum TokensCommand {
    /// List your own API tokens (never their secrets), newest first.
    #[command(
        after_help = "Examples:\n  proxydeck tokens list\n  proxydeck tokens list --name demo --json id,name,expires_at"
    )]
    List {
        /// Only tokens with exactly this name.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        paging: Paging,
        #[command(flatten)]
        shape: Shape,
        #[command(flatten)]
        connection: Connection,
    },
}

#[derive(Subcommand)]
pub enum ProxySettingsCommand {
    /// List a project's proxy settings revisions, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings list acme-shop\n  proxydeck proxy-settings list acme-shop --order-direction asc --all\n  proxydeck proxy-settings list acme-shop --jq '.[] | select(.is_active) | .revision'"
    )]
    List {
        /// The project's id.
        #[arg(value_name = "PROJECT_ID")]
        project_id: String,
        #[command(flatten)]
        paging: Paging,
        #[command(flatten)]
        shape: Shape,
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
    /// The columns of the table; when the terminal is narrow the ranked
    /// ones go, lowest first.
    fn columns(self) -> &'static [Column] {
        // The API gives organizations by id only (no name).
        const PROJECTS: [Column; 5] = [
            Column::kept("ID"),
            Column::cut("SLUG", 20),
            Column::dropped("TYPE", 2),
            Column::dropped("ORGANIZATION ID", 1),
            Column::dropped("CREATED (UTC)", 3),
        ];
        const TOKENS: [Column; 6] = [
            Column::kept("ID"),
            Column::cut("NAME", 20),
            Column::dropped("TOKEN", 2),
            Column::dropped("LAST USED (UTC)", 3),
            Column::dropped("EXPIRES (UTC)", 4),
            Column::dropped("CREATED (UTC)", 1),
        ];
        const PROXY_SETTINGS: [Column; 5] = [
            Column::kept("REVISION"),
            Column::kept("ACTIVE"),
            Column::dropped("BACKENDS", 2),
            Column::dropped("ROUTES", 1),
            Column::cut("DESCRIPTION", 20),
        ];
        match self {
            Self::Projects => &PROJECTS,
            Self::Tokens => &TOKENS,
            Self::ProxySettings => &PROXY_SETTINGS,
        }
    }

    fn row(self, item: &Value, now: OffsetDateTime) -> Vec<String> {
        let cell = |field: &str| table::cell(&item[field]);
        let created = || table::when(&item["created_at"], "-");
        match self {
            Self::Projects => vec![
                cell("id"),
                cell("slug"),
                cell("type"),
                cell("organization_id"),
                created(),
            ],
            Self::Tokens => {
                let expired = item["expires_at"]
                    .as_str()
                    .and_then(|text| OffsetDateTime::parse(text, &Rfc3339).ok())
                    .is_some_and(|at| at <= now);
                let mut expires = table::when(&item["expires_at"], "never");
                if expired {
                    expires.push_str(" (expired)");
                }
                vec![
                    cell("id"),
                    cell("name"),
                    cell("token"),
                    table::when(&item["last_used_at"], "never"),
                    expires,
                    created(),
                ]
            }
            Self::ProxySettings => {
                let count = |field: &str| item[field].as_array().map_or(0, Vec::len).to_string();
                vec![
                    cell("revision"),
                    cell("is_active"),
                    count("backends"),
                    count("routes"),
                    cell("description"),
                ]
            }
        }
    }

    /// The OpenAPI schema of the items, whose members `--json` may name.
    fn schema(self) -> &'static str {
        match self {
            Self::Projects => "Project",
            Self::Tokens => "ApiToken",
            Self::ProxySettings => "ProxySettings",
        }
    }

    /// The items, in words.
    fn plural(self) -> &'static str {
        match self {
            Self::Projects => "projects",
            Self::Tokens => "API tokens",
            Self::ProxySettings => "proxy settings revisions",
        }
    }
}

/// How the items are printed.
enum Printing {
    Table,
    Json(Json),
    Ndjson,
}

impl Shape {
    /// What the flags ask for; a pair that cannot go together is refused.
    fn printing(self, kind: Kind) -> anyhow::Result<Printing> {
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
                    Some(given) => {
                        Json::fields(given, &schema_fields(kind.schema())?, kind.plural())?
                    }
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

/// A page of any listing. The token listing has no `has_more`/`last_key`:
/// a full page may be followed by more, keyed by its last item's id.
#[derive(Deserialize)]
pub(super) struct Page {
    pub(super) data: Vec<Box<RawValue>>,
    #[serde(default)]
    has_more: Option<bool>,
    #[serde(default)]
    last_key: Option<String>,
}

impl Page {
    /// The start key of the next page, if there may be one. The token
    /// listing says nothing: a full page may have more after its last item.
    pub(super) fn next_key(&self, limit: Option<u32>) -> Option<String> {
        match self.has_more {
            Some(more) => self.last_key.clone().filter(|_| more),
            None if self.data.len() == limit.unwrap_or(DEFAULT_LIMIT) as usize => self
                .data
                .last()
                .and_then(|last| serde_json::from_str::<Value>(last.get()).ok())
                .and_then(|last| last["id"].as_str().map(str::to_owned)),
            None => None,
        }
    }
}

pub async fn run(listing: Listing) -> anyhow::Result<()> {
    let (kind, segments, filter, paging, shape, connection) = match listing {
        Listing::Projects(ProjectsCommand::List {
            organization_id,
            paging,
            shape,
            connection,
        }) => (
            Kind::Projects,
            vec!["v1".to_owned(), "projects".to_owned()],
            organization_id.map(|id| ("organization_id", id)),
            paging,
            shape,
            connection,
        ),
        Listing::Tokens(TokensCommand::List {
            name,
            paging,
            shape,
            connection,
        }) => (
            Kind::Tokens,
            vec!["v1".to_owned(), "api_tokens".to_owned()],
            name.map(|name| ("name", name)),
            paging,
            shape,
            connection,
        ),
        Listing::ProxySettings(ProxySettingsCommand::List {
            project_id,
            paging,
            shape,
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
            shape,
            connection,
        ),
    };
    let printing = shape.printing(kind)?;
    let client = ApiClient::new(&profile::resolve(&connection)?)?;
    let limit = paging.limit.or(paging.all.then_some(MAX_LIMIT));
    let mut printer = Printer::new(printing, kind);
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
        let page = client.page(&segments, &query).await?;
        let next = page.next_key(limit);
        printer.items(page.data)?;
        match next {
            Some(key) if paging.all => start_key = Some(key),
            Some(key) => {
                let table = matches!(printer.printing, Printing::Table);
                printer.finish()?;
                if table {
                    eprintln!("more may follow: --start-key {key} (or --all)");
                }
                return Ok(());
            }
            None => return printer.finish(),
        }
    }
}

/// An error answer of the API: its message.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(super) struct Refused {
    status: StatusCode,
    message: String,
}

impl Refused {
    /// The token did not authenticate.
    pub(super) fn is_authentication(&self) -> bool {
        self.status == StatusCode::UNAUTHORIZED
    }
}

/// Times a request answered 429 or 503 is tried again.
const RETRIES: u32 = 5;
/// The longest wait between two tries, whatever `Retry-After` says.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

pub(super) struct ApiClient {
    http: reqwest::Client,
    base: url::Url,
    token: String,
}

impl ApiClient {
    pub(super) fn new(target: &Target) -> anyhow::Result<Self> {
        // TLS for https:// URLs; installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = url::Url::parse(&target.url)
            .map_err(|_| anyhow!("--url {:?} is not a URL", target.url))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            bail!("--url must be an http:// or https:// URL");
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("proxydeck/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(60))
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Self {
            http,
            base,
            token: target.token.clone(),
        })
    }

    /// One page; an error answer becomes its message. A 429 or 503 is
    /// tried again after the time its `Retry-After` gives (at most
    /// [`LONGEST_WAIT`]), [`RETRIES`] times at most.
    pub(super) async fn page(
        &self,
        segments: &[String],
        query: &[(&str, String)],
    ) -> anyhow::Result<Page> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| anyhow!("--url cannot take a path"))?
            .pop_if_empty()
            .extend(segments);
        url.query_pairs_mut()
            .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        let mut tries = 0;
        loop {
            let response = self
                .http
                .get(url.clone())
                .bearer_auth(&self.token)
                .send()
                .await
                .map_err(|error| self.unreachable(&error))?;
            let status = response.status();
            let wait = retry_after(response.headers());
            let body = response
                .bytes()
                .await
                .map_err(|error| self.unreachable(&error))?;
            if matches!(
                status,
                StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
            ) && tries < RETRIES
            {
                tries += 1;
                let wait = wait.unwrap_or(Duration::from_secs(1)).min(LONGEST_WAIT);
                if std::io::stderr().is_terminal() {
                    eprintln!(
                        "the server answered {status}; trying again in {} s ({tries} of {RETRIES})",
                        wait.as_secs_f64().ceil()
                    );
                }
                tokio::time::sleep(wait).await;
                continue;
            }
            if !status.is_success() {
                let message = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|error| error["error"]["message"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("the server answered {status}"));
                return Err(Refused { status, message }.into());
            }
            return serde_json::from_slice(&body).context("the server's answer is not a listing");
        }
    }

    /// A failed exchange in one sentence: what went wrong, not the HTTP
    /// library's chain of causes.
    fn unreachable(&self, error: &reqwest::Error) -> anyhow::Error {
        let base = self.base.as_str().trim_end_matches('/');
        let reason = failure_reason(error);
        anyhow!(
            "cannot reach {base} ({reason}); is proxydeck running there? Set --url or PROXYDECK_URL"
        )
    }
}

/// Why a request failed, in a few words: a TLS failure, else what the
/// socket said.
fn failure_reason(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "no answer in time".into();
    }
    // Every cause; an I/O error hides the error it wraps from `source()`.
    let mut causes: Vec<&(dyn std::error::Error + 'static)> = Vec::new();
    let mut next: Vec<&(dyn std::error::Error + 'static)> = vec![error];
    while let Some(now) = next.pop() {
        causes.push(now);
        next.extend(now.source());
        if let Some(inner) = now
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            next.push(inner);
        }
    }
    let tls = causes
        .iter()
        .find_map(|cause| cause.downcast_ref::<rustls::Error>())
        .map(|error| format!("TLS: {error}"));
    let socket = causes
        .iter()
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
        .find_map(|io| match io.kind() {
            std::io::ErrorKind::ConnectionRefused => Some("connection refused"),
            std::io::ErrorKind::ConnectionReset => Some("connection reset"),
            std::io::ErrorKind::ConnectionAborted => Some("connection aborted"),
            std::io::ErrorKind::TimedOut => Some("timed out"),
            std::io::ErrorKind::UnexpectedEof => Some("the connection closed early"),
            _ if io.to_string().contains("lookup") => Some("cannot resolve the host"),
            _ => None,
        })
        .map(str::to_owned);
    tls.or(socket).unwrap_or_else(|| {
        if error.is_connect() {
            "cannot connect".into()
        } else {
            "the exchange failed".into()
        }
    })
}

/// `Retry-After`: whole seconds, or an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = OffsetDateTime::parse(text, &time::format_description::well_known::Rfc2822).ok()?;
    let left = at - OffsetDateTime::now_utc();
    Some(left.try_into().unwrap_or(Duration::ZERO))
}

/// Prints the items. NDJSON streams each page as it arrives (the format
/// for walks too long to hold); JSON and tables are printed whole at the
/// end, so a walk that fails half-way leaves no broken document.
struct Printer {
    printing: Printing,
    kind: Kind,
    items: Vec<Box<RawValue>>,
}

impl Printer {
    fn new(printing: Printing, kind: Kind) -> Self {
        Self {
            printing,
            kind,
            items: Vec::new(),
        }
    }

    fn items(&mut self, items: Vec<Box<RawValue>>) -> anyhow::Result<()> {
        if let Printing::Ndjson = self.printing {
            let mut stdout = std::io::stdout().lock();
            for item in &items {
                writeln!(stdout, "{}", item.get())?;
            }
            stdout.flush()?;
        } else {
            self.items.extend(items);
        }
        Ok(())
    }

    fn finish(self) -> anyhow::Result<()> {
        let mut stdout = std::io::stdout().lock();
        match &self.printing {
            Printing::Table if self.items.is_empty() => {
                eprintln!("no {}", self.kind.plural());
            }
            Printing::Table => {
                let now = OffsetDateTime::now_utc();
                let mut rows = Vec::with_capacity(self.items.len());
                for item in &self.items {
                    let object = serde_json::from_str(item.get())?;
                    rows.push(self.kind.row(&object, now));
                }
                let text = table::fit(self.kind.columns(), rows, table::stdout_width());
                writeln!(stdout, "{text}")?;
            }
            Printing::Json(json) => json.write(&self.items, &mut stdout)?,
            Printing::Ndjson => {}
        }
        stdout.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(reqwest::header::RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }
}
