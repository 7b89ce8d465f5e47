//! What it costs to tell whether another connection (of any process)
//! committed to a SQLite database since an earlier moment, per request:
//! the ways the recent-pages cache could take its commit mark (issue 34).
//!
//! 1. The WAL-index header read through the mapping SQLite made (what
//!    the commit watch did before issue 34: `unsafe`, SQLite's VFS
//!    methods, 96 bytes read atomically, both copies compared).
//! 2. The same 96 bytes read with `pread` from the `-shm` file (safe Rust,
//!    the documented file format, one system call): what
//!    `src/store/sqlite/commit_watch.rs` does since the profile of issue 34.
//! 3. `PRAGMA data_version` on a connection kept for it (SQLite's public
//!    interface: the number changes when another connection commits; it
//!    runs in a read transaction, so it takes the WAL read lock).
//! 4. The same, two threads at once, each its own connection (a server's
//!    two cores asking at the same time), and both on one connection behind
//!    a mutex.
//!
//! Each while a writer thread commits about 50 times a second on a
//! connection of its own (the benchmark's writer rate), then without it.
//!
//!     cargo run --release --example commit_mark_cost [-- DATABASE_FILE] [-- --seconds N]
//!
//! Without a file, a fresh WAL database in a temporary folder; with one
//! (e.g. a `bench/run.py --mix --keep DIR` store, DIR/mix.db), that file
//! (only read by the measuring connections; the writer writes a table of
//! its own, `commit_mark_cost`, dropped at the end). Prints ns per call.
//!
//! The `unsafe` below is this measurement's FFI boundary, a copy of what
//! commit_watch.rs had before issue 34, kept here so that the way measured
//! against stays measurable.

use std::ffi::c_void;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering, fence};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, ffi};

const HEADER_WORDS: usize = 12;

fn main() -> anyhow::Result<()> {
    let mut file: Option<PathBuf> = None;
    let mut seconds = 2.0_f64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => seconds = args.next().unwrap_or_default().parse()?,
            _ => file = Some(arg.into()),
        }
    }
    let folder = tempfile::tempdir()?;
    let path = match file {
        Some(path) => path,
        None => {
            let path = folder.path().join("marks.db");
            let c = Connection::open(&path)?;
            c.pragma_update(None, "journal_mode", "WAL")?;
            c.execute_batch(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
                 INSERT INTO t SELECT i, printf('%0200d', i) FROM n;",
            )?;
            path
        }
    };
    {
        let c = Connection::open(&path)?;
        c.execute_batch(
            "CREATE TABLE IF NOT EXISTS commit_mark_cost (n INTEGER); INSERT INTO commit_mark_cost VALUES (0);",
        )?;
    }
    let per = Duration::from_secs_f64(seconds);
    println!("database: {}", path.display());
    println!(
        "| way | writer at ~50 commits/s | ns per call (median of 5 runs) | calls that saw a change |"
    );
    println!("|---|---|---:|---:|");
    for writing in [true, false] {
        let stop = Arc::new(AtomicBool::new(false));
        let writer = writing.then(|| {
            let (path, stop) = (path.clone(), stop.clone());
            std::thread::spawn(move || write_steadily(&path, &stop))
        });
        std::thread::sleep(Duration::from_millis(200));
        let label = if writing { "yes" } else { "no" };

        let watch = MappedHeader::open(&path)?;
        let (ns, changes) = runs(per, || watch.mark());
        println!("| WAL-index header, mapped (today, unsafe) | {label} | {ns:.1} | {changes} |");

        let shm = std::fs::File::open(shm_path(&path))?;
        let (ns, changes) = runs(per, || {
            let mut bytes = [0u8; 2 * HEADER_WORDS * 4];
            shm.read_exact_at(&mut bytes, 0).ok()?;
            let (first, second) = bytes.split_at(HEADER_WORDS * 4);
            (first == second).then(|| {
                std::array::from_fn::<u32, HEADER_WORDS, _>(|w| {
                    u32::from_ne_bytes(first[4 * w..4 * w + 4].try_into().unwrap())
                })
            })
        });
        println!(
            "| WAL-index header, pread of the -shm file (safe) | {label} | {ns:.1} | {changes} |"
        );

        let connection = read_connection(&path)?;
        let (ns, changes) = runs(per, || data_version(&connection));
        println!("| PRAGMA data_version, one connection | {label} | {ns:.1} | {changes} |");

        let (ns, changes) = two_threads(&path, per, false)?;
        println!(
            "| PRAGMA data_version, 2 threads each its own connection | {label} | {ns:.1} | {changes} |"
        );

        let (ns, changes) = two_threads(&path, per, true)?;
        println!(
            "| PRAGMA data_version, 2 threads, one connection behind a mutex | {label} | {ns:.1} | {changes} |"
        );

        stop.store(true, Ordering::Relaxed);
        if let Some(writer) = writer {
            writer.join().expect("writer")?;
        }
    }
    let c = Connection::open(&path)?;
    c.execute_batch("DROP TABLE commit_mark_cost")?;
    Ok(())
}

