//! The `proxydeck` command (`cli.md`): serve the API, load demo data, run
//! migrations, and administer organizations, users, tokens and imports.

mod admin;
mod api;
mod client;
mod completions;
mod config;
mod connection;
mod demo;
mod duration;
mod edges;
mod follow;
mod listings;
mod login;
mod names;
mod output;
mod profile;
mod progress;
mod revisions;
mod table;
mod transfer;
mod writes;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::app::{Listeners, Service, ServiceOptions, shutdown_signal};
use crate::auth::AuthOptions;
use crate::domain::url_password;
use crate::feed::FeedOptions;
use crate::http::RequestLimits;
use crate::http::transport::server::ServerOptions;
use crate::rate_limit::redis::RedisUrl;
use crate::rate_limit::{self, Policy, RateLimitOptions};
use crate::store::{self, Caches, DatabaseUrl, Pooler, Replicas, StoreOptions};
use crate::telemetry::{self, LogFormat, LogGuard, LogLevel, LogWriter, Logging};
use config::{Failure, Parsed};
use duration::parse_duration;
use output::Output;

#[derive(Parser)]
#[command(
    name = "proxydeck",
    version = version(),
    about = "Serves the management listings of an edge proxy platform: projects, API tokens and proxy settings.",
    after_help = "Examples:\n  proxydeck demo                      # demo data on ./proxydeck.db, served on 127.0.0.1:8080\n  proxydeck serve --listen 0.0.0.0:8080 --database sqlite:///var/lib/proxydeck/data.db\n  proxydeck --config /etc/proxydeck.toml config check\n  proxydeck admin token create --user demo-user --name ci --expires-in 90d --json"
)]
pub struct Cli {
    /// Read settings from this TOML file too (keys: the long flags, such as
    /// listen = "0.0.0.0:8080"). Flags and environment variables win over
    /// it; it wins over the defaults.
    #[arg(long, global = true, env = "PROXYDECK_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,

    /// Where the data lives: sqlite://PATH (embedded store) or postgres://...
    #[arg(
        long,
        global = true,
        env = "PROXYDECK_DATABASE_URL",
        hide_env_values = true,
        default_value = "sqlite://proxydeck.db",
        value_name = "URL"
    )]
    database: String,
    /// Read the database's password from this file (its one line), so
    /// that it shows neither in the process list nor in the URL.
    #[arg(
        long,
        global = true,
        env = "PROXYDECK_DATABASE_PASSWORD_FILE",
        value_name = "FILE"
    )]
    database_password_file: Option<PathBuf>,

    /// Print the result as exactly one JSON document on stdout.
    // A value that is always "": the client's listings take `--json
    // [FIELDS]` under the same id, and a global flag's value is shared
    // with them (so `proxydeck --json projects list` works too).
    #[arg(long, global = true, num_args = 0, default_missing_value = "")]
    json: Option<String>,

    /// Log lines on stderr as human text or as one JSON object per line.
    #[arg(long, global = true, env = "PROXYDECK_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, value_name = "FORMAT")]
    log_format: LogFormat,
    /// Least severe log level shown (default: info when serving, warn
    /// otherwise). RUST_LOG, when set, takes precedence.
    #[arg(
        long,
        global = true,
        env = "PROXYDECK_LOG_LEVEL",
        value_enum,
        value_name = "LEVEL"
    )]
    log_level: Option<LogLevel>,

    #[command(flatten)]
    store: StoreArgs,

    #[command(subcommand)]
    command: Command,
}

