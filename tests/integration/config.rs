//! Configuration from flags, environment variables and a `--config` TOML
//! file, and `proxydeck config check`: the real binary, run as a child
//! process in a temporary folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::binary::*;

/// Writes `text` as `name` in the sandbox's folder; answers its path.
fn write_file(sandbox: &Sandbox, name: &str, text: &str) -> PathBuf {
    let path = sandbox.path().join(name);
    std::fs::write(&path, text).expect("the file is written");
    path
}

/// The binary in the sandbox's folder, with the arguments of `parts` one
/// after the other and `env` only (no `--database`: where each setting
/// comes from is what is tested).
fn command(sandbox: &Sandbox, parts: &[&[&str]], env: &[(&str, &str)]) -> Command {
    let mut command = proxydeck(sandbox.path());
    command.args(parts.concat()).envs(env.iter().copied());
    command
}

/// [`command`], run to its end.
#[track_caller]
fn run(sandbox: &Sandbox, parts: &[&[&str]], env: &[(&str, &str)]) -> Out {
    finish(command(sandbox, parts, env), None)
}

/// `config check --json` with `args` and `env`: the settings by name.
#[track_caller]
fn check_json(sandbox: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Value {
    let document = run(sandbox, &[&["config", "check", "--json"], args], env).json();
    let settings = document["settings"].as_array().expect("settings");
    let mut by_name = serde_json::Map::new();
    for setting in settings {
        let name = setting["name"].as_str().expect("a name").to_owned();
        assert!(
            by_name.insert(name, setting.clone()).is_none(),
            "{document}"
        );
    }
    json!({"config_file": document["config_file"], "settings": by_name})
}

#[track_caller]
fn assert_setting(checked: &Value, name: &str, value: Value, source: &str) {
    let setting = &checked["settings"][name];
    assert_eq!(setting["value"], value, "{name}: {setting}");
    assert_eq!(setting["source"], json!(source), "{name}: {setting}");
}

// ----- Precedence -----

#[test]
fn each_setting_comes_from_the_flag_else_the_environment_else_the_file_else_the_default() {
    let sandbox = Sandbox::new();
    let file = write_file(
        &sandbox,
        "proxydeck.toml",
        r#"
listen = "0.0.0.0:9999"
db-pool-size = 8
db-timeout = "7s"
log-level = "debug"
"#,
    );
    let file_arg = file.display().to_string();
    let checked = check_json(
        &sandbox,
        &["--config", &file_arg, "--db-timeout", "9s"],
        &[
            ("PROXYDECK_DB_POOL_SIZE", "6"),
            ("PROXYDECK_DB_TIMEOUT", "8s"),
        ],
    );
    assert_eq!(checked["config_file"], json!(file_arg));
    // The file alone.
    assert_setting(&checked, "listen", json!("0.0.0.0:9999"), "file");
    assert_setting(&checked, "log-level", json!("debug"), "file");
    // The file and the environment.
    assert_setting(&checked, "db-pool-size", json!("6"), "env");
    // The file, the environment and a flag.
    assert_setting(&checked, "db-timeout", json!("9s"), "flag");
    // Nothing: the default, or unset.
    assert_setting(&checked, "request-timeout", json!("30s"), "default");
    assert_setting(
        &checked,
        "database",
        json!("sqlite://proxydeck.db"),
        "default",
    );
    assert_setting(&checked, "admin-listen", Value::Null, "unset");
    assert_setting(&checked, "rate-limit-burst", Value::Null, "unset");
    assert_eq!(
        checked["settings"]["listen"]["env"],
        json!("PROXYDECK_LISTEN")
    );
    assert_eq!(
        checked["settings"]["database"]["env"],
        json!("PROXYDECK_DATABASE_URL")
    );

    // The file named by PROXYDECK_CONFIG instead; a flag still wins.
    let checked = check_json(
        &sandbox,
        &["--listen", "127.0.0.1:1234"],
        &[("PROXYDECK_CONFIG", &file_arg)],
    );
    assert_setting(&checked, "listen", json!("127.0.0.1:1234"), "flag");
    assert_setting(&checked, "db-pool-size", json!("8"), "file");

    // No file: every source but the file.
    let checked = check_json(&sandbox, &[], &[("PROXYDECK_LISTEN", "127.0.0.1:4321")]);
    assert_eq!(checked["config_file"], Value::Null);
    assert_setting(&checked, "listen", json!("127.0.0.1:4321"), "env");
    assert_setting(&checked, "db-pool-size", json!("4"), "default");
    assert!(!sandbox.path().join("proxydeck.db").exists());
}

#[test]
fn keys_may_be_kebab_or_snake_case_and_numbers_are_their_text() {
    let sandbox = Sandbox::new();
    let file = write_file(
        &sandbox,
        "c.toml",
        r#"
db_pool_size = 7
token-cache-ttl = "250ms"
last_used_flush_interval = "1m"
rate_limit = 2.5
rate-limit-burst = 10
"#,
    );
    let checked = check_json(&sandbox, &["--config", &file.display().to_string()], &[]);
    assert_setting(&checked, "db-pool-size", json!("7"), "file");
    assert_setting(&checked, "token-cache-ttl", json!("250ms"), "file");
    assert_setting(&checked, "last-used-flush-interval", json!("1m"), "file");
    assert_setting(&checked, "rate-limit", json!("2.5"), "file");
    assert_setting(&checked, "rate-limit-burst", json!("10"), "file");
}

#[test]
fn the_human_form_is_a_table_of_settings_values_and_sources() {
    let sandbox = Sandbox::new();
    let file = write_file(&sandbox, "c.toml", "listen = \"0.0.0.0:8080\"\n");
    let file_arg = file.display().to_string();
    let out = run(
        &sandbox,
        &[&["--config", &file_arg, "config", "check"]],
        &[],
    );
    assert!(out.status.success(), "{out:#?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], format!("config file: {}", file.display()));
    assert!(lines[2].starts_with("SETTING"), "{}", out.stdout);
    let listen: Vec<&str> = lines
        .iter()
        .find(|line| line.starts_with("listen "))
        .expect("a listen row")
        .split_whitespace()
        .collect();
    assert_eq!(
        listen,
        ["listen", "0.0.0.0:8080", "file", "PROXYDECK_LISTEN"]
    );
    let admin: Vec<&str> = lines
        .iter()
        .find(|line| line.starts_with("admin-listen "))
        .expect("an admin-listen row")
        .split_whitespace()
        .collect();
    assert_eq!(
        admin,
        ["admin-listen", "-", "unset", "PROXYDECK_ADMIN_LISTEN"]
    );
}

#[tokio::test]
async fn serve_listens_where_the_file_says_and_takes_its_database() {
    let sandbox = Sandbox::new();
    sandbox.json(&["migrate"]);
    let server = Server::start(|listen| {
        let file = write_file(
            &sandbox,
            "serve.toml",
            &format!(
                "listen = \"{listen}\"\ndatabase = \"{}\"\nrequest_timeout = \"5s\"\n",
                sandbox.db_url()
            ),
        );
        command(
            &sandbox,
            &[&["serve"]],
            &[("PROXYDECK_CONFIG", &file.display().to_string())],
        )
    });
    for path in ["/healthz", "/readyz"] {
        let response = server
            .client
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .expect("an answer");
        assert_eq!(response.status(), 200, "{path}");
    }
    assert!(
        !sandbox.path().join("proxydeck.db").exists(),
        "the default database was opened, not the file's"
    );
}

#[test]
fn settings_the_command_does_not_have_are_ignored() {
    let sandbox = Sandbox::new();
    // `listen` and `rate-limit` are serve's: `migrate` and `admin` ignore
    // them, even when they would not do for serve.
    let file = write_file(
        &sandbox,
        "c.toml",
        &format!(
            "database = \"{}\"\nlisten = \"not an address\"\nrate-limit = \"fast\"\n",
            sandbox.db_url()
        ),
    );
    let file_arg = file.display().to_string();
    let with_file: &[&str] = &["--config", &file_arg];
    let migrated = run(&sandbox, &[with_file, &["migrate", "--json"]], &[]).json();
    assert_eq!(migrated, json!({"migrated": true}));
    assert!(sandbox.db_path().exists(), "the file's database is used");
    let orgs = run(
        &sandbox,
        &[with_file, &["admin", "org", "list", "--json"]],
        &[],
    )
    .json();
    assert_eq!(orgs, json!([]));
    // serve has them: refused, by name, the first one first.
    run(&sandbox, &[with_file, &["config", "check"]], &[]).error(&[
        "listen",
        "not an address",
        "HOST:PORT",
    ]);
    let file = write_file(
        &sandbox,
        "c.toml",
        "listen = \"127.0.0.1:0\"\nrate-limit = \"fast\"\n",
    );
    let file_arg = file.display().to_string();
    run(
        &sandbox,
        &[&["--config", &file_arg, "config", "check"]],
        &[],
    )
    .error(&["rate-limit", "fast"]);
}

// ----- Bad configuration -----

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

// ----- Secrets -----

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
    let cases: [(&[&str], &str, &str); 6] = [
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
    let password = write_file(&sandbox, "password", "any:p@ss/word%\n");
    let url = schema.url();
    let password_arg = password.display().to_string();
    let out = run(
        &sandbox,
        &[&[
            "migrate",
            "--json",
            "--database",
            &url,
            "--database-password-file",
            &password_arg,
        ]],
        &[],
    );
    assert_eq!(out.json(), json!({"migrated": true}), "{out:#?}");
    assert!(!out.stderr.contains("p@ss"), "{out:#?}");
}

// ----- The example file -----

fn example_file() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/proxydeck.toml"
    ))
}

