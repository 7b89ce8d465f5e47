//! Profiles of the terminal client: `proxydeck login` checks a token and
//! keeps it with its URL in a file of the user's configuration folder
//! (`$XDG_CONFIG_HOME/proxydeck/profiles/NAME.toml`, else
//! `~/.config/proxydeck/profiles/NAME.toml`), readable by its owner only;
//! `logout` removes it; `auth status` says whose token is in use. Flags and
//! environment variables win over the profile. The token is never shown.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Output;
use super::client::{ApiClient, Connection, Refused};
use super::config::BadSetting;
use crate::domain::pagination::MAX_LIMIT;
use crate::domain::token;

/// The profile used when none is named.
const DEFAULT_PROFILE: &str = "default";
/// The API's address when neither a flag, a variable nor a profile gives one.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

#[derive(Args, Clone)]
pub struct ProfileArg {
    /// The profile `proxydeck login` saved the URL and token in.
    #[arg(
        long,
        env = "PROXYDECK_PROFILE",
        default_value = DEFAULT_PROFILE,
        value_parser = parse_profile_name,
        value_name = "NAME"
    )]
    pub profile: String,
}

/// A profile's name becomes a file name: letters, digits, `-`, `_`, `.`.
fn parse_profile_name(text: &str) -> Result<String, String> {
    let fits = !text.is_empty()
        && text.len() <= 64
        && !text.starts_with('.')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fits {
        Ok(text.to_owned())
    } else {
        Err(
            "a profile name is up to 64 letters, digits, '-', '_' and '.', not starting with '.'"
                .into(),
        )
    }
}

#[derive(Args)]
pub struct LoginArgs {
    /// The proxydeck API to log in to [default: the profile's URL, else
    /// http://127.0.0.1:8080].
    #[arg(long, env = "PROXYDECK_URL", value_name = "URL")]
    url: Option<String>,
    #[command(flatten)]
    profile: ProfileArg,
}

#[derive(Args)]
pub struct LogoutArgs {
    #[command(flatten)]
    profile: ProfileArg,
}

#[derive(Subcommand)]
pub enum AuthCommand {
    /// Say which URL and token the client commands use, whose token it is
    /// and whether it works.
    #[command(
        after_help = "Examples:\n  proxydeck auth status\n  proxydeck auth status --profile staging --json"
    )]
    Status {
        #[command(flatten)]
        connection: Connection,
    },
}

/// What a profile file holds. No `Debug`: it holds the token.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Saved {
    url: String,
    token: String,
}

/// Where and as whom the client calls the API.
pub struct Target {
    pub url: String,
    pub token: String,
}

/// Where a setting in use came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Source {
    Flag,
    Env,
    Profile,
    Default,
}

/// The target of a client command, and where each half came from.
struct Resolved {
    target: Target,
    url_from: Source,
    token_from: Source,
    profile: String,
    file: PathBuf,
}

/// The folder of the profiles.
fn folder() -> anyhow::Result<PathBuf> {
    use etcetera::BaseStrategy as _;
    let base = etcetera::choose_base_strategy().map_err(|_| {
        anyhow!("cannot find your configuration folder: set HOME or XDG_CONFIG_HOME")
    })?;
    Ok(base.config_dir().join("proxydeck").join("profiles"))
}

fn file_of(profile: &str) -> anyhow::Result<PathBuf> {
    Ok(folder()?.join(format!("{profile}.toml")))
}

/// The profile in `file`, if there is one. Errors never quote the file:
/// it holds a token.
fn load(file: &Path) -> anyhow::Result<Option<Saved>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => bail!("cannot read the profile {}: {error}", file.display()),
    };
    toml::from_str(&text).map(Some).map_err(|_| {
        anyhow!(
            "the profile {} is not one `proxydeck login` wrote; run it again",
            file.display()
        )
    })
}

