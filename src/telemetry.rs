//! Logs: to stderr, as human text or one JSON object per line.
//!
//! Which lines: `RUST_LOG` when it is set (a full filter, such as
//! `info,proxydeck=debug`, for digging into one part), else `--log-level`,
//! else the command's default. RUST_LOG wins because whoever sets it for
//! one run is debugging, and the level in a unit file or an environment
//! should not get in their way.

use tracing_subscriber::EnvFilter;

/// What a server logs by default: a line per request at `info`.
pub const SERVING: &str = "info,refinery_core=warn";
/// What other commands log by default: warnings and errors.
pub const QUIET: &str = "warn";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human text, one line per event.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    fn directive(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}

/// How to log: the format, and the level asked for (if any).
#[derive(Clone, Copy, Debug, Default)]
pub struct Logging {
    pub format: LogFormat,
    pub level: Option<LogLevel>,
}

impl Logging {
    /// Sets up logging to stderr, with `default_filter` when neither
    /// `RUST_LOG` nor a level is given. A `RUST_LOG` that is not a filter is
    /// refused, with its name.
    pub fn init(self, default_filter: &str) -> Result<(), String> {
        let filter = match std::env::var("RUST_LOG") {
            Ok(given) if !given.trim().is_empty() => {
                EnvFilter::try_new(&given).map_err(|error| format!("RUST_LOG: {error}"))?
            }
            _ => EnvFilter::new(match self.level {
                Some(level) => level.directive(),
                None => default_filter,
            }),
        };
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr);
        let installed = match self.format {
            LogFormat::Text => builder
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .try_init(),
            LogFormat::Json => builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .try_init(),
        };
        installed.map_err(|error| format!("cannot set up logging: {error}"))
    }
}

/// Text logging at `default_filter` (or `RUST_LOG`), for tools such as the
/// benchmark's ceiling server.
pub fn init(default_filter: &str) {
    if let Err(error) = Logging::default().init(default_filter) {
        eprintln!("error: {error}");
    }
}
