//! Telling that no transaction committed to the database since an earlier
//! moment, through SQLite's public interface: a page read then is still
//! the page now, and can be answered again from memory
//! (`cache/recent_pages.rs`).
//!
//! `PRAGMA data_version` answers a number that changes whenever another
//! connection, of this process or any other, commits to the database, as
//! seen from the connection that asks. One connection, kept for the
//! purpose and never writing, asks for every mark, so every commit is
//! another's and marks are comparable. It costs a read transaction's WAL
//! lock, about 2-3 µs (`examples/commit_mark_cost.rs`, bench/RESULTS.md,
//! "Accelerators, A/B"): the WAL-index header read through SQLite's
//! mapping cost 0.03 µs, but took `unsafe` code reaching into the VFS.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rusqlite::{Connection, OpenFlags};

use super::{FILE_CHECK_INTERVAL, FileIdentity};
use crate::store::cache::recent_pages::CommitMark;

pub struct CommitWatch {
    connection: Mutex<Connection>,
    path: PathBuf,
    file: FileIdentity,
    /// When the file was last seen in place, in ms since `opened`.
    checked_at: AtomicU64,
    opened: Instant,
    /// The file at `path` was replaced: marks are no longer given.
    replaced: AtomicBool,
}

impl CommitWatch {
    /// Watches the database at `path`; `None` when it cannot (then every
    /// page is read from the file).
    pub fn open(path: &Path) -> Option<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags).ok()?;
        connection.pragma_update(None, "query_only", "ON").ok()?;
        let watch = Self {
            connection: Mutex::new(connection),
            path: path.to_owned(),
            file: FileIdentity::of(path).ok()?,
            checked_at: AtomicU64::new(0),
            opened: Instant::now(),
            replaced: AtomicBool::new(false),
        };
        watch.mark().map(|_| watch)
    }

    /// Where the database's commits are now; `None` when it cannot be told
    /// (the file was replaced, or the question failed).
    pub fn mark(&self) -> Option<CommitMark> {
        if self.replaced.load(Ordering::Relaxed) || !self.file_in_place() {
            return None;
        }
        let connection = self
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut statement = connection.prepare_cached("PRAGMA data_version").ok()?;
        let version: i64 = statement.query_row([], |row| row.get(0)).ok()?;
        Some(CommitMark::new(version))
    }

    /// Whether the file at the path is still the one watched, looked at
    /// once per [`FILE_CHECK_INTERVAL`] as the pooled connections do. A
    /// replaced file stops the watch for good: the next marks are `None`
    /// (the pooled connections move to the new file; this one stays on the
    /// old one).
    fn file_in_place(&self) -> bool {
        let now = self.opened.elapsed().as_millis() as u64;
        let last = self.checked_at.load(Ordering::Relaxed);
        if now.saturating_sub(last) < FILE_CHECK_INTERVAL.as_millis() as u64
            || self
                .checked_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return true;
        }
        // A file gone for a while (moved away, a volume remounting) is still
        // the one open: its pages are what a read would give. Another file
        // in its place is not.
        match FileIdentity::of(&self.path) {
            Ok(file) if file != self.file => {
                self.replaced.store(true, Ordering::Relaxed);
                tracing::warn!(
                    "the database file was replaced: pages are read from it, not kept, until restart"
                );
                false
            }
            _ => true,
        }
    }
}
