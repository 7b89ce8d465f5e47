//! Terminal output, shared by every program of the command line: how
//! results are printed. A command's one result: one JSON document with
//! `--json`, text otherwise ([`Output`]); the terminal client's JSON
//! documents, fields and `--jq` ([`json`]); aligned tables ([`table`]);
//! progress bars ([`progress`]); durations as flags take them
//! ([`duration`]). Text from the server is never printed raw where a
//! person reads it: [`printable`]. A setting that cannot be used ends a
//! command as a usage error does ([`BadSetting`]).

pub mod duration;
mod escapes;
pub mod json;
pub mod progress;
pub mod table;

use std::io::Write;

use serde::Serialize;

pub use escapes::printable;

/// Where results go: one JSON document with `--json`, human text otherwise.
pub struct Output {
    pub json: bool,
}

impl Output {
    pub fn print(
        &self,
        value: &impl Serialize,
        human: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        let text = if self.json {
            serde_json::to_string(value)?
        } else {
            human()
        };
        // Not println!, which panics when stdout is a closed pipe.
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{text}")?;
        stdout.flush()?;
        Ok(())
    }
}

/// A setting clap's parser passed but proxydeck cannot use (a URL of the
/// wrong kind, a rate limit at odds with its burst): a usage error like
/// clap's own, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadSetting(String);

impl BadSetting {
    /// A setting missing or wrong, as `message` says.
    pub fn error(message: impl Into<String>) -> anyhow::Error {
        Self(message.into()).into()
    }
}
