//! Where each setting comes from: the flag, else the environment, else the
//! file, else the default; the forms keys and values take.

use super::*;

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
