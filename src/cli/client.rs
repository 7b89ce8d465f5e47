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
use super::revisions;
use super::table::{self, Column};
use super::writes;
use crate::domain::pagination::{DEFAULT_LIMIT, MAX_LIMIT};

/// The note ending the help of each create that sends an Idempotency-Key
/// (a macro so that `concat!` can put it after each command's examples).
macro_rules! retried_create_note {
    () => {
        "\n\nIt sends a fresh Idempotency-Key, kept across the client's own retries: a retried create never creates twice."
    };
}

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
    /// Create a project in one of your organizations (you need the admin
    /// or editor role there).
    #[command(
        after_help = concat!("Examples:\n  proxydeck projects create --org 0190b7a4-0000-7000-8000-000000000001 --slug my-shop --description 'My shop'\n  proxydeck projects create --file project.json --json id", retried_create_note!())
    )]
    Create(writes::ProjectCreate),
    /// Show one project, with its ETag on a terminal (or --show-etag).
    #[command(
        after_help = "Examples:\n  proxydeck projects get acme-shop\n  proxydeck projects get acme-shop --jq .slug"
    )]
    Get(writes::ProjectGet),
    /// Change a project's members; the ones not given stay.
    #[command(
        after_help = "Examples:\n  proxydeck projects update acme-shop --description 'The shop'\n  proxydeck projects update acme-shop --file changes.json --if-match '\"ETAG\"'"
    )]
    Update(writes::ProjectUpdate),
    /// Delete a project (asks first on a terminal; --yes does not ask).
    #[command(after_help = "Example:\n  proxydeck projects delete my-shop --yes")]
    Delete(writes::Delete),
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
    /// Create an API token of your own. Its secret is printed this once
    /// (`token` in the JSON): store it now.
    #[command(
        after_help = "Examples:\n  proxydeck tokens create --name ci --expires-in 90d\n  proxydeck tokens create --name deploy --expires-at 2027-01-01T00:00:00Z --jq .token"
    )]
    Create(writes::TokenCreate),
    /// Delete one of your API tokens: it stops working (asks first on a
    /// terminal; --yes does not ask).
    #[command(after_help = "Example:\n  proxydeck tokens delete TOKEN_ID --yes")]
    Delete(writes::Delete),
}

#[derive(Subcommand)]
pub enum ProxySettingsCommand {
    /// List a project's proxy settings revisions, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings list acme-shop\n  proxydeck proxy-settings list acme-shop --order-direction asc --all\n  proxydeck proxy-settings list acme-shop --jq '.[] | select(.is_active) | .revision'"
    )]
    List(ProxySettingsList),
    /// Show one revision of a project's proxy settings.
    #[command(
        after_help = "Examples:\n  proxydeck proxy-settings get acme-shop 2\n  proxydeck proxy-settings get acme-shop 2 --jq '.backends[].address'"
    )]
    Get(revisions::GetArgs),
    /// Show what changed from revision A to revision B of a project's
    /// proxy settings: description, which is active, backends (matched by
    /// name) and routes (in order). Exits 0 whatever the differences.
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
}

#[derive(Args)]
pub struct ProxySettingsList {
    /// The project's id.
    #[arg(value_name = "PROJECT_ID")]
    project_id: String,
    #[command(flatten)]
    paging: Paging,
    #[command(flatten)]
    shape: Shape,
    #[command(flatten)]
    connection: Connection,
}

pub enum Listing {
    Projects(ProjectsCommand),
    Tokens(TokensCommand),
    ProxySettings(ProxySettingsList),
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
        // The organization by name (`organization_names`), not its id.
        const PROJECTS: [Column; 5] = [
            Column::kept("ID"),
            Column::cut("SLUG", 20),
            Column::dropped("TYPE", 1),
            Column::dropped("ORGANIZATION", 3),
            Column::dropped("CREATED (UTC)", 2),
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

    fn row(self, item: &Value, now: OffsetDateTime, names: &OrganizationNames) -> Vec<String> {
        let cell = |field: &str| table::cell(&item[field]);
        let created = || table::when(&item["created_at"], "-");
        match self {
            Self::Projects => {
                let organization = cell("organization_id");
                vec![
                    cell("id"),
                    cell("slug"),
                    cell("type"),
                    names.get(&organization).cloned().unwrap_or(organization),
                    created(),
                ]
            }
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
    /// The items, parsed.
    pub(super) fn items(&self) -> anyhow::Result<Vec<Value>> {
        self.data
            .iter()
            .map(|item| serde_json::from_str(item.get()))
            .collect::<Result<_, _>>()
            .context("the server's answer is not a listing")
    }

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
        Listing::ProxySettings(ProxySettingsList {
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
        // `cli::run` sends the other commands elsewhere.
        Listing::Projects(_) | Listing::Tokens(_) => bail!("not a listing"),
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
                printer.finish(&client).await?;
                if table {
                    eprintln!("more may follow: --start-key {key} (or --all)");
                }
                return Ok(());
            }
            None => return printer.finish(&client).await,
        }
    }
}

/// An error answer of the API, in one sentence: its message, and the
/// members its `params` name when the message does not already say them.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(super) struct Refused {
    status: StatusCode,
    message: String,
    /// The first parameter the error names, if any.
    param: Option<String>,
}

impl Refused {
    fn from_answer(status: StatusCode, body: &[u8]) -> Self {
        let error = serde_json::from_slice::<Value>(body).unwrap_or_default();
        let said = |member: &Value| member.as_str().map(str::to_owned);
        let message = said(&error["error"]["message"])
            .unwrap_or_else(|| format!("the server answered {status}"));
        let params: Vec<(String, String)> = error["error"]["params"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|param| Some((said(&param["param"])?, said(&param["message"])?)))
            .collect();
        let message = sentence(&message, &params);
        Self {
            status,
            message,
            param: params.into_iter().next().map(|(param, _)| param),
        }
    }