/// `--version`: the package's version and the commit it was built from.
fn version() -> String {
    format!(
        "{} (commit {})",
        env!("CARGO_PKG_VERSION"),
        crate::BUILD_COMMIT
    )
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (applies pending migrations first).
    #[command(
        after_help = "Example:\n  PROXYDECK_DATABASE_URL=sqlite:///var/lib/proxydeck/data.db proxydeck serve --listen 0.0.0.0:8080"
    )]
    Serve(ServeArgs),
    /// Create an embedded store with demo data, print a working token and example requests, then serve.
    #[command(
        after_help = "Example:\n  proxydeck demo --listen 127.0.0.1:8080\n  proxydeck demo --json | head -1   # {\"url\": ..., \"token\": ...}"
    )]
    Demo(ServeArgs),
    /// Apply pending schema migrations and exit.
    #[command(
        after_help = "Example:\n  proxydeck migrate --database sqlite:///var/lib/proxydeck/data.db"
    )]
    Migrate,
    /// List, show, create, change and delete projects on a running proxydeck.
    Projects {
        #[command(subcommand)]
        command: client::ProjectsCommand,
    },
    /// List, create and delete your API tokens on a running proxydeck.
    Tokens {
        #[command(subcommand)]
        command: client::TokensCommand,
    },
    /// List, show, compare, create and activate a project's proxy settings
    /// revisions on a running proxydeck.
    #[command(name = "proxy-settings")]
    ProxySettings {
        #[command(subcommand)]
        command: client::ProxySettingsCommand,
    },
    /// Keep a folder in step with a project's (or an organization's
    /// projects') configuration through the change feed, running a command
    /// after each change.
    #[command(after_help = follow::AFTER_HELP)]
    Follow(follow::FollowArgs),
    /// Check an API token and keep it, with the API's URL, for the client
    /// commands (a profile in your configuration folder).
    #[command(
        after_help = "Examples:\n  proxydeck login --url http://127.0.0.1:8080   # asks for the token\n  proxydeck login --profile staging --url https://proxydeck.example < token.txt"
    )]
    Login(login::LoginArgs),
    /// Forget the URL and token `proxydeck login` kept.
    #[command(after_help = "Example:\n  proxydeck logout --profile staging")]
    Logout(login::LogoutArgs),
    /// Which URL and API token the client commands use, and whose it is.
    Auth {
        #[command(subcommand)]
        command: login::AuthCommand,
    },
    /// Administer organizations, users, tokens and data.
    #[command(after_help = "Example:\n  proxydeck admin org create --name \"Acme Corp\" --json")]
    Admin {
        #[command(subcommand)]
        command: admin::AdminCommand,
    },
    /// Check the configuration: flags, environment variables, --config file.
    #[command(
        after_help = "Example:\n  proxydeck --config /etc/proxydeck.toml config check --json"
    )]
    Config {
        #[command(subcommand)]
        command: config::ConfigCommand,
    },
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    #[command(
        after_help = "Examples:\n  proxydeck completions bash > ~/.local/share/bash-completion/completions/proxydeck\n  proxydeck completions zsh > ~/.zfunc/_proxydeck   # with fpath+=(~/.zfunc) in ~/.zshrc\n  proxydeck completions fish > ~/.config/fish/completions/proxydeck.fish"
    )]
    Completions(completions::CompletionsArgs),
    /// Write the manual pages: one for proxydeck and one for each command (proxydeck-serve.1, ...).
    #[command(
        after_help = "Example:\n  proxydeck man --dir ~/.local/share/man/man1 && man proxydeck-admin-token-create"
    )]
    Man(completions::ManArgs),
}

