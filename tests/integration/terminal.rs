//! The operator's listings (`admin org list`, `admin user list`, `admin
//! token list`) on SQLite files, and the terminal client (`projects list`,
//! `tokens list`, `proxy-settings list`): the real binary, talking over
//! loopback HTTP to an in-process service (or a `proxydeck serve` child),
//! compared with what raw HTTP requests to the same service answer.

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

// ----- Tables -----

/// Parses an aligned table whose header row is exactly `headers`: each
/// column starts where its header starts, cells never spill into the next
/// column. Answers the rows' cells, trimmed.
#[track_caller]
fn table(text: &str, headers: &[&str]) -> Vec<Vec<String>> {
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

fn column(rows: &[Vec<String>], index: usize) -> Vec<&str> {
    rows.iter().map(|row| row[index].as_str()).collect()
}

fn ids_of(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|item| item["id"].as_str().expect("an id"))
        .collect()
}

fn text_of(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

// ----- admin org list, admin user list -----

#[test]
fn admin_org_and_user_list_show_what_export_shows() {
    let sandbox = Sandbox::new();
    sandbox.json(&["migrate"]);

    // An empty store: an empty array, a table of headers.
    assert_eq!(sandbox.json(&["admin", "org", "list"]), json!([]));
    assert_eq!(sandbox.json(&["admin", "user", "list"]), json!([]));
    let out = sandbox.run(&["admin", "org", "list"]);
    assert!(out.status.success(), "{out:#?}");
    assert!(table(&out.stdout, &["ID", "NAME", "CREATED"]).is_empty());

    sandbox.import(&[
        json!({"object": "organization", "id": org_id(1), "name": "Acme Corp",
               "created_at": "2026-01-02T00:00:00+02:00"}),
        json!({"object": "organization", "id": org_id(2), "name": "Ünïcødé, \"quoted\"",
               "created_at": "2026-01-01T00:00:00Z"}),
        json!({"object": "organization", "id": org_id(3), "name": "Undated"}),
        json!({"object": "user", "id": "u-late", "email": "late@example.com",
               "organizations": [org_id(3), org_id(1)], "created_at": "2026-03-01T00:00:00Z"}),
        json!({"object": "user", "id": "u-early", "email": "early@example.com",
               "organizations": [org_id(2)], "created_at": "2026-02-01T00:00:00Z"}),
    ]);
    // And through the command line.
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "cli@example.com",
        "--org",
        &org_id(2),
        "--org",
        &org_id(1),
        "--id",
        "u-cli",
    ]);

    let out = sandbox.run(&["admin", "export", "--quiet"]);
    assert!(out.status.success(), "{out:#?}");
    let exported: Vec<Value> = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<Value> {
        exported
            .iter()
            .filter(|line| line["object"] == json!(kind))
            .cloned()
            .collect()
    };

    // --json: one array, the objects exactly as exported, oldest first.
    let organizations = sandbox.json(&["admin", "org", "list"]);
    assert_eq!(organizations, Value::Array(of("organization")));
    assert_eq!(
        ids_of(organizations.as_array().unwrap()),
        [org_id(2), org_id(1), org_id(3)]
    );
    let users = sandbox.json(&["admin", "user", "list"]);
    assert_eq!(users, Value::Array(of("user")));
    assert_eq!(
        ids_of(users.as_array().unwrap()),
        ["u-early", "u-late", "u-cli"]
    );
    // The --json flag may come first.
    let out = finish(
        {
            let mut command = proxydeck(sandbox.path());
            command
                .args(["--json", "--database", &sandbox.db_url()])
                .args(["admin", "user", "list"]);
            command
        },
        None,
    );
    assert_eq!(out.json(), users);

    // Without --json: an aligned table, one row per object, same order.
    let out = sandbox.run(&["admin", "org", "list"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    let rows = table(&out.stdout, &["ID", "NAME", "CREATED"]);
    let expected: Vec<Vec<String>> = organizations
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            vec![
                text_of(&o["id"]),
                text_of(&o["name"]),
                text_of(&o["created_at"]),
            ]
        })
        .collect();
    assert_eq!(rows, expected);

    let out = sandbox.run(&["admin", "user", "list"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    let rows = table(&out.stdout, &["ID", "EMAIL", "ORGANIZATIONS", "CREATED"]);
    assert_eq!(column(&rows, 0), ["u-early", "u-late", "u-cli"]);
    for (row, user) in rows.iter().zip(users.as_array().unwrap()) {
        assert_eq!(row[1], text_of(&user["email"]));
        let listed: Vec<String> = user["organizations"]
            .as_array()
            .unwrap()
            .iter()
            .map(text_of)
            .collect();
        assert_eq!(row[2], listed.join(","), "{row:?}");
        assert_eq!(row[3], text_of(&user["created_at"]));
    }
}

// ----- admin token list -----

#[tokio::test]
async fn admin_token_list_shows_hints_and_revocations_never_secrets() {
    let sandbox = Sandbox::new();
    let first_secret = sandbox.directory(1, "u1");
    sandbox.directory(2, "u2");
    let create = |name: &str, extra: &[&str]| -> Value {
        let mut args = vec!["admin", "token", "create", "--user", "u1", "--name", name];
        args.extend_from_slice(extra);
        sandbox.json(&args)
    };
    // Expires in a second: expired by the time the table is drawn.
    let brief = create("brief", &["--expires-in", "1s"]);
    let ci = create("ci", &["--expires-in", "90d"]);
    let doomed = create("doomed", &[]);
    let doomed_id = doomed["id"].as_str().unwrap();
    let before_revoke = Timestamp::now();
    sandbox.json(&["admin", "token", "revoke", doomed_id]);
    let after_revoke = Timestamp::now();
    let secrets = [
        first_secret.clone(),
        text_of(&brief["token"]),
        text_of(&ci["token"]),
        text_of(&doomed["token"]),
    ];

    let listed = sandbox.json(&["admin", "token", "list", "--user", "u1"]);
    let listed = listed.as_array().expect("an array").clone();
    assert_eq!(listed.len(), 4, "{listed:#?}");
    let listed_text = serde_json::to_string(&listed).unwrap();
    for secret in &secrets {
        assert!(!listed_text.contains(secret.as_str()), "a secret is listed");
    }
    // Oldest first; the token made by `directory` is named "cli".
    assert_eq!(listed[0]["name"], json!("cli"));
    for (entry, (created, secret)) in listed[1..].iter().zip([
        (&brief, &secrets[1]),
        (&ci, &secrets[2]),
        (&doomed, &secrets[3]),
    ]) {
        let hint = format!("pxd_****{}", &secret[secret.len() - 4..]);
        assert_eq!(entry["token"], json!(hint), "{entry}");
        let mut expected = created.clone();
        expected["token"] = json!(hint);
        if entry["id"] == json!(doomed_id) {
            let revoked_at = Timestamp::parse(entry["revoked_at"].as_str().expect("revoked_at"))
                .expect("a timestamp");
            assert!(
                before_revoke <= revoked_at && revoked_at <= after_revoke,
                "{entry}"
            );
            expected["revoked_at"] = entry["revoked_at"].clone();
            // Revoking is an update.
            expected["updated_at"] = entry["updated_at"].clone();
        }
        assert_eq!(entry, &expected);
    }
    assert!(
        listed
            .iter()
            .filter(|t| t["id"] != json!(doomed_id))
            .all(|t| t.get("revoked_at").is_none()),
        "{listed:#?}"
    );
    for entry in &listed {
        let token = entry["token"].as_str().unwrap();
        assert!(
            token.starts_with("pxd_****") && token.len() == 12,
            "{entry}"
        );
        assert_eq!(entry["object"], json!("api_token"));
        assert_eq!(entry["user_id"], json!("u1"));
        assert!(entry.as_object().unwrap().values().all(|v| !v.is_null()));
    }

    // The API lists the same objects for the tokens not revoked (newest
    // first, without revoked_at).
    let server = sandbox.serve(&["--last-used-flush-interval", "1h"]);
    let api = server.tokens(&secrets[2]).await;
    let mut expected: Vec<Value> = listed
        .iter()
        .filter(|t| t["id"] != json!(doomed_id))
        .cloned()
        .collect();
    expected.reverse();
    assert_eq!(api, expected);
    drop(server);

    // A table: one row per token, with its status.
    let wait = Timestamp::parse(brief["expires_at"].as_str().unwrap())
        .unwrap()
        .as_millis()
        - Timestamp::now().as_millis()
        + 50;
    std::thread::sleep(Duration::from_millis(u64::try_from(wait).unwrap_or(0)));
    let out = sandbox.run(&["admin", "token", "list", "--user", "u1"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    for secret in &secrets {
        assert!(!out.stdout.contains(secret.as_str()), "a secret is shown");
    }
    let rows = table(
        &out.stdout,
        &[
            "ID",
            "NAME",
            "TOKEN",
            "STATUS",
            "LAST USED",
            "EXPIRES",
            "CREATED",
        ],
    );
    assert_eq!(column(&rows, 0), ids_of(&listed));
    assert_eq!(column(&rows, 1), ["cli", "brief", "ci", "doomed"]);
    assert_eq!(column(&rows, 3), ["active", "expired", "active", "revoked"]);
    for (row, entry) in rows.iter().zip(&listed) {
        assert_eq!(row[2], text_of(&entry["token"]));
        assert_eq!(
            row[5],
            text_of(entry.get("expires_at").unwrap_or(&Value::Null))
        );
        assert_eq!(row[6], text_of(&entry["created_at"]));
    }

    // Another user's tokens only; a user without tokens; an unknown user.
    let other = sandbox.json(&["admin", "token", "list", "--user", "u2"]);
    assert_eq!(other.as_array().unwrap().len(), 1, "{other}");
    assert_eq!(other[0]["user_id"], json!("u2"));
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "x@example.com",
        "--org",
        &org_id(1),
        "--id",
        "tokenless",
    ]);
    assert_eq!(
        sandbox.json(&["admin", "token", "list", "--user", "tokenless"]),
        json!([])
    );
    sandbox
        .run(&["admin", "token", "list", "--user", "nobody", "--json"])
        .error(&["nobody"]);
    sandbox
        .run(&["admin", "token", "list", "--user", "nobody"])
        .error(&["nobody"]);
}

// ----- The terminal client: a service to talk to -----

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
        for proxy in [
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "all_proxy",
            "ALL_PROXY",
        ] {
            command.env_remove(proxy);
        }
        command
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
        headers: &["ID", "SLUG", "TYPE", "ORGANIZATION", "CREATED"],
        key: "id",
    },
    Listing {
        args: &["tokens", "list"],
        path: "/v1/api_tokens",
        headers: &["ID", "NAME", "TOKEN", "LAST USED", "EXPIRES", "CREATED"],
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

// ----- Output formats -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_output_formats_show_what_the_api_answers() {
    let world = world().await;
    for listing in &LISTINGS {
        let what = listing.args.join(" ");
        let (body, raw) = world.page(&format!("{}?limit=30", listing.path)).await;
        let data = body["data"].as_array().unwrap().clone();
        assert_eq!(data.len(), 30, "{what}");

        // json: one array, equal to the page's data.
        let items = world.items(&with(listing.args, &["--limit", "30", "--output", "json"]));
        assert_eq!(items, data, "{what} --output json");
        // No --output, stdout not a terminal: json.
        assert_eq!(
            world.items(&with(listing.args, &["--limit", "30"])),
            data,
            "{what}"
        );
        // The --json flag: json, before or after the command.
        assert_eq!(
            world.items(&with(listing.args, &["--limit", "30", "--json"])),
            data,
            "{what} --json"
        );
        let mut first = vec!["--json"];
        first.extend_from_slice(listing.args);
        first.extend(["--limit", "30"]);
        assert_eq!(world.items(&first), data, "--json {what}");
        // -o is --output.
        assert_eq!(
            world.items(&with(listing.args, &["--limit", "30", "-o", "json"])),
            data,
            "{what} -o json"
        );

        // ndjson: one object per line, in order, each exactly as sent.
        let out = world.run(&with(
            listing.args,
            &["--limit", "30", "--output", "ndjson"],
        ));
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{what}: {out:#?}"
        );
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), data.len(), "{what} --output ndjson");
        for (line, item) in lines.iter().zip(&data) {
            assert_eq!(
                &serde_json::from_str::<Value>(line).unwrap(),
                item,
                "{what}"
            );
            assert!(
                raw.contains(line),
                "{what}: a line differs from the API's text"
            );
        }

        // table: a header, then one row per item, in order.
        let out = world.run(&with(listing.args, &["--limit", "30", "--output", "table"]));
        assert!(out.status.success(), "{what}: {out:#?}");
        let rows = table(&out.stdout, listing.headers);
        let keys: Vec<String> = data
            .iter()
            .map(|item| text_of(&item[listing.key]))
            .collect();
        assert_eq!(column(&rows, 0), keys, "{what} --output table");
    }

    // The table cells of each listing.
    let data = world.data("/v1/projects?limit=30").await;
    let out = world.run(&["projects", "list", "--limit", "30", "-o", "table"]);
    let rows = table(&out.stdout, LISTINGS[0].headers);
    for (row, item) in rows.iter().zip(&data) {
        let expected: Vec<String> = ["id", "slug", "type", "organization_id", "created_at"]
            .iter()
            .map(|f| text_of(&item[*f]))
            .collect();
        assert_eq!(row, &expected);
    }
    let data = world.data("/v1/api_tokens?limit=30").await;
    let out = world.run(&["tokens", "list", "--limit", "30", "-o", "table"]);
    let rows = table(&out.stdout, LISTINGS[1].headers);
    for (row, item) in rows.iter().zip(&data) {
        let expected: Vec<String> = [
            "id",
            "name",
            "token",
            "last_used_at",
            "expires_at",
            "created_at",
        ]
        .iter()
        .map(|f| text_of(item.get(*f).unwrap_or(&Value::Null)))
        .collect();
        assert_eq!(row, &expected);
    }
    assert!(column(&rows, 4).contains(&"-") && column(&rows, 3).contains(&"-"));
    let data = world.data("/v1/projects/big/proxy-settings?limit=30").await;
    let out = world.run(&[
        "proxy-settings",
        "list",
        BIG,
        "--limit",
        "30",
        "-o",
        "table",
    ]);
    let rows = table(&out.stdout, LISTINGS[2].headers);
    for (row, item) in rows.iter().zip(&data) {
        assert_eq!(row[1], text_of(&item["is_active"]));
        assert_eq!(
            row[2],
            item["backends"].as_array().unwrap().len().to_string()
        );
        assert_eq!(row[3], item["routes"].as_array().unwrap().len().to_string());
        assert_eq!(row[4], text_of(&item["description"]));
    }
    assert_eq!(rows[0][1], "true");

    // An empty list: [] in json, nothing in ndjson, a header in a table.
    let empty = ["proxy-settings", "list", "p001"];
    assert_eq!(
        world.data("/v1/projects/p001/proxy-settings").await,
        Vec::<Value>::new()
    );
    assert_eq!(world.items(&empty), Vec::<Value>::new());
    let out = world.run(&with(&empty, &["-o", "ndjson"]));
    assert!(out.status.success() && out.stdout.is_empty(), "{out:#?}");
    let out = world.run(&with(&empty, &["-o", "table"]));
    assert!(out.status.success(), "{out:#?}");
    assert!(table(&out.stdout, LISTINGS[2].headers).is_empty());
    assert!(out.stderr.is_empty(), "{out:#?}");
}

