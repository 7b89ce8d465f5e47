//! The terminal client (`src/client/`: `projects`, `tokens`,
//! `proxy-settings`, `login`...): the real binary, talking over loopback
//! HTTP to an in-process service (or a `proxydeck serve` child), compared
//! with what raw HTTP requests to the same service answer. The table
//! readers here serve the operator's listings too (`cli::admin_lists`).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use proxydeck::app::ServiceOptions;
use proxydeck::auth::AuthOptions;
use proxydeck::domain::time::Timestamp;
use proxydeck::store::StoreOptions;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::binary::*;
use crate::helpers::*;

mod domains;
mod edges;
mod errors;
mod escapes;
mod naming;
mod output;
mod profiles;
mod projects;
mod revisions;
mod rollouts;
mod setup;
mod teams;
mod walking;

/// Parses an aligned table whose header row is exactly `headers`: each
/// column starts where its header starts, cells never spill into the next
/// column. Answers the rows' cells, trimmed.
#[track_caller]
pub(crate) fn table(text: &str, headers: &[&str]) -> Vec<Vec<String>> {
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("no header: {text:?}"));
    let mut starts = Vec::new();
    let mut from = 0;
    for (i, name) in headers.iter().enumerate() {
        let at = from
            + header[from..]
                .find(name)
                .unwrap_or_else(|| panic!("no {name} in the header {header:?}"));
        if i == 0 {
            assert_eq!(at, 0, "the header does not start with {name}: {header:?}");
        } else {
            assert!(at >= from + 2, "{name} is not apart: {header:?}");
            assert!(
                header[from..at].bytes().all(|b| b == b' '),
                "something between the headers: {header:?}"
            );
        }
        starts.push(at);
        from = at + name.len();
    }
    assert_eq!(from, header.len(), "more in the header: {header:?}");
    lines
        .map(|line| {
            let chars: Vec<char> = line.chars().collect();
            let cell = |from: usize, to: usize| -> String {
                chars[from.min(chars.len())..to.min(chars.len())]
                    .iter()
                    .collect()
            };
            (0..starts.len())
                .map(|i| {
                    let start = starts[i];
                    let end = starts.get(i + 1).copied().unwrap_or(chars.len().max(start));
                    let text = cell(start, end);
                    if i > 0 && start <= chars.len() {
                        assert_eq!(
                            chars.get(start - 1),
                            Some(&' '),
                            "column {} is not aligned: {line:?}",
                            headers[i]
                        );
                    }
                    if i + 1 < starts.len() && end <= chars.len() {
                        assert_eq!(
                            chars[end - 1],
                            ' ',
                            "column {} spills over: {line:?}",
                            headers[i]
                        );
                    }
                    assert!(
                        !text.starts_with(' ') || text.trim().is_empty(),
                        "column {} is not aligned: {line:?}",
                        headers[i]
                    );
                    text.trim().to_owned()
                })
                .collect()
        })
        .collect()
}

pub(crate) fn column(rows: &[Vec<String>], index: usize) -> Vec<&str> {
    rows.iter().map(|row| row[index].as_str()).collect()
}

pub(crate) fn ids_of(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|item| item["id"].as_str().expect("an id"))
        .collect()
}

pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A timestamp as the client's tables show it: the server writes UTC
/// (`2026-01-05T09:00:00.000Z`), the table its date and minute.
fn minute_of(value: &Value, absent: &str) -> String {
    match value.as_str() {
        None => absent.to_owned(),
        Some(text) => {
            assert!(text.ends_with('Z'), "not UTC: {text}");
            text[..16].replace('T', " ")
        }
    }
}

/// `proxydeck ARGS` on a pseudo-terminal (`script`) `columns` wide, with
/// the environment [`proxydeck`] gives and `env`: what the terminal showed
/// (stdout and stderr together, `\r\n` as `\n`) and the exit status.
fn on_terminal(cwd: &Path, args: &[&str], env: &[(&str, &str)], columns: u16) -> Out {
    on_terminal_with_input(cwd, args, env, columns, "")
}

