//! proxydeck: the management listings of an edge proxy platform (projects,
//! API tokens, proxy settings revisions) over HTTP.
//!
//! Layers, outside in: [`cli`] (the `proxydeck` command) builds an
//! [`app::Service`], which puts the [`http`] router on a socket; handlers
//! authenticate callers with [`auth`] and read through the [`store::Store`]
//! interface, and count requests against per-token [`rate_limit`]s;
//! [`domain`] holds the resources and rules that all of them share. The
//! web [`console`] is served by the router and is a client of the API.
//!
//! The command line is three programs, each in its folder: [`cli`]
//! (`main`, its arguments, serving, the configuration, the operator's
//! commands), `client` (the terminal client: its HTTP calls and its
//! commands, one file per command group) and `follow` (the agent that
//! keeps an edge's files in step with the change feed, a client of the
//! API too); what they print is `output`'s. `cli` stands above `follow`,
//! `follow` above `client`, `client` above `output`.

// CI lints as it builds the tests (.ci/run, "lint and build the tests"):
// clippy's driver compiles this package, asked with `--cfg
// proxydeck_lint`. Should it stop doing so, the build fails here rather
// than go on unlinted.
#[cfg(all(proxydeck_lint, not(clippy)))]
compile_error!(
    "--cfg proxydeck_lint: this build must be compiled by clippy-driver (RUSTC_WORKSPACE_WRAPPER)"
);

pub mod app;
pub mod auth;
pub mod cli;
mod client;
pub mod clock;
pub mod console;
pub mod dns;
pub mod domain;
pub mod domain_checks;
pub mod feed;
mod follow;
pub mod http;
pub mod mail;
pub mod metrics;
mod output;
pub mod quotas;
pub mod rate_limit;
pub mod rollouts;
mod shared_redis;
pub mod store;
pub mod telemetry;
mod tls_roots;

/// The commit this binary was built from (build.rs): 12 hex digits, with
/// `-dirty` when tracked files had changes, or `unknown` outside a git
/// checkout (`PROXYDECK_BUILD_COMMIT` at build time overrides it).
pub const BUILD_COMMIT: &str = env!("PROXYDECK_COMMIT");
