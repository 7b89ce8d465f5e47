//! Integration tests: the real service over loopback HTTP, on real SQLite
//! files. One binary, so they build once.
#![recursion_limit = "256"]

mod binary;
mod helpers;

mod api_tokens;
mod auth;
mod cli;
mod errors;
mod projects;
mod proxy_settings;
mod server;
mod store_contract;
mod terminal;
mod transfer;
