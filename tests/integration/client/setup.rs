//! Where the terminal client's URL and token come from, the client against
//! a `proxydeck serve` process, and its help.

use super::*;

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

    client(&["proxy-settings", "list", "nope"]).error(&["no project \"nope\""]);
    drop(server);
    client(&["projects", "list"]).error(&["cannot reach"]);
}

#[test]
fn listing_commands_have_help_with_an_example() {
    let cwd = tempfile::tempdir().unwrap();
    let commands: [&[&str]; 11] = [
        &["projects", "list"],
        &["tokens", "list"],
        &["proxy-settings", "list"],
        &["login"],
        &["logout"],
        &["auth", "status"],
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

/// The client commands' help shows the client's flags, not the server's
/// (which they still take: `docs/cli.md` has every command take --database);
/// the server's commands still show theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_help_shows_client_flags_only() {
    let world = world().await;
    let help = |args: &[&str]| -> String {
        let mut command = world.bare(args);
        command.arg("--help");
        let out = finish(command, None);
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{args:?}: {out:#?}"
        );
        out.stdout
    };
    let server_flags = [
        "--database",
        "--database-password-file",
        "--db-pool-size",
        "--db-timeout",
        "--database-pooler",
        "--database-direct-url",
        "--log-format",
        "--log-level",
        "--config",
    ];
    let commands: [(&[&str], &[&str]); 10] = [
        (
            &["projects", "list"],
            &["--url", "--token", "--profile", "--json", "--jq"],
        ),
        (
            &["tokens", "list"],
            &["--url", "--token", "--profile", "--json", "--jq"],
        ),
        (
            &["proxy-settings", "list"],
            &["--url", "--token", "--profile", "--json", "--jq"],
        ),
        (&["projects"], &[]),
        (&["login"], &["--url", "--profile"]),
        (&["logout"], &["--profile"]),
        (
            &["auth", "status"],
            &["--url", "--token", "--profile", "--json"],
        ),
        (&["auth"], &[]),
        (&["proxy-settings"], &[]),
        (
            &["follow"],
            &[
                "--url",
                "--token",
                "--profile",
                "--dir",
                "--exec",
                "Exit status",
            ],
        ),
    ];
    for (args, shown) in commands {
        let text = help(args);
        for flag in server_flags {
            assert!(
                !text.contains(&format!("{flag} ")),
                "{args:?} shows {flag}: {text}"
            );
        }
        for flag in shown {
            assert!(text.contains(flag), "{args:?} does not show {flag}: {text}");
        }
    }
    for args in [&["serve"][..], &["migrate"], &["admin", "org", "list"]] {
        let text = help(args);
        assert!(
            text.contains("--database <URL>") && text.contains("--log-level"),
            "{args:?}: {text}"
        );
    }
    // Still taken, before or after the command.
    let expected = world.data("/v1/projects?limit=3").await;
    let items = world.items(&[
        "--log-level",
        "warn",
        "projects",
        "list",
        "--limit",
        "3",
        "--database",
        "sqlite://never-opened.db",
        "--db-pool-size",
        "2",
        "--log-format",
        "json",
    ]);
    assert_eq!(items, expected);
    assert!(!world.cwd.path().join("never-opened.db").exists());
}

/// The server's settings are not the client's business: a database URL
/// that the server would refuse, left in the environment, stops neither
/// a client command nor `completions`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_ignores_the_servers_database_settings() {
    let world = world().await;
    let expected = world.data("/v1/projects?limit=5").await;
    let mut command = world.bare(&["projects", "list", "--limit", "5"]);
    command
        .env("PROXYDECK_URL", world.url())
        .env("PROXYDECK_TOKEN", &world.secret)
        .env("PROXYDECK_DATABASE_URL", "mysql://nowhere");
    assert_eq!(finish(command, None).json(), Value::Array(expected));

    let mut command = world.bare(&["completions", "bash"]);
    command.env("PROXYDECK_DATABASE_URL", "mysql://nowhere");
    let out = finish(command, None);
    assert!(
        out.status.success() && out.stdout.contains("proxydeck"),
        "{out:#?}"
    );
}
