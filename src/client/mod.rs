//! The terminal client: the `proxydeck` commands that call a running
//! proxydeck over HTTP as a person does, with an API token (`projects`,
//! `tokens`, `proxy-settings`, `login`...). Each command group has its
//! file under [`commands`]; beneath them stands what they share: the HTTP
//! calls ([`http`], with the one reader of Server-Sent Events, [`sse`]),
//! where and as whom to call ([`connection`], from the [`profile`] `login`
//! keeps), how a person names a project ([`names`]), the listings
//! ([`listing`]), the single-object exchanges ([`object`]) and one
//! revision read ([`revision_read`]). The `follow` agent stands on these
//! too; the client knows nothing of it.

pub mod commands;
pub mod connection;
pub mod http;
pub mod listing;
pub mod names;
pub mod object;
pub mod profile;
pub mod revision_read;
pub mod sse;