/// `cli.md`: "Commands that print a result accept `--json` and then print
/// exactly one JSON document on stdout". An explicit `--output` that says
/// otherwise must not break that: either JSON wins or the pair is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_json_flag_prints_one_json_document_whatever_the_output() {
    let world = world().await;
    let data = world.data("/v1/projects?limit=3").await;
    for format in ["table", "ndjson"] {
        let out = world.run(&["projects", "list", "--limit", "3", "--json", "-o", format]);
        if out.status.success() {
            assert_eq!(out.json(), Value::Array(data.clone()), "--json -o {format}");
        } else {
            out.error(&["--json"]);
        }
    }
}

// ----- Filters and order -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_filters_and_order_give_what_the_api_gives() {
    let world = world().await;
    let org2 = org_id(2);
    let some_project = world.data("/v1/projects?limit=10").await[9]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let some_token = world.data("/v1/api_tokens?limit=10").await[9]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let early_project = world
        .data(&format!(
            "/v1/projects?limit=10&order_direction=ASC&organization_id={org2}"
        ))
        .await[4]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["projects", "list"], "/v1/projects".into()),
        (
            vec!["projects", "list", "--limit", "7"],
            "/v1/projects?limit=7".into(),
        ),
        (
            vec!["projects", "list", "--order-direction", "asc"],
            "/v1/projects?order_direction=ASC".into(),
        ),
        (
            vec![
                "projects",
                "list",
                "--order-direction",
                "ASC",
                "--limit",
                "100",
            ],
            "/v1/projects?order_direction=ASC&limit=100".into(),
        ),
        (
            vec![
                "projects",
                "list",
                "--order-direction",
                "Desc",
                "--limit",
                "5",
            ],
            "/v1/projects?order_direction=DESC&limit=5".into(),
        ),
        (
            vec!["projects", "list", "--organization-id", &org2],
            format!("/v1/projects?organization_id={org2}"),
        ),
        (
            vec![
                "projects",
                "list",
                "--organization-id",
                &org2,
                "--order-direction",
                "asc",
                "--limit",
                "4",
                "--start-key",
                &early_project,
            ],
            format!(
                "/v1/projects?organization_id={org2}&order_direction=ASC&limit=4&start_key={early_project}"
            ),
        ),
        (
            vec![
                "projects",
                "list",
                "--start-key",
                &some_project,
                "--limit",
                "3",
            ],
            format!("/v1/projects?start_key={some_project}&limit=3"),
        ),
        (vec!["tokens", "list"], "/v1/api_tokens".into()),
        (
            vec!["tokens", "list", "--name", "ci"],
            "/v1/api_tokens?name=ci".into(),
        ),
        (
            vec![
                "tokens",
                "list",
                "--name",
                "ci",
                "--order-direction",
                "asc",
                "--limit",
                "2",
            ],
            "/v1/api_tokens?name=ci&order_direction=ASC&limit=2".into(),
        ),
        (
            vec!["tokens", "list", "--name", "no-such-name"],
            "/v1/api_tokens?name=no-such-name".into(),
        ),
        (
            vec!["tokens", "list", "--start-key", &some_token, "--limit", "6"],
            format!("/v1/api_tokens?start_key={some_token}&limit=6"),
        ),
        (
            vec![
                "tokens",
                "list",
                "--order-direction",
                "ASC",
                "--limit",
                "100",
            ],
            "/v1/api_tokens?order_direction=ASC&limit=100".into(),
        ),
        (
            vec!["proxy-settings", "list", BIG],
            "/v1/projects/big/proxy-settings".into(),
        ),
        (
            vec![
                "proxy-settings",
                "list",
                BIG,
                "--limit",
                "10",
                "--order-direction",
                "asc",
            ],
            "/v1/projects/big/proxy-settings?limit=10&order_direction=ASC".into(),
        ),
        (
            vec!["proxy-settings", "list", BIG, "--start-key", "120"],
            "/v1/projects/big/proxy-settings?start_key=120".into(),
        ),
        (
            vec![
                "proxy-settings",
                "list",
                BIG,
                "--start-key",
                "5",
                "--order-direction",
                "ASC",
                "--limit",
                "3",
            ],
            "/v1/projects/big/proxy-settings?start_key=5&order_direction=ASC&limit=3".into(),
        ),
    ];
    for (args, path) in &cases {
        let expected = world.data(path).await;
        assert!(
            !expected.is_empty() || path.contains("no-such-name"),
            "{path}"
        );
        assert_eq!(&world.items(args), &expected, "{args:?} vs {path}");
    }
}