#[derive(Args, Debug)]
struct StoreArgs {
    /// Database connections: on SQLite the readers (plus one writer); on
    /// PostgreSQL all of them (at least 2), half for transactions, the rest
    /// shared by single statements.
    #[arg(
        long,
        global = true,
        env = "PROXYDECK_DB_POOL_SIZE",
        default_value_t = 4,
        value_name = "N"
    )]
    db_pool_size: u32,
    /// How long a request's store work may take: past it a read fails with
    /// 503, and a write rolls back and answers 503 (it changed nothing).
    #[arg(long, global = true, env = "PROXYDECK_DB_TIMEOUT", default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    db_timeout: Duration,
    /// How --database reaches PostgreSQL: `direct`, or `transaction`
    /// through a transaction pooler (pgbouncer's pool_mode = transaction):
    /// then no session options and no named prepared statements, and the
    /// migrations go through --database-direct-url.
    #[arg(
        long,
        global = true,
        env = "PROXYDECK_DATABASE_POOLER",
        value_enum,
        default_value_t = PoolerMode::Direct,
        value_name = "MODE"
    )]
    database_pooler: PoolerMode,
    /// With --database-pooler transaction: a URL that reaches PostgreSQL
    /// directly, for what needs a session of its own (the migrations,
    /// under their advisory lock). --database-password-file applies to it
    /// too.
    #[arg(
        long,
        global = true,
        env = "PROXYDECK_DATABASE_DIRECT_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    database_direct_url: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PoolerMode {
    Direct,
    Transaction,
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on: HOST:PORT (an IPv6 address in brackets).
    #[arg(
        long,
        env = "PROXYDECK_LISTEN",
        default_value = "127.0.0.1:8080",
        value_parser = parse_listen_address,
        value_name = "ADDR"
    )]
    listen: String,
    /// Serve /metrics (and the health endpoints, which stay on --listen
    /// too) on this address instead, such as a private 127.0.0.1:9090.
    #[arg(long, env = "PROXYDECK_ADMIN_LISTEN", value_parser = parse_listen_address, value_name = "ADDR")]
    admin_listen: Option<String>,
    /// Serve the web console at /console: `on` or `off`. It is a client of
    /// the API and can do nothing a token cannot.
    #[arg(long, env = "PROXYDECK_CONSOLE", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set, value_name = "on|off")]
    console: bool,
    /// How long an authenticated token is trusted without asking the store:
    /// the delay before a revocation made elsewhere takes effect.
    #[arg(long, env = "PROXYDECK_TOKEN_CACHE_TTL", default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    token_cache_ttl: Duration,
    /// How long a change feed stream stays silent before a heartbeat
    /// event: keep it below the idle timeout of the load balancer in front.
    #[arg(long, env = "PROXYDECK_FEED_HEARTBEAT", default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    feed_heartbeat: Duration,
    /// How long the change feed keeps changes: a follower whose cursor is
    /// older gets a reset event and lists again.
    #[arg(long, env = "PROXYDECK_FEED_RETENTION", default_value = "7d", value_parser = parse_duration, value_name = "DURATION")]
    feed_retention: Duration,
    /// How often token use (`last_used_at`) is written to the store.
    #[arg(long, env = "PROXYDECK_LAST_USED_FLUSH_INTERVAL", default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    last_used_flush_interval: Duration,
    /// A request head must be complete within this time of its first byte
    /// (the first request's, of connecting).
    #[arg(long, env = "PROXYDECK_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    header_read_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request;
    /// keep it above the idle timeout of the load balancer in front.
    #[arg(long, env = "PROXYDECK_IDLE_TIMEOUT", default_value = "75s", value_parser = parse_duration, value_name = "DURATION")]
    idle_timeout: Duration,
    /// Longest the client may take no byte of an answer being written;
    /// then the connection closes (a client that stops reading cannot hold
    /// it).
    #[arg(long, env = "PROXYDECK_WRITE_TIMEOUT", default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    write_timeout: Duration,
    /// Connections open at once, at most; beyond it new ones wait in the
    /// listen queue until one closes.
    #[arg(long, env = "PROXYDECK_MAX_CONNECTIONS", default_value = "10000", value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N")]
    max_connections: u32,
    /// Longest a request may take before it is answered with 503.
    #[arg(long, env = "PROXYDECK_REQUEST_TIMEOUT", default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    request_timeout: Duration,
    /// On SIGTERM/SIGINT, how long in-flight requests may take to finish.
    #[arg(long, env = "PROXYDECK_SHUTDOWN_GRACE", default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    shutdown_grace: Duration,
    /// Requests per second each API token may make, sustained (a decimal
    /// number); `off` or 0 turns per-token limits off.
    #[arg(long, env = "PROXYDECK_RATE_LIMIT", default_value = "1000", value_parser = parse_rate, value_name = "RATE")]
    rate_limit: Rate,
    /// Requests each API token may make at once [default: twice the rate].
    #[arg(long, env = "PROXYDECK_RATE_LIMIT_BURST", value_parser = clap::value_parser!(u32).range(1..=i64::from(rate_limit::MAX_BURST)), value_name = "N")]
    rate_limit_burst: Option<u32>,
    /// Share the per-token limits of every instance through this Redis
    /// (redis://[[user]:password@]host[:port][/db]); without it each
    /// instance limits on its own.
    #[arg(
        long,
        env = "PROXYDECK_RATE_LIMIT_REDIS",
        hide_env_values = true,
        value_name = "URL"
    )]
    rate_limit_redis: Option<String>,
    /// Read the rate limit Redis's password from this file (its one line).
    #[arg(
        long,
        env = "PROXYDECK_RATE_LIMIT_REDIS_PASSWORD_FILE",
        value_name = "FILE"
    )]
    rate_limit_redis_password_file: Option<PathBuf>,
    /// Failed authentications each client address may make a second,
    /// sustained (twice as many at once); beyond it the address gets 429
    /// instead of token look-ups. `off` or 0: no limit.
    #[arg(long, env = "PROXYDECK_AUTH_FAILURE_LIMIT", default_value = "10", value_parser = parse_rate, value_name = "RATE")]
    auth_failure_limit: Rate,
    /// The header in which a trusted proxy in front gives the client's
    /// address (its last address counts), such as X-Forwarded-For. Set it
    /// only behind such a proxy: clients could write it themselves.
    /// Default: the connection's own address.
    #[arg(long, env = "PROXYDECK_CLIENT_ADDRESS_HEADER", value_parser = parse_header_name, value_name = "NAME")]
    client_address_header: Option<axum::http::HeaderName>,
    /// The caches that are on: `all`, `none`, or a comma-separated list of
    /// token, shared-reads (PostgreSQL), recent-pages (SQLite). Answers are
    /// the same either way; only speed differs.
    #[arg(long, env = "PROXYDECK_CACHES", default_value = "all", value_parser = Caches::parse, value_name = "LIST")]
    caches: Caches,
    /// A read replica (streaming standby) of the PostgreSQL primary to read
    /// listings and objects from; repeat for several (or separate URLs by
    /// spaces). Writes, token look-ups and the change feed stay on the
    /// primary. --database-password-file applies to them too.
    #[arg(
        long = "database-replica",
        env = "PROXYDECK_DATABASE_REPLICA",
        value_delimiter = ' ',
        hide_env_values = true,
        value_name = "URL"
    )]
    database_replicas: Vec<String>,
    /// A replica further behind the primary than this is not read from
    /// until it catches up.
    #[arg(long, env = "PROXYDECK_REPLICA_MAX_LAG", default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    replica_max_lag: Duration,
    /// With --database-replica and several instances: a Redis they share,
    /// where each caller's last write is kept so that its next read sees it
    /// on any instance (redis://[[user]:password@]host[:port][/db]).
    /// Without it, an instance knows only the writes made through it.
    #[arg(
        long,
        env = "PROXYDECK_REPLICA_POSITIONS_REDIS",
        hide_env_values = true,
        value_name = "URL"
    )]
    replica_positions_redis: Option<String>,
}

