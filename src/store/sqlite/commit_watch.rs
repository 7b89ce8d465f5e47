//! Telling, without a read transaction, that no transaction committed to
//! the database since an earlier moment: a page of projects read then is
//! still the page now, and can be answered again from memory.
//!
//! A read transaction costs more than the rest of a SQLite page read: it
//! takes a WAL read lock, which is SQLite's per-file mutex and often an
//! `fcntl` (bench/RESULTS.md: 11% of a first page's CPU). What a new read
//! transaction would see is decided by the WAL-index header, 48 bytes at
//! the start of the `-shm` file that every connection maps: a commit, by
//! any connection of any process, changes it (`iChange` counts commits,
//! `mxFrame` the WAL's frames, the salts change when the WAL restarts), and
//! a commit becomes visible exactly when it is written. SQLite writes the
//! header twice, the second copy first, and a reader that finds both
//! copies equal has a whole one; SQLite's own readers read it so, without
//! a lock (`walIndexTryHdr`), and so does [`CommitWatch::mark`]. The layout
//! is part of SQLite's documented file format (walformat.html, "The
//! WAL-Index Header"), unchanged since WAL came in 3.7.0.
//!
//! The mapping is reached through the VFS (`SQLITE_FCNTL_FILE_POINTER`,
//! then `xShmMap` for region 0) on a connection kept open for the purpose:
//! it stays mapped while that connection is open.

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};
use std::time::Instant;

use rusqlite::{Connection, OpenFlags, ffi};

use super::{FILE_CHECK_INTERVAL, FileIdentity};
use crate::store::cache::recent_pages::CommitMark;

/// u32 words in one copy of the WAL-index header.
const HEADER_WORDS: usize = 12;
/// The size SQLite maps the shared memory in (`WALINDEX_PGSZ`).
const SHM_REGION_BYTES: i32 = 32 * 1024;

/// The database's WAL-index header, mapped.
pub struct CommitWatch {
    /// Keeps the shared memory mapped; never used for statements.
    _connection: Mutex<Connection>,
    /// Both copies of the header: 2 x [`HEADER_WORDS`] words.
    header: NonNull<AtomicU32>,
    path: PathBuf,
    file: FileIdentity,
    /// When the file was last seen in place, in ms since `opened`.
    checked_at: AtomicU64,
    opened: Instant,
    /// The file at `path` was replaced: marks are no longer given.
    replaced: AtomicBool,
}

// SAFETY: `header` points into a shared mapping that lives as long as
// `_connection`, which this struct owns; it is only read, atomically.
unsafe impl Send for CommitWatch {}
// SAFETY: as above; the connection itself is behind a mutex.
unsafe impl Sync for CommitWatch {}

impl CommitWatch {
    /// Watches the WAL-mode database at `path`; `None` when its shared
    /// memory cannot be reached (then every page is read from the file).
    pub fn open(path: &Path) -> Option<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags).ok()?;
        connection.pragma_update(None, "query_only", "ON").ok()?;
        // A first read opens the WAL and maps its index.
        connection
            .query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
            .ok()?;
        // SAFETY: the handle is that of a live connection, used on this
        // thread only, and the VFS methods are called as SQLite defines them.
        let header = unsafe { wal_index(&connection) }?;
        let watch = Self {
            _connection: Mutex::new(connection),
            header,
            path: path.to_owned(),
            file: FileIdentity::of(path).ok()?,
            checked_at: AtomicU64::new(0),
            opened: Instant::now(),
            replaced: AtomicBool::new(false),
        };
        // A header not yet written (or not a WAL index): no watch.
        watch.mark().map(|_| watch)
    }

    /// The header now; `None` while a writer is in the middle of writing
    /// it, or once the file was replaced.
    pub fn mark(&self) -> Option<CommitMark> {
        if self.replaced.load(Ordering::Relaxed) || !self.file_in_place() {
            return None;
        }
        let copy = |index: usize| -> [u32; HEADER_WORDS] {
            std::array::from_fn(|word| {
                // SAFETY: region 0 is 32 KiB; the two copies are its first
                // 96 bytes, aligned as SQLite's u32 fields are.
                unsafe { self.header.add(index * HEADER_WORDS + word).as_ref() }
                    .load(Ordering::Acquire)
            })
        };
        // The order of SQLite's readers: first copy, barrier, second copy
        // (writers write the second first).
        let first = copy(0);
        fence(Ordering::SeqCst);
        let second = copy(1);
        // iVersion is 0 until the index is initialised.
        (first == second && first[0] != 0).then(|| CommitMark::new(first))
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

/// The start of the WAL index (region 0 of the shared memory) of
/// `connection`'s main database.
///
/// # Safety
/// `connection` must be open and in WAL mode, and not used elsewhere
/// during the call.
unsafe fn wal_index(connection: &Connection) -> Option<NonNull<AtomicU32>> {
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: per the function's contract; FILE_POINTER writes a
    // `sqlite3_file *` into its argument.
    let found = unsafe {
        ffi::sqlite3_file_control(
            connection.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast::<c_void>(),
        )
    };
    if found != ffi::SQLITE_OK || file.is_null() {
        return None;
    }
    // SAFETY: `file` is the open main database file of the connection.
    let methods = unsafe { (*file).pMethods };
    // xShmMap came with version 2 of the I/O methods.
    if methods.is_null() || unsafe { (*methods).iVersion } < 2 {
        return None;
    }
    let map = unsafe { (*methods).xShmMap }?;
    let mut region: *mut c_void = std::ptr::null_mut();
    // SAFETY: region 0 without extending it: the mapping SQLite made for
    // the connection's own reads.
    let mapped = unsafe { map(file, 0, SHM_REGION_BYTES, 0, &raw mut region) };
    if mapped != ffi::SQLITE_OK {
        return None;
    }
    NonNull::new(region.cast::<AtomicU32>())
}
