//! The `proxydeck` command (`docs/cli.md`): its argument tree ([`args`]) and
//! what runs each command. Here stand serving ([`serve`], [`demo`]), the
//! configuration ([`config`]), the completions and manual pages
//! ([`completions`]) and the operator's commands, which open the store
//! themselves ([`admin`], with [`transfer`] for imports and exports). The
//! terminal client's commands stand in `client`, the `follow` agent in
//! `follow`, and what every command prints in `output`.

mod admin;
mod args;
mod completions;
mod config;
mod demo;
mod serve;
mod transfer;

use std::process::ExitCode;
use std::sync::Arc;

use crate::app::{Listeners, Service, shutdown_signal};
use crate::client::commands::{domains, login, projects, proxy_settings, teams, tokens};
use crate::follow;
use crate::output::{BadSetting, Output};
use crate::store::{self, StoreOptions};
use crate::telemetry::{self, LogGuard, LogWriter, Logging};
use args::{Cli, Command, ConfigCommand};
use config::{Failure, Parsed};
use serve::database_settings;

/// Runs the command line; the exit status is 0 on success, 2 with a
/// one-line error on stderr for a bad command line or configuration file,
/// 3 when `follow --once`'s `--exec` failed, 4 when `domains verify` found
/// the domain not verified, 5 and 6 when a watched rollout was rolled back
/// or aborted, 1 with a one-line error for any other failure.
pub fn main() -> ExitCode {
    let argv: Vec<_> = std::env::args_os().collect();
    let Parsed { cli, effective } = match config::parse(&argv) {
        Ok(parsed) => parsed,
        Err(Failure::File(error)) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
        // --help and --version are not errors.
        Err(Failure::Usage(error)) if !error.use_stderr() => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        // clap's usage errors run to several lines: keep what says what is
        // wrong, on one line.
        Err(Failure::Usage(error)) => {
            let text = error.to_string();
            let said: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more"))
                .filter(|line| !line.is_empty())
                .collect();
            let mut line = said.join(" ");
            if let Some(variable) = config::environment_source(&error, &argv) {
                line.push_str(&format!(" (the value of {variable})"));
            }
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let log = match init_logging(&cli) {
        Ok(log) => log,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    for warning in effective.passwords_on_the_command_line() {
        tracing::warn!("{warning}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return fail(&anyhow::Error::from(error)),
    };
    let outcome = runtime.block_on(run(cli, &effective));
    // Every line logged is out before the verdict: an error comes last.
    drop(log);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

fn fail(error: &anyhow::Error) -> ExitCode {
    // The reader of stdout went away (`proxydeck admin export | head`):
    // what it wanted, it has. Quiet, like other Unix tools.
    if error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    }) {
        return ExitCode::SUCCESS;
    }
    // One line, whatever the server or a file put in the message.
    eprintln!("error: {}", crate::output::printable(&format!("{error:#}")));
    if error.is::<BadSetting>() {
        ExitCode::from(2)
    } else if error.is::<follow::ExecFailed>() {
        ExitCode::from(3)
    } else if error.is::<follow::CheckFailed>() || error.is::<domains::NotVerified>() {
        // Each its command's own: follow's --check, domains' check.
        ExitCode::from(4)
    } else if let Some(ended) = error.downcast_ref::<proxy_settings::rollouts::Ended>() {
        ExitCode::from(ended.status())
    } else {
        ExitCode::FAILURE
    }
}

/// Serving logs each request at `info`, from a writer thread of its own;
/// the other commands stay quiet but for warnings, written in order with
/// the rest of their output.
fn init_logging(cli: &Cli) -> Result<LogGuard, String> {
    let serving = matches!(cli.command, Command::Serve(_) | Command::Demo(_));
    let logging = Logging {
        format: cli.log_format,
        level: cli.log_level,
        writer: if serving {
            LogWriter::Background
        } else {
            LogWriter::Inline
        },
    };
    logging.init(if serving {
        telemetry::SERVING
    } else {
        telemetry::QUIET
    })
}

async fn run(cli: Cli, effective: &config::Effective) -> anyhow::Result<()> {
    // Only the commands that open the store (and `config check`) read
    // the database's settings: a client is not refused for them.
    let database = || {
        let password_file = cli.database_password_file.as_deref();
        database_settings(&cli.database, password_file, &cli.store, effective)
    };
    let out = Output {
        json: cli.json.is_some(),
    };
    let store_options = StoreOptions {
        pool_size: cli.store.db_pool_size,
        timeout: cli.store.db_timeout,
        ..StoreOptions::default()
    };
    match cli.command {
        Command::Serve(args) => {
            let options = args.options(effective)?;
            let shutdown = shutdown_signal()?;
            let (database, pooler) = database()?;
            let password_file = cli.database_password_file.as_deref();
            let store_options = StoreOptions {
                caches: args.caches,
                pooler,
                replicas: args.replicas(&database, password_file, effective)?,
                ..store_options
            };
            // The address first: a start that cannot listen runs no
            // migration.
            let listeners = Listeners::bind(&options).await?;
            let store = store::open(&database, &store_options).await?;
            let service = Service::on(listeners, Arc::new(store), options)?;
            service.run(shutdown).await;
            Ok(())
        }
        Command::Demo(args) => {
            let (database, pooler) = database()?;
            let store_options = StoreOptions {
                caches: args.caches,
                pooler,
                ..store_options
            };
            demo::run(&database, &store_options, args.options(effective)?, &out).await
        }
        Command::Migrate => {
            let (database, pooler) = database()?;
            store::open(
                &database,
                &StoreOptions {
                    pooler,
                    ..store_options
                },
            )
            .await?;
            out.print(&serde_json::json!({"migrated": true}), || {
                "the schema is up to date".into()
            })
        }
        Command::Admin { command } => {
            let (database, pooler) = database()?;
            let store = store::open(
                &database,
                &StoreOptions {
                    pooler,
                    ..store_options
                },
            )
            .await?;
            admin::run(command, Arc::new(store), &out).await
        }
        Command::Projects { command } => projects::run(command).await,
        Command::Tokens { command } => tokens::run(command).await,
        Command::ProxySettings { command } => proxy_settings::run(command).await,
        Command::Domains { command } => domains::run(command).await,
        Command::Org { command } => teams::run_org(command).await,
        Command::Members { command } => teams::run_members(command).await,
        Command::Invite(args) => teams::invite(args).await,
        Command::Invitations { command } => teams::run_invitations(command, &out).await,
        Command::Follow(args) => follow::follow(args).await,
        Command::Login(args) => login::login(args, &out).await,
        Command::Logout(args) => login::logout(args, &out),
        Command::Auth { command } => login::status(command, &out).await,
        // What serve checks before it opens the store, and nothing more.
        Command::Config {
            command: ConfigCommand::Check(args),
        } => {
            let (database, _) = database()?;
            let password_file = cli.database_password_file.as_deref();
            args.replicas(&database, password_file, effective)?;
            args.options(effective)?;
            config::print(effective, &out)
        }
        Command::Completions(args) => completions::completions(&args),
        Command::Man(args) => completions::man(&args, &out),
    }
}
