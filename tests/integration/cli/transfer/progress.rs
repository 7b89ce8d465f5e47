//! Progress bars of import and export: on a terminal only, never with
//! `--quiet`.

use super::*;

/// No progress bar, spinner or carriage return in `text`.
#[track_caller]
fn assert_no_bar(text: &str, what: &str) {
    for needle in ["\r", "\u{1b}", "=>", "/s", " lines", "ETA", "KiB", "MiB"] {
        assert!(!text.contains(needle), "{what}: {needle:?} in {text:?}");
    }
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let sandbox = Sandbox::new();
    let file = sandbox.ndjson("big.ndjson", &many_projects(10_000));

    let out = sandbox.run(&["admin", "import", &file]);
    assert!(out.status.success(), "{out:#?}");
    assert!(out.stderr.is_empty(), "import: {:?}", out.stderr);
    assert_no_bar(&out.stdout, "import stdout");

    let text = std::fs::read_to_string(&file).unwrap();
    let out = sandbox.run_with_stdin(&["admin", "import", "-", "--json"], &text);
    assert!(out.status.success(), "{out:#?}");
    assert!(out.stderr.is_empty(), "import from stdin: {:?}", out.stderr);

    let exported = sandbox.path().join("out.ndjson");
    let out = sandbox.run(&["admin", "export", &exported.display().to_string()]);
    assert!(out.status.success(), "{out:#?}");
    assert!(out.stderr.is_empty(), "export to a file: {:?}", out.stderr);
    assert_no_bar(&out.stdout, "export stdout");

    let out = sandbox.run(&["admin", "export"]);
    assert!(out.status.success(), "{out:#?}");
    assert_eq!(out.stderr.lines().count(), 1, "{:?}", out.stderr);
    assert_no_bar(&out.stderr, "export to stdout, stderr");
    assert_eq!(out.stdout.lines().count(), 10_001);
}

/// `command` run under `script`, which gives it a pseudo-terminal for
/// stdin, stdout and stderr; what the terminal showed comes back on
/// `script`'s stdout.
fn on_a_terminal(cwd: &Path, command: &Command) -> Command {
    on_a_terminal_reading(cwd, command, None)
}

/// Like [`on_a_terminal`], with stdin read from `input` (a file) instead.
fn on_a_terminal_reading(cwd: &Path, command: &Command, input: Option<&str>) -> Command {
    let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
    let mut line = quote(&command.get_program().to_string_lossy());
    for arg in command.get_args() {
        line.push(' ');
        line.push_str(&quote(&arg.to_string_lossy()));
    }
    if let Some(input) = input {
        line.push_str(" < ");
        line.push_str(&quote(input));
    }
    let mut script = Command::new("/usr/bin/script");
    script.args(["-qfec", &line, "/dev/null"]).current_dir(cwd);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PROXYDECK_") {
            script.env_remove(&key);
        }
    }
    // indicatif draws nothing on a dumb (or unnamed) terminal.
    script.env("TERM", "xterm").env_remove("RUST_LOG");
    script
}

/// Signs that a progress bar was drawn in what a terminal showed.
#[track_caller]
fn assert_drew_a_bar(shown: &str, unit: &str) {
    assert!(
        shown.contains("/s") && shown.contains(unit) && shown.contains("\u{1b}["),
        "no progress bar ({unit}) was drawn: {shown:?}"
    );
}

#[test]
fn import_draws_a_progress_bar_on_a_terminal_unless_quiet() {
    let sandbox = Sandbox::new();
    // The bar draws on the first 64 KiB read, then at most 20 times a
    // second: 1.3 MiB is plenty.
    let file = sandbox.ndjson("big.ndjson", &many_projects(10_000));

    let out = finish(
        on_a_terminal(
            sandbox.path(),
            &sandbox.command(&["admin", "import", &file]),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_drew_a_bar(&out.stdout, "iB");
    assert!(out.stdout.contains("10000 projects"), "{:?}", out.stdout);

    // From standard input, of unknown size: a spinner with the rate.
    let spun = Sandbox::new();
    let out = finish(
        on_a_terminal_reading(
            spun.path(),
            &spun.command(&["admin", "import", "-"]),
            Some(&file),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_drew_a_bar(&out.stdout, "iB");
    assert!(out.stdout.contains("10000 projects"), "{:?}", out.stdout);

    // --quiet: the summary only.
    let quiet = Sandbox::new();
    let out = finish(
        on_a_terminal(
            quiet.path(),
            &quiet.command(&["admin", "import", &file, "--quiet"]),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_no_bar(
        &out.stdout.replace("\r\n", "\n"),
        "import --quiet on a terminal",
    );
    assert!(out.stdout.contains("10000 projects"), "{:?}", out.stdout);
}

#[test]
fn export_draws_a_progress_bar_on_a_terminal_unless_quiet() {
    let sandbox = Sandbox::new();
    let file = sandbox.ndjson("big.ndjson", &many_projects(20_000));
    sandbox.json(&["admin", "import", &file, "--quiet"]);
    let exported = sandbox.path().join("out.ndjson");
    let target = exported.display().to_string();

    let out = finish(
        on_a_terminal(
            sandbox.path(),
            &sandbox.command(&["admin", "export", &target]),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_drew_a_bar(&out.stdout, " lines");
    assert!(out.stdout.contains("20000 projects"), "{:?}", out.stdout);
    assert_eq!(read(&exported).lines().count(), 20_001);

    let out = finish(
        on_a_terminal(
            sandbox.path(),
            &sandbox.command(&["admin", "export", &target, "-q"]),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_no_bar(&out.stdout.replace("\r\n", "\n"), "export -q on a terminal");
    assert!(out.stdout.contains("20000 projects"), "{:?}", out.stdout);
    assert_eq!(read(&exported).lines().count(), 20_001);
}