/// Writes `saved` to `file` whole or not at all, readable by its owner
/// only from the start: a temporary file beside it (created with mode
/// 0600) renamed over it.
fn save(file: &Path, saved: &Saved) -> anyhow::Result<()> {
    let folder = file.parent().expect("a profile file is in a folder");
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let text = toml::to_string(saved).context("cannot write the profile")?;
    let mut temporary = tempfile::Builder::new()
        .prefix(".profile-")
        .tempfile_in(folder)
        .with_context(|| format!("cannot write in {}", folder.display()))?;
    temporary.write_all(text.as_bytes())?;
    temporary.as_file().sync_all()?;
    temporary
        .persist(file)
        .map_err(|error| anyhow!("cannot write {}: {}", file.display(), error.error))?;
    Ok(())
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
fn resolve_with_sources(connection: &Connection) -> anyhow::Result<Resolved> {
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

/// The token, from a prompt that does not echo it, or from stdin when
/// that is not a terminal.
fn read_token(url: &str) -> anyhow::Result<String> {
    let text = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("API token for {url} (not shown as you type): "))
            .context("cannot read the token from the terminal")?
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the token from stdin")?;
        text
    };
    let token = text.trim();
    if token.is_empty() {
        bail!("no token given: paste it at the prompt, or pipe it in (proxydeck login < FILE)");
    }
    if token.contains(char::is_whitespace) {
        bail!("the token is one word, and what was given is several");
    }
    Ok(token.to_owned())
}

/// A refusal by the server, said as the token's.
fn refused(error: anyhow::Error, url: &str, whose: &str) -> anyhow::Error {
    match error.downcast_ref::<Refused>() {
        Some(refused) if refused.is_authentication() => {
            anyhow!("{url} does not accept {whose}: {refused}")
        }
        _ => error,
    }
}

pub async fn login(args: LoginArgs, out: &Output) -> anyhow::Result<()> {
    let profile = args.profile.profile;
    let file = file_of(&profile)?;
    let url = match (args.url, load(&file)?) {
        (Some(url), _) => url,
        (None, Some(saved)) => saved.url,
        (None, None) => DEFAULT_URL.to_owned(),
    };
    let token = read_token(&url)?;
    let target = Target { url, token };
    // One request: does the token open the API?
    ApiClient::new(&target)?
        .page(
            &["v1".into(), "api_tokens".into()],
            &[("limit", "1".into())],
        )
        .await
        .map_err(|error| refused(error, &target.url, "this token"))?;
    let Target { url, token } = target;
    save(
        &file,
        &Saved {
            url: url.clone(),
            token,
        },
    )?;
    if std::env::var_os("PROXYDECK_TOKEN").is_some_and(|value| !value.is_empty()) {
        eprintln!("note: PROXYDECK_TOKEN is set, and wins over the profile while it is");
    }
    out.print(
        &json!({"url": url, "profile": profile, "file": file}),
        || {
            format!(
                "Logged in to {url}: the token is kept in {} (profile {profile:?}).",
                file.display()
            )
        },
    )
}

pub fn logout(args: LogoutArgs, out: &Output) -> anyhow::Result<()> {
    let profile = args.profile.profile;
    let file = file_of(&profile)?;
    let Some(saved) = load(&file)? else {
        bail!(
            "no profile {profile:?} to log out of ({} does not exist)",
            file.display()
        );
    };
    std::fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
    out.print(
        &json!({"url": saved.url, "profile": profile, "file": file, "removed": true}),
        || {
            format!(
                "Logged out of {}: removed {} (profile {profile:?}). The token itself still \
                 works until it is revoked.",
                saved.url,
                file.display()
            )
        },
    )
}

