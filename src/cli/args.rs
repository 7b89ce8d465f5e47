//! The `proxydeck` command line's argument tree (clap): the global
//! settings, every command, and what `serve` (and `demo`, and `config
//! check`) take. A client command's own arguments stand with it
//! (`client::commands`), `follow`'s with it (`follow::args`), `admin`'s
//! in `admin`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use clap_complete::Shell;

use super::admin;
use crate::client::commands::{domains, login, projects, proxy_settings, teams, tokens};
use crate::follow::{self, FollowArgs};
use crate::output::duration::parse_duration;
use crate::rate_limit;
use crate::store::Caches;
use crate::telemetry::{LogFormat, LogLevel};

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
    pub config: Option<PathBuf>,

    /// Where the data lives: sqlite://PATH (embedded store) or postgres://...
    #[arg(
        long,
        global = true,
        env = "PROXYDECK_DATABASE_URL",
        hide_env_values = true,
        default_value = "sqlite://proxydeck.db",
        value_name = "URL"
    )]
    pub database: String,
    /// Read the database's password from this file (its one line), so
    /// that it shows neither in the process list nor in the URL.
    #[arg(
        long,
        global = true,
        env = "PROXYDECK_DATABASE_PASSWORD_FILE",
        value_name = "FILE"
    )]
    pub database_password_file: Option<PathBuf>,

    /// Print the result as exactly one JSON document on stdout.
    // A value that is always "": the client's listings take `--json
    // [FIELDS]` under the same id, and a global flag's value is shared
    // with them (so `proxydeck --json projects list` works too).
    #[arg(long, global = true, num_args = 0, default_missing_value = "")]
    pub json: Option<String>,

    /// Log lines on stderr as human text or as one JSON object per line.
    #[arg(long, global = true, env = "PROXYDECK_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, value_name = "FORMAT")]
    pub log_format: LogFormat,
    /// Least severe log level shown (default: info when serving, warn
    /// otherwise). RUST_LOG, when set, takes precedence.
    #[arg(
        long,
        global = true,
        env = "PROXYDECK_LOG_LEVEL",
        value_enum,
        value_name = "LEVEL"
    )]
    pub log_level: Option<LogLevel>,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(subcommand)]
    pub command: Command,
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
pub enum Command {
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
        command: projects::ProjectsCommand,
    },
    /// List, create and delete your API tokens on a running proxydeck.
    Tokens {
        #[command(subcommand)]
        command: tokens::TokensCommand,
    },
    /// List, show, compare, create and activate a project's proxy settings
    /// revisions on a running proxydeck.
    #[command(name = "proxy-settings")]
    ProxySettings {
        #[command(subcommand)]
        command: proxy_settings::ProxySettingsCommand,
    },
    /// List, add, verify (by DNS) and remove a project's custom domains on
    /// a running proxydeck.
    Domains {
        #[command(subcommand)]
        command: domains::DomainsCommand,
    },
    /// List, create, rename and delete your organizations on a running
    /// proxydeck.
    Org {
        #[command(subcommand)]
        command: teams::OrgCommand,
    },
    /// List an organization's members, change a member's role, remove a
    /// member or leave.
    Members {
        #[command(subcommand)]
        command: teams::MembersCommand,
    },
    /// Invite someone by email to an organization: they are sent the link
    /// to accept, or it is printed to pass on.
    #[command(after_help = teams::INVITE_AFTER_HELP)]
    Invite(teams::InviteArgs),
    /// List and revoke an organization's invitations; accept one.
    Invitations {
        #[command(subcommand)]
        command: teams::InvitationsCommand,
    },
    /// Keep a folder in step with a project's (or an organization's
    /// projects') configuration through the change feed, running a command
    /// after each change.
    #[command(after_help = follow::AFTER_HELP)]
    Follow(FollowArgs),
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
        command: ConfigCommand,
    },
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    #[command(
        after_help = "Examples:\n  proxydeck completions bash > ~/.local/share/bash-completion/completions/proxydeck\n  proxydeck completions zsh > ~/.zfunc/_proxydeck   # with fpath+=(~/.zfunc) in ~/.zshrc\n  proxydeck completions fish > ~/.config/fish/completions/proxydeck.fish"
    )]
    Completions(CompletionsArgs),
    /// Write the manual pages: one for proxydeck and one for each command (proxydeck-serve.1, ...).
    #[command(
        after_help = "Example:\n  proxydeck man --dir ~/.local/share/man/man1 && man proxydeck-admin-token-create"
    )]
    Man(ManArgs),
}

