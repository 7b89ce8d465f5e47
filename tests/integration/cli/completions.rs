//! What is generated from the command line's definition: the shell
//! completion scripts, the manual pages; and `--version` with the commit.

use std::process::Command;

use super::*;

/// Every top-level command, as a completion or a manual page names it.
const COMMANDS: [&str; 10] = [
    "serve",
    "demo",
    "migrate",
    "projects",
    "tokens",
    "proxy-settings",
    "admin",
    "config",
    "completions",
    "man",
];

/// A flag only a command three levels down has (`admin user create`;
/// `--expires-in` is `tokens create`'s too, two levels down): bash and
/// zsh complete it; clap_complete's fish script stops at the second level
/// (clap-rs/clap#5975), where it still offers `admin user`'s `create`.
const DEEP_FLAG: &str = "--email";

/// `shell -n FILE` (parse only) accepts the script; answers whether the
/// shell is installed (`.ci/run` installs zsh and fish).
#[track_caller]
fn shell_accepts(shell: &str, script: &std::path::Path) -> bool {
    let Ok(out) = Command::new(shell).arg("-n").arg(script).output() else {
        return false;
    };
    assert!(
        out.status.success(),
        "{shell} -n refuses the script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

#[test]
fn completion_scripts_name_every_command_and_parse_in_their_shell() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = finish(
            {
                let mut command = proxydeck(sandbox.path());
                command.args(["completions", shell]);
                command
            },
            None,
        );
        assert!(out.status.success(), "{shell}: {out:#?}");
        assert!(out.stderr.is_empty(), "{shell}: {}", out.stderr);
        for name in COMMANDS.iter().chain(["create", "revoke"].iter()) {
            assert!(
                out.stdout.contains(name),
                "the {shell} script does not name {name}"
            );
        }
        assert_eq!(
            out.stdout.contains(DEEP_FLAG),
            shell != "fish",
            "{shell} and {DEEP_FLAG}"
        );
        let script = sandbox.path().join(format!("proxydeck.{shell}"));
        std::fs::write(&script, &out.stdout).unwrap();
        let checked = shell_accepts(shell, &script);
        if shell == "bash" {
            assert!(checked, "bash is not installed");
        } else if !checked {
            eprintln!("{shell} is not installed: its script's syntax is not checked");
        }
    }
    // A shell completions do not know: one line saying which ones exist.
    let out = sandbox.run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{out:#?}");
    let line = out.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{out:#?}");
    for shell in ["bash", "zsh", "fish"] {
        assert!(line.contains(shell), "{line}");
    }
}

#[test]
fn bash_completion_completes_subcommands_and_flags() {
    // The script, loaded into a real bash, asked what follows
    // `proxydeck admin token c` and `proxydeck serve --list`.
    let sandbox = Sandbox::new();
    let mut command = proxydeck(sandbox.path());
    command.args(["completions", "bash"]);
    let script = finish(command, None).stdout;
    let path = sandbox.path().join("proxydeck.bash");
    std::fs::write(&path, script).unwrap();
    let ask = |words: &[&str]| {
        let line = words.join(" ");
        let program = format!(
            "source {path}\n\
             COMP_WORDS=({line}); COMP_CWORD={last}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n\
             _proxydeck proxydeck '{current}' '{previous}'\n\
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path = path.display(),
            last = words.len() - 1,
            current = words[words.len() - 1],
            previous = words[words.len() - 2],
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(program)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:#?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let offered = ask(&["proxydeck", "admin", "token", "c"]);
    assert_eq!(offered.split_whitespace().collect::<Vec<_>>(), ["create"]);
    let offered = ask(&["proxydeck", "serve", "--list"]);
    assert_eq!(
        offered.split_whitespace().collect::<Vec<_>>(),
        ["--listen"],
        "{offered}"
    );
}

#[test]
fn man_writes_a_readable_page_per_command() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("man/man1");
    let written = sandbox.json(&["man", "--dir", dir.to_str().unwrap()]);
    let written: Vec<&str> = written["written"]
        .as_array()
        .unwrap_or_else(|| panic!("{written}"))
        .iter()
        .map(|path| path.as_str().unwrap())
        .collect();
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path().display().to_string())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = written.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(listed, on_disk, "the pages printed are the pages written");
    for page in [
        "proxydeck.1",
        "proxydeck-serve.1",
        "proxydeck-admin-token-create.1",
        "proxydeck-projects-list.1",
        "proxydeck-completions.1",
    ] {
        let path = dir.join(page);
        assert!(path.is_file(), "no {page} in {on_disk:?}");
        let roff = std::fs::read_to_string(&path).unwrap();
        assert!(roff.starts_with(".ie") || roff.contains("\n.TH "), "{page}");
    }
    // man itself renders a page to text, with its sections and flags.
    let out = Command::new("man")
        .arg("-l")
        .arg(dir.join("proxydeck-serve.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .expect("man runs");
    assert!(out.status.success(), "{out:#?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "NAME",
        "proxydeck-serve",
        "SYNOPSIS",
        "--listen",
        "PROXYDECK_LISTEN",
    ] {
        assert!(text.contains(needle), "no {needle} in:\n{text}");
    }
    let top = Command::new("man")
        .arg("-l")
        .arg(dir.join("proxydeck.1"))
        .env("MANPAGER", "cat")
        .output()
        .expect("man runs");
    let text = String::from_utf8_lossy(&top.stdout);
    for command in COMMANDS {
        assert!(
            text.contains(command),
            "proxydeck.1 does not list {command}"
        );
    }

    // A folder that cannot be made: one line naming it.
    let blocker = sandbox.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let out = sandbox.run(&["man", "--dir", blocker.join("man1").to_str().unwrap()]);
    out.error(&["a-file"]);
}

#[test]
fn version_names_the_commit_of_this_checkout() {
    let sandbox = Sandbox::new();
    let mut command = proxydeck(sandbox.path());
    command.arg("--version");
    let out = finish(command, None);
    assert!(out.status.success(), "{out:#?}");
    // proxydeck 0.1.0 (commit 0123456789ab)
    let line = out.stdout.trim_end();
    let shown = line
        .strip_prefix(&format!("proxydeck {} (commit ", env!("CARGO_PKG_VERSION")))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line:?}"));
    assert_eq!(commit_of_build(shown), checkout_commit(), "{line}");
}
