//! Where a client command calls the API and as whom: `--url` and
//! `--token`, then PROXYDECK_URL and PROXYDECK_TOKEN, then the profile
//! `proxydeck login` saved, whose token goes only to its own URL. Every
//! client command resolves its [`Connection`] here before it sends
//! anything.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use super::profile::{ProfileArg, file_of, load};
use crate::output::BadSetting;

/// The API's address when neither a flag, a variable nor a profile gives one.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// Where the API is and as whom to call it. Unset, they come from the
/// profile `proxydeck login` saved.
#[derive(Args)]
pub struct Connection {
    /// Base URL of the proxydeck API [default: the profile's, else
    /// http://127.0.0.1:8080].
    #[arg(long, env = "PROXYDECK_URL", value_name = "URL")]
    pub url: Option<String>,
    /// API token [default: the profile's]. Prefer PROXYDECK_TOKEN or
    /// `proxydeck login`: flags show in process lists.
    #[arg(
        long,
        env = "PROXYDECK_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    pub token: Option<String>,
    #[command(flatten)]
    pub profile: ProfileArg,
}

/// Where and as whom the client calls the API.
pub struct Target {
    pub url: String,
    pub token: String,
}

/// Where a setting in use came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Flag,
    Env,
    Profile,
    Default,
}

/// The target of a client command, and where each half came from.
pub struct Resolved {
    pub target: Target,
    pub url_from: Source,
    pub token_from: Source,
    pub profile: String,
    pub file: PathBuf,
}

/// The same URL, a trailing slash aside.
fn same_url(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Whether `value` came from the environment variable `name` (a flag
/// with the same value counts as the variable).
fn source_of(value: &str, name: &str) -> Source {
    match std::env::var(name) {
        Ok(set) if set == value => Source::Env,
        _ => Source::Flag,
    }
}

/// The URL and token of a client command: flags, then environment
/// variables, then the profile. The profile's token goes only to the
/// profile's URL.
pub fn resolve_with_sources(connection: &Connection) -> anyhow::Result<Resolved> {
    let profile = connection.profile.profile.clone();
    let file = file_of(&profile)?;
    let saved = load(&file)?;
    let (url, url_from) = match (&connection.url, &saved) {
        (Some(url), _) => (url.clone(), source_of(url, "PROXYDECK_URL")),
        (None, Some(saved)) => (saved.url.clone(), Source::Profile),
        (None, None) => (DEFAULT_URL.to_owned(), Source::Default),
    };
    let (token, token_from) = match (&connection.token, &saved) {
        (Some(token), _) => (token.clone(), source_of(token, "PROXYDECK_TOKEN")),
        (None, Some(saved)) if same_url(&saved.url, &url) => (saved.token.clone(), Source::Profile),
        // A usage error, as clap's for a missing flag.
        (None, Some(saved)) => {
            return Err(BadSetting::error(format!(
                "no API token for {url}: the profile {profile:?} is for {}; set \
                 PROXYDECK_TOKEN, pass --token, or run `proxydeck login --url {url}`",
                saved.url
            )));
        }
        (None, None) => {
            return Err(BadSetting::error(
                "no API token: set PROXYDECK_TOKEN, pass --token, or run `proxydeck login`",
            ));
        }
    };
    Ok(Resolved {
        target: Target { url, token },
        url_from,
        token_from,
        profile,
        file,
    })
}

/// Where and as whom a client command calls the API.
pub fn resolve(connection: &Connection) -> anyhow::Result<Target> {
    resolve_with_sources(connection).map(|resolved| resolved.target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_match_without_their_trailing_slash() {
        assert!(same_url("http://h:1", "http://h:1/"));
        assert!(!same_url("http://h:1", "http://h:2"));
    }
}