/// `HOST:PORT`, checked for its form only, so that `config check` and a
/// file's value catch a typo: whether the host resolves and the port is
/// free shows when `serve` binds it.
/// Shorter heartbeats would keep a stream's task busy for nothing.
const MIN_FEED_HEARTBEAT: Duration = Duration::from_millis(100);

fn parse_listen_address(text: &str) -> Result<String, String> {
    match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
            Ok(text.to_owned())
        }
        _ => Err("write HOST:PORT, such as 127.0.0.1:8080 or [::1]:8080".into()),
    }
}

/// A switch: `on` or `off`.
fn parse_on_off(text: &str) -> Result<bool, String> {
    match text {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err("write on or off".into()),
    }
}

/// A header's name, as HTTP allows it.
fn parse_header_name(text: &str) -> Result<axum::http::HeaderName, String> {
    axum::http::HeaderName::try_from(text)
        .map_err(|_| format!("{text:?} is not a header name (such as X-Forwarded-For)"))
}

/// `--rate-limit`: requests per second, or `None` when off.
#[derive(Clone, Copy, Debug)]
struct Rate(Option<f64>);

fn parse_rate(text: &str) -> Result<Rate, String> {
    rate_limit::parse_rate(text).map(Rate)
}

impl ServeArgs {
    /// The read replicas to serve with, checked against the primary's
    /// `database`.
    fn replicas(
        &self,
        database: &DatabaseUrl,
        password_file: Option<&Path>,
        effective: &config::Effective,
    ) -> anyhow::Result<Replicas> {
        let refuse = |setting: &str, why: String| effective.refuse(setting, why);
        if self.replica_max_lag < Duration::from_millis(100) {
            return Err(refuse(
                "replica-max-lag",
                "--replica-max-lag: must be 100ms or more".into(),
            ));
        }
        let mut urls = Vec::with_capacity(self.database_replicas.len());
        for url in self.database_replicas.iter().filter(|url| !url.is_empty()) {
            if matches!(database, DatabaseUrl::Sqlite(_)) {
                return Err(refuse(
                    "database-replica",
                    "--database-replica: only a postgres:// database has replicas".into(),
                ));
            }
            let Ok(DatabaseUrl::Postgres(url)) = DatabaseUrl::parse(url) else {
                return Err(refuse(
                    "database-replica",
                    "--database-replica: write a postgres:// URL".into(),
                ));
            };
            urls.push(url_with_password_file(
                &url,
                password_file,
                "database-password-file",
                effective,
            )?);
        }
        let positions_redis = match self.replica_positions_redis.as_deref() {
            None => None,
            Some(_) if urls.is_empty() => {
                return Err(refuse(
                    "replica-positions-redis",
                    "--replica-positions-redis: only with --database-replica".into(),
                ));
            }
            Some(url) => {
                RedisUrl::parse(url).map_err(|why| {
                    refuse(
                        "replica-positions-redis",
                        format!("--replica-positions-redis {why}"),
                    )
                })?;
                Some(url.to_owned())
            }
        };
        Ok(Replicas {
            urls,
            max_lag: self.replica_max_lag,
            positions_redis,
        })
    }

