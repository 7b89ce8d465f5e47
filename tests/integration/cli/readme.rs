//! Every command of the README, run as printed against a fresh demo: the
//! `proxydeck`, `curl`, `mkdir` and `export` lines of its `sh` blocks, in order,
//! each in a shell that has the block's earlier `export`s.
//!
//! The test changes only what a reader would: the demo's address for
//! `http://127.0.0.1:8080` (tests run side by side), its token for the
//! README's `pxd_...` and `$TOKEN` (and types it when `login` asks), and the README's own configuration
//! file for `/etc/proxydeck.toml`. Lines that serve until stopped, and the
//! quick start's and benchmark's `cargo`/`python3` lines (CI's own steps),
//! are not run: [`NOT_RUN`] names each with its reason, and a reason whose
//! line has left the README fails the test, so the list cannot go stale.

use std::collections::BTreeSet;
use std::path::Path;

use super::*;

/// Lines of the README's `sh` blocks not run here, by a part that only
/// they hold, with why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "cargo run --release -- demo",
        "the quick start; CI builds and runs the demo",
    ),
    (
        "cargo nextest run",
        "the quick start's test command; CI runs it",
    ),
    (
        "python3 bench/run.py",
        "the benchmark; CI runs its quick modes",
    ),
    ("--config /etc/proxydeck.toml serve", "serves until stopped"),
    (
        "Accept: text/event-stream",
        "a stream of the change feed: open until stopped",
    ),
];

/// The README's `sh` blocks: their lines, with `\`-continued lines joined.
fn sh_blocks(readme: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut block: Option<Vec<String>> = None;
    let mut pending = String::new();
    for line in readme.lines() {
        match (&mut block, line.trim_end()) {
            (None, "```sh") => block = Some(Vec::new()),
            (None, _) => {}
            (Some(_), "```") => blocks.push(block.take().expect("in a block")),
            (Some(lines), text) => match text.strip_suffix('\\') {
                Some(start) => {
                    let start = if pending.is_empty() {
                        start
                    } else {
                        start.trim_start()
                    };
                    pending.push_str(start);
                }
                None => {
                    // A continued line's indentation is not part of it.
                    let text = if pending.is_empty() {
                        text
                    } else {
                        text.trim_start()
                    };
                    pending.push_str(text);
                    lines.push(std::mem::take(&mut pending));
                }
            },
        }
    }
    assert!(block.is_none(), "an sh block of the README is not closed");
    blocks
}

/// The program a line runs, after its `NAME=value` assignments; `None`
/// for a comment or a blank line.
fn program(line: &str) -> Option<&str> {
    line.split_whitespace()
        .find(|word| !word.contains('=') || word.starts_with('-'))
        .filter(|word| !word.starts_with('#'))
}

#[test]
fn every_command_of_the_readme_works_on_a_fresh_demo() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("the README");
    let sandbox = Sandbox::new();
    // The README's configuration file, where its commands can read it.
    let config = readme
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README's configuration file example");
    let config_path = sandbox.path().join("proxydeck.toml");
    std::fs::write(&config_path, config).expect("the configuration file is written");

    // The demo as the quick start runs it: on ./proxydeck.db.
    let server = Server::start(|listen| {
        let mut command = proxydeck(sandbox.path());
        command.args(["demo", "--json", "--listen", listen]);
        command
    });
    let started: Value = serde_json::from_str(&server.stdout_line()).expect("demo --json");
    let token = started["token"].as_str().expect("a token").to_owned();
    let binary_folder = Path::new(env!("CARGO_BIN_EXE_proxydeck"))
        .parent()
        .expect("the binary's folder")
        .to_owned();
    let path = format!(
        "{}:{}",
        binary_folder.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let as_a_reader_would = |line: &str| {
        let line = line
            .replace("http://127.0.0.1:8080", &server.base)
            .replace("pxd_...", &token)
            .replace("/etc/proxydeck.toml", &config_path.display().to_string());
        match line.strip_prefix("curl ") {
            // curl's exit status says nothing of the HTTP status without it.
            Some(rest) => format!("curl --fail-with-body --silent --show-error {rest}"),
            None => line,
        }
    };

    let mut skipped = BTreeSet::new();
    let mut ran = 0;
    for block in sh_blocks(&readme) {
        let mut exports = Vec::new();
        for line in &block {
            let Some(program) = program(line) else {
                continue;
            };
            if let Some((part, _)) = NOT_RUN.iter().find(|(part, _)| line.contains(part)) {
                skipped.insert(*part);
                continue;
            }
            let line = as_a_reader_would(line);
            if program == "export" {
                exports.push(line);
                continue;
            }
            assert!(
                matches!(program, "proxydeck" | "curl" | "mkdir"),
                "the README runs {program:?}, which this test neither runs nor lists in NOT_RUN: {line}"
            );
            let mut script = exports.join("\n");
            script.push('\n');
            script.push_str(&line);
            let mut command = std::process::Command::new("bash");
            command
                .args(["-euo", "pipefail", "-c", &script])
                .current_dir(sandbox.path())
                .env("PATH", &path)
                .env("TOKEN", &token)
                // `login`'s profile and the completion scripts stay in
                // the sandbox.
                .env("HOME", sandbox.path())
                .env("XDG_CONFIG_HOME", sandbox.path().join(".config"));
            without_our_environment(&mut command);
            // What a reader types when asked (only `login` asks: the token).
            let out = finish(command, Some(&format!("{token}\n")));
            assert!(
                out.status.success(),
                "the README's command failed on the demo: {line}\n{out:#?}"
            );
            if program == "mkdir" {
                continue;
            }
            // A line that writes to a file prints nothing; the file must
            // then hold something.
            let code = line.split(" #").next().expect("a line");
            let printed = match code.split_once(" > ") {
                Some((_, target)) => {
                    let target = target.split_whitespace().next().expect("a file");
                    let target = target.replacen('~', &sandbox.path().display().to_string(), 1);
                    // Relative to where the line ran (an absolute one stays).
                    let target = sandbox.path().join(target);
                    std::fs::read_to_string(&target)
                        .unwrap_or_else(|e| panic!("{line}: cannot read {}: {e}", target.display()))
                }
                None => out.stdout.clone(),
            };
            let printed = printed.trim();
            assert!(
                !printed.is_empty() && printed != "[]" && !printed.contains("\"data\":[]"),
                "the README's command finds nothing on the demo: {line}\n{out:#?}"
            );
            ran += 1;
        }
    }
    for (part, why) in NOT_RUN {
        assert!(
            skipped.contains(part),
            "NOT_RUN lists {part:?} ({why}), which no line of the README holds any more"
        );
    }
    assert!(ran >= 10, "only {ran} commands of the README ran");
}
