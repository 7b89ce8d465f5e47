//! Serving: what `serve` (and `demo`, and `config check`) make of their
//! settings: the service's options, the read replicas, the database and
//! how its URL reaches it; each setting refused names where its value
//! came from.

use std::path::Path;
use std::time::Duration;

use super::args::{PoolerMode, ServeArgs, StoreArgs};
use super::config;
use crate::app::ServiceOptions;
use crate::auth::AuthOptions;
use crate::domain::domains::CheckSchedule;
use crate::domain::url_password;
use crate::domain_checks::DomainOptions;
use crate::feed::FeedOptions;
use crate::http::RequestLimits;
use crate::http::transport::server::ServerOptions;
use crate::mail::{InvitationOptions, SmtpOptions};
use crate::quotas::QuotaOptions;
use crate::rate_limit::redis::RedisUrl;
use crate::rate_limit::{Policy, RateLimitOptions};
use crate::store::operations::domains::DomainLimits;
use crate::store::{DatabaseUrl, Pooler, Replicas};

/// Shorter heartbeats would keep a stream's task busy for nothing.
const MIN_FEED_HEARTBEAT: Duration = Duration::from_millis(100);

impl ServeArgs {
    /// The read replicas to serve with, checked against the primary's
    /// `database`.
    pub fn replicas(
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
        let password_file = self.replica_positions_redis_password_file.as_deref();
        let positions_redis = match self.replica_positions_redis.as_deref() {
            None if password_file.is_some() => {
                return Err(refuse(
                    "replica-positions-redis-password-file",
                    "--replica-positions-redis-password-file: there is no --replica-positions-redis to give it to".into(),
                ));
            }
            None => None,
            Some(_) if urls.is_empty() => {
                return Err(refuse(
                    "replica-positions-redis",
                    "--replica-positions-redis: only with --database-replica".into(),
                ));
            }
            Some(url) => {
                // The URL is not repeated: it may hold a password.
                let url = url_with_password_file(
                    url,
                    password_file,
                    "replica-positions-redis-password-file",
                    effective,
                )?;
                RedisUrl::parse(&url).map_err(|why| {
                    refuse(
                        "replica-positions-redis",
                        format!("--replica-positions-redis {why}"),
                    )
                })?;
                Some(url)
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
    pub fn options(&self, effective: &config::Effective) -> anyhow::Result<ServiceOptions> {
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
        let invitations = self.invitation_options(effective)?;
        Ok(ServiceOptions {
            invitations,
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
            quotas: QuotaOptions {
                follows_per_token: self.feed_follows_per_token,
                follows_per_user: self.feed_follows_per_user,
                tokens_per_user_per_hour: self.tokens_per_user_per_hour,
                edge_reports_per_project: self.edge_reports_per_project,
                organization_creation: self.organization_creation,
                organizations_per_user_per_hour: self.organizations_per_user_per_hour,
            },
            domains: DomainOptions {
                resolver: self.dns_resolver,
                lookup_timeout: self.dns_timeout,
                in_flight: self.dns_checks_in_flight as usize,
                schedule: CheckSchedule {
                    grace_millis: millis(self.domain_grace),
                    recheck_millis: millis(self.domain_recheck),
                    ..CheckSchedule::default()
                },
                limits: DomainLimits {
                    per_project: self.domains_per_project,
                    pending_per_organization: self.pending_domains_per_organization,
                },
                ..defaults.domains
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

impl ServeArgs {
    /// `--invitation-ttl`, the hourly bound, `--public-url` and SMTP: an
    /// SMTP URL needs a sender and the public URL the links are made of.
    fn invitation_options(
        &self,
        effective: &config::Effective,
    ) -> anyhow::Result<InvitationOptions> {
        let public_url = self
            .public_url
            .as_deref()
            .map(|url| {
                let parsed = url::Url::parse(url).ok().filter(|parsed| {
                    matches!(parsed.scheme(), "http" | "https")
                        && parsed.host().is_some()
                        && parsed.query().is_none()
                        && parsed.fragment().is_none()
                });
                match parsed {
                    Some(_) => Ok(url.trim_end_matches('/').to_owned()),
                    None => Err(effective.refuse(
                        "public-url",
                        "--public-url: write the service's address as people reach it, \
                         such as https://deck.example.com",
                    )),
                }
            })
            .transpose()?;
        let smtp = match (&self.smtp_url, &self.smtp_from) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(effective.refuse(
                    "smtp-from",
                    "--smtp-from: there is no --smtp-url to send from",
                ));
            }
            (Some(_), None) => {
                return Err(effective.refuse(
                    "smtp-url",
                    "--smtp-url needs --smtp-from: the sender of invitations' emails",
                ));
            }
            (Some(url), Some(from)) => {
                let smtp = SmtpOptions {
                    url: url.clone(),
                    from: from.clone(),
                };
                smtp.check().map_err(|why| {
                    let setting = if why.starts_with("--smtp-url") {
                        "smtp-url"
                    } else {
                        "smtp-from"
                    };
                    effective.refuse(setting, why)
                })?;
                Some(smtp)
            }
        };
        if smtp.is_some() && public_url.is_none() {
            return Err(effective.refuse(
                "smtp-url",
                "--smtp-url needs --public-url: the address invitations' links lead to",
            ));
        }
        Ok(InvitationOptions {
            ttl: self.invitation_ttl,
            per_organization_per_hour: self.invitations_per_organization_per_hour,
            public_url,
            smtp,
        })
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
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
pub fn database_settings(
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
