//! Logs: to stderr, level from `RUST_LOG` or the command's default.

/// What a server logs by default: a line per request at `info`.
pub const SERVING: &str = "info,refinery_core=warn";
/// What other commands log by default: warnings and errors.
pub const QUIET: &str = "warn";

/// Sets up logging to stderr; `RUST_LOG` overrides `default_filter`.
pub fn init(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
