//! Settings from the command line, the environment and an optional TOML
//! file (`--config FILE`), in that order of precedence, above the built-in
//! defaults; and `proxydeck config check`, which shows the outcome.
//!
//! The settings are the global flags and those of `serve` (`--json` and
//! `--config` aside). The file names them by their long flag, in kebab or
//! snake case (`db-pool-size` or `db_pool_size`), in one flat table.
//!
//! A file value goes through the flag's own value parser, twice: first
//! alone, so that an error can name the file and the key; then it becomes
//! the flag's default for this run and clap parses the command line again,
//! so that a flag or an environment variable still wins over it exactly as
//! it wins over a built-in default. Every file value that the running
//! command uses is checked, even one that a flag or a variable overrides:
//! a file that `config check` passes is valid on its own. Values for
//! settings the running command does not have (`listen` for `migrate`) are
//! ignored: one file serves every command.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::error::{ContextKind, ContextValue};
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command, CommandFactory, FromArgMatches};
use serde::Serialize;

use super::args::Cli;
use crate::domain::url_password;
use crate::output::table;
use crate::output::{BadSetting, Output};

/// Flags that are not settings, refused in the file with the reason.
const NOT_SETTINGS: [(&str, &str); 4] = [
    ("config", "a configuration file cannot name another one"),
    ("json", "--json is chosen command by command"),
    (
        "url",
        "the terminal client's server is given with --url or PROXYDECK_URL",
    ),
    (
        "token",
        "the terminal client's token is given with PROXYDECK_TOKEN (or --token)",
    ),
];

/// The command whose own flags are settings, besides the global ones.
const SERVE: &str = "serve";

/// Why the command line cannot be used.
pub(super) enum Failure {
    /// clap's: a usage error, or the text of --help or --version.
    Usage(clap::Error),
    /// A bad configuration file or value in it, naming the file and the key.
    File(String),
}

impl From<clap::Error> for Failure {
    fn from(error: clap::Error) -> Self {
        Self::Usage(error)
    }
}

/// The command line with its settings in place, and where each came from.
pub(super) struct Parsed {
    pub(super) cli: Cli,
    pub(super) effective: Effective,
}

/// What `config check` prints.
#[derive(Serialize, Debug)]
pub(super) struct Effective {
    config_file: Option<PathBuf>,
    settings: Vec<Setting>,
}

impl Effective {
    /// What to warn of for each password given on the command line, where
    /// every user of the machine can read it in the process list.
    pub(super) fn passwords_on_the_command_line(&self) -> Vec<String> {
        self.settings
            .iter()
            .filter(|setting| setting.source == Source::Flag && setting.holds_password)
            .map(|setting| {
                let env = setting.env.as_deref().unwrap_or("its environment variable");
                let file = match self.password_file_for(&setting.name) {
                    Some(file) => format!(", or the password in --{file}"),
                    None => String::new(),
                };
                format!(
                    "--{name} holds a password on the command line, where every user of this \
                     machine can read it in the process list: give the URL in {env}{file}",
                    name = setting.name
                )
            })
            .collect()
    }

    /// The `...-password-file` setting that gives setting `name` its
    /// password (`database-password-file` serves `database`,
    /// `database-direct-url` and `database-replica`), if one does.
    fn password_file_for(&self, name: &str) -> Option<&str> {
        self.settings
            .iter()
            .map(|setting| setting.name.as_str())
            .filter(|file| {
                file.strip_suffix("-password-file").is_some_and(|serves| {
                    name.strip_prefix(serves)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
                })
            })
            .max_by_key(|file| file.len())
    }

    /// The error refusing setting `name` (a long flag) for `why`, naming
    /// where its value came from when that is not the command line.
    pub(super) fn refuse(&self, name: &str, why: impl std::fmt::Display) -> anyhow::Error {
        BadSetting::error(format!("{why}{}", self.origin(name)))
    }