// ----- --all -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_all_walks_every_page_once_in_order() {
    let world = world().await;

    // 250 visible projects plus the big one: three pages of 100.
    let walked = world.walk("/v1/projects?limit=100").await;
    assert_eq!(walked.len(), PROJECTS + 1);
    for format in ["json", "ndjson"] {
        let out = world.run(&["projects", "list", "--all", "-o", format]);
        assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
        let items: Vec<Value> = if format == "json" {
            one_json_document(&out.stdout).as_array().unwrap().clone()
        } else {
            out.stdout
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        assert_eq!(items, walked, "projects --all -o {format}");
    }
    let ascending = world
        .walk("/v1/projects?limit=100&order_direction=ASC")
        .await;
    let mut reversed = walked.clone();
    reversed.reverse();
    assert_eq!(ids_of(&ascending), ids_of(&reversed));
    assert_eq!(
        world.items(&["projects", "list", "--all", "--order-direction", "asc"]),
        ascending
    );
    // With a small page: many requests, still every item once.
    let small = world.items(&["projects", "list", "--all", "--limit", "7"]);
    assert_eq!(small, walked);
    // Narrowed to an organization.
    let org2 = org_id(2);
    assert_eq!(
        world.items(&["projects", "list", "--all", "--organization-id", &org2]),
        world
            .walk(&format!("/v1/projects?limit=100&organization_id={org2}"))
            .await
    );
    // From a start key to the end.
    let key = text_of(&walked[149]["id"]);
    assert_eq!(
        world.items(&["projects", "list", "--all", "--start-key", &key]),
        walked[150..].to_vec()
    );
    // The table: every row once, no hint.
    let out = world.run(&["projects", "list", "--all", "-o", "table"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    let rows = table(&out.stdout, LISTINGS[0].headers);
    assert_eq!(column(&rows, 0), ids_of(&walked));

    // 130 revisions: pages of 100 and 30.
    let revisions = world
        .walk("/v1/projects/big/proxy-settings?limit=100")
        .await;
    assert_eq!(revisions.len(), REVISIONS as usize);
    let numbers: Vec<u64> = revisions
        .iter()
        .map(|r| r["revision"].as_u64().unwrap())
        .collect();
    assert_eq!(
        numbers,
        (1..=u64::from(REVISIONS)).rev().collect::<Vec<_>>()
    );
    assert_eq!(
        world.items(&["proxy-settings", "list", BIG, "--all"]),
        revisions
    );
    let ascending = world.items(&[
        "proxy-settings",
        "list",
        BIG,
        "--all",
        "--order-direction",
        "asc",
        "-o",
        "json",
    ]);
    let mut reversed = revisions.clone();
    reversed.reverse();
    assert_eq!(ascending, reversed);

    // 120 tokens, no has_more: pages of 100 and a short one of 20.
    let tokens = world.token_walk(100).await;
    assert_eq!(tokens.len(), TOKENS);
    let mut ids: Vec<&str> = ids_of(&tokens);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), TOKENS, "a token twice");
    assert_eq!(world.items(&["tokens", "list", "--all"]), tokens);
    // Pages of 20: six full pages, then an empty one ends the walk.
    assert_eq!(
        world.items(&["tokens", "list", "--all", "--limit", "20"]),
        tokens
    );
    assert_eq!(world.token_walk(20).await, tokens);
    // Pages of 7 (the last one short), ascending.
    let ascending = world.items(&[
        "tokens",
        "list",
        "--all",
        "--limit",
        "7",
        "--order-direction",
        "asc",
    ]);
    let mut reversed = tokens.clone();
    reversed.reverse();
    assert_eq!(ids_of(&ascending), ids_of(&reversed));
    // Narrowed by name.
    let ci: Vec<Value> = tokens
        .iter()
        .filter(|t| t["name"] == json!("ci"))
        .cloned()
        .collect();
    assert_eq!(ci.len(), 11);
    assert_eq!(
        world.items(&["tokens", "list", "--all", "--name", "ci", "--limit", "3"]),
        ci
    );
}

