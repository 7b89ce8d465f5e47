//! The commit the binary is built from, for `proxydeck --version` and the
//! `commit` label of `proxydeck_build_info`, given to the crate as
//! `PROXYDECK_COMMIT`:
//!
//! - `PROXYDECK_BUILD_COMMIT` when set (a container build has no `.git`);
//! - else, in a git checkout of this package, `git rev-parse --short=12
//!   HEAD`, followed by `-dirty` when tracked files differ from it;
//! - else (a source tarball, git missing) `unknown`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=PROXYDECK_BUILD_COMMIT");
    let commit = match std::env::var("PROXYDECK_BUILD_COMMIT") {
        Ok(given) if !given.trim().is_empty() => given.trim().to_owned(),
        _ => from_git().unwrap_or_else(|| "unknown".into()),
    };
    println!("cargo:rustc-env=PROXYDECK_COMMIT={commit}");
}

/// `git` in this package's folder (where cargo runs build scripts), without
/// the optional locks: `status` would otherwise refresh the index, a write
/// that would make the next build run this script again.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("--no-optional-locks")
        .args(args)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn from_git() -> Option<String> {
    // A tarball unpacked inside some other repository is not its checkout.
    let top = git(&["rev-parse", "--show-toplevel"])?;
    let here = std::env::var_os("CARGO_MANIFEST_DIR")?;
    if !same_folder(Path::new(&top), Path::new(&here)) {
        return None;
    }
    let head = git(&["rev-parse", "--short=12", "HEAD"]).filter(|h| !h.is_empty())?;
    // Run again when HEAD moves (a checkout, a commit: HEAD, the branch's
    // ref, packed refs; a worktree's are outside it, so git names them) or
    // when tracked sources change (the -dirty mark).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            // A path that does not exist would make cargo run this every time.
            if Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    for tracked in ["src", "migrations", "Cargo.toml", "Cargo.lock", "build.rs"] {
        println!("cargo:rerun-if-changed={tracked}");
    }
    let changes = git(&["status", "--porcelain", "--untracked-files=no"])?;
    Some(if changes.is_empty() {
        head
    } else {
        format!("{head}-dirty")
    })
}

fn same_folder(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| PathBuf::from(p));
    canonical(a) == canonical(b)
}
