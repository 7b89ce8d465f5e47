//! Passwords in settings: masked wherever shown, never in an error, read
//! from files, warned of on the command line.

use super::*;

const PG_URL: &str = "postgres://app:hunter2pg@db.example:5432/proxydeck";
const PG_SHOWN: &str = "postgres://app:****@db.example:5432/proxydeck";
const REDIS_URL: &str = "redis://:hunter2redis@cache.example:6379/0";
const REDIS_SHOWN: &str = "redis://:****@cache.example:6379/0";

#[track_caller]
fn assert_no_secret(out: &Out) {
    assert!(
        !out.stdout.contains("hunter2") && !out.stderr.contains("hunter2"),
        "a password is in the output: {out:#?}"
    );
}

#[test]
fn passwords_are_masked_wherever_the_urls_come_from() {
    let sandbox = Sandbox::new();
    let file = write_file(
        &sandbox,
        "secret.toml",
        &format!("database = \"{PG_URL}\"\nrate-limit-redis = \"{REDIS_URL}\"\n"),
    );
    let file_arg = file.display().to_string();
    let file_only: (Vec<&str>, Vec<(&str, &str)>) = (vec!["--config", &file_arg], vec![]);
    let env_only = (
        vec![],
        vec![
            ("PROXYDECK_DATABASE_URL", PG_URL),
            ("PROXYDECK_RATE_LIMIT_REDIS", REDIS_URL),
        ],
    );
    let flags_only = (
        vec!["--database", PG_URL, "--rate-limit-redis", REDIS_URL],
        vec![],
    );
    for ((args, env), source) in [(file_only, "file"), (env_only, "env"), (flags_only, "flag")] {
        for json in [false, true] {
            let check: &[&str] = if json {
                &["config", "check", "--json"]
            } else {
                &["config", "check"]
            };
            let out = run(&sandbox, &[check, &args], &env);
            assert!(out.status.success(), "{out:#?}");
            assert_no_secret(&out);
            assert!(out.stdout.contains(PG_SHOWN), "{out:#?}");
            assert!(out.stdout.contains(REDIS_SHOWN), "{out:#?}");
            if json {
                let document = one_json_document(&out.stdout);
                let settings = document["settings"].as_array().unwrap();
                let database = settings.iter().find(|s| s["name"] == "database").unwrap();
                assert_eq!(
                    *database,
                    json!({"name": "database", "value": PG_SHOWN, "source": source, "env": "PROXYDECK_DATABASE_URL"})
                );
            }
        }
    }
    // --help shows neither variable's value.
    let out = run(
        &sandbox,
        &[&["serve", "--help"]],
        &[
            ("PROXYDECK_DATABASE_URL", PG_URL),
            ("PROXYDECK_RATE_LIMIT_REDIS", REDIS_URL),
        ],
    );
    assert!(out.status.success(), "{out:#?}");
    assert_no_secret(&out);
}

#[test]
fn passwords_never_reach_an_error() {
    let sandbox = Sandbox::new();
    let cases = [
        // Values refused.
        "database = \"mysql://app:hunter2@db/x\"\n".to_owned(),
        "database = \"sqlite://x.db?password=hunter2\"\n".to_owned(),
        "rate-limit-redis = \"http://:hunter2@cache:6379\"\n".to_owned(),
        // Another setting refused, beside the secrets.
        format!(
            "database = \"{PG_URL}\"\nrate-limit-redis = \"{REDIS_URL}\"\ndb-pool-size = \"x\"\n"
        ),
        // Syntax errors on the very line of the password.
        "database = \"postgres://app:hunter2@db/x\n".to_owned(),
        format!("database = \"{PG_URL}\"\ndatabase = \"{PG_URL}\"\n"),
        format!("database = \"{PG_URL}\" hunter2\n"),
        format!("datbase = \"{PG_URL}\"\n"),
        format!("database = [\"{PG_URL}\"]\n"),
    ];
    for text in &cases {
        let file = write_file(&sandbox, "secret.toml", text);
        let file_arg = file.display().to_string();
        for args in [
            &["config", "check"][..],
            &["config", "check", "--json"],
            &["serve"],
        ] {
            let out = run(&sandbox, &[&["--config", &file_arg], args], &[]);
            assert!(!out.status.success(), "{text}: {out:#?}");
            assert_no_secret(&out);
            assert!(!out.stderr.trim().is_empty(), "{out:#?}");
        }
    }
}

const PASSWORD_WARNING: &str = "holds a password on the command line";