// ----- The next-page hint -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_table_hints_the_next_page_json_does_not() {
    let world = world().await;
    let hint = |out: &Out| -> Option<String> {
        assert!(out.status.success(), "{out:#?}");
        let lines: Vec<&str> = out.stderr.lines().collect();
        match lines.as_slice() {
            [] => None,
            [line] => {
                let rest = line
                    .strip_prefix("more may follow: --start-key ")
                    .unwrap_or_else(|| panic!("not a hint: {line:?}"));
                Some(rest.split_whitespace().next().unwrap().to_owned())
            }
            more => panic!("several lines on stderr: {more:?}"),
        }
    };

    // Projects, the API's default page: the hint names last_key.
    let (first, _) = world.page("/v1/projects").await;
    assert_eq!(first["has_more"], json!(true));
    let out = world.run(&["projects", "list", "-o", "table"]);
    assert_eq!(hint(&out), Some(text_of(&first["last_key"])));
    // Following the hint gives the next page.
    let key = hint(&out).unwrap();
    let next = world.data(&format!("/v1/projects?start_key={key}")).await;
    assert_eq!(
        world.items(&["projects", "list", "--start-key", &key]),
        next
    );
    // json and ndjson: no hint.
    for format in ["json", "ndjson"] {
        let out = world.run(&["projects", "list", "-o", format]);
        assert_eq!(hint(&out), None, "-o {format}");
    }
    assert_eq!(hint(&world.run(&["projects", "list"])), None);
    // The last page: no hint.
    let last = world.walk("/v1/projects?limit=100").await;
    let key = text_of(&last[last.len() - 5]["id"]);
    let out = world.run(&["projects", "list", "-o", "table", "--start-key", &key]);
    assert_eq!(hint(&out), None);
    assert_eq!(table(&out.stdout, LISTINGS[0].headers).len(), 4);

    // Proxy settings: 100 of 130 by default.
    let (first, _) = world.page("/v1/projects/big/proxy-settings").await;
    assert_eq!(first["last_key"], json!("31"));
    let out = world.run(&["proxy-settings", "list", BIG, "-o", "table"]);
    assert_eq!(hint(&out), Some("31".to_owned()));
    let out = world.run(&[
        "proxy-settings",
        "list",
        BIG,
        "-o",
        "table",
        "--start-key",
        "31",
    ]);
    assert_eq!(hint(&out), None);
    assert_eq!(table(&out.stdout, LISTINGS[2].headers).len(), 30);

    // Tokens: a full page of 20 names its last id.
    let page = world.data("/v1/api_tokens").await;
    assert_eq!(page.len(), 20);
    let out = world.run(&["tokens", "list", "-o", "table"]);
    assert_eq!(hint(&out), Some(text_of(&page[19]["id"])));
    let out = world.run(&["tokens", "list", "-o", "table", "--name", "ci"]);
    assert_eq!(hint(&out), None, "a short page is the last");
    let out = world.run(&["tokens", "list", "-o", "ndjson"]);
    assert_eq!(hint(&out), None);
}

