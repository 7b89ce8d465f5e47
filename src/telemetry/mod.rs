//! Logs: to stderr, as human text or one JSON object per line.
//!
//! Which lines: `RUST_LOG` when it is set (a full filter, such as
//! `info,proxydeck=debug`, for digging into one part), else `--log-level`,
//! else the command's default. RUST_LOG wins because whoever sets it for
//! one run is debugging, and the level in a unit file or an environment
//! should not get in their way.
//!
//! A server's lines are written by a thread of their own
//! ([`LogWriter::Background`], [`batches`]): a request queues its line and
//! goes on, instead of waiting in `write(2)` on a pipe that a slow log
//! collector drains; the lines of a couple of milliseconds go out in one
//! write. Other commands write their few lines themselves, in order with
//! the rest of what they print.
//!
//! Whatever the level, the database drivers' own lines below `info` are
//! never logged ([`never_below_info`]): they tell each statement with its
//! parameters, which are request values. Nor are the DNS resolver's
//! (hickory's), which quote whole answers, challenge records included.

pub mod batches;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

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

/// Which thread writes the lines to stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogWriter {
    /// The thread that logs, at once: for commands whose lines must stay in
    /// order with what else they print.
    #[default]
    Inline,
    /// A thread of its own, in batches; a full queue
    /// ([`batches::QUEUE_LIMIT`]) makes the next line wait, so no line is
    /// dropped.
    Background,
}

/// Keeps the background writer (if any) running; dropping it writes out the
/// lines still queued.
#[must_use = "dropping it stops the background log writer"]
pub struct LogGuard {
    _writer: Option<batches::Writer>,
}

/// How to log: the format, the level asked for (if any) and the writer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Logging {
    pub format: LogFormat,
    pub level: Option<LogLevel>,
    pub writer: LogWriter,
}

impl Logging {
    /// Sets up logging to stderr, with `default_filter` when neither
    /// `RUST_LOG` nor a level is given. A `RUST_LOG` that is not a filter is
    /// refused, with its name. Keep the guard until the last line is logged.
    pub fn init(self, default_filter: &str) -> Result<LogGuard, String> {
        let filter = match std::env::var("RUST_LOG") {
            Ok(given) if !given.trim().is_empty() => {
                EnvFilter::try_new(&given).map_err(|error| format!("RUST_LOG: {error}"))?
            }
            _ => EnvFilter::new(match self.level {
                Some(level) => level.directive(),
                None => default_filter,
            }),
        };
        let (writer, guard) = match self.writer {
            LogWriter::Inline => (BoxMakeWriter::new(std::io::stderr), None),
            LogWriter::Background => {
                let (sink, writer) = batches::start()
                    .map_err(|error| format!("cannot start the log writer: {error}"))?;
                (BoxMakeWriter::new(sink), Some(writer))
            }
        };
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(writer);
        let installed = match self.format {
            LogFormat::Text => builder
                .with_ansi(colour(std::io::IsTerminal::is_terminal(&std::io::stderr())))
                .finish()
                .with(never_below_info())
                .try_init(),
            LogFormat::Json => builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .finish()
                .with(never_below_info())
                .try_init(),
        };
        installed.map_err(|error| format!("cannot set up logging: {error}"))?;
        Ok(LogGuard { _writer: guard })
    }
}

/// The targets whose lines below `info` are dropped, whatever the level
/// asked for: a filter of its own beside the `EnvFilter`, so neither
/// `--log-level` nor any `RUST_LOG` (`tokio_postgres::query=trace`
/// included) can lift it. `tokio_postgres` logs through the `log` crate,
/// which reaches these filters through `tracing-log`: at `debug` every
/// statement with its parameters (bodies' members, path ids, `start_key`,
/// `name`, `Idempotency-Key`) and its SQL text. Its `info` lines are the
/// server's notices. The others log no request value today: rusqlite
/// logs nothing without its `trace` feature, hyper no header without its
/// unstable `tracing`, axum its rejections (which quote the input) only
/// with its `tracing` feature, all off here; they are listed all the
/// same, so that turning such a feature on cannot log request values.
/// `hickory` (the custom domains' DNS lookups, `dns.rs`) logs each answer
/// at `debug`, the TXT challenge records' values with it. A target is a
/// prefix: `hyper` covers `hyper_util` too, `hickory` `hickory_proto`,
/// `hickory_net` and `hickory_resolver`.
fn never_below_info() -> Targets {
    Targets::new()
        .with_default(LevelFilter::TRACE)
        .with_targets(
            [
                "tokio_postgres",
                "rusqlite",
                "hyper",
                "axum::rejection",
                "hickory",
            ]
            .map(|target| (target, LevelFilter::INFO)),
        )
}

/// Whether to colour what goes to a stream: only when it is a terminal,
/// and never when `NO_COLOR` is set to anything but the empty string
/// (no-color.org). Logs and the terminal client's output alike.
pub fn colour(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// Text logging at `default_filter` (or `RUST_LOG`) as a server logs, for
/// tools such as the benchmark's ceiling server.
pub fn init_serving(default_filter: &str) -> LogGuard {
    let logging = Logging {
        writer: LogWriter::Background,
        ..Logging::default()
    };
    logging.init(default_filter).unwrap_or_else(|error| {
        eprintln!("error: {error}");
        LogGuard { _writer: None }
    })
}