    /// The options to serve with; an error names the setting and where
    /// its value came from (`effective`).
    fn options(&self, effective: &config::Effective) -> anyhow::Result<ServiceOptions> {
        let defaults = ServiceOptions::default();
        let policy = self
            .rate_limit
            .0
            .map(|rate| Policy::new(rate, self.rate_limit_burst))
            .transpose()
            .map_err(|why| {
                effective.refuse("rate-limit-burst", format!("--rate-limit-burst: {why}"))
            })?;
        // The URL is not repeated: it may hold a password.
        let redis = self
            .rate_limit_redis
            .as_deref()
            .map(|url| {
                let url = url_with_password_file(
                    url,
                    self.rate_limit_redis_password_file.as_deref(),
                    "rate-limit-redis-password-file",
                    effective,
                )?;
                RedisUrl::parse(&url).map_err(|why| {
                    effective.refuse("rate-limit-redis", format!("--rate-limit-redis {why}"))
                })
            })
            .transpose()?;
        if self.feed_heartbeat < MIN_FEED_HEARTBEAT {
            return Err(
                effective.refuse("feed-heartbeat", "--feed-heartbeat: must be 100ms or more")
            );
        }
        if redis.is_none() && self.rate_limit_redis_password_file.is_some() {
            return Err(effective.refuse(
                "rate-limit-redis-password-file",
                "--rate-limit-redis-password-file: there is no --rate-limit-redis to give it to",
            ));
        }
        Ok(ServiceOptions {
            listen: self.listen.clone(),
            admin_listen: self.admin_listen.clone(),
            console: self.console,
            auth: AuthOptions {
                cache: self.caches.token,
                cache_ttl: self.token_cache_ttl,
                usage_flush_interval: self.last_used_flush_interval,
                ..defaults.auth
            },
            server: ServerOptions {
                header_read_timeout: self.header_read_timeout,
                idle_timeout: self.idle_timeout,
                max_connections: self.max_connections as usize,
                shutdown_grace: self.shutdown_grace,
                write_timeout: self.write_timeout,
                ..defaults.server
            },
            limits: RequestLimits {
                timeout: self.request_timeout,
                ..defaults.limits
            },
            feed: FeedOptions {
                heartbeat: self.feed_heartbeat,
                retention: self.feed_retention,
                ..defaults.feed
            },
            rate_limit: RateLimitOptions {
                policy,
                redis,
                failures: self
                    .auth_failure_limit
                    .0
                    .map(|rate| Policy::new(rate, None))
                    .transpose()
                    .map_err(|why| {
                        effective
                            .refuse("auth-failure-limit", format!("--auth-failure-limit: {why}"))
                    })?,
                client_address_header: self.client_address_header.clone(),
            },
            ..defaults
        })
    }
}