// ----- Errors -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_shows_api_errors_as_one_line() {
    let world = world().await;
    for listing in &LISTINGS {
        for limit in ["0", "101"] {
            let out = world.run(&with(listing.args, &["--limit", limit]));
            let line = out.error(&[]);
            assert_eq!(
                line, "error: limit must be an integer between 1 and 100",
                "{:?} --limit {limit}",
                listing.args
            );
            assert_ne!(out.status.code(), Some(0));
        }
    }
    // The API's own words for the same request.
    let (status, body) = world
        .app
        .get_json("/v1/projects?limit=0", &world.secret)
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["message"],
        json!("limit must be an integer between 1 and 100")
    );

    for project in ["no-such-project", "hidden"] {
        let line = world.run(&["proxy-settings", "list", project]).error(&[]);
        assert_eq!(line, "error: no such project", "{project}");
    }
    world
        .run(&["projects", "list", "--organization-id", &org_id(3)])
        .error(&["no such organization"]);
    world
        .run(&["projects", "list", "--start-key", "never-listed"])
        .error(&["start_key"]);

    // Tokens that do not authenticate.
    let (revoked, revoked_secret) = world.app.token_with("u1", "revoked", None).await;
    let (_, expired_secret) = world
        .app
        .token_with(
            "u1",
            "expired",
            Some(Timestamp::now().plus_seconds(-60).unwrap()),
        )
        .await;
    world.app.store.revoke_token(&revoked.id).await.unwrap();
    // One character changed (never to itself: then it would be the secret).
    let (kept, last) = world.secret.split_at(world.secret.len() - 1);
    let mistyped = format!("{kept}{}", if last == "x" { "y" } else { "x" });
    for (bad, needle) in [
        ("pxd_bogus", "token"),
        (mistyped.as_str(), "token"),
        ("not-even-close", "token"),
        (revoked_secret.as_str(), "revoked"),
        (expired_secret.as_str(), "expired"),
    ] {
        for args in [
            &["projects", "list"][..],
            &["tokens", "list", "-o", "table"],
            &["proxy-settings", "list", BIG],
        ] {
            let mut command = world.bare(args);
            command.args(["--url", &world.url(), "--token", bad]);
            let out = finish(command, None);
            let line = out.error(&[needle]);
            assert!(line.contains("API token"), "{line}");
            assert!(!line.contains(bad), "the token is echoed: {line}");
            for secret in [&world.secret, &revoked_secret, &expired_secret] {
                assert!(!line.contains(secret.as_str()), "{line}");
            }
        }
    }

    // No token at all: one line naming --token.
    let mut command = world.bare(&["projects", "list", "--url", &world.url()]);
    command.env_remove("PROXYDECK_TOKEN");
    let line = finish(command, None).error(&["--token"]);
    assert!(!line.contains("Usage"), "{line}");
    // An empty PROXYDECK_TOKEN authenticates nobody: one line, whether the
    // client or the server refuses it.
    let mut command = world.bare(&["tokens", "list", "--url", &world.url()]);
    command.env("PROXYDECK_TOKEN", "");
    let line = finish(command, None).error(&[]);
    assert!(
        line.contains("--token") || line.contains("API token"),
        "{line}"
    );

    // Nothing listening: one line.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    for args in [
        &["projects", "list"][..],
        &["tokens", "list", "--all"],
        &["proxy-settings", "list", BIG, "-o", "table"],
    ] {
        let mut command = world.bare(args);
        command.args(["--url", &url, "--token", &world.secret]);
        let line = finish(command, None).error(&["cannot reach", &format!("127.0.0.1:{port}")]);
        assert!(line.starts_with("error: cannot reach"), "{line}");
        assert!(!line.contains(&world.secret), "{line}");
    }
    // Values the argument parser refuses: one line, naming the flag.
    for (args, flag) in [
        (&["projects", "list", "--limit", "abc"][..], "--limit"),
        (
            &["projects", "list", "--order-direction", "up"],
            "--order-direction",
        ),
        (&["tokens", "list", "--output", "xml"], "--output"),
        (&["proxy-settings", "list", BIG, "-o", "yaml"], "--output"),
    ] {
        world.run(args).error(&[flag]);
    }
    world
        .run(&["proxy-settings", "list"])
        .error(&["PROJECT_ID"]);

    // Not a URL.
    for url in ["not a url", "ftp://127.0.0.1/", "mailto:ops@example.com"] {
        let mut command = world.bare(&["projects", "list", "--token", &world.secret]);
        command.args(["--url", url]);
        finish(command, None).error(&["--url"]);
    }
}