    /// Where the value of setting `name` came from, where an operator
    /// would look first: ` (the value of PROXYDECK_X)`, ` (set in the
    /// config file F)`, or nothing for the command line and defaults.
    fn origin(&self, name: &str) -> String {
        let Some(setting) = self.settings.iter().find(|setting| setting.name == name) else {
            return String::new();
        };
        match (setting.source, &setting.env, &self.config_file) {
            (Source::Env, Some(variable), _) => format!(" (the value of {variable})"),
            (Source::File, _, Some(file)) => {
                format!(" (set in the config file {})", file.display())
            }
            _ => String::new(),
        }
    }
}

#[derive(Serialize, Debug)]
struct Setting {
    name: String,
    /// As given, passwords hidden; `None` when unset.
    value: Option<String>,
    source: Source,
    env: Option<String>,
    /// Whether the value as given holds a password.
    #[serde(skip)]
    holds_password: bool,
}

/// Where a setting's value came from.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Source {
    Flag,
    Env,
    File,
    Default,
    /// An optional setting given nowhere.
    Unset,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Self::Flag => "flag",
            Self::Env => "env",
            Self::File => "file",
            Self::Default => "default",
            Self::Unset => "unset",
        }
    }
}

/// Parses `argv` with the settings of the `--config` file, if any, in place.
pub(super) fn parse(argv: &[OsString]) -> Result<Parsed, Failure> {
    let command = without_empty_environment(Cli::command());
    let given = client_help(command.clone()).try_get_matches_from(argv)?;
    let running = subcommand_path(&given);
    let (matches, from_file) = match given.get_one::<PathBuf>("config") {
        None => (given, Vec::new()),
        Some(path) => {
            let values = read_file(path, &command, &running)
                .map_err(|what| Failure::File(format!("config file {}: {what}", path.display())))?;
            let mut with_file = command;
            for value in &values {
                with_file = set_default(with_file, value, &running);
            }
            let matches = client_help(with_file).try_get_matches_from(argv)?;
            (matches, values.into_iter().map(|value| value.id).collect())
        }
    };
    let cli = Cli::from_arg_matches(&matches)?;
    let effective = Effective {
        config_file: cli.config.clone(),
        settings: effective_settings(&Cli::command(), &matches, &running, &from_file),
    };
    Ok(Parsed { cli, effective })
}

/// `command` with every flag whose environment variable is set but empty
/// reading it no more: an empty variable counts as unset (as a container's
/// `PROXYDECK_LISTEN=` line often leaves it), so the file or the default
/// applies instead of an empty value refused, or taken, as given.
fn without_empty_environment(command: Command) -> Command {
    let empty: Vec<_> = command
        .get_arguments()
        .filter(|arg| {
            arg.get_env()
                .and_then(std::env::var_os)
                .is_some_and(|value| value.is_empty())
        })
        .map(|arg| arg.get_id().clone())
        .collect();
    let command = empty
        .iter()
        .fold(command, |at, id| at.mut_arg(id, |arg| arg.env(None)));
    let subcommands: Vec<_> = command
        .get_subcommands()
        .map(|inner| inner.get_name().to_owned())
        .collect();
    subcommands.iter().fold(command, |at, name| {
        at.mut_subcommand(name, without_empty_environment)
    })
}

/// The commands of the terminal client, which talk to a running proxydeck
/// over HTTP.
pub(super) const CLIENT_COMMANDS: [&str; 12] = [
    "projects",
    "tokens",
    "proxy-settings",
    "domains",
    "org",
    "members",
    "invite",
    "invitations",
    "follow",
    "login",
    "logout",
    "auth",
];

/// `command` with the server's global flags (`--database`, `--log-format`,
/// `--config`...) hidden from the client commands' help: they are still
/// taken (`docs/cli.md`: every command takes `--database`), but say nothing to
/// a client. Each client command gets a hidden copy of each, which clap
/// passes down to its subcommands instead of the shown original. Made
/// last, after the file's values became the flags' defaults, so that the
/// copies carry them.
pub(super) fn client_help(command: Command) -> Command {
    let hidden: Vec<Arg> = command
        .get_arguments()
        .filter(|arg| arg.is_global_set() && arg.get_id() != "json")
        .map(|arg| arg.clone().hide(true))
        .collect();
    CLIENT_COMMANDS.iter().fold(command, |at, name| {
        at.mut_subcommand(name, |client| {
            hidden.iter().cloned().fold(client, Command::arg)
        })
    })
}