/// Five runs of `per` each calling `mark` in a loop: the median ns per
/// call, and how many calls of the median run saw a mark other than the
/// one before.
fn runs<M: PartialEq>(per: Duration, mut mark: impl FnMut() -> Option<M>) -> (f64, u64) {
    let mut results: Vec<(f64, u64)> = (0..5)
        .map(|_| {
            let (mut calls, mut changes, mut last) = (0u64, 0u64, None);
            let started = Instant::now();
            while started.elapsed() < per {
                for _ in 0..256 {
                    let now = std::hint::black_box(mark());
                    if now.is_some() && now != last {
                        changes += 1;
                        last = now;
                    }
                }
                calls += 256;
            }
            (started.elapsed().as_nanos() as f64 / calls as f64, changes)
        })
        .collect();
    results.sort_by(|a, b| a.0.total_cmp(&b.0));
    results[2]
}

/// `PRAGMA data_version` from two threads at once: each on a connection of
/// its own, or both on one connection behind a mutex (what a server with
/// one watching connection would do).
fn two_threads(path: &Path, per: Duration, shared: bool) -> anyhow::Result<(f64, u64)> {
    let one = Arc::new(std::sync::Mutex::new(read_connection(path)?));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (path, one) = (path.to_owned(), one.clone());
            std::thread::spawn(move || -> anyhow::Result<(f64, u64)> {
                if shared {
                    return Ok(runs(per, || data_version(&one.lock().unwrap())));
                }
                let connection = read_connection(&path)?;
                Ok(runs(per, || data_version(&connection)))
            })
        })
        .collect();
    let mut results = Vec::new();
    for handle in handles {
        results.push(handle.join().expect("thread")?);
    }
    // Wall time per call of each thread: the mean of the two.
    Ok((results.iter().map(|r| r.0).sum::<f64>() / 2.0, results[0].1))
}

fn read_connection(path: &Path) -> anyhow::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Ok(Connection::open_with_flags(path, flags)?)
}

fn data_version(connection: &Connection) -> Option<i64> {
    let mut statement = connection.prepare_cached("PRAGMA data_version").ok()?;
    statement.query_row([], |row| row.get(0)).ok()
}

fn write_steadily(path: &Path, stop: &AtomicBool) -> anyhow::Result<()> {
    let c = Connection::open(path)?;
    c.busy_timeout(Duration::from_secs(5))?;
    let mut n = 0i64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        c.execute("UPDATE commit_mark_cost SET n = ?1", [n])?;
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn shm_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-shm");
    name.into()
}

/// The WAL-index header through SQLite's own mapping (commit_watch.rs).
struct MappedHeader {
    _connection: Connection,
    header: std::ptr::NonNull<AtomicU32>,
}

impl MappedHeader {
    fn open(path: &Path) -> anyhow::Result<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags)?;
        connection.pragma_update(None, "query_only", "ON")?;
        connection.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
        // SAFETY: a live connection in WAL mode, used on this thread only.
        let header =
            unsafe { wal_index(&connection) }.ok_or_else(|| anyhow::anyhow!("no WAL index"))?;
        Ok(Self {
            _connection: connection,
            header,
        })
    }

    fn mark(&self) -> Option<[u32; HEADER_WORDS]> {
        let copy = |index: usize| -> [u32; HEADER_WORDS] {
            std::array::from_fn(|word| {
                // SAFETY: the first 96 bytes of the 32 KiB region 0.
                unsafe { self.header.add(index * HEADER_WORDS + word).as_ref() }
                    .load(Ordering::Acquire)
            })
        };
        let first = copy(0);
        fence(Ordering::SeqCst);
        let second = copy(1);
        (first == second && first[0] != 0).then_some(first)
    }
}

/// # Safety
/// `connection` must be open, in WAL mode, and not used elsewhere meanwhile.
unsafe fn wal_index(connection: &Connection) -> Option<std::ptr::NonNull<AtomicU32>> {
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: FILE_POINTER writes a `sqlite3_file *` into its argument.
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
    // SAFETY: the open main database file of the connection.
    let methods = unsafe { (*file).pMethods };
    if methods.is_null() || unsafe { (*methods).iVersion } < 2 {
        return None;
    }
    let map = unsafe { (*methods).xShmMap }?;
    let mut region: *mut c_void = std::ptr::null_mut();
    // SAFETY: region 0, not extended: the connection's own mapping.
    let mapped = unsafe { map(file, 0, 32 * 1024, 0, &raw mut region) };
    if mapped != ffi::SQLITE_OK {
        return None;
    }
    std::ptr::NonNull::new(region.cast::<AtomicU32>())
}
