//! Integration tests: the real service over loopback HTTP, on real SQLite
//! files and real PostgreSQL schemas. One binary, so they build once.
#![recursion_limit = "256"]
// The behavioural modules are compiled once per backend, on purpose (below).
#![allow(clippy::duplicate_mod)]

mod binary;
mod helpers;
mod postgres_cluster;

/// The behavioural suite of the HTTP API and of the store, on each backend:
/// the same modules, compiled twice.
#[path = "."]
mod sqlite {
    pub(crate) const BACKEND: crate::helpers::Backend = crate::helpers::Backend::Sqlite;
    mod access_rules;
    mod api_tokens;
    mod auth;
    mod body_fuzz;
    mod caches;
    mod conditional;
    mod domains;
    mod edges;
    mod errors;
    mod feed;
    mod fuzz;
    mod instances;
    mod losing_access;
    mod organizations;
    mod pagination_properties;
    mod project_writes;
    mod projects;
    mod proxy_settings;
    mod proxy_settings_checks;
    mod proxy_settings_writes;
    mod request_costs;
    mod request_values;
    mod rollouts;
    mod store_contract;
    mod teams;
    mod token_writes;
    mod write_rights;
}

#[path = "."]
mod postgres {
    pub(crate) const BACKEND: crate::helpers::Backend = crate::helpers::Backend::Postgres;
    mod access_rules;
    mod api_tokens;
    mod auth;
    mod body_fuzz;
    mod caches;
    mod conditional;
    mod domains;
    mod edges;
    mod errors;
    mod feed;
    mod fuzz;
    mod instances;
    mod losing_access;
    mod organizations;
    mod pagination_properties;
    mod project_writes;
    mod projects;
    mod proxy_settings;
    mod proxy_settings_checks;
    mod proxy_settings_writes;
    mod request_costs;
    mod request_values;
    mod rollouts;
    mod store_contract;
    mod teams;
    mod token_writes;
    mod write_rights;
}

// The command line, the server's handling of connections, and what only
// one backend does.
mod cli;
mod client;
mod console;
mod dns;
mod follow;
mod migrations;
mod openapi;
mod openapi_contract;
mod operation_names;
mod operations;
mod postgres_feed;
mod postgres_pooler;
mod postgres_replicas;
mod postgres_store;
mod postgres_tls;
mod rate_limits;
mod server;
mod sqlite_store;
