//! The terminal client's errors: one line for an API error, no broken JSON
//! when a walk fails half-way.

use super::*;

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
        assert_eq!(
            line,
            format!("error: no project {project:?} (or this token cannot see it)")
        );
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
    world
        .app
        .store
        .run(RevokeToken(String::from(&revoked.id)))
        .await
        .unwrap();
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

    // No token at all: one line saying the three ways to give one.
    let mut command = world.bare(&["projects", "list", "--url", &world.url()]);
    command.env_remove("PROXYDECK_TOKEN");
    let out = finish(command, None);
    assert_eq!(out.status.code(), Some(2), "a usage error: {out:#?}");
    let line = out.error(&["PROXYDECK_TOKEN", "--token", "proxydeck login"]);
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
        // One sentence, not the HTTP library's chain of causes.
        let line = finish(command, None).error(&[]);
        assert_eq!(
            line,
            format!(
                "error: cannot reach {url} (connection refused); is proxydeck running there? \
                 Set --url or PROXYDECK_URL"
            )
        );
    }
    // Values the argument parser refuses: one line, naming the flag.
    for (args, flag) in [
        (&["projects", "list", "--limit", "abc"][..], "--limit"),
        (
            &["projects", "list", "--order-direction", "up"],
            "--order-direction",
        ),
        (&["tokens", "list", "--output", "xml"], "--output"),
        (&["tokens", "list", "--output", "json"], "--json"),
        (&["proxy-settings", "list", BIG, "-o", "yaml"], "--output"),
    ] {
        world.run(args).error(&[flag]);
    }
    world.run(&["proxy-settings", "list"]).error(&["PROJECT"]);

    // Not a URL.
    for url in ["not a url", "ftp://127.0.0.1/", "mailto:ops@example.com"] {
        let mut command = world.bare(&["projects", "list", "--token", &world.secret]);
        command.args(["--url", url]);
        finish(command, None).error(&["--url"]);
    }
}

/// A walk that fails half-way (the server goes away between two pages)
/// exits non-zero with one line, and with `--json` leaves no broken JSON
/// on stdout (`docs/cli.md`: `--json` prints exactly one JSON document; a
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
    let mut child = command.spawn().expect("the client starts");
    let mut stdout = child.stdout.take().expect("a stdout pipe");
    let mut stderr = child.stderr.take().expect("a stderr pipe");
    let exit = Exit::of(child);
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
    let status = exit.within(COMMAND_DEADLINE).expect("the client ends");
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
