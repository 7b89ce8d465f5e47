//! `proxydeck login` checks a token and keeps it, with its URL, in a
//! profile; `logout` removes the profile; `auth status` says which URL and
//! token the client commands use, whose token it is and whether it works.
//! Flags and environment variables win over the profile. The token is
//! never shown.

use std::io::{IsTerminal, Read};
use std::ops::ControlFlow;

use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::client::connection::{Connection, DEFAULT_URL, Source, Target, resolve_with_sources};
use crate::client::http::{ApiClient, Refused, Request};
use crate::client::profile::{ProfileArg, Saved, file_of, load, save};
use crate::domain::token;
use crate::output::table;
use crate::output::{Output, printable};

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
    client
        .walk(&["v1".into(), "api_tokens".into()], &[], |items| {
            for item in items {
                user = user
                    .take()
                    .or_else(|| item["user_id"].as_str().map(str::to_owned));
                if item["token"] == json!(hint) {
                    mine.push(item);
                }
            }
            ControlFlow::<()>::Continue(())
        })
        .await
        .map_err(|error| refused(error, &url, &whose))?;
    // Who the user is, by name and email (getMe); a server without it
    // leaves the id the token list gave.
    let me_path = ["v1".into(), "users".into(), "me".into()];
    let me: Value = match client
        .send(Request::new(reqwest::Method::GET, &me_path))
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
                table::cell(&one["id"]),
                table::when(&one["expires_at"], "never"),
            ),
            [] => format!("{hint} (not found among your tokens' hints)"),
            several => format!(
                "{hint}: one of {} tokens with that hint ({})",
                several.len(),
                several
                    .iter()
                    .map(|item| table::cell(&item["id"]))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let who = match (name, email) {
            (Some(name), Some(email)) => {
                format!("{name} <{email}> (id {})", user.as_deref().unwrap_or("-"))
            }
            _ => user.clone().unwrap_or_else(|| "-".to_owned()),
        };
        format!(
            "{url}\n  url from:   {}\n  token:      {}\n  token from: {}\n  user:       {}\n  works:      yes",
            from(resolved.url_from, "PROXYDECK_URL", "--url"),
            printable(&token),
            from(resolved.token_from, "PROXYDECK_TOKEN", "--token"),
            printable(&who),
        )
    })
}