/// The names of the subcommands chosen, outermost first (`["admin", "org",
/// "create"]`).
fn subcommand_path(matches: &ArgMatches) -> Vec<String> {
    let mut path = Vec::new();
    let mut at = matches;
    while let Some((name, inner)) = at.subcommand() {
        path.push(name.to_owned());
        at = inner;
    }
    path
}

/// The command at `path` below `command`.
fn find<'a>(command: &'a Command, path: &[String]) -> &'a Command {
    path.iter().fold(command, |at, name| {
        at.find_subcommand(name)
            .expect("the path of a parsed command line")
    })
}

/// Every setting: the global flags, then those of `serve`.
fn settings(command: &Command) -> Vec<&Arg> {
    let serve = command
        .find_subcommand(SERVE)
        .expect("proxydeck has a serve command");
    command
        .get_arguments()
        .filter(|arg| arg.is_global_set())
        .chain(serve.get_arguments())
        .filter(|arg| {
            arg.get_long().is_some_and(|long| {
                !["help", "version"].contains(&long)
                    && !NOT_SETTINGS.iter().any(|(name, _)| *name == long)
            })
        })
        .collect()
}

/// Whether the command at `running` has `arg` (global flags: all of them).
fn uses(command: &Command, running: &[String], arg: &Arg) -> bool {
    arg.is_global_set()
        || find(command, running)
            .get_arguments()
            .any(|own| own.get_id() == arg.get_id())
}

/// A setting the file gives to the running command.
struct FileValue {
    id: String,
    global: bool,
    text: String,
}

/// The settings of the file at `path` that the command at `running` uses,
/// each checked by its flag's value parser. The error does not name the
/// file: the caller adds it.
fn read_file(path: &Path, command: &Command, running: &[String]) -> Result<Vec<FileValue>, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("cannot read: {error}"))?;
    let table = text
        .parse::<toml::Table>()
        .map_err(|error| syntax_error(&text, &error))?;
    let settings = settings(command);
    let mut seen: HashMap<String, &str> = HashMap::new();
    let mut values = Vec::new();
    for (key, value) in &table {
        let name = key.replace('_', "-");
        if let Some(earlier) = seen.insert(name.clone(), key) {
            return Err(format!("{name} is set twice, as {earlier:?} and {key:?}"));
        }
        if let Some((_, why)) = NOT_SETTINGS.iter().find(|(not, _)| *not == name) {
            return Err(format!(
                "{key:?} cannot be set in a configuration file: {why}"
            ));
        }
        let text = value_text(value)
            .map_err(|kind| format!("{key}: must be a string or a number, not {kind}"))?;
        let Some(arg) = settings.iter().find(|arg| arg.get_long() == Some(&name)) else {
            return Err(unknown_setting(key, &name, &settings));
        };
        if !uses(command, running, arg) {
            continue;
        }
        check(arg, &text).map_err(|why| format!("{key} = {}: {why}", shown(arg, value, &text)))?;
        values.push(FileValue {
            id: arg.get_id().to_string(),
            global: arg.is_global_set(),
            text,
        });
    }
    Ok(values)
}

/// For a bad value that came from an environment variable rather than the
/// command line, that variable's name: clap's message names only the flag,
/// and an operator looking at the command line would not find it there.
pub(super) fn environment_source(error: &clap::Error, argv: &[OsString]) -> Option<String> {
    let Some(ContextValue::String(invalid)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    // `--db-pool-size <N>`
    let long = invalid.strip_prefix("--")?.split(' ').next()?;
    let flag = format!("--{long}");
    let given = argv.iter().any(|arg| {
        arg.to_str().is_some_and(|arg| {
            arg == flag
                || arg
                    .strip_prefix(&flag)
                    .is_some_and(|rest| rest.starts_with('='))
        })
    });
    if given {
        return None;
    }
    let command = Cli::command();
    let variable = settings(&command)
        .into_iter()
        .find(|arg| arg.get_long() == Some(long))?
        .get_env()?
        .to_string_lossy()
        .into_owned();
    std::env::var_os(&variable).is_some().then_some(variable)
}

/// A TOML syntax error on one line: where, and what.
fn syntax_error(text: &str, error: &toml::de::Error) -> String {
    let what = error.message().lines().collect::<Vec<_>>().join("; ");
    match error.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {what}")
        }
        None => what,
    }
}