pub async fn status(command: AuthCommand, out: &Output) -> anyhow::Result<()> {
    let AuthCommand::Status { connection } = command;
    let resolved = resolve_with_sources(&connection)?;
    let whose = match resolved.token_from {
        Source::Profile => format!("the token of profile {:?}", resolved.profile),
        Source::Env => "the token in PROXYDECK_TOKEN".to_owned(),
        _ => "the token of --token".to_owned(),
    };
    let url = resolved.target.url.clone();
    // The caller's own tokens: the one in use is among them, known by
    // its hint (the prefix and last four characters).
    let client = ApiClient::new(&resolved.target)?;
    let hint = token::hint(&resolved.target.token);
    let mut mine: Vec<Value> = Vec::new();
    let mut user = None;
    let mut start: Option<String> = None;
    loop {
        let mut query = vec![("limit", MAX_LIMIT.to_string())];
        query.extend(start.take().map(|key| ("start_key", key)));
        let page = client
            .page(&["v1".into(), "api_tokens".into()], &query)
            .await
            .map_err(|error| refused(error, &url, &whose))?;
        let next = page.next_key(Some(MAX_LIMIT));
        for item in &page.data {
            let item: Value = serde_json::from_str(item.get())?;
            user = user.or_else(|| item["user_id"].as_str().map(str::to_owned));
            if item["token"] == json!(hint) {
                mine.push(item);
            }
        }
        match next {
            Some(key) => start = Some(key),
            None => break,
        }
    }
    // Who the user is, by name and email (getMe); a server without it
    // leaves the id the token list gave.
    let me_path = ["v1".into(), "users".into(), "me".into()];
    let me: Value = match client
        .send(super::client::Request::new(reqwest::Method::GET, &me_path))
        .await
    {
        Ok(answer) => serde_json::from_slice(&answer.body).unwrap_or_default(),
        Err(_) => Value::Null,
    };
    let user = me["id"].as_str().map(str::to_owned).or(user);
    let (email, name) = (me["email"].as_str(), me["name"].as_str());
    let token_json: Vec<Value> = mine
        .iter()
        .map(|item| {
            json!({
                "id": item["id"], "name": item["name"], "hint": hint,
                "expires_at": item["expires_at"], "last_used_at": item["last_used_at"],
            })
        })
        .collect();
    let document = json!({
        "url": url,
        "url_source": resolved.url_from,
        "token_source": resolved.token_from,
        "profile": resolved.profile,
        "profile_file": resolved.file,
        "works": true,
        "user_id": user,
        "email": email,
        "name": name,
        "tokens": token_json,
    });
    out.print(&document, || {
        let from = |source: Source, variable: &str, flag: &str| match source {
            Source::Flag => flag.to_owned(),
            Source::Env => variable.to_owned(),
            Source::Profile => format!(
                "profile {:?} ({})",
                resolved.profile,
                resolved.file.display()
            ),
            Source::Default => "the default".to_owned(),
        };
        let token = match mine.as_slice() {
            [one] => format!(
                "{hint}: {:?} (id {}), expires {}",
                one["name"].as_str().unwrap_or_default(),
                super::table::cell(&one["id"]),
                super::table::when(&one["expires_at"], "never"),
            ),
            [] => format!("{hint} (not found among your tokens' hints)"),
            several => format!(
                "{hint}: one of {} tokens with that hint ({})",
                several.len(),
                several
                    .iter()
                    .map(|item| super::table::cell(&item["id"]))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!(
            "{url}\n  url from:   {}\n  token:      {token}\n  token from: {}\n  user:       {}\n  works:      yes",
            from(resolved.url_from, "PROXYDECK_URL", "--url"),
            from(resolved.token_from, "PROXYDECK_TOKEN", "--token"),
            match (name, email) {
                (Some(name), Some(email)) =>
                    format!("{name} <{email}> (id {})", user.as_deref().unwrap_or("-")),
                _ => user.clone().unwrap_or_else(|| "-".to_owned()),
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_are_file_names() {
        for good in ["default", "staging", "eu-west_2", "a.b"] {
            assert_eq!(parse_profile_name(good).unwrap(), good);
        }
        for bad in ["", "../x", "a/b", ".hidden", "with space", &"x".repeat(65)] {
            assert!(parse_profile_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn urls_match_without_their_trailing_slash() {
        assert!(same_url("http://h:1", "http://h:1/"));
        assert!(!same_url("http://h:1", "http://h:2"));
    }
}
