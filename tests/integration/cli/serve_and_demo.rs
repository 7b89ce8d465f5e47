//! `serve` and `demo` as processes: the environment and flags, demo data.

use super::*;

/// Starts `demo --json` on the sandbox's database; answers the server and
/// the first stdout line, parsed.
fn start_demo(sandbox: &Sandbox) -> (Server, Value) {
    let server = Server::start(|listen| sandbox.command(&["demo", "--json", "--listen", listen]));
    let line = server.stdout_line();
    let started: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("the first line is not JSON ({e}): {line:?}"));
    let keys: Vec<&str> = started
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {line}"))
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["token", "url"], "{line}");
    assert_eq!(started["url"], json!(server.base), "{line}");
    (server, started)
}

#[tokio::test]
async fn demo_prints_url_and_token_then_serves_demo_data() {
    let sandbox = Sandbox::new();
    let (server, started) = start_demo(&sandbox);
    let token = started["token"].as_str().unwrap();
    assert!(token.starts_with("pxd_") && token.len() == 42, "{token}");

    let (status, body) = server.get("/v1/projects", token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], json!("list"));
    assert!(!body["data"].as_array().unwrap().is_empty(), "{body}");

    let projects = server.projects(token).await;
    let mut revisions = 0;
    for project in &projects {
        revisions += server
            .revisions(project["id"].as_str().unwrap(), token)
            .await
            .len();
    }
    assert!(revisions > 0, "the demo has no proxy settings revisions");

    let tokens = server.tokens(token).await;
    let hint = format!("pxd_****{}", &token[token.len() - 4..]);
    assert!(
        tokens.iter().any(|listed| listed["token"] == json!(hint)),
        "the demo token is not listed: {tokens:#?}"
    );
}

#[tokio::test]
async fn the_demo_prints_the_terminal_clients_environment() {
    let sandbox = Sandbox::new();
    let server = Server::start(|listen| sandbox.command(&["demo", "--listen", listen]));
    let export = std::iter::repeat_with(|| server.stdout_line())
        .map(|line| line.trim().to_owned())
        .find(|line| line.starts_with("export "))
        .expect("an export line");
    assert!(
        export.contains("PROXYDECK_URL=") && export.contains("PROXYDECK_TOKEN="),
        "{export}"
    );

    // A shell that evaluates the line as printed, then runs the client
    // with nothing else: the demo's first page, as the API answers it.
    let mut command = std::process::Command::new("sh");
    without_our_environment(&mut command);
    command
        .current_dir(sandbox.path())
        .arg("-c")
        .arg(format!("{export}\nexec \"$0\" projects list --json"))
        .arg(env!("CARGO_BIN_EXE_proxydeck"));
    let listed = finish(command, None).json();
    let token = export
        .split("PROXYDECK_TOKEN=")
        .nth(1)
        .unwrap()
        .trim_matches('\'');
    let (status, page) = server.get("/v1/projects", token).await;
    assert_eq!(status, 200, "{page}");
    assert!(!page["data"].as_array().unwrap().is_empty(), "{page}");
    assert_eq!(
        listed, page["data"],
        "the client's list is not the first page"
    );
}

#[tokio::test]
async fn demo_runs_twice_on_the_same_file() {
    let sandbox = Sandbox::new();
    let (first, started) = start_demo(&sandbox);
    let first_token = started["token"].as_str().unwrap().to_owned();
    let first_listing = first.text("/v1/projects?limit=100", &first_token).await;
    drop(first);

    let (second, started) = start_demo(&sandbox);
    let second_token = started["token"].as_str().unwrap().to_owned();
    assert_ne!(first_token, second_token);
    let second_listing = second.text("/v1/projects?limit=100", &second_token).await;
    assert_eq!(second_listing, first_listing, "the demo data changed");
    let tokens = second.tokens(&second_token).await;
    let hint = format!("pxd_****{}", &second_token[second_token.len() - 4..]);
    assert!(
        tokens.iter().any(|listed| listed["token"] == json!(hint)),
        "{tokens:#?}"
    );
}

#[tokio::test]
async fn serve_honours_the_environment_and_flags_override_it() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    sandbox.import(&[project("p1", 1, 0)]);
    let other = sandbox.path().join("other.db");

    // Only the environment.
    let server = Server::start(|listen| {
        let mut command = proxydeck(sandbox.path());
        command
            .args(["serve", "--token-cache-ttl", "200ms"])
            .env("PROXYDECK_LISTEN", listen)
            .env("PROXYDECK_DATABASE_URL", sandbox.db_url());
        command
    });
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["p1"]);
    drop(server);
    assert!(!sandbox.path().join("proxydeck.db").exists());

    // Flags win over the environment.
    let env_port = free_port();
    let server = Server::start(|listen| {
        let mut command = proxydeck(sandbox.path());
        command
            .args(["serve", "--listen", listen, "--database"])
            .arg(sandbox.db_url())
            .env("PROXYDECK_LISTEN", format!("127.0.0.1:{env_port}"))
            .env(
                "PROXYDECK_DATABASE_URL",
                format!("sqlite://{}", other.display()),
            );
        command
    });
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["p1"]);
    assert!(
        !accepts(env_port),
        "the server listens on PROXYDECK_LISTEN too"
    );
    assert!(!other.exists(), "the server opened PROXYDECK_DATABASE_URL");
}

/// `demo` and `serve` on an address already taken fail, say so, and leave
/// nothing behind: no database file (so no half-made demo), no migration.
#[test]
fn a_start_on_a_taken_address_leaves_nothing_behind() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("a port of our own");
    let address = taken.local_addr().unwrap().to_string();
    for command in ["demo", "serve"] {
        let sandbox = Sandbox::new();
        let out = sandbox.run(&[command, "--listen", &address]);
        assert!(!out.status.success(), "{command}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!("cannot listen on {address}")),
            "{command}: {}",
            out.stderr
        );
        let left: Vec<_> = std::fs::read_dir(sandbox.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{command} left {left:?}");
    }
}