fn unknown_setting(key: &str, name: &str, settings: &[&Arg]) -> String {
    let closest = settings
        .iter()
        .filter_map(|arg| arg.get_long())
        .map(|known| (strsim::jaro_winkler(name, known), known))
        .filter(|(likeness, _)| *likeness > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match closest {
        Some((_, known)) => format!("unknown setting {key:?} (did you mean {known:?}?)"),
        None => format!(
            "unknown setting {key:?}; the settings are the long flags of `proxydeck serve --help`"
        ),
    }
}

/// A value as the flag's text: strings and numbers only. The error is the
/// kind of value refused.
fn value_text(value: &toml::Value) -> Result<String, &'static str> {
    match value {
        toml::Value::String(text) => Ok(text.clone()),
        toml::Value::Integer(number) => Ok(number.to_string()),
        toml::Value::Float(number) => Ok(number.to_string()),
        toml::Value::Boolean(_) => Err("a boolean"),
        toml::Value::Datetime(_) => Err("a date"),
        toml::Value::Array(_) => Err("an array"),
        toml::Value::Table(_) => Err("a table (the file is one flat table, without [sections])"),
    }
}

/// A file value as an error shows it: as written, a password hidden.
fn shown(arg: &Arg, value: &toml::Value, text: &str) -> String {
    match value {
        toml::Value::String(_) => format!("{:?}", secret_hidden(arg, text)),
        _ => text.to_owned(),
    }
}

/// Settings that may hold a password are those whose environment value
/// `--help` hides: their URLs are shown with the password masked.
fn secret_hidden(arg: &Arg, text: &str) -> String {
    if arg.is_hide_env_values_set() {
        url_password::masked(text)
    } else {
        text.to_owned()
    }
}

