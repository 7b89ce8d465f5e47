//! Telling that no transaction committed to the database since an earlier
//! moment: a page read then is still the page now, and can be answered
//! again from memory (`cache/recent_pages.rs`).
//!
//! Every commit to a database in WAL mode, by any connection of any
//! process, rewrites the WAL-index header at the start of the `-shm` file
//! (<https://www.sqlite.org/walformat.html>, "The WAL-Index Header"): its
//! change counter moves, and so do its frame count, salts and checksums.
//! The header is written twice, the second copy first; equal copies are
//! a header no writer is in the middle of. A mark is the digest of that
//! header, read with one `pread` of 96 bytes: about 0.5 µs, no lock taken.
//!
//! Why not `PRAGMA data_version`, SQLite's own interface for it: it opens a
//! read transaction, which takes the WAL read lock (an `fcntl` and
//! SQLite's mutexes): 1.6-2.2 µs alone, 4-6 µs when both cores ask at
//! once, 7% of a first page's CPU when the page comes from memory; the old
//! binary against the new on the same store measured the difference
//! (bench/RESULTS.md, "The SQLite read path, profiled"). The header's
//! layout is SQLite's documented file format, not its API: the bundled
//! SQLite is the one this build pins, and
//! `sqlite_store::a_page_comes_from_memory_until_anything_commits` fails
//! if a version of it stopped moving the header on a commit.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rusqlite::{Connection, OpenFlags};

use super::{FILE_CHECK_INTERVAL, FileIdentity};
use crate::store::driver::CommitMark;

/// The WAL-index header's two copies, at the start of the `-shm` file.
const HEADER_BYTES: usize = 48;

pub struct CommitWatch {
    /// A connection that read once and stays open, so that the `-shm`
    /// file stays: SQLite removes it when the last connection to the
    /// database closes, and a connection that read keeps its shared lock
    /// on the database until it closes. Never used again.
    _keeper: Mutex<Connection>,
    /// The `-shm` file, read for every mark.
    wal_index: File,
    path: PathBuf,
    file: FileIdentity,
    wal_index_path: PathBuf,
    wal_index_file: FileIdentity,
    /// When the files were last seen in place, in ms since `opened`.
    checked_at: AtomicU64,
    opened: Instant,
    /// A file at either path was replaced: marks are no longer given.
    replaced: AtomicBool,
}

impl CommitWatch {
    /// Watches the database at `path`; `None` when it cannot (then every
    /// page is read from the file).
    pub fn open(path: &Path) -> Option<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let keeper = Connection::open_with_flags(path, flags).ok()?;
        keeper.pragma_update(None, "query_only", "ON").ok()?;
        // A database not in WAL mode has no WAL index; a read opens it.
        let mode: String = keeper
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .ok()?;
        if !mode.eq_ignore_ascii_case("wal") {
            return None;
        }
        keeper
            .query_row("PRAGMA schema_version", [], |row| row.get::<_, i64>(0))
            .ok()?;
        let wal_index_path = wal_index_path(path);
        let watch = Self {
            _keeper: Mutex::new(keeper),
            wal_index: File::open(&wal_index_path).ok()?,
            path: path.to_owned(),
            file: FileIdentity::of(path).ok()?,
            wal_index_file: FileIdentity::of(&wal_index_path).ok()?,
            wal_index_path,
            checked_at: AtomicU64::new(0),
            opened: Instant::now(),
            replaced: AtomicBool::new(false),
        };
        watch.mark().map(|_| watch)
    }

    /// Where the database's commits are now; `None` when it cannot be told
    /// (a file was replaced, the read failed, or a writer is writing the
    /// header at this very moment).
    pub fn mark(&self) -> Option<CommitMark> {
        if self.replaced.load(Ordering::Relaxed) || !self.files_in_place() {
            return None;
        }
        let mut header = [0u8; 2 * HEADER_BYTES];
        self.wal_index.read_exact_at(&mut header, 0).ok()?;
        let (first, second) = header.split_at(HEADER_BYTES);
        (first == second).then(|| CommitMark::new(twox_hash::XxHash3_64::oneshot(first) as i64))
    }

    /// Whether the files at the paths are still the ones watched, looked
    /// at once per [`FILE_CHECK_INTERVAL`] as the pooled connections do. A
    /// replaced file stops the watch for good: the next marks are `None`
    /// (the pooled connections move to the new file; this one stays on the
    /// old one).
    fn files_in_place(&self) -> bool {
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
        let replaced = |path: &Path, watched: FileIdentity| matches!(FileIdentity::of(path), Ok(file) if file != watched);
        if replaced(&self.path, self.file) || replaced(&self.wal_index_path, self.wal_index_file) {
            self.replaced.store(true, Ordering::Relaxed);
            tracing::warn!(
                "the database file was replaced: pages are read from it, not kept, until restart"
            );
            return false;
        }
        true
    }
}

/// Where SQLite keeps a database's WAL index: beside it, `-shm` appended.
fn wal_index_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-shm");
    PathBuf::from(name)
}
