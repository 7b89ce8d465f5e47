//! `proxydeck completions SHELL` and `proxydeck man`: the shell completion
//! scripts and the manual pages, generated from the command line's own
//! definition (clap's), so that they never fall behind it.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use clap::{Command, CommandFactory};

use super::args::{Cli, CompletionsArgs, ManArgs};
use super::config;
use crate::output::Output;

/// The program's name in scripts and pages, whatever the binary's file is
/// called.
const NAME: &str = "proxydeck";

/// The command line as `--help` shows it: the client commands without the
/// server's flags.
fn defined() -> Command {
    config::client_help(Cli::command())
}

/// Prints the completion script on stdout.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<()> {
    // Written whole, not through clap_complete's writer, which panics when
    // the reader has gone (`proxydeck completions bash | head`).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut defined(), NAME, &mut script);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&script)?;
    stdout.flush()?;
    Ok(())
}

/// Writes a page for the command and one for each of its subcommands, at
/// every depth (`proxydeck-admin-token-create.1`); prints their paths.
pub fn man(args: &ManArgs, out: &Output) -> anyhow::Result<()> {
    let dir = &args.dir;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot make the folder {}", dir.display()))?;
    let mut command = defined().name(NAME).disable_help_subcommand(true);
    // Gives each subcommand its page's name (`proxydeck-serve`) and the
    // global flags.
    command.build();
    let mut written = Vec::new();
    write_pages(command, dir, &mut written)
        .with_context(|| format!("cannot write the manual pages in {}", dir.display()))?;
    #[derive(serde::Serialize)]
    struct Written<'a> {
        written: &'a [String],
    }
    out.print(&Written { written: &written }, || written.join("\n"))
}

fn write_pages(command: Command, dir: &Path, written: &mut Vec<String>) -> std::io::Result<()> {
    let subcommands: Vec<Command> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned()
        .collect();
    let path = clap_mangen::Man::new(command).generate_to(dir)?;
    written.push(path.display().to_string());
    for sub in subcommands {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}