/// A password given as a flag shows in the process list: the command warns
/// once, naming the flag and the ways to give it instead, and still never
/// shows the password. From the environment or a file, no warning.
#[test]
fn a_password_on_the_command_line_is_warned_of_once() {
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            &["config", "check"],
            &["--database", PG_URL, "--rate-limit-redis", REDIS_URL],
        ],
        &[],
    );
    assert!(out.status.success(), "{out:#?}");
    assert_no_secret(&out);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|line| line.contains(PASSWORD_WARNING))
        .collect();
    assert_eq!(warnings.len(), 2, "{out:#?}");
    for (flag, env) in [
        ("--database", "PROXYDECK_DATABASE_URL"),
        ("--rate-limit-redis", "PROXYDECK_RATE_LIMIT_REDIS"),
    ] {
        let said = warnings
            .iter()
            .find(|line| line.contains(&format!("{flag} {PASSWORD_WARNING}")))
            .unwrap_or_else(|| panic!("no warning for {flag}: {out:#?}"));
        assert!(said.contains("WARN"), "{said}");
        assert!(said.contains(env), "{said}");
        assert!(said.contains(&format!("{flag}-password-file")), "{said}");
    }
    // Every command warns, not only serve; once.
    let out = run(
        &sandbox,
        &[&[
            "admin",
            "org",
            "list",
            "--database",
            PG_URL,
            "--db-timeout",
            "1s",
        ]],
        &[],
    );
    assert_no_secret(&out);
    assert_eq!(out.stderr.matches(PASSWORD_WARNING).count(), 1, "{out:#?}");

    let file = write_file(
        &sandbox,
        "secret.toml",
        &format!("database = \"{PG_URL}\"\n"),
    );
    let file_arg = file.display().to_string();
    for (args, env) in [
        (vec!["--config", file_arg.as_str()], vec![]),
        (
            vec![],
            vec![
                ("PROXYDECK_DATABASE_URL", PG_URL),
                ("PROXYDECK_RATE_LIMIT_REDIS", REDIS_URL),
            ],
        ),
        (
            vec!["--database", "postgres://app@db.example/proxydeck"],
            vec![],
        ),
    ] {
        let out = run(&sandbox, &[&["config", "check"], &args], &env);
        assert!(out.status.success(), "{out:#?}");
        assert!(
            !out.stderr.contains(PASSWORD_WARNING),
            "{args:?} {env:?}: {out:#?}"
        );
    }
}

/// Read replicas' URLs and their Redis: each shown masked, a password on
/// the command line warned of with the password file that serves it
/// (`--database-password-file`, `--replica-positions-redis-password-file`).
#[test]
fn replica_passwords_are_masked_and_warned_of() {
    let sandbox = Sandbox::new();
    let second = "postgres://app:hunter2two@replica-2.example/proxydeck";
    let out = run(
        &sandbox,
        &[
            &["config", "check"],
            &["--database", "postgres://app@db.example/proxydeck"],
            &["--database-replica", PG_URL, "--database-replica", second],
            &["--replica-positions-redis", REDIS_URL],
        ],
        &[],
    );
    assert!(out.status.success(), "{out:#?}");
    assert_no_secret(&out);
    assert!(
        out.stdout.contains(&format!(
            "{PG_SHOWN} postgres://app:****@replica-2.example/proxydeck"
        )),
        "{out:#?}"
    );
    assert!(out.stdout.contains(REDIS_SHOWN), "{out:#?}");
    let warning = |flag: &str| {
        out.stderr
            .lines()
            .find(|line| line.contains(&format!("{flag} {PASSWORD_WARNING}")))
            .unwrap_or_else(|| panic!("no warning for {flag}: {out:#?}"))
            .to_owned()
    };
    assert!(
        warning("--database-replica").ends_with(
            "give the URL in PROXYDECK_DATABASE_REPLICA, or the password in --database-password-file"
        ),
        "{out:#?}"
    );
    assert!(
        warning("--replica-positions-redis")
            .ends_with("give the URL in PROXYDECK_REPLICA_POSITIONS_REDIS, or the password in --replica-positions-redis-password-file"),
        "{out:#?}"
    );
}