// ----- Where the URL and token come from -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reads_url_and_token_from_the_environment() {
    let world = world().await;
    let expected = world.data("/v1/projects?limit=5").await;

    let from_env = |args: &[&str], url: &str, token: &str| -> Out {
        let mut command = world.bare(args);
        command
            .env("PROXYDECK_URL", url)
            .env("PROXYDECK_TOKEN", token);
        finish(command, None)
    };
    let items = |out: Out| -> Value {
        assert!(out.stderr.is_empty(), "{out:#?}");
        out.json()
    };
    let url = world.url();
    assert_eq!(
        items(from_env(
            &["projects", "list", "--limit", "5"],
            &url,
            &world.secret
        )),
        Value::Array(expected.clone())
    );
    // A trailing slash, in the flag or in the environment.
    let slashed = format!("{url}/");
    assert_eq!(
        items(from_env(
            &["projects", "list", "--limit", "5", "--url", &slashed],
            "http://127.0.0.1:9/",
            &world.secret
        )),
        Value::Array(expected.clone())
    );
    assert_eq!(
        items(from_env(
            &["projects", "list", "--limit", "5"],
            &slashed,
            &world.secret
        )),
        Value::Array(expected.clone())
    );
    // Flags win over the environment.
    assert_eq!(
        items(from_env(
            &[
                "projects",
                "list",
                "--limit",
                "5",
                "--url",
                &url,
                "--token",
                &world.secret
            ],
            "http://127.0.0.1:9",
            "pxd_bogus"
        )),
        Value::Array(expected.clone())
    );
    // The environment's token is used: a bad one fails.
    from_env(&["projects", "list"], &url, "pxd_bogus").error(&["API token"]);
    // The folder the client ran in holds no database afterwards.
    assert!(
        std::fs::read_dir(world.cwd.path())
            .unwrap()
            .next()
            .is_none()
    );
}

