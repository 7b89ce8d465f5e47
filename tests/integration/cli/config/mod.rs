//! Configuration from flags, environment variables and a `--config` TOML
//! file, and `proxydeck config check`: the real binary, run as a child
//! process in a temporary folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::binary::*;

mod example_file;
mod precedence;
mod refusals;
mod secrets;

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
