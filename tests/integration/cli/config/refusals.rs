//! Bad configuration is refused with the setting's name (and the file's
//! line), wherever it comes from.

use super::*;

/// Runs `config check` and `serve` on the file holding `text`: both fail
/// at once with exit status 2 and the same one line naming the file and
/// every one of `needles`; answers that line.
#[track_caller]
fn refused(sandbox: &Sandbox, text: &str, needles: &[&str]) -> String {
    let file = write_file(sandbox, "bad.toml", text);
    let file_arg = file.display().to_string();
    let mut lines = Vec::new();
    for args in [
        &["config", "check"][..],
        &["config", "check", "--json"],
        &["serve", "--listen", "127.0.0.1:0"],
        &["demo", "--listen", "127.0.0.1:0"],
    ] {
        let out = run(sandbox, &[&["--config", &file_arg], args], &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?} on {text:?}: {out:#?}");
        let mut with_file = needles.to_vec();
        with_file.push(&file_arg);
        with_file.push("config file");
        lines.push(out.error(&with_file));
    }
    assert!(
        lines.windows(2).all(|pair| pair[0] == pair[1]),
        "{lines:#?}"
    );
    lines.remove(0)
}

#[test]
fn bad_values_in_the_file_are_refused_with_the_setting_name() {
    let sandbox = Sandbox::new();
    let line = refused(&sandbox, "db-pool-size = \"abc\"\n", &["db-pool-size"]);
    assert!(
        line.ends_with(": db-pool-size = \"abc\": invalid digit found in string"),
        "{line}"
    );
    refused(&sandbox, "rate-limit = -1\n", &["rate-limit = -1"]);
    refused(
        &sandbox,
        "rate_limit = \"fast\"\n",
        &["rate_limit = \"fast\""],
    );
    refused(
        &sandbox,
        "log-format = \"xml\"\n",
        &["log-format = \"xml\"", "text, json"],
    );
    refused(&sandbox, "log-level = \"loud\"\n", &["log-level", "loud"]);
    refused(
        &sandbox,
        "db-timeout = \"soon\"\n",
        &["db-timeout = \"soon\"", "whole number"],
    );
    refused(
        &sandbox,
        "shutdown-grace = 30\n",
        &["shutdown-grace = 30", "unit"],
    );
    refused(
        &sandbox,
        "rate-limit-burst = 0\n",
        &["rate-limit-burst = 0"],
    );
    refused(&sandbox, "db-pool-size = -3\n", &["db-pool-size = -3"]);
    // A value the flag would refuse is refused even when a flag overrides
    // it: the file must be valid on its own.
    let file = write_file(&sandbox, "overridden.toml", "db-timeout = \"soon\"\n");
    let file_arg = file.display().to_string();
    let args = [
        "--config",
        &file_arg,
        "config",
        "check",
        "--db-timeout",
        "2s",
    ];
    run(&sandbox, &[&args], &[]).error(&["db-timeout"]);
}

#[test]
fn unknown_misplaced_and_mistyped_settings_are_refused_by_name() {
    let sandbox = Sandbox::new();
    let line = refused(&sandbox, "db-pool = 4\n", &["db-pool"]);
    assert!(
        line.ends_with(": unknown setting \"db-pool\" (did you mean \"db-pool-size\"?)"),
        "{line}"
    );
    refused(
        &sandbox,
        "lisen = \"x\"\n",
        &["\"lisen\"", "did you mean \"listen\""],
    );
    refused(
        &sandbox,
        "colour = \"blue\"\n",
        &["unknown setting \"colour\""],
    );
    refused(&sandbox, "listen = true\n", &["listen", "boolean"]);
    refused(
        &sandbox,
        "listen = [\"127.0.0.1:1\"]\n",
        &["listen", "array"],
    );
    refused(
        &sandbox,
        "db-timeout = 1979-05-27\n",
        &["db-timeout", "date"],
    );
    refused(&sandbox, "[serve]\nlisten = \"x\"\n", &["serve", "table"]);
    refused(
        &sandbox,
        "db_pool_size = 4\ndb-pool-size = 5\n",
        &["db-pool-size", "twice", "db_pool_size"],
    );
    refused(&sandbox, "json = true\n", &["\"json\"", "cannot be set"]);
    refused(
        &sandbox,
        "config = \"other.toml\"\n",
        &["\"config\"", "cannot be set"],
    );
    refused(
        &sandbox,
        "url = \"http://x\"\n",
        &["\"url\"", "cannot be set", "PROXYDECK_URL"],
    );
    refused(
        &sandbox,
        "token = \"pxd_x\"\n",
        &["\"token\"", "PROXYDECK_TOKEN"],
    );
}

#[test]
fn unreadable_and_malformed_files_are_refused_with_the_line() {
    let sandbox = Sandbox::new();
    refused(
        &sandbox,
        "listen = \"127.0.0.1:8080\"\ndb-timeout = \"2s\n",
        &["line 2"],
    );
    refused(
        &sandbox,
        "listen = \"a\"\n\nlisten = \"b\"\n",
        &["line 3", "duplicate key"],
    );
    refused(&sandbox, "listen\n", &["line 1"]);
    let missing = sandbox.path().join("missing.toml");
    let missing_arg = missing.display().to_string();
    for args in [&["config", "check"][..], &["serve"], &["migrate"]] {
        let out = run(&sandbox, &[&["--config", &missing_arg], args], &[]);
        assert_eq!(out.status.code(), Some(2), "{out:#?}");
        out.error(&["config file", &missing_arg, "cannot read"]);
    }
    assert!(!sandbox.path().join("proxydeck.db").exists());
}

#[test]
fn bad_environment_variables_and_flags_are_refused_with_the_setting_name() {
    let sandbox = Sandbox::new();
    let file = write_file(&sandbox, "ok.toml", "db-pool-size = 4\n");
    let file_arg = file.display().to_string();
    for (variable, value, flag) in [
        ("PROXYDECK_DB_POOL_SIZE", "abc", "--db-pool-size"),
        ("PROXYDECK_RATE_LIMIT", "-1", "--rate-limit"),
        ("PROXYDECK_LOG_FORMAT", "xml", "--log-format"),
        ("PROXYDECK_TOKEN_CACHE_TTL", "soon", "--token-cache-ttl"),
    ] {
        let mut lines = Vec::new();
        for args in [
            &["config", "check"][..],
            &["serve", "--listen", "127.0.0.1:0"],
        ] {
            let out = run(
                &sandbox,
                &[&["--config", &file_arg], args],
                &[(variable, value)],
            );
            assert_eq!(out.status.code(), Some(2), "{out:#?}");
            lines.push(out.error(&[flag, value, &format!("(the value of {variable})")]));
        }
        assert_eq!(lines[0], lines[1]);
        // The same bad value as a flag, the variable set too: the flag is
        // what counts, and the message does not point at the variable.
        let given = format!("{flag}={value}");
        let out = run(
            &sandbox,
            &[&["config", "check", &given]],
            &[(variable, value)],
        );
        let line = out.error(&[flag, value]);
        assert!(!line.contains(variable), "{line}");
    }
    // What clap cannot check, serve and config check refuse alike, as
    // usage errors, naming where the value came from.
    let file = write_file(
        &sandbox,
        "odd.toml",
        "rate-limit = 1\nrate-limit-burst = 2000000\n",
    );
    let odd_file = file.display().to_string();
    let in_file = format!("(set in the config file {odd_file})");
    for (args, env, needles) in [
        (
            &["--database", "mysql://x"][..],
            None,
            &["database URL"][..],
        ),
        (
            &[],
            Some(("PROXYDECK_DATABASE_URL", "mysql://x")),
            &["database URL", "(the value of PROXYDECK_DATABASE_URL)"],
        ),
        (
            &["--rate-limit-redis", "http://x"],
            None,
            &["--rate-limit-redis"],
        ),
        // A transaction pooler: on PostgreSQL only, with a direct URL for
        // the migrations, which is a postgres:// one and for a pooler only.
        (
            &["--database-pooler", "transaction"],
            None,
            &["--database-pooler: only a postgres:// database"],
        ),
        (
            &[
                "--database",
                "postgres://db/x",
                "--database-pooler",
                "transaction",
            ],
            None,
            &["--database-pooler transaction needs --database-direct-url"],
        ),
        (
            &[
                "--database",
                "postgres://db/x",
                "--database-pooler",
                "transaction",
                "--database-direct-url",
                "sqlite://x.db",
            ],
            None,
            &["--database-direct-url: write a postgres:// URL"],
        ),
        (
            &[
                "--database",
                "postgres://db/x",
                "--database-direct-url",
                "postgres://db/x",
            ],
            None,
            &["--database-direct-url: only with --database-pooler transaction"],
        ),
        // Read replicas: of a postgres:// database, postgres:// URLs, a
        // lag that a check can tell, and a Redis for replicas only.
        (
            &["--database-replica", "postgres://replica/x"],
            None,
            &["--database-replica: only a postgres:// database has replicas"],
        ),
        (
            &["--database", "postgres://db/x"],
            Some((
                "PROXYDECK_DATABASE_REPLICA",
                "postgres://replica/x sqlite://x.db",
            )),
            &[
                "--database-replica: write a postgres:// URL",
                "(the value of PROXYDECK_DATABASE_REPLICA)",
            ],
        ),
        (
            &[
                "--database",
                "postgres://db/x",
                "--database-replica",
                "postgres://replica/x",
                "--replica-max-lag",
                "10ms",
            ],
            None,
            &["--replica-max-lag: must be 100ms or more"],
        ),
        (
            &[
                "--database",
                "postgres://db/x",
                "--replica-positions-redis",
                "redis://cache",
            ],
            None,
            &["--replica-positions-redis: only with --database-replica"],
        ),
        (
            &[
                "--database",
                "postgres://db/x",
                "--database-replica",
                "postgres://replica/x",
                "--replica-positions-redis",
                "http://cache",
            ],
            None,
            &["--replica-positions-redis must be a Redis URL"],
        ),
        (
            &[],
            Some(("PROXYDECK_RATE_LIMIT_REDIS", "http://x")),
            &[
                "--rate-limit-redis",
                "(the value of PROXYDECK_RATE_LIMIT_REDIS)",
            ],
        ),
        (
            &["--rate-limit", "1", "--rate-limit-burst", "2000000"],
            None,
            &["--rate-limit-burst"],
        ),
        (
            &["--config", &odd_file],
            None,
            &["--rate-limit-burst", &in_file],
        ),
    ] {
        let mut lines = Vec::new();
        for command_args in [
            &["config", "check"][..],
            &["serve", "--listen", "127.0.0.1:0"],
        ] {
            let out = run(&sandbox, &[command_args, args], env.as_slice());
            assert_eq!(out.status.code(), Some(2), "{out:#?}");
            let line = out.error_after_logs(needles);
            if env.is_none() && !args.contains(&"--config") {
                assert!(!line.contains("(the value of"), "{line}");
                assert!(!line.contains("(set in the config file"), "{line}");
            }
            lines.push(line);
        }
        assert_eq!(lines[0], lines[1]);
    }
    assert!(!sandbox.path().join("proxydeck.db").exists());
}

#[test]
fn empty_environment_variables_count_as_unset() {
    let sandbox = Sandbox::new();
    let file = write_file(&sandbox, "proxydeck.toml", "db-pool-size = 8\n");
    let file_arg = file.display().to_string();
    let checked = check_json(
        &sandbox,
        &["--config", &file_arg],
        &[
            ("PROXYDECK_LISTEN", ""),
            ("PROXYDECK_DB_POOL_SIZE", ""),
            ("PROXYDECK_RATE_LIMIT_REDIS", ""),
            ("PROXYDECK_LOG_LEVEL", ""),
        ],
    );
    assert_setting(&checked, "listen", json!("127.0.0.1:8080"), "default");
    assert_setting(&checked, "db-pool-size", json!("8"), "file");
    assert_setting(&checked, "rate-limit-redis", Value::Null, "unset");
    assert_setting(&checked, "log-level", Value::Null, "unset");
    // The variable still shows as the setting's.
    assert_eq!(
        checked["settings"]["listen"]["env"],
        json!("PROXYDECK_LISTEN")
    );
    // An empty PROXYDECK_CONFIG: no file.
    let checked = check_json(&sandbox, &[], &[("PROXYDECK_CONFIG", "")]);
    assert_eq!(checked["config_file"], Value::Null);
    // A command's own variable too: an empty token is a missing token.
    let out = run(
        &sandbox,
        &[&["projects", "list"]],
        &[("PROXYDECK_TOKEN", "")],
    );
    assert_eq!(out.status.code(), Some(2), "{out:#?}");
    out.error(&["--token"]);
    // An empty value given as a flag is still refused.
    let out = run(&sandbox, &[&["config", "check", "--listen="]], &[]);
    assert_eq!(out.status.code(), Some(2), "{out:#?}");
}
