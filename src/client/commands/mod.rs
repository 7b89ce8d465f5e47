//! The terminal client's commands, which call a running proxydeck over
//! HTTP: one file (or folder) per command group, as gh keeps
//! `pkg/cmd/<command>/`, each with its arguments, its help and what it
//! runs: `proxydeck projects ...` is [`projects`], `proxydeck
//! proxy-settings ...` is [`proxy_settings`], `proxydeck domains ...` is
//! [`domains`], `org`, `members`, `invite` and `invitations` are
//! [`teams`], `login`, `logout` and `auth` are [`login`]. They stand on what the client shares: its HTTP
//! calls (`client::http`), the listings (`client::listing`), the
//! single-object exchanges (`client::object`), and how a project is
//! named (`client::names`: its id, `ORG/SLUG` or a slug of its own).

/// The note ending the help of each create that sends an Idempotency-Key
/// (a macro so that `concat!` can put it after each command's examples;
/// defined before the modules that use it, as a macro's scope is textual).
macro_rules! retried_create_note {
    () => {
        "\n\nIt sends a fresh Idempotency-Key, kept across the client's own retries: a retried create never creates twice."
    };
}

pub mod domains;
pub mod login;
pub mod projects;
pub mod proxy_settings;
pub mod teams;
pub mod tokens;
