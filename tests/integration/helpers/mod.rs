//! The test harness: the real service on a loopback port, on a real SQLite
//! file in a fresh temporary folder or a real PostgreSQL schema of its own,
//! talked to over HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use proxydeck::app::{Service, ServiceOptions};
use proxydeck::auth::{AuthOptions, Authenticator};
pub use proxydeck::clock::Clock;
use proxydeck::domain::api_token::ApiToken;
use proxydeck::domain::import::{ImportBatch, ImportError, ObjectCounts, parse_line};
use proxydeck::domain::organization_set::OrganizationSet;
use proxydeck::domain::time::Timestamp;
use proxydeck::store::{
    self, Caches, DatabaseUrl, NewToken, Pooler, PostgresSettings, Store, StoreOptions,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The store's operations the tests run directly, as the service and the
/// operator's commands do.
pub use proxydeck::store::operations::auth::{FindToken, RecordTokenUses};
pub use proxydeck::store::operator::admin::{
    CreateOrganization, CreateToken, CreateUser, RemoveProject, RevokeToken,
};
pub use proxydeck::store::operator::export::{AllOrganizations, CountObjects, UserTokens};
pub use proxydeck::store::operator::health::Ping;
pub use proxydeck::store::operator::import::Import;

mod postgres_setup;
pub use postgres_setup::*;
mod test_store;
pub use test_store::*;
mod test_app;
pub use test_app::*;
mod fixtures;
pub use fixtures::*;
mod properties;
pub use properties::*;
mod faults;
pub use faults::*;
mod writes;
pub use writes::*;
mod feed;
pub use feed::*;
mod dns_server;
pub use dns_server::*;
mod tls;
pub use tls::*;
mod smtp;
pub use smtp::*;

/// Token cache lifetime in tests: long, so that an entry goes only when a
/// test moves the service's clock past it (`app.clock.advance(CACHE_TTL)`).
pub const CACHE_TTL: Duration = Duration::from_secs(3600);
/// `last_used_at` flush period in tests.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// A client builder for loopback tests: no proxy, and the TLS provider the
/// crate's reqwest build expects installed.
pub fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy()
}

pub fn test_options() -> ServiceOptions {
    ServiceOptions {
        clock: Clock::adjustable(),
        listen: "127.0.0.1:0".into(),
        auth: AuthOptions {
            cache: suite_caches().token,
            cache_ttl: CACHE_TTL,
            usage_flush_interval: FLUSH_INTERVAL,
            ..AuthOptions::default()
        },
        ..ServiceOptions::default()
    }
}

/// The caches the suite's services run with: every one, unless
/// `PROXYDECK_TEST_CACHES` says otherwise (`none`, as in CI's second run:
/// no answer may depend on a cache). Tests of a cache itself set theirs.
pub fn suite_caches() -> Caches {
    match std::env::var("PROXYDECK_TEST_CACHES") {
        Ok(caches) => Caches::parse(&caches).expect("PROXYDECK_TEST_CACHES names caches"),
        Err(_) => Caches::ALL,
    }
}

/// Store options with the suite's caches ([`suite_caches`]).
pub fn suite_store_options() -> StoreOptions {
    StoreOptions {
        caches: suite_caches(),
        ..StoreOptions::default()
    }
}

/// The store backends the behavioural suite runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Ends the test early, after a loud line, when `$backend` cannot be
/// reached here (see [`unavailable`]).
macro_rules! require {
    ($backend:expr) => {
        if crate::helpers::unavailable($backend) {
            return;
        }
    };
}
pub(crate) use require;