#[derive(Args, Debug)]
pub struct StoreArgs {
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
    pub db_pool_size: u32,
    /// How long a request's store work may take: past it a read fails with
    /// 503, and a write rolls back and answers 503 (it changed nothing).
    #[arg(long, global = true, env = "PROXYDECK_DB_TIMEOUT", default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub db_timeout: Duration,
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
    pub database_pooler: PoolerMode,
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
    pub database_direct_url: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PoolerMode {
    Direct,
    Transaction,
}

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on: HOST:PORT (an IPv6 address in brackets).
    #[arg(
        long,
        env = "PROXYDECK_LISTEN",
        default_value = "127.0.0.1:8080",
        value_parser = parse_listen_address,
        value_name = "ADDR"
    )]
    pub listen: String,
    /// Serve /metrics (and the health endpoints, which stay on --listen
    /// too) on this address instead, such as a private 127.0.0.1:9090.
    #[arg(long, env = "PROXYDECK_ADMIN_LISTEN", value_parser = parse_listen_address, value_name = "ADDR")]
    pub admin_listen: Option<String>,
    /// Serve the web console at /console: `on` or `off`. It is a client of
    /// the API and can do nothing a token cannot.
    #[arg(long, env = "PROXYDECK_CONSOLE", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set, value_name = "on|off")]
    pub console: bool,
    /// How long an authenticated token is trusted without asking the store:
    /// the delay before a revocation made elsewhere takes effect.
    #[arg(long, env = "PROXYDECK_TOKEN_CACHE_TTL", default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub token_cache_ttl: Duration,
    /// How long a change feed stream stays silent before a heartbeat
    /// event: keep it below the idle timeout of the load balancer in front.
    #[arg(long, env = "PROXYDECK_FEED_HEARTBEAT", default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    pub feed_heartbeat: Duration,
    /// How long the change feed keeps changes: a follower whose cursor is
    /// older gets a reset event and lists again.
    #[arg(long, env = "PROXYDECK_FEED_RETENTION", default_value = "7d", value_parser = parse_duration, value_name = "DURATION")]
    pub feed_retention: Duration,
    /// How often token use (`last_used_at`) is written to the store.
    #[arg(long, env = "PROXYDECK_LAST_USED_FLUSH_INTERVAL", default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    pub last_used_flush_interval: Duration,
    /// A request head must be complete within this time of its first byte
    /// (the first request's, of connecting).
    #[arg(long, env = "PROXYDECK_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub header_read_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request;
    /// keep it above the idle timeout of the load balancer in front.
    #[arg(long, env = "PROXYDECK_IDLE_TIMEOUT", default_value = "75s", value_parser = parse_duration, value_name = "DURATION")]
    pub idle_timeout: Duration,
    /// Longest the client may take no byte of an answer being written;
    /// then the connection closes (a client that stops reading cannot hold
    /// it).
    #[arg(long, env = "PROXYDECK_WRITE_TIMEOUT", default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub write_timeout: Duration,
    /// Connections open at once, at most; beyond it new ones wait in the
    /// listen queue until one closes.
    #[arg(long, env = "PROXYDECK_MAX_CONNECTIONS", default_value = "10000", value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N")]
    pub max_connections: u32,
    /// Change feed streams and long polls one API token may hold open at
    /// once on this instance; beyond it, 429 with Retry-After.
    #[arg(long, env = "PROXYDECK_FEED_FOLLOWS_PER_TOKEN", default_value = "20", value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N")]
    pub feed_follows_per_token: u32,
    /// Change feed streams and long polls one user may hold open at once on
    /// this instance, whatever tokens they use; beyond it, 429.
    #[arg(long, env = "PROXYDECK_FEED_FOLLOWS_PER_USER", default_value = "50", value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N")]
    pub feed_follows_per_user: u32,
    /// API tokens one user may create in an hour (revoked ones count);
    /// beyond it, 429 with Retry-After.
    #[arg(long, env = "PROXYDECK_TOKENS_PER_USER_PER_HOUR", default_value = "100", value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N")]
    pub tokens_per_user_per_hour: u32,
    /// Edge reports one project keeps; a new edge name past it replaces the
    /// oldest stale report, or is refused (409) when none is stale.
    #[arg(long, env = "PROXYDECK_EDGE_REPORTS_PER_PROJECT", default_value = "1000", value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N")]
    pub edge_reports_per_project: u32,
    /// Who creates organizations: any user (createOrganization), or only
    /// the operator (`admin org create`; createOrganization is a 403).
    #[arg(
        long,
        env = "PROXYDECK_ORGANIZATION_CREATION",
        default_value = "anyone",
        value_name = "WHO"
    )]
    pub organization_creation: crate::quotas::OrganizationCreation,
    /// Organizations one user may create in an hour (deleted ones count);
    /// beyond it, 429 with Retry-After.
    #[arg(long, env = "PROXYDECK_ORGANIZATIONS_PER_USER_PER_HOUR", default_value = "10", value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N")]
    pub organizations_per_user_per_hour: u32,
    /// The DNS server custom domains' checks ask (HOST:PORT, an IP
    /// address); the system's resolvers (/etc/resolv.conf) by default.
    #[arg(long, env = "PROXYDECK_DNS_RESOLVER", value_name = "HOST:PORT")]
    pub dns_resolver: Option<std::net::SocketAddr>,
    /// Longest one DNS lookup of a domain's check may take, tries included.
    #[arg(long, env = "PROXYDECK_DNS_TIMEOUT", default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub dns_timeout: Duration,
    /// DNS lookups of domains' checks in flight at once, at most.
    #[arg(long, env = "PROXYDECK_DNS_CHECKS_IN_FLIGHT", default_value = "16", value_parser = clap::value_parser!(u32).range(1..=1024), value_name = "N")]
    pub dns_checks_in_flight: u32,
    /// How long a verified domain keeps routing once its DNS record is
    /// missing, before it is pending again.
    #[arg(long, env = "PROXYDECK_DOMAIN_GRACE", default_value = "24h", value_parser = parse_duration, value_name = "DURATION")]
    pub domain_grace: Duration,
    /// How often a verified domain's DNS record is checked again.
    #[arg(long, env = "PROXYDECK_DOMAIN_RECHECK", default_value = "1h", value_parser = parse_duration, value_name = "DURATION")]
    pub domain_recheck: Duration,
    /// Domains one project holds at most.
    #[arg(long, env = "PROXYDECK_DOMAINS_PER_PROJECT", default_value = "100", value_parser = clap::value_parser!(u32).range(1..=100_000), value_name = "N")]
    pub domains_per_project: u32,
    /// Domains not verified yet one organization holds at most.
    #[arg(long, env = "PROXYDECK_PENDING_DOMAINS_PER_ORGANIZATION", default_value = "1000", value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N")]
    pub pending_domains_per_organization: u32,
    /// How long an invitation may be accepted (docs/teams.md).
    #[arg(long, env = "PROXYDECK_INVITATION_TTL", default_value = "7d", value_parser = parse_duration, value_name = "DURATION")]
    pub invitation_ttl: Duration,
    /// Invitations one organization may create in an hour (deleted and
    /// accepted ones count); beyond it, 429 with Retry-After.
    #[arg(long, env = "PROXYDECK_INVITATIONS_PER_ORGANIZATION_PER_HOUR", default_value = "20", value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N")]
    pub invitations_per_organization_per_hour: u32,
    /// The SMTP server invitations are sent through: smtp://HOST[:PORT]
    /// (STARTTLS when offered; insisted on with ?tls=required) or
    /// smtps://HOST[:PORT] (TLS from the start), with
    /// USER:PASSWORD@ when it asks; needs --smtp-from and --public-url.
    /// Without it, createInvitation answers the link instead.
    #[arg(
        long,
        env = "PROXYDECK_SMTP_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub smtp_url: Option<String>,
    /// The sender of invitations' emails, such as "proxydeck <deck@example.com>".
    #[arg(long, env = "PROXYDECK_SMTP_FROM", value_name = "ADDRESS")]
    pub smtp_from: Option<String>,
    /// The service's address as people reach it (https://deck.example.com):
    /// the base of invitations' links; the request's own origin otherwise.
    #[arg(long, env = "PROXYDECK_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// Longest a request may take before it is answered with 503.
    #[arg(long, env = "PROXYDECK_REQUEST_TIMEOUT", default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub request_timeout: Duration,
    /// On SIGTERM/SIGINT, how long in-flight requests may take to finish.
    #[arg(long, env = "PROXYDECK_SHUTDOWN_GRACE", default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub shutdown_grace: Duration,
    /// Requests per second each API token may make, sustained (a decimal
    /// number); `off` or 0 turns per-token limits off.
    #[arg(long, env = "PROXYDECK_RATE_LIMIT", default_value = "1000", value_parser = parse_rate, value_name = "RATE")]
    pub rate_limit: Rate,
    /// Requests each API token may make at once [default: twice the rate].
    #[arg(long, env = "PROXYDECK_RATE_LIMIT_BURST", value_parser = clap::value_parser!(u32).range(1..=i64::from(rate_limit::MAX_BURST)), value_name = "N")]
    pub rate_limit_burst: Option<u32>,
    /// Share the per-token limits of every instance through this Redis
    /// (redis://[[user]:password@]host[:port][/db]); without it each
    /// instance limits on its own.
    #[arg(
        long,
        env = "PROXYDECK_RATE_LIMIT_REDIS",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub rate_limit_redis: Option<String>,
    /// Read the rate limit Redis's password from this file (its one line).
    #[arg(
        long,
        env = "PROXYDECK_RATE_LIMIT_REDIS_PASSWORD_FILE",
        value_name = "FILE"
    )]
    pub rate_limit_redis_password_file: Option<PathBuf>,
    /// Failed authentications each client address may make a second,
    /// sustained (twice as many at once); beyond it the address gets 429
    /// instead of token look-ups. `off` or 0: no limit.
    #[arg(long, env = "PROXYDECK_AUTH_FAILURE_LIMIT", default_value = "10", value_parser = parse_rate, value_name = "RATE")]
    pub auth_failure_limit: Rate,
    /// The header in which a trusted proxy in front gives the client's
    /// address (its last address counts), such as X-Forwarded-For. Set it
    /// only behind such a proxy: clients could write it themselves.
    /// Default: the connection's own address.
    #[arg(long, env = "PROXYDECK_CLIENT_ADDRESS_HEADER", value_parser = parse_header_name, value_name = "NAME")]
    pub client_address_header: Option<axum::http::HeaderName>,
    /// The caches that are on: `all`, `none`, or a comma-separated list of
    /// token, shared-reads (PostgreSQL), recent-pages (SQLite). Answers are
    /// the same either way; only speed differs.
    #[arg(long, env = "PROXYDECK_CACHES", default_value = "all", value_parser = Caches::parse, value_name = "LIST")]
    pub caches: Caches,
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
    pub database_replicas: Vec<String>,
    /// A replica further behind the primary than this is not read from
    /// until it catches up.
    #[arg(long, env = "PROXYDECK_REPLICA_MAX_LAG", default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub replica_max_lag: Duration,
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
    pub replica_positions_redis: Option<String>,
    /// Read the replica positions' Redis's password from this file (its
    /// one line).
    #[arg(
        long,
        env = "PROXYDECK_REPLICA_POSITIONS_REDIS_PASSWORD_FILE",
        value_name = "FILE"
    )]
    pub replica_positions_redis_password_file: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Check the configuration as `serve` would (flags, environment
    /// variables, the --config file), without opening the store or
    /// listening, and print every setting's value and where it came from.
    #[command(
        after_help = "Example:\n  proxydeck --config /etc/proxydeck.toml config check\n  PROXYDECK_CONFIG=/etc/proxydeck.toml proxydeck config check --json"
    )]
    Check(ServeArgs),
}

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// The folder to write the pages in (made when missing), such as
    /// ~/.local/share/man/man1; an existing page of the same name is
    /// replaced.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub dir: PathBuf,
}

/// `HOST:PORT`, checked for its form only, so that `config check` and a
/// file's value catch a typo: whether the host resolves and the port is
/// free shows when `serve` binds it.
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
pub struct Rate(pub Option<f64>);

fn parse_rate(text: &str) -> Result<Rate, String> {
    rate_limit::parse_rate(text).map(Rate)
}