/// Like [`on_terminal`], typing `input` on that terminal.
fn on_terminal_with_input(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    columns: u16,
    input: &str,
) -> Out {
    let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
    let line = std::iter::once(env!("CARGO_BIN_EXE_proxydeck"))
        .chain(args.iter().copied())
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ");
    let mut script = Command::new("/usr/bin/script");
    script
        .args([
            "-qfec",
            &format!("stty cols {columns} rows 50; exec {line}"),
            "/dev/null",
        ])
        .current_dir(cwd)
        .env("TERM", "xterm");
    for (key, value) in proxydeck(cwd).get_envs() {
        match value {
            Some(value) => script.env(key, value),
            None => script.env_remove(key),
        };
    }
    for (key, value) in env {
        script.env(key, value);
    }
    let mut out = finish(script, (!input.is_empty()).then_some(input));
    out.stdout = out.stdout.replace("\r\n", "\n");
    out
}

/// The client with `args`, the service's URL and `token` in its
/// environment, run to its end.
fn client(app: &TestApp, token: &str, cwd: &Path, args: &[&str]) -> Out {
    client_fed(app, token, cwd, args, None)
}

/// Like [`client`], with `stdin` as its input.
fn client_fed(app: &TestApp, token: &str, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Out {
    let mut command = proxydeck(cwd);
    command
        .args(args)
        .env("PROXYDECK_URL", format!("http://{}", app.address))
        .env("PROXYDECK_TOKEN", token);
    finish(command, stdin)
}

/// Projects of the fixture, and the big ones.
const PROJECTS: usize = 250;
const REVISIONS: u32 = 130;
const BIG: &str = "big";
/// Tokens of `u1`, the reader's included.
const TOKENS: usize = 120;

/// An in-process service with data spanning several pages of every
/// listing, a token of `u1` to read it, and an empty folder to run the
/// client in. Token use is never written during a test, so a listing stays
/// the same between the client's request and ours.
struct World {
    app: TestApp,
    secret: String,
    cwd: TempDir,
}

async fn world() -> World {
    let options = ServiceOptions {
        auth: AuthOptions {
            usage_flush_interval: Duration::from_secs(3600),
            ..test_options().auth
        },
        ..test_options()
    };
    let app = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    let mut lines = vec![
        org(1),
        org(2),
        org(3),
        user("u1", &[1, 2]),
        user("u2", &[3]),
    ];
    for i in 0..PROJECTS {
        // Pairs share a creation time; within a pair the later line has
        // the smaller id.
        let id = format!("p{:03}", i ^ 1);
        let organization = if i % 3 == 0 { 2 } else { 1 };
        let mut project = project(&id, organization, (i / 2) as i64);
        project["description"] = json!(format!("project {i}"));
        lines.push(project);
    }
    lines.push(project(BIG, 1, 10_000));
    lines.push(project("hidden", 3, 5));
    for revision in 1..=REVISIONS {
        lines.push(settings(BIG, revision, revision == REVISIONS));
    }
    lines.push(settings("p000", 1, true));
    app.seed(lines).await;

    let (_, secret) = app.token_with("u1", "reader", None).await;
    for i in 1..TOKENS {
        let name = if i % 10 == 0 {
            "ci".to_owned()
        } else {
            format!("t{i:03}")
        };
        let expires = (i % 7 == 0).then(|| Timestamp::now().plus_seconds(86_400).unwrap());
        app.token_with("u1", &name, expires).await;
    }
    app.token_with("u2", "ci", None).await;
    World {
        app,
        secret,
        cwd: tempfile::tempdir().expect("a temporary folder"),
    }
}

impl World {
    fn url(&self) -> String {
        format!("http://{}", self.app.address)
    }

    /// The client, run in an empty folder, without a URL or token yet.
    fn bare(&self, args: &[&str]) -> Command {
        let mut command = proxydeck(self.cwd.path());
        command.args(args);
        command
    }

    /// `args --url ... --token ...` on a terminal `columns` wide, with
    /// `env` set (see [`on_terminal`]).
    fn on_terminal(&self, args: &[&str], env: &[(&str, &str)], columns: u16) -> Out {
        let url = self.url();
        let mut all = args.to_vec();
        all.extend(["--url", &url, "--token", &self.secret]);
        on_terminal(self.cwd.path(), &all, env, columns)
    }

    /// `args --url ... --token ...`, run to its end.
    #[track_caller]
    fn run(&self, args: &[&str]) -> Out {
        let mut command = self.bare(args);
        command
            .args(["--url", &self.url(), "--token"])
            .arg(&self.secret);
        finish(command, None)
    }

    /// Like [`World::run`], asserting success, nothing on stderr and one
    /// JSON array on stdout; answers its items.
    #[track_caller]
    fn items(&self, args: &[&str]) -> Vec<Value> {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?}: {out:#?}");
        assert!(out.stderr.is_empty(), "{args:?}: {out:#?}");
        match out.json() {
            Value::Array(items) => items,
            other => panic!("{args:?}: not an array: {other}"),
        }
    }

    /// GET `path` as the reader: the body (status 200) and its raw text.
    async fn page(&self, path: &str) -> (Value, String) {
        let response = self.app.get(path, &self.secret).await;
        let status = response.status();
        let text = response.text().await.expect("a body");
        assert_eq!(status, 200, "{path}: {text}");
        (serde_json::from_str(&text).expect("JSON"), text)
    }

    async fn data(&self, path: &str) -> Vec<Value> {
        let (body, _) = self.page(path).await;
        body["data"].as_array().expect("data").clone()
    }

    /// Every item of an envelope listing, following `last_key`.
    async fn walk(&self, path: &str) -> Vec<Value> {
        let mut all = Vec::new();
        let mut next = path.to_owned();
        loop {
            let (body, _) = self.page(&next).await;
            all.extend(body["data"].as_array().expect("data").iter().cloned());
            if body["has_more"] != json!(true) {
                return all;
            }
            let separator = if path.contains('?') { '&' } else { '?' };
            next = format!("{path}{separator}start_key={}", text_of(&body["last_key"]));
        }
    }

    /// Every token, paging by the last id and stopping on a short page.
    async fn token_walk(&self, limit: usize) -> Vec<Value> {
        let mut all: Vec<Value> = Vec::new();
        loop {
            let mut path = format!("/v1/api_tokens?limit={limit}");
            if let Some(last) = all.last() {
                path.push_str(&format!("&start_key={}", text_of(&last["id"])));
            }
            let page = self.data(&path).await;
            let short = page.len() < limit;
            all.extend(page);
            if short {
                return all;
            }
        }
    }
}

/// The three listings: the client's words, the API path, the table's
/// header and the field its first column shows.
struct Listing {
    args: &'static [&'static str],
    path: &'static str,
    headers: &'static [&'static str],
    key: &'static str,
}

const LISTINGS: [Listing; 3] = [
    Listing {
        args: &["projects", "list"],
        path: "/v1/projects",
        headers: &["ID", "SLUG", "TYPE", "ORGANIZATION", "CREATED (UTC)"],
        key: "id",
    },
    Listing {
        args: &["tokens", "list"],
        path: "/v1/api_tokens",
        headers: &[
            "ID",
            "NAME",
            "TOKEN",
            "LAST USED (UTC)",
            "EXPIRES (UTC)",
            "CREATED (UTC)",
        ],
        key: "id",
    },
    Listing {
        args: &["proxy-settings", "list", BIG],
        path: "/v1/projects/big/proxy-settings",
        headers: &["REVISION", "ACTIVE", "BACKENDS", "ROUTES", "DESCRIPTION"],
        key: "revision",
    },
];

fn with(base: &[&'static str], extra: &[&'static str]) -> Vec<&'static str> {
    let mut args = base.to_vec();
    args.extend_from_slice(extra);
    args
}

/// `text` without its ANSI colour sequences.
fn without_escapes(text: &str) -> String {
    let mut plain = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            plain.push(c);
        }
    }
    plain
}