// ----- Against a real server process -----

#[tokio::test]
async fn client_against_a_proxydeck_serve_child() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    let mut lines = Vec::new();
    for i in 0..45 {
        lines.push(project(&format!("s{i:02}"), 1, i));
    }
    for revision in 1..=3 {
        lines.push(settings("s07", revision, revision == 2));
    }
    sandbox.import(&lines);
    for i in 0..3 {
        sandbox.token("u1", &format!("extra-{i}"));
    }
    let server = sandbox.serve(&["--last-used-flush-interval", "1h"]);
    let base = server.base.clone();
    let client = |args: &[&str]| -> Out {
        let mut command = proxydeck(sandbox.path());
        command
            .args(args)
            .env("PROXYDECK_URL", &base)
            .env("PROXYDECK_TOKEN", &secret);
        finish(command, None)
    };

    let all = server.projects(&secret).await;
    let out = client(&["projects", "list", "--all", "--order-direction", "asc"]);
    assert_eq!(out.json(), Value::Array(all.clone()));
    let out = client(&["projects", "list", "-o", "table", "--limit", "10"]);
    assert!(out.status.success(), "{out:#?}");
    let rows = table(&out.stdout, LISTINGS[0].headers);
    let mut newest: Vec<&str> = ids_of(&all);
    newest.reverse();
    assert_eq!(column(&rows, 0), newest[..10]);
    assert_eq!(
        out.stderr.trim(),
        format!("more may follow: --start-key {} (or --all)", newest[9])
    );

    let out = client(&["proxy-settings", "list", "s07", "--order-direction", "asc"]);
    assert_eq!(
        out.json(),
        Value::Array(server.revisions("s07", &secret).await)
    );

    let mut tokens = server.tokens(&secret).await;
    assert_eq!(tokens.len(), 4);
    let out = client(&["tokens", "list", "-o", "ndjson"]);
    let listed: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(listed, tokens);
    tokens.retain(|t| t["name"] == json!("extra-1"));
    let out = client(&["tokens", "list", "--name", "extra-1"]);
    assert_eq!(out.json(), Value::Array(tokens));

    client(&["proxy-settings", "list", "nope"]).error(&["no such project"]);
    drop(server);
    client(&["projects", "list"]).error(&["cannot reach"]);
}

