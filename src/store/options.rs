//! What a store is opened with.

use std::time::Duration;

use crate::clock::Clock;
pub use crate::store::cache::Caches;

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
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            pool_size: 4,
            timeout: Duration::from_secs(2),
            caches: Caches::ALL,
            clock: Clock::system(),
        }
    }
}
