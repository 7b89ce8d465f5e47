//! `proxydeck login`, `logout` and `auth status`: a checked token kept
//! with its URL in a profile of the configuration folder (mode 0600), used
//! by the client commands when no flag or variable gives one; the token
//! never printed.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::*;

impl World {
    /// The profile file `name` under the client's configuration folder
    /// (`XDG_CONFIG_HOME`, which [`proxydeck`] sets to `cwd/.config`).
    fn profile_file(&self, name: &str) -> PathBuf {
        self.cwd
            .path()
            .join(".config/proxydeck/profiles")
            .join(format!("{name}.toml"))
    }

    /// `args`, run with `stdin`, asserting that no output holds a secret.
    #[track_caller]
    fn quiet_about(&self, command: Command, stdin: Option<&str>, secrets: &[&str]) -> Out {
        let out = finish(command, stdin);
        for secret in secrets {
            assert!(
                !out.stdout.contains(secret) && !out.stderr.contains(secret),
                "a token is shown: {out:#?}"
            );
        }
        out
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_keeps_a_checked_token_that_the_client_commands_use() {
    let world = world().await;
    let url = world.url();
    let file = world.profile_file("default");
    let (other, other_secret) = world.app.token_with("u1", "status-check", None).await;
    let secrets = [world.secret.as_str(), other_secret.as_str()];
    let expected = world.data("/v1/projects?limit=5").await;

    // Nothing yet: a usage error saying the three ways to give a token.
    let out = finish(world.bare(&["projects", "list", "--url", &url]), None);
    assert_eq!(out.status.code(), Some(2), "{out:#?}");
    out.error(&["PROXYDECK_TOKEN", "--token", "proxydeck login"]);
    world
        .quiet_about(world.bare(&["auth", "status"]), None, &secrets)
        .error(&["proxydeck login"]);

    // A token the server refuses: nothing is kept, the token is not shown.
    let out = world.quiet_about(
        world.bare(&["login", "--url", &url]),
        Some("pxd_notatokenatall\n"),
        &["pxd_notatokenatall"],
    );
    out.error(&[&url, "does not accept this token", "API token"]);
    assert!(!file.exists());
    // Nothing on stdin.
    world
        .quiet_about(world.bare(&["login", "--url", &url]), Some(""), &[])
        .error(&["no token"]);

    // The token on stdin (not a terminal), under umask 000: kept, owner
    // only, in a folder of the owner's only.
    let mut login = Command::new("/bin/sh");
    let bare = world.bare(&[]);
    login
        .args(["-c", "umask 000; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_proxydeck"))
        .args(["login", "--url", &url])
        .current_dir(world.cwd.path());
    for (key, value) in bare.get_envs() {
        match value {
            Some(value) => login.env(key, value),
            None => login.env_remove(key),
        };
    }
    let out = world.quiet_about(login, Some(&format!("{}\n", world.secret)), &secrets);
    assert!(out.status.success(), "{out:#?}");
    assert!(out.stdout.contains(&url), "{out:#?}");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    let kept: toml::Table = std::fs::read_to_string(&file).unwrap().parse().unwrap();
    assert_eq!(kept["url"].as_str(), Some(url.as_str()));
    assert_eq!(kept["token"].as_str(), Some(world.secret.as_str()));
    // No temporary file left beside it.
    assert_eq!(
        std::fs::read_dir(file.parent().unwrap()).unwrap().count(),
        1
    );

    // The client commands use it, with neither flag nor variable.
    let listed = |command: Command| -> Value {
        let out = world.quiet_about(command, None, &secrets);
        assert!(out.stderr.is_empty(), "{out:#?}");
        out.json()
    };
    let list = ["projects", "list", "--limit", "5"];
    assert_eq!(listed(world.bare(&list)), Value::Array(expected.clone()));
    // The same URL with a trailing slash, from the environment.
    let mut command = world.bare(&list);
    command.env("PROXYDECK_URL", format!("{url}/"));
    assert_eq!(listed(command), Value::Array(expected.clone()));
    // Without XDG_CONFIG_HOME: HOME/.config.
    let home = tempfile::tempdir().unwrap();
    let mut command = world.bare(&["login", "--url", &url]);
    command
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", home.path());
    assert!(finish(command, Some(&world.secret)).status.success());
    assert_eq!(
        mode(&home.path().join(".config/proxydeck/profiles/default.toml")),
        0o600
    );

    // Flags and variables win over the profile.
    let mut command = world.bare(&list);
    command.env("PROXYDECK_TOKEN", "pxd_bogus");
    world
        .quiet_about(command, None, &secrets)
        .error(&["API token"]);
    let elsewhere = format!("http://127.0.0.1:{}", free_port());
    let mut command = world.bare(&list);
    command.args(["--token", &other_secret, "--url", &elsewhere]);
    world
        .quiet_about(command, None, &secrets)
        .error(&["cannot reach"]);
    // The profile's token goes only to the profile's URL.
    let mut command = world.bare(&list);
    command.args(["--url", &elsewhere]);
    let out = world.quiet_about(command, None, &secrets);
    assert_eq!(out.status.code(), Some(2), "{out:#?}");
    out.error(&[&format!("no API token for {elsewhere}"), "proxydeck login"]);

    // auth status: the URL, the token by name and id, its user; no secret.
    let tokens = world.token_walk(100).await;
    let reader = tokens
        .iter()
        .find(|token| token["name"] == json!("reader"))
        .unwrap();
    let status = listed(world.bare(&["auth", "status", "--json"]));
    assert_eq!(status["url"], json!(url));
    assert_eq!(status["url_source"], json!("profile"));
    assert_eq!(status["token_source"], json!("profile"));
    assert_eq!(status["profile"], json!("default"));
    assert_eq!(status["user_id"], json!("u1"));
    let (_, me) = world.app.get_json("/v1/users/me", &world.secret).await;
    assert_eq!(status["email"], me["email"]);
    assert_eq!(status["name"], me["name"]);
    assert_eq!(status["works"], json!(true));
    assert_eq!(status["tokens"][0]["id"], reader["id"]);
    assert_eq!(status["tokens"][0]["name"], json!("reader"));
    assert_eq!(status["tokens"][0]["hint"], reader["token"]);
    let out = world.quiet_about(world.bare(&["auth", "status"]), None, &secrets);
    assert!(out.status.success(), "{out:#?}");
    for needle in [
        url.as_str(),
        "\"reader\"",
        reader["id"].as_str().unwrap(),
        "u1",
        &format!(
            "user:       {} <{}> (id u1)",
            text_of(&me["name"]),
            text_of(&me["email"])
        ),
        "works:      yes",
    ] {
        assert!(out.stdout.contains(needle), "{needle}: {out:#?}");
    }
    // The variable's token, when set.
    let mut command = world.bare(&["auth", "status", "--json"]);
    command.env("PROXYDECK_TOKEN", &other_secret);
    let status = listed(command);
    assert_eq!(status["token_source"], json!("env"));
    assert_eq!(status["tokens"][0]["id"], json!(other.id));
    // A token that no longer works: one line naming where it came from.
    let (revoked, revoked_secret) = world.app.token_with("u1", "revoked", None).await;
    world
        .app
        .store
        .run(RevokeToken(String::from(&revoked.id)))
        .await
        .unwrap();
    let mut command = world.bare(&["auth", "status"]);
    command.env("PROXYDECK_TOKEN", &revoked_secret);
    world
        .quiet_about(command, None, &[&revoked_secret])
        .error(&["PROXYDECK_TOKEN", "revoked"]);

    // Named profiles: --profile and PROXYDECK_PROFILE.
    let out = world.quiet_about(
        world.bare(&["login", "--url", &url, "--profile", "staging"]),
        Some(&other_secret),
        &secrets,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_eq!(mode(&world.profile_file("staging")), 0o600);
    let mut command = world.bare(&["auth", "status", "--json"]);
    command.env("PROXYDECK_PROFILE", "staging");
    assert_eq!(listed(command)["tokens"][0]["name"], json!("status-check"));
    let status = listed(world.bare(&["auth", "status", "--json", "--profile", "staging"]));
    assert_eq!(status["tokens"][0]["name"], json!("status-check"));
    let status = listed(world.bare(&["auth", "status", "--json"]));
    assert_eq!(status["tokens"][0]["name"], json!("reader"));
    let out = finish(world.bare(&["projects", "list", "--profile", "../x"]), None);
    assert_eq!(out.status.code(), Some(2));
    out.error(&["--profile"]);

    // logout: the profile is gone, a second logout says there is none, and
    // the client says again how to give a token.
    let out = world.quiet_about(world.bare(&["logout"]), None, &secrets);
    assert!(
        out.status.success() && out.stdout.contains("removed"),
        "{out:#?}"
    );
    assert!(!file.exists());
    assert!(world.profile_file("staging").exists());
    world
        .quiet_about(world.bare(&["logout"]), None, &secrets)
        .error(&["no profile \"default\""]);
    finish(world.bare(&list), None).error(&["proxydeck login"]);
    let mut command = world.bare(&["logout", "--json"]);
    command.env("PROXYDECK_PROFILE", "staging");
    assert_eq!(listed(command)["removed"], json!(true));
    assert!(!world.profile_file("staging").exists());
}

/// A profile file that is not one: refused in one line that does not
/// quote it (it may hold a token).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_profile_is_refused_without_quoting_it() {
    let world = world().await;
    let file = world.profile_file("default");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, format!("token = {}\n", world.secret)).unwrap();
    let out = finish(world.bare(&["projects", "list"]), None);
    let line = out.error(&["profile", "proxydeck login"]);
    assert!(!line.contains(&world.secret), "{line}");
}
