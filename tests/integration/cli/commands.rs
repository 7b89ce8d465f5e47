//! What every command does alike: `migrate`, one JSON document or one error
//! line, a closed stdout, bad database URLs, taken ports, help with an
//! example, no password in any output.

use super::*;

#[test]
fn migrate_creates_the_database_and_prints_one_json_document() {
    let sandbox = Sandbox::new();
    assert!(!sandbox.db_path().exists());

    let out = sandbox.run(&["migrate", "--json"]);
    let first = out.json();
    assert!(first.is_object(), "{first}");
    assert!(sandbox.db_path().is_file(), "no database file was created");
    assert!(
        !dump(&sandbox.db_path()).is_empty(),
        "migrate wrote no schema"
    );

    // Again, on the migrated file: nothing to do, still success.
    let before = dump(&sandbox.db_path());
    let again = sandbox.run(&["migrate", "--json"]).json();
    assert_eq!(again, first);
    assert_eq!(dump(&sandbox.db_path()), before);

    // Without --json: success, and human text.
    let human = sandbox.run(&["migrate"]);
    assert!(human.status.success(), "{human:#?}");
}

#[test]
fn migrate_uses_the_default_database_and_the_environment_variable() {
    let sandbox = Sandbox::new();

    // No --database, no environment: ./proxydeck.db.
    let mut command = proxydeck(sandbox.path());
    command.args(["migrate", "--json"]);
    finish(command, None).json();
    assert!(sandbox.path().join("proxydeck.db").is_file());

    // PROXYDECK_DATABASE_URL picks the file.
    let from_env = sandbox.path().join("from-env.db");
    let mut command = proxydeck(sandbox.path());
    command.args(["migrate", "--json"]).env(
        "PROXYDECK_DATABASE_URL",
        format!("sqlite://{}", from_env.display()),
    );
    finish(command, None).json();
    assert!(from_env.is_file());

    // --database wins over the environment.
    let from_flag = sandbox.path().join("from-flag.db");
    let unused = sandbox.path().join("unused.db");
    let mut command = proxydeck(sandbox.path());
    command
        .args(["migrate", "--json", "--database"])
        .arg(format!("sqlite://{}", from_flag.display()))
        .env(
            "PROXYDECK_DATABASE_URL",
            format!("sqlite://{}", unused.display()),
        );
    finish(command, None).json();
    assert!(from_flag.is_file());
    assert!(!unused.exists());
}

/// A password in the database URL never reaches the output, whether the
/// server is unreachable or refuses the database.
#[test]
fn a_database_password_never_reaches_the_output() {
    let sandbox = Sandbox::new();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let urls = [
        format!("postgres://proxydeck:hunter2secret@{closed}/proxydeck"),
        "postgres://postgres:hunter2secret@127.0.0.1:5432/no_such_database_here".to_owned(),
    ];
    for url in &urls {
        for args in [&["migrate"][..], &["serve", "--listen", "127.0.0.1:0"]] {
            let mut command = proxydeck(sandbox.path());
            command
                .args(args)
                .args(["--database", url, "--db-timeout", "1s"]);
            let out = finish(command, None);
            assert!(!out.status.success(), "{args:?} {url}: {out:#?}");
            assert!(
                !out.stderr.contains("hunter2") && !out.stdout.contains("hunter2"),
                "{args:?}: the password is in the output: {out:#?}"
            );
        }
    }
}