/// Runs `text` through the value parser of `arg`, as if given as its flag;
/// the error is clap's reason, without the flag or the value.
fn check(arg: &Arg, text: &str) -> Result<(), String> {
    let long = arg.get_long().expect("settings are long flags");
    let alone = arg
        .clone()
        .env(None::<&'static str>)
        .global(false)
        .required(false);
    Command::new("proxydeck")
        .no_binary_name(true)
        .arg(alone)
        .try_get_matches_from([format!("--{long}={text}")])
        .map(drop)
        .map_err(|error| reason(&error))
}

fn reason(error: &clap::Error) -> String {
    if let Some(cause) = std::error::Error::source(error) {
        return cause.to_string();
    }
    if let Some(ContextValue::Strings(valid)) = error.get(ContextKind::ValidValue) {
        return format!("must be one of {}", valid.join(", "));
    }
    error.kind().to_string()
}

/// `command` with the file's value as the default of its flag.
fn set_default(command: Command, value: &FileValue, running: &[String]) -> Command {
    let text = value.text.clone();
    let set = |at: Command| at.mut_arg(&value.id, |arg| arg.default_value(text));
    if value.global {
        set(command)
    } else {
        in_subcommand(command, running, set)
    }
}

/// `command` with `change` made to its subcommand at `path`.
fn in_subcommand(
    command: Command,
    path: &[String],
    change: impl FnOnce(Command) -> Command,
) -> Command {
    match path.split_first() {
        None => change(command),
        Some((name, rest)) => {
            command.mut_subcommand(name, |inner| in_subcommand(inner, rest, change))
        }
    }
}

/// Each setting the running command has: its value and where it came from.
fn effective_settings(
    command: &Command,
    matches: &ArgMatches,
    running: &[String],
    from_file: &[String],
) -> Vec<Setting> {
    let leaf = running.iter().fold(matches, |at, name| {
        at.subcommand_matches(name).expect("a parsed subcommand")
    });
    settings(command)
        .into_iter()
        .filter(|arg| uses(command, running, arg))
        .map(|arg| {
            let id = arg.get_id().as_str();
            let source = match leaf.value_source(id) {
                Some(ValueSource::CommandLine) => Source::Flag,
                Some(ValueSource::EnvVariable) => Source::Env,
                Some(_) if from_file.iter().any(|set| set == id) => Source::File,
                Some(_) => Source::Default,
                None => Source::Unset,
            };
            // Every value of a setting given several times (replicas).
            let given: Vec<String> = leaf
                .get_raw(id)
                .map(|values| {
                    values
                        .map(|text| text.to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            let shown: Vec<String> = given.iter().map(|text| secret_hidden(arg, text)).collect();
            Setting {
                name: arg.get_long().unwrap_or(id).to_owned(),
                value: (!shown.is_empty()).then(|| shown.join(" ")),
                source,
                env: arg.get_env().map(|env| env.to_string_lossy().into_owned()),
                holds_password: arg.is_hide_env_values_set()
                    && given.iter().any(|text| url_password::has_password(text)),
            }
        })
        .collect()
}

/// Prints the settings: one JSON document, or the file and a table.
pub(super) fn print(effective: &Effective, out: &Output) -> anyhow::Result<()> {
    out.print(effective, || {
        let file = match &effective.config_file {
            Some(path) => path.display().to_string(),
            None => "none".into(),
        };
        let rows = effective.settings.iter().map(|setting| {
            vec![
                setting.name.clone(),
                setting.value.clone().unwrap_or_else(|| "-".into()),
                setting.source.name().into(),
                setting.env.clone().unwrap_or_else(|| "-".into()),
            ]
        });
        format!(
            "config file: {file}\n\n{}",
            table::render(&["SETTING", "VALUE", "SOURCE", "ENVIRONMENT"], rows)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_has_an_environment_variable_and_a_long_flag() {
        let command = Cli::command();
        let names: Vec<_> = settings(&command)
            .iter()
            .map(|arg| arg.get_long().unwrap())
            .collect();
        assert!(
            names.contains(&"database") && names.contains(&"listen"),
            "{names:?}"
        );
        assert!(
            !names.contains(&"json") && !names.contains(&"config"),
            "{names:?}"
        );
        for arg in settings(&command) {
            assert!(arg.get_env().is_some(), "{:?}", arg.get_id());
        }
    }

    /// `--help` says what each flag and argument is for, in every command.
    #[test]
    fn every_flag_and_argument_has_a_help_line() {
        fn silent(command: &Command, path: &str, found: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                let said = arg
                    .get_help()
                    .is_some_and(|help| !help.to_string().trim().is_empty());
                if !said && !["help", "version"].contains(&id) {
                    found.push(format!("{path}: {id}"));
                }
            }
            for inner in command.get_subcommands() {
                silent(inner, &format!("{path} {}", inner.get_name()), found);
            }
        }
        let mut found = Vec::new();
        silent(&Cli::command(), "proxydeck", &mut found);
        assert!(found.is_empty(), "no help line: {found:#?}");
    }

    #[test]
    fn clap_reasons_name_no_flag() {
        let command = Cli::command();
        let setting = |name: &str| {
            *settings(&command)
                .iter()
                .find(|arg| arg.get_long() == Some(name))
                .unwrap()
        };
        assert_eq!(
            check(setting("db-pool-size"), "abc").unwrap_err(),
            "invalid digit found in string"
        );
        assert_eq!(
            check(setting("log-format"), "xml").unwrap_err(),
            "must be one of text, json"
        );
        assert!(check(setting("rate-limit"), "-1").is_err());
        assert!(
            check(setting("db-timeout"), "soon")
                .unwrap_err()
                .contains("whole number")
        );
        check(setting("db-timeout"), "3s").unwrap();
        check(setting("rate-limit"), "off").unwrap();
    }
}