/// `examples/proxydeck.toml` shows every setting at its default: as it
/// is, `config check` passes it with every value a default; with every
/// setting uncommented, it passes too, with the same values.
#[test]
fn the_example_file_names_every_setting_at_its_default() {
    let sandbox = Sandbox::new();
    let example = std::fs::read_to_string(example_file()).expect("the example file");
    let as_is = check_json(
        &sandbox,
        &["--config", &example_file().display().to_string()],
        &[],
    );
    // Password files stay commented out: they need a file that exists and
    // (the database's) a postgres:// URL.
    let uncommented: String = example
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(setting) if is_setting(setting) && !setting.contains("-password-file = ") => {
                format!("{setting}\n")
            }
            _ => format!("{line}\n"),
        })
        .collect();
    let file = write_file(&sandbox, "uncommented.toml", &uncommented);
    let all_set = check_json(&sandbox, &["--config", &file.display().to_string()], &[]);
    let settings = as_is["settings"].as_object().unwrap();
    assert_eq!(settings.len(), 22, "{as_is}");
    for (name, setting) in settings {
        assert!(
            example.contains(&format!("\n# {name} = ")),
            "{name} is not in the example file"
        );
        let from_file = &all_set["settings"][name];
        if name.ends_with("-password-file") {
            assert_eq!(from_file["source"], json!("unset"), "{name}: {all_set}");
            continue;
        }
        assert_eq!(from_file["source"], json!("file"), "{name}: {all_set}");
        match setting["source"].as_str().unwrap() {
            "default" => assert_eq!(from_file["value"], setting["value"], "{name}"),
            "unset" => {}
            other => panic!("{name} comes from {other} in the example file as it is"),
        }
    }
}

/// Whether a comment of the example file is a setting: `name = value`.
fn is_setting(comment: &str) -> bool {
    comment.split_once(" = ").is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '-')
    })
}
