//! What a store is opened with.

use std::time::Duration;

use crate::clock::Clock;

/// Knobs shared by the backends.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// SQLite: reader connections; PostgreSQL: all connections (split by
    /// `postgres::connection_split`).
    pub pool_size: u32,
    /// How long a query may wait for the store (a connection, a lock)
    /// before it fails as unavailable.
    pub timeout: Duration,
    /// Which caches of the read path are on.
    pub caches: Caches,
    /// Where the store's file checks read the time (tests move their own).
    pub clock: Clock,
    /// PostgreSQL: how the database URL reaches the server.
    pub pooler: Pooler,
    /// PostgreSQL: read replicas to read from (`serve` only).
    pub replicas: Replicas,
}

/// Read replicas of the PostgreSQL primary (`--database-replica`), read
/// from as `store/postgres/replicas.rs` says.
#[derive(Clone, PartialEq, Eq)]
pub struct Replicas {
    /// Their URLs (each may hold a password); none: every read goes to
    /// the primary.
    pub urls: Vec<String>,
    /// A replica further behind the primary than this is not read from.
    pub max_lag: Duration,
    /// A Redis that every instance shares, where each caller's last write
    /// is kept: without it an instance knows only the writes it made.
    pub positions_redis: Option<String>,
}

impl Default for Replicas {
    fn default() -> Self {
        Self {
            urls: Vec::new(),
            max_lag: Duration::from_secs(5),
            positions_redis: None,
        }
    }
}

// The URLs may hold passwords.
impl std::fmt::Debug for Replicas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let masked: Vec<_> = self
            .urls
            .iter()
            .map(|url| crate::domain::url_password::masked(url))
            .collect();
        f.debug_struct("Replicas")
            .field("urls", &masked)
            .field("max_lag", &self.max_lag)
            .field(
                "positions_redis",
                &self.positions_redis.as_ref().map(|_| "<hidden>"),
            )
            .finish()
    }
}

/// How the PostgreSQL URL reaches the server (`--database-pooler`).
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Pooler {
    /// Straight to PostgreSQL (or through a session pooler): sessions
    /// keep their settings and prepared statements.
    #[default]
    Direct,
    /// Through a transaction pooler (pgbouncer's `pool_mode =
    /// transaction`), which hands each transaction to whichever server
    /// connection is free: no session settings, no named prepared
    /// statements. What needs a session of its own (the migrations, under
    /// their advisory lock) goes to `direct_url`.
    Transaction { direct_url: String },
}

// The direct URL may hold a password.
impl std::fmt::Debug for Pooler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Direct => f.write_str("Direct"),
            Self::Transaction { direct_url } => f
                .debug_struct("Transaction")
                .field(
                    "direct_url",
                    &crate::domain::url_password::masked(direct_url),
                )
                .finish(),
        }
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            pool_size: 4,
            timeout: Duration::from_secs(2),
            caches: Caches::ALL,
            clock: Clock::system(),
            pooler: Pooler::Direct,
            replicas: Replicas::default(),
        }
    }
}

/// Which caches are on (`--caches`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caches {
    /// Authenticated tokens, for `--token-cache-ttl` (`auth.rs`).
    pub token: bool,
    /// PostgreSQL: identical reads at the same time share one statement.
    pub shared_reads: bool,
    /// SQLite: pages answered again while nothing committed.
    pub recent_pages: bool,
}

/// The names `--caches` takes, in [`Caches`]' order.
pub const CACHE_NAMES: [&str; 3] = ["token", "shared-reads", "recent-pages"];

impl Caches {
    pub const ALL: Self = Self {
        token: true,
        shared_reads: true,
        recent_pages: true,
    };
    pub const NONE: Self = Self {
        token: false,
        shared_reads: false,
        recent_pages: false,
    };

    /// `all`, `none`, or a comma-separated list of [`CACHE_NAMES`]: those
    /// on, the others off.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "all" => return Ok(Self::ALL),
            "none" => return Ok(Self::NONE),
            _ => {}
        }
        let mut caches = Self::NONE;
        for name in text.split(',').map(str::trim) {
            let flag = match name {
                "token" => &mut caches.token,
                "shared-reads" => &mut caches.shared_reads,
                "recent-pages" => &mut caches.recent_pages,
                _ => {
                    return Err(format!(
                        "unknown cache {name:?}: write all, none, or a comma-separated list of {}",
                        CACHE_NAMES.join(", ")
                    ));
                }
            };
            *flag = true;
        }
        Ok(caches)
    }
}

impl std::fmt::Display for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = [self.token, self.shared_reads, self.recent_pages];
        match on {
            [true, true, true] => f.write_str("all"),
            [false, false, false] => f.write_str("none"),
            _ => {
                let names: Vec<&str> = CACHE_NAMES
                    .iter()
                    .zip(on)
                    .filter_map(|(name, on)| on.then_some(*name))
                    .collect();
                f.write_str(&names.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_are_named_all_none_or_listed() {
        assert_eq!(Caches::parse("all"), Ok(Caches::ALL));
        assert_eq!(Caches::parse("none"), Ok(Caches::NONE));
        let some = Caches::parse("token, recent-pages").unwrap();
        assert_eq!(
            some,
            Caches {
                token: true,
                recent_pages: true,
                ..Caches::NONE
            }
        );
        assert_eq!(some.to_string(), "token,recent-pages");
        assert!(
            Caches::parse("page-memory").is_err(),
            "gone: it bought nothing"
        );
        assert_eq!(Caches::ALL.to_string(), "all");
        assert_eq!(Caches::NONE.to_string(), "none");
        let refused = Caches::parse("tokens").unwrap_err();
        assert!(
            refused.contains("\"tokens\"") && refused.contains("shared-reads"),
            "{refused}"
        );
        assert!(Caches::parse("").is_err());
    }
}