// ----- On a terminal -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_prints_a_table_on_a_terminal() {
    let world = world().await;
    let page = world.data("/v1/projects?limit=3").await;
    let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
    let line = [
        env!("CARGO_BIN_EXE_proxydeck"),
        "projects",
        "list",
        "--limit",
        "3",
        "--url",
        &world.url(),
        "--token",
        &world.secret,
    ]
    .iter()
    .map(|part| quote(part))
    .collect::<Vec<_>>()
    .join(" ");
    let mut script = Command::new("/usr/bin/script");
    script
        .args(["-qfec", &line, "/dev/null"])
        .current_dir(world.cwd.path())
        .env("TERM", "xterm");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PROXYDECK_") {
            script.env_remove(&key);
        }
    }
    let out = finish(script, None);
    assert!(out.status.success(), "{out:#?}");
    let shown = out.stdout.replace("\r\n", "\n");
    let (tabled, hint) = shown
        .split_once("more may follow: --start-key ")
        .unwrap_or_else(|| panic!("no hint: {shown:?}"));
    let rows = table(tabled.trim_end(), LISTINGS[0].headers);
    assert_eq!(column(&rows, 0), ids_of(&page));
    assert!(
        hint.starts_with(page[2]["id"].as_str().unwrap()),
        "{hint:?}"
    );
}

// ----- Help -----

#[test]
fn listing_commands_have_help_with_an_example() {
    let cwd = tempfile::tempdir().unwrap();
    let commands: [&[&str]; 8] = [
        &["projects", "list"],
        &["tokens", "list"],
        &["proxy-settings", "list"],
        &["admin", "export"],
        &["admin", "import"],
        &["admin", "org", "list"],
        &["admin", "user", "list"],
        &["admin", "token", "list"],
    ];
    for args in commands {
        let mut command = proxydeck(cwd.path());
        command.args(args).arg("--help");
        let out = finish(command, None);
        assert!(out.status.success(), "{args:?}: {out:#?}");
        assert!(out.stdout.contains("Example"), "{args:?}: {}", out.stdout);
        assert!(out.stderr.is_empty(), "{args:?}: {out:#?}");
    }
    assert!(!Path::new(&cwd.path().join("proxydeck.db")).exists());
}

/// A walk that fails half-way (the server goes away between two pages)
/// exits non-zero with one line, and with `--json` leaves no broken JSON
/// on stdout (`cli.md`: `--json` prints exactly one JSON document; a
/// failed command prints no result).
#[test]
fn client_failing_mid_walk_leaves_no_broken_json() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    let lines: Vec<Value> = (0..400)
        .map(|i| project(&format!("w{i:03}"), 1, i))
        .collect();
    sandbox.import(&lines);
    let server = sandbox.serve(&[]);

    let mut command = proxydeck(sandbox.path());
    command
        .args(["projects", "list", "--all", "--limit", "1", "--json"])
        .args(["--url", &server.base, "--token", &secret])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = Guard(command.spawn().expect("the client starts"));
    let mut stdout = child.0.stdout.take().expect("a stdout pipe");
    let mut stderr = child.0.stderr.take().expect("a stderr pipe");
    // The first page is out: the walk is under way. Stop the server.
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).expect("the first page");
    drop(server);

    let out_thread = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err_thread = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < COMMAND_DEADLINE, "the client hangs");
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = Out {
        status,
        stdout: format!("{}{}", first[0] as char, out_thread.join().unwrap()),
        stderr: err_thread.join().unwrap(),
    };
    if out.status.success() {
        // The walk ended before the server did: all of it, once.
        assert_eq!(out.json().as_array().unwrap().len(), 400);
    } else {
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{out:#?}");
        assert!(lines[0].starts_with("error: cannot reach"), "{out:#?}");
        let parsed: Result<Value, _> = serde_json::from_str(&out.stdout);
        assert!(
            out.stdout.trim().is_empty() || parsed.is_ok(),
            "a failed walk left broken JSON on stdout: {:?}",
            &out.stdout[out.stdout.len().saturating_sub(200)..]
        );
    }
}

/// A child process killed when dropped.
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