    /// A 404: an unknown path, or a project unknown or not visible.
    pub(super) fn is_not_found(&self) -> bool {
        self.status == StatusCode::NOT_FOUND
    }

    /// The `start_key` named no item of the list.
    pub(super) fn is_unknown_start_key(&self) -> bool {
        self.status == StatusCode::BAD_REQUEST && self.param.as_deref() == Some("start_key")
    }

    /// The token did not authenticate.
    pub(super) fn is_authentication(&self) -> bool {
        self.status == StatusCode::UNAUTHORIZED
    }
}

/// `message` followed by each of `params` it does not already hold, as
/// `MEMBER RULE`; the API's "; see params" gives way to them.
fn sentence(message: &str, params: &[(String, String)]) -> String {
    let text = message.strip_suffix("; see params").unwrap_or(message);
    let details: Vec<String> = params
        .iter()
        .map(|(param, rule)| format!("{param} {rule}"))
        .filter(|detail| !text.contains(detail.as_str()))
        .collect();
    if details.is_empty() {
        text.to_owned()
    } else {
        format!("{text}: {}", details.join("; "))
    }
}

/// A request to the API: its method, path segments, query, JSON body and
/// headers.
pub(super) struct Request<'a> {
    method: reqwest::Method,
    segments: &'a [String],
    query: &'a [(&'a str, String)],
    body: Option<Value>,
    headers: Vec<(&'static str, String)>,
}

impl<'a> Request<'a> {
    pub(super) fn new(method: reqwest::Method, segments: &'a [String]) -> Self {
        Self {
            method,
            segments,
            query: &[],
            body: None,
            headers: Vec::new(),
        }
    }

    pub(super) fn query(self, query: &'a [(&'a str, String)]) -> Self {
        Self { query, ..self }
    }

    pub(super) fn body(self, body: Value) -> Self {
        Self {
            body: Some(body),
            ..self
        }
    }

    pub(super) fn header(mut self, name: &'static str, value: Option<String>) -> Self {
        self.headers.extend(value.map(|value| (name, value)));
        self
    }
}

/// A success answer: its body and `ETag`.
pub(super) struct Answer {
    pub(super) body: bytes::Bytes,
    pub(super) etag: Option<String>,
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

    /// One page of a listing (see [`ApiClient::send`]).
    pub(super) async fn page(
        &self,
        segments: &[String],
        query: &[(&str, String)],
    ) -> anyhow::Result<Page> {
        let answer = self
            .send(Request::new(reqwest::Method::GET, segments).query(query))
            .await?;
        serde_json::from_slice(&answer.body).context("the server's answer is not a listing")
    }

    /// One exchange; an error answer becomes [`Refused`]. A 429 or 503 is
    /// tried again after the time its `Retry-After` gives (at most
    /// [`LONGEST_WAIT`]), [`RETRIES`] times at most, with the very same
    /// request: the same body and headers, an `Idempotency-Key` included,
    /// so a retried create cannot create twice.
    pub(super) async fn send(&self, request: Request<'_>) -> anyhow::Result<Answer> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| anyhow!("--url cannot take a path"))?
            .pop_if_empty()
            .extend(request.segments);
        if !request.query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(request.query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        let mut builder = self
            .http
            .request(request.method, url)
            .bearer_auth(&self.token)
            .header("api-version", "1");
        for (name, value) in request.headers {
            builder = builder.header(name, value);
        }
        if let Some(body) = request.body {
            builder = builder
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(&body)?);
        }
        let built = builder.build().context("cannot make the request")?;
        let mut tries = 0;
        loop {
            let attempt = built
                .try_clone()
                .expect("a request with an in-memory body clones");
            let response = self
                .http
                .execute(attempt)
                .await
                .map_err(|error| self.unreachable(&error))?;
            let status = response.status();
            let wait = retry_after(response.headers());
            let etag = response
                .headers()
                .get(reqwest::header::ETAG)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
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
                return Err(Refused::from_answer(status, &body).into());
            }
            return Ok(Answer { body, etag });
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

    async fn finish(self, client: &ApiClient) -> anyhow::Result<()> {
        let objects = match &self.printing {
            Printing::Table => self
                .items
                .iter()
                .map(|item| serde_json::from_str::<Value>(item.get()))
                .collect::<Result<Vec<_>, _>>()?,
            _ => Vec::new(),
        };
        let names = match self.kind {
            Kind::Projects => organization_names(client, &objects).await,
            _ => OrganizationNames::new(),
        };
        let mut stdout = std::io::stdout().lock();
        match &self.printing {
            Printing::Table if self.items.is_empty() => {
                eprintln!("no {}", self.kind.plural());
            }
            Printing::Table => {
                let now = OffsetDateTime::now_utc();
                let rows: Vec<_> = objects
                    .iter()
                    .map(|object| self.kind.row(object, now, &names))
                    .collect();
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

/// Organization names by id.
type OrganizationNames = std::collections::HashMap<String, String>;

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