/// `--database-password-file` and `--rate-limit-redis-password-file` (and
/// their variables): the password is the file's one line, put into the URL
/// the store and Redis are reached with; a password in both places, a file
/// for SQLite, an empty or unreadable file are refused by name, without
/// the password.
#[test]
fn passwords_are_read_from_files() {
    let sandbox = Sandbox::new();
    let password = write_file(&sandbox, "password", "hunter2 file\n");
    let password_arg = password.display().to_string();
    let out = run(
        &sandbox,
        &[&[
            "config",
            "check",
            "--json",
            "--database",
            "postgres://app@db.example/proxydeck",
            "--database-password-file",
            &password_arg,
            "--rate-limit-redis",
            "redis://cache.example:6379",
        ]],
        &[(
            "PROXYDECK_RATE_LIMIT_REDIS_PASSWORD_FILE",
            password_arg.as_str(),
        )],
    );
    assert!(out.status.success(), "{out:#?}");
    assert!(!out.stderr.contains(PASSWORD_WARNING), "{out:#?}");
    assert_no_secret(&out);
    let settings = one_json_document(&out.stdout)["settings"].clone();
    let find = |name: &str| {
        settings
            .as_array()
            .unwrap()
            .iter()
            .find(|setting| setting["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name}: {settings}"))
    };
    assert_eq!(find("database-password-file")["value"], json!(password_arg));
    assert_eq!(find("database-password-file")["source"], json!("flag"));
    assert_eq!(
        find("rate-limit-redis-password-file")["source"],
        json!("env")
    );

    let empty = write_file(&sandbox, "empty", "\n");
    let empty_arg = empty.display().to_string();
    let missing_arg = sandbox.path().join("missing").display().to_string();
    let cases: [(&[&str], &str, &str); 8] = [
        (
            &[
                "--database",
                PG_URL,
                "--database-password-file",
                &password_arg,
            ],
            "database-password-file",
            "give it in one place",
        ),
        (
            &[
                "--database",
                "sqlite://x.db",
                "--database-password-file",
                &password_arg,
            ],
            "database-password-file",
            "only a postgres:// database",
        ),
        (
            &[
                "--database",
                "postgres://app@db/x",
                "--database-password-file",
                &empty_arg,
            ],
            "database-password-file",
            "is empty",
        ),
        (
            &[
                "--database",
                "postgres://app@db/x",
                "--database-password-file",
                &missing_arg,
            ],
            "database-password-file",
            "cannot read",
        ),
        (
            &[
                "--rate-limit-redis",
                "redis://:other@cache",
                "--rate-limit-redis-password-file",
                &password_arg,
            ],
            "rate-limit-redis-password-file",
            "give it in one place",
        ),
        (
            &["--rate-limit-redis-password-file", &password_arg],
            "rate-limit-redis-password-file",
            "no --rate-limit-redis",
        ),
        (
            &[
                "--database",
                PG_URL,
                "--database-replica",
                "postgres://app@replica/x",
                "--replica-positions-redis",
                "redis://:other@cache",
                "--replica-positions-redis-password-file",
                &password_arg,
            ],
            "replica-positions-redis-password-file",
            "give it in one place",
        ),
        (
            &[
                "--database",
                PG_URL,
                "--database-replica",
                "postgres://app@replica/x",
                "--replica-positions-redis-password-file",
                &password_arg,
            ],
            "replica-positions-redis-password-file",
            "no --replica-positions-redis",
        ),
    ];
    for (args, flag, why) in cases {
        let out = run(&sandbox, &[&["config", "check"], args], &[]);
        assert!(!out.status.success(), "{args:?}: {out:#?}");
        assert_no_secret(&out);
        assert!(
            out.stderr.contains(&format!("--{flag}: ")),
            "{args:?}: {out:#?}"
        );
        assert!(out.stderr.contains(why), "{args:?}: {out:#?}");
    }
    assert!(!sandbox.path().join("x.db").exists(), "nothing was opened");
}

/// `migrate --json --database URL` with `password` given in a file.
fn migrate_with_password_file(sandbox: &Sandbox, url: &str, password: &str) -> Out {
    let file = write_file(sandbox, "password", password);
    let file_arg = file.display().to_string();
    let migrate = [
        "migrate",
        "--json",
        "--database",
        url,
        "--database-password-file",
        &file_arg,
    ];
    run(sandbox, &[&migrate], &[])
}

/// The real PostgreSQL driver takes the URL with the file's password put
/// in (the schema's `options=` query and all): `migrate` succeeds.
#[test]
fn a_password_file_reaches_postgresql() {
    use crate::helpers::{Backend, Schema, postgres_base_url, unavailable};
    if unavailable(Backend::Postgres) {
        return;
    }
    let sandbox = Sandbox::new();
    let schema = Schema::create(postgres_base_url().unwrap());
    let out = migrate_with_password_file(&sandbox, &schema.direct_url(), "any:p@ss/word%\n");
    assert_eq!(out.json(), json!({"migrated": true}), "{out:#?}");
    assert!(!out.stderr.contains("p@ss"), "{out:#?}");
}

/// A password given in a file reaches a server that checks it, over a
/// Unix socket named the way libpq allows (`postgres:///db?host=FOLDER`,
/// no host in the authority): the right one lets `migrate` in, a wrong
/// one is refused by the server, and neither is shown.
#[test]
fn a_password_file_reaches_postgresql_over_a_unix_socket() {
    let Some(private) =
        crate::postgres_cluster::PrivateCluster::start_with_password("s0cket:p@ss%")
    else {
        return;
    };
    let sandbox = Sandbox::new();
    let url = private.cluster.url();
    assert!(url.starts_with("postgres:///"), "{url}");
    for (password, admitted) in [("s0cket:p@ss%\n", true), ("wr0ng:p@ss%\n", false)] {
        let out = migrate_with_password_file(&sandbox, &url, password);
        assert!(
            !out.stderr.contains("p@ss") && !out.stdout.contains("p@ss"),
            "{out:#?}"
        );
        if admitted {
            assert_eq!(out.json(), json!({"migrated": true}), "{out:#?}");
        } else {
            assert!(!out.status.success(), "{out:#?}");
            assert!(
                out.stderr.contains("password authentication failed"),
                "{out:#?}"
            );
        }
    }
}
