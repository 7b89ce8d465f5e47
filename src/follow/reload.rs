//! The reload: `--exec`, run (with `sh -c`, in the folder) after a change
//! that changed what the files hold, so that the edge takes them up. Its
//! environment is follow's without any PROXYDECK_* variable (the token
//! stays with follow), with PROXYDECK_FOLLOW_DIR set to the folder.

use std::io::Write as _;
use std::path::Path;

use anyhow::anyhow;

use super::retry::Ended;
use crate::domain::edge;

/// The variable `--exec` finds the folder in; every other PROXYDECK_*
/// variable (the token, the URL, the profile...) is kept from it.
const FOLLOW_DIR_VARIABLE: &str = "PROXYDECK_FOLLOW_DIR";

/// `--exec` failed under `--once`: exit status 3 (`cli::fail`).
#[derive(Debug, thiserror::Error)]
#[error("{0}; the cursor is not saved")]
pub struct ExecFailed(pub String);

/// Runs `--exec` in the folder; `Some(why)` when it fails: its exit
/// status and the end of what it wrote on stderr (passed on to ours).
pub async fn run_exec(command: &str, dir: &Path) -> Result<Option<String>, Ended> {
    let mut run = std::process::Command::new("sh");
    run.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // The token (and every other client setting) stays with follow.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PROXYDECK_") {
            run.env_remove(name);
        }
    }
    run.env(FOLLOW_DIR_VARIABLE, dir);
    let output = tokio::task::spawn_blocking(move || run.output())
        .await
        .map_err(|e| Ended::Fatal(anyhow!("cannot run --exec: {e}")))?
        .map_err(|e| Ended::Fatal(anyhow!("cannot run --exec: {e}")))?;
    let _ = std::io::stderr().write_all(&output.stderr);
    if output.status.success() {
        return Ok(None);
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let said = said.trim();
    let tail: String = said
        .chars()
        .skip(
            said.chars()
                .count()
                .saturating_sub(edge::MAX_ERROR_CHARS - 100),
        )
        .collect();
    Ok(Some(match tail.is_empty() {
        true => format!("--exec {}", output.status),
        false => format!("--exec {}: {tail}", output.status),
    }))
}