/// `proxydeck ... | head`: when the reader of stdout has gone, a command
/// stops quietly with success, as other Unix tools do, instead of a panic
/// or an error about a broken pipe.
#[test]
fn a_closed_stdout_ends_commands_quietly() {
    let sandbox = Sandbox::new();
    sandbox.json(&["admin", "org", "create", "--name", "Acme"]);
    for args in [&["migrate", "--json"][..], &["admin", "export"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = sandbox
            .command(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// `docs/cli.md`: "non-zero with a one-line error on stderr otherwise". A value
/// the argument parser refuses is an error like any other.
#[test]
fn argument_errors_are_one_line() {
    let sandbox = Sandbox::new();
    sandbox.directory(1, "u1");
    sandbox
        .run(&[
            "admin",
            "token",
            "create",
            "--user",
            "u1",
            "--name",
            "ci",
            "--expires-in",
            "90x",
        ])
        .error(&["--expires-in", "90x"]);
}

#[test]
fn bad_database_urls_fail_with_one_line() {
    let sandbox = Sandbox::new();
    let garbage = sandbox.path().join("garbage.db");
    std::fs::write(
        &garbage,
        "this is not a database, just some text ".repeat(200),
    )
    .unwrap();
    let urls = [
        "mysql://x".to_owned(),
        "sqlite://".to_owned(),
        "proxydeck.db".to_owned(),
        "sqlite://a.db?mode=ro".to_owned(),
        format!("sqlite://{}/no/such/folder/x.db", sandbox.path().display()),
        format!("sqlite://{}", garbage.display()),
    ];
    let commands: [&[&str]; 5] = [
        &["migrate", "--json"],
        &["serve", "--listen", "127.0.0.1:0"],
        &["demo", "--listen", "127.0.0.1:0", "--json"],
        &["admin", "org", "create", "--name", "Acme"],
        &["admin", "import", "-"],
    ];
    for url in &urls {
        for args in commands {
            let mut command = proxydeck(sandbox.path());
            command.args(args).args(["--database", url]);
            let out = finish(command, Some(""));
            std::panic::catch_unwind(|| out.error(&[]))
                .unwrap_or_else(|_| panic!("{args:?} --database {url}: {out:#?}"));
        }
        // The same through the environment variable.
        let mut command = proxydeck(sandbox.path());
        command
            .args(["migrate", "--json"])
            .env("PROXYDECK_DATABASE_URL", url);
        finish(command, None).error(&[]);
    }
    assert!(!sandbox.path().join("proxydeck.db").exists());
    assert!(!sandbox.path().join("a.db").exists());
}

#[test]
fn serve_on_a_taken_port_fails_with_one_line() {
    let sandbox = Sandbox::new();
    sandbox.json(&["migrate"]);
    let taken = TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = taken.local_addr().unwrap().to_string();
    for command in ["serve", "demo"] {
        let out = sandbox.run(&[command, "--listen", &address]);
        let line = out.error_after_logs(&[&address]);
        assert!(line.to_lowercase().contains("listen"), "{line}");
    }
    sandbox
        .run(&["serve", "--listen", "not-an-address"])
        .error_after_logs(&["not-an-address"]);
    drop(taken);
}

#[test]
fn every_command_has_help_with_an_example() {
    let sandbox = Sandbox::new();
    let commands: [&[&str]; 22] = [
        &[],
        &["serve"],
        &["demo"],
        &["migrate"],
        &["config", "check"],
        &["admin", "org", "create"],
        &["admin", "user", "create"],
        &["admin", "token", "create"],
        &["admin", "token", "revoke"],
        &["admin", "import"],
        &["admin", "project", "delete"],
        &["admin", "export"],
        &["admin", "org", "list"],
        &["admin", "user", "list"],
        &["admin", "token", "list"],
        &["projects", "list"],
        &["tokens", "list"],
        &["proxy-settings", "list"],
        &["org", "delete"],
        &["members", "remove"],
        &["invite"],
        &["invitations", "accept"],
    ];
    for args in commands {
        let mut command = proxydeck(sandbox.path());
        command.args(args).arg("--help");
        let out = finish(command, None);
        assert!(out.status.success(), "{args:?}: {out:#?}");
        assert!(
            out.stdout.contains("Example"),
            "{args:?} has no example: {}",
            out.stdout
        );
        if let Some(last) = args.last() {
            assert!(out.stdout.contains(last), "{args:?}: {}", out.stdout);
        }
    }
    assert!(!sandbox.path().join("proxydeck.db").exists());
}
