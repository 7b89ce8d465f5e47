//! The commands follow runs in the folder (with `sh -c`): `--exec`, after
//! a change that changed what the files hold, so that the edge takes them
//! up; then `--check`, whose exit status says whether the edge is healthy
//! on what it now serves. Their environment is follow's without any
//! PROXYDECK_* variable (the token stays with follow), with
//! PROXYDECK_FOLLOW_DIR set to the folder.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::anyhow;

use super::retry::Ended;
use crate::domain::edge;

/// The variable the commands find the folder in; every other PROXYDECK_*
/// variable (the token, the URL, the profile...) is kept from them.
const FOLLOW_DIR_VARIABLE: &str = "PROXYDECK_FOLLOW_DIR";

/// How long `--check` may run: one that hangs (a request to a proxy that
/// does not answer) counts as failed rather than holding follow back.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// `--exec` failed under `--once`: exit status 3 (`cli::fail`).
#[derive(Debug, thiserror::Error)]
#[error("{0}; the cursor is not saved")]
pub struct ExecFailed(pub String);

/// `--check` failed under `--once`: exit status 4 (`cli::fail`). The files
/// are written and `--exec` succeeded: the cursor is saved.
#[derive(Debug, thiserror::Error)]
#[error("{0}; the edge is reported unhealthy")]
pub struct CheckFailed(pub String);

/// Runs `--exec` in the folder; `Some(why)` when it fails: its exit
/// status and the end of what it wrote on stderr (passed on to ours).
pub async fn run_exec(command: &str, dir: &Path) -> Result<Option<String>, Ended> {
    let run = in_folder(command, dir);
    let output = tokio::task::spawn_blocking(move || output_of(run, None))
        .await
        .map_err(|e| Ended::Fatal(anyhow!("cannot run --exec: {e}")))?
        .map_err(|e| Ended::Fatal(anyhow!("cannot run --exec: {e}")))?;
    let (status, said) = output.expect("no time limit");
    Ok((!status.success()).then(|| failure("--exec", &status.to_string(), &said)))
}

/// Runs `--check` in the folder, for [`CHECK_TIMEOUT`] at most; `Some(why)`
/// when it fails (its exit status and the end of its stderr), or did not
/// end in time.
pub async fn run_check(command: &str, dir: &Path) -> Result<Option<String>, Ended> {
    let run = in_folder(command, dir);
    let output = tokio::task::spawn_blocking(move || output_of(run, Some(CHECK_TIMEOUT)))
        .await
        .map_err(|e| Ended::Fatal(anyhow!("cannot run --check: {e}")))?
        .map_err(|e| Ended::Fatal(anyhow!("cannot run --check: {e}")))?;
    let Some((status, said)) = output else {
        let seconds = CHECK_TIMEOUT.as_secs();
        return Ok(Some(format!("--check did not end within {seconds} s")));
    };
    let status = match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => status.to_string(),
    };
    Ok((status != "exited with status 0").then(|| failure("--check", &status, &said)))
}

/// `sh -c COMMAND` in `dir`, with follow's environment but its
/// PROXYDECK_* variables, and PROXYDECK_FOLLOW_DIR.
fn in_folder(command: &str, dir: &Path) -> Command {
    let mut run = Command::new("sh");
    run.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    // The token (and every other client setting) stays with follow.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PROXYDECK_") {
            run.env_remove(name);
        }
    }
    run.env(FOLLOW_DIR_VARIABLE, dir);
    run
}

/// Runs `run` to its end, its stderr passed on to ours; `None` when it
/// ran past `limit` (then it is killed; a process it started and that
/// keeps its stderr open is left to end alone, not waited for).
fn output_of(
    mut run: Command,
    limit: Option<Duration>,
) -> std::io::Result<Option<(ExitStatus, String)>> {
    let mut child = run.spawn()?;
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let (said_tx, said_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut said = Vec::new();
        let _ = stderr.read_to_end(&mut said);
        let _ = said_tx.send(said);
    });
    let status = match limit {
        None => child.wait()?,
        Some(limit) => {
            let deadline = Instant::now() + limit;
            loop {
                if let Some(status) = child.try_wait()? {
                    break status;
                }
                if Instant::now() >= deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    };
    // What it said, once every writer of its stderr closed it.
    let said = match limit {
        None => said_rx.recv().unwrap_or_default(),
        Some(limit) => said_rx.recv_timeout(limit).unwrap_or_default(),
    };
    let _ = std::io::stderr().write_all(&said);
    Ok(Some((status, String::from_utf8_lossy(&said).into_owned())))
}

/// Why a command failed, as reported: what, its status, and the end of
/// what it said on stderr (the report keeps its last
/// [`edge::MAX_ERROR_CHARS`] characters, with room for the rest).
fn failure(what: &str, status: &str, said: &str) -> String {
    let said = said.trim();
    let tail: String = said
        .chars()
        .skip(
            said.chars()
                .count()
                .saturating_sub(edge::MAX_ERROR_CHARS - 100),
        )
        .collect();
    match tail.is_empty() {
        true => format!("{what} {status}"),
        false => format!("{what} {status}: {tail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_check_is_healthy_on_status_0_and_says_why_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(run_check("true", dir.path()).await.ok(), Some(None));
        let failed = run_check("echo 'no answer on :80' >&2; exit 7", dir.path()).await;
        assert_eq!(
            failed.ok(),
            Some(Some(
                "--check exited with status 7: no answer on :80".to_owned()
            ))
        );
        // Its folder and environment are --exec's.
        let env = "test \"$PWD\" = \"$PROXYDECK_FOLLOW_DIR\" && test -z \"$PROXYDECK_TOKEN\"";
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(run_check(env, &dir).await.ok(), Some(None));
    }
}