/// Runs the command line; the exit status is 0 on success, 2 with a
/// one-line error on stderr for a bad command line or configuration file,
/// 3 when `follow --once`'s `--exec` failed, 1 with a one-line error for
/// any other failure.
pub fn main() -> ExitCode {
    let argv: Vec<_> = std::env::args_os().collect();
    let Parsed { cli, effective } = match config::parse(&argv) {
        Ok(parsed) => parsed,
        Err(Failure::File(error)) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
        // --help and --version are not errors.
        Err(Failure::Usage(error)) if !error.use_stderr() => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        // clap's usage errors run to several lines: keep what says what is
        // wrong, on one line.
        Err(Failure::Usage(error)) => {
            let text = error.to_string();
            let said: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more"))
                .filter(|line| !line.is_empty())
                .collect();
            let mut line = said.join(" ");
            if let Some(variable) = config::environment_source(&error, &argv) {
                line.push_str(&format!(" (the value of {variable})"));
            }
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let log = match init_logging(&cli) {
        Ok(log) => log,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    for warning in effective.passwords_on_the_command_line() {
        tracing::warn!("{warning}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return fail(&anyhow::Error::from(error)),
    };
    let outcome = runtime.block_on(run(cli, &effective));
    // Every line logged is out before the verdict: an error comes last.
    drop(log);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

fn fail(error: &anyhow::Error) -> ExitCode {
    // The reader of stdout went away (`proxydeck admin export | head`):
    // what it wanted, it has. Quiet, like other Unix tools.
    if error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    }) {
        return ExitCode::SUCCESS;
    }
    // One line, whatever the server or a file put in the message.
    eprintln!("error: {}", output::printable(&format!("{error:#}")));
    if error.is::<config::BadSetting>() {
        ExitCode::from(2)
    } else if error.is::<follow::ExecFailed>() {
        ExitCode::from(3)
    } else {
        ExitCode::FAILURE
    }
}

/// Serving logs each request at `info`, from a writer thread of its own;
/// the other commands stay quiet but for warnings, written in order with
/// the rest of their output.
fn init_logging(cli: &Cli) -> Result<LogGuard, String> {
    let serving = matches!(cli.command, Command::Serve(_) | Command::Demo(_));
    let logging = Logging {
        format: cli.log_format,
        level: cli.log_level,
        writer: if serving {
            LogWriter::Background
        } else {
            LogWriter::Inline
        },
    };
    logging.init(if serving {
        telemetry::SERVING
    } else {
        telemetry::QUIET
    })
}

/// `url` with the password of `file` (the setting `setting`) put in, when
/// a file is given.
fn url_with_password_file(
    url: &str,
    file: Option<&Path>,
    setting: &str,
    effective: &config::Effective,
) -> anyhow::Result<String> {
    let Some(file) = file else {
        return Ok(url.to_owned());
    };
    url_password::read_password_file(file)
        .and_then(|password| url_password::with_password(url, &password))
        .map_err(|why| effective.refuse(setting, format!("--{setting}: {why}")))
}

/// The database the settings name, and how its URL reaches it.
fn database_settings(
    database: &str,
    password_file: Option<&Path>,
    store: &StoreArgs,
    effective: &config::Effective,
) -> anyhow::Result<(DatabaseUrl, Pooler)> {
    let database = DatabaseUrl::parse(database).map_err(|why| effective.refuse("database", why))?;
    let database =
        match (database, password_file) {
            (DatabaseUrl::Postgres(url), Some(file)) => DatabaseUrl::Postgres(
                url_with_password_file(&url, Some(file), "database-password-file", effective)?,
            ),
            (DatabaseUrl::Sqlite(_), Some(_)) => {
                return Err(effective.refuse(
                    "database-password-file",
                    "--database-password-file: only a postgres:// database takes a password",
                ));
            }
            (database, None) => database,
        };
    let direct_url = store.database_direct_url.as_deref();
    let pooler = match (store.database_pooler, direct_url, &database) {
        (PoolerMode::Direct, None, _) => Pooler::Direct,
        (PoolerMode::Direct, Some(_), _) => {
            return Err(effective.refuse(
                "database-direct-url",
                "--database-direct-url: only with --database-pooler transaction",
            ));
        }
        (PoolerMode::Transaction, _, DatabaseUrl::Sqlite(_)) => {
            return Err(effective.refuse(
                "database-pooler",
                "--database-pooler: only a postgres:// database is reached through a pooler",
            ));
        }
        (PoolerMode::Transaction, None, _) => {
            return Err(effective.refuse(
                "database-pooler",
                "--database-pooler transaction needs --database-direct-url: the migrations \
                 take a session lock that a transaction pooler cannot keep",
            ));
        }
        (PoolerMode::Transaction, Some(url), _) => {
            let refuse = |why| effective.refuse("database-direct-url", why);
            let DatabaseUrl::Postgres(url) = DatabaseUrl::parse(url)
                .map_err(|why| refuse(format!("--database-direct-url: {why}")))?
            else {
                return Err(refuse(
                    "--database-direct-url: write a postgres:// URL".to_owned(),
                ));
            };
            let direct_url =
                url_with_password_file(&url, password_file, "database-password-file", effective)?;
            Pooler::Transaction { direct_url }
        }
    };
    Ok((database, pooler))
}

async fn run(cli: Cli, effective: &config::Effective) -> anyhow::Result<()> {
    // Only the commands that open the store (and `config check`) read
    // the database's settings: a client is not refused for them.
    let database = || {
        let password_file = cli.database_password_file.as_deref();
        database_settings(&cli.database, password_file, &cli.store, effective)
    };
    let out = Output {
        json: cli.json.is_some(),
    };
    let store_options = StoreOptions {
        pool_size: cli.store.db_pool_size,
        timeout: cli.store.db_timeout,
        ..StoreOptions::default()
    };
    match cli.command {
        Command::Serve(args) => {
            let options = args.options(effective)?;
            let shutdown = shutdown_signal()?;
            let (database, pooler) = database()?;
            let password_file = cli.database_password_file.as_deref();
            let store_options = StoreOptions {
                caches: args.caches,
                pooler,
                replicas: args.replicas(&database, password_file, effective)?,
                ..store_options
            };
            // The address first: a start that cannot listen runs no
            // migration.
            let listeners = Listeners::bind(&options).await?;
            let store = store::open(&database, &store_options).await?;
            let service = Service::on(listeners, Arc::new(store), options)?;
            service.run(shutdown).await;
            Ok(())
        }
        Command::Demo(args) => {
            let (database, pooler) = database()?;
            let store_options = StoreOptions {
                caches: args.caches,
                pooler,
                ..store_options
            };
            demo::run(&database, &store_options, args.options(effective)?, &out).await
        }
        Command::Migrate => {
            let (database, pooler) = database()?;
            store::open(
                &database,
                &StoreOptions {
                    pooler,
                    ..store_options
                },
            )
            .await?;
            out.print(&serde_json::json!({"migrated": true}), || {
                "the schema is up to date".into()
            })
        }
        Command::Admin { command } => {
            let (database, pooler) = database()?;
            let store = store::open(
                &database,
                &StoreOptions {
                    pooler,
                    ..store_options
                },
            )
            .await?;
            admin::run(command, Arc::new(store), &out).await
        }
        Command::Projects { command } => client::projects(command).await,
        Command::Tokens { command } => client::tokens(command).await,
        Command::ProxySettings { command } => client::proxy_settings(command).await,
        Command::Follow(args) => follow::follow(args).await,
        Command::Login(args) => login::login(args, &out).await,
        Command::Logout(args) => login::logout(args, &out),
        Command::Auth { command } => login::status(command, &out).await,
        // What serve checks before it opens the store, and nothing more.
        Command::Config {
            command: config::ConfigCommand::Check(args),
        } => {
            let (database, _) = database()?;
            let password_file = cli.database_password_file.as_deref();
            args.replicas(&database, password_file, effective)?;
            args.options(effective)?;
            config::print(effective, &out)
        }
        Command::Completions(args) => completions::completions(&args),
        Command::Man(args) => completions::man(&args, &out),
    }
}
