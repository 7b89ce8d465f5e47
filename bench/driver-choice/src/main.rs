//! One keyset page (21 rows of ~1.5 KB JSON) read over and over by 32
//! concurrent tasks on a 2-worker tokio runtime, through each candidate
//! SQLite setup. Prints queries per second, the median of 3 interleaved
//! rounds, and the ratio to the setup proxydeck uses.
//!
//! Run: cd bench/driver-choice && cargo run --release

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags, params};

mod common;
use common::ORGS;

const ROWS: usize = 100_000;
const QUERIES_PER_TASK: usize = 1_500;
const POOL: u32 = 4;
const PAGE_SQL: &str = "SELECT created_at, id, body FROM projects
    WHERE deleted_at IS NULL AND organization_id = ?1
    ORDER BY created_at DESC, id DESC LIMIT ?2";

fn setup(path: &Path) {
    let _ = std::fs::remove_file(path);
    let mut c = Connection::open(path).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE projects (id TEXT PRIMARY KEY NOT NULL, organization_id TEXT NOT NULL,
             created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, deleted_at INTEGER,
             body TEXT NOT NULL) STRICT;
         CREATE INDEX projects_listing ON projects (organization_id, created_at, id)
             WHERE deleted_at IS NULL;",
    )
    .unwrap();
    let body = format!(
        "{{\"object\":\"project\",\"description\":\"{}\"}}",
        "x".repeat(1450)
    );
    let tx = c.transaction().unwrap();
    {
        let mut insert = tx
            .prepare("INSERT INTO projects VALUES (?1, ?2, ?3, ?3, NULL, ?4)")
            .unwrap();
        for i in 0..ROWS {
            insert
                .execute(params![
                    format!("p{i:07}"),
                    format!("org-{}", i % ORGS),
                    i as i64,
                    body
                ])
                .unwrap();
        }
    }
    tx.commit().unwrap();
}

fn open_reader(path: &Path) -> Connection {
    let c = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    c.set_prepared_statement_cache_capacity(16);
    c
}

fn read_page(c: &Connection, org: usize) -> usize {
    let mut statement = c.prepare_cached(PAGE_SQL).unwrap();
    let rows: Vec<(i64, String, String)> = statement
        .query_map(params![format!("org-{org}"), 21], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.len()
}

thread_local! {
    static INLINE: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

fn main() {
    let path: PathBuf = std::env::temp_dir().join("driver-choice.db");
    setup(&path);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let manager = r2d2_sqlite::SqliteConnectionManager::file(&path)
            .with_flags(OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX);
        let r2d2_pool = r2d2::Pool::builder()
            .max_size(POOL)
            .test_on_check_out(false)
            .build(manager)
            .unwrap();
        let sqlx_pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(POOL)
            .connect_with(
                sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(&path)
                    .read_only(true),
            )
            .await
            .unwrap();
        let deadpool = deadpool_sqlite::Config::new(&path)
            .create_pool(deadpool_sqlite::Runtime::Tokio1)
            .unwrap();
        let path = Arc::new(path.clone());

        let mut results: Vec<(&str, Vec<f64>)> = vec![
            ("rusqlite + r2d2 on spawn_blocking (proxydeck)", vec![]),
            ("rusqlite inline on the async worker (lower bound)", vec![]),
            ("sqlx SqlitePool", vec![]),
            ("deadpool-sqlite interact", vec![]),
        ];
        for _round in 0..3 {
            let pool = r2d2_pool.clone();
            results[0].1.push(
                common::measure(QUERIES_PER_TASK, move |org| {
                    let pool = pool.clone();
                    async move {
                        tokio::task::spawn_blocking(move || read_page(&pool.get().unwrap(), org))
                            .await
                            .unwrap()
                    }
                })
                .await,
            );
            let inline_path = path.clone();
            results[1].1.push(
                common::measure(QUERIES_PER_TASK, move |org| {
                    let path = inline_path.clone();
                    async move {
                        INLINE.with(|cell| {
                            let mut slot = cell.borrow_mut();
                            read_page(slot.get_or_insert_with(|| open_reader(&path)), org)
                        })
                    }
                })
                .await,
            );
            let pool = sqlx_pool.clone();
            results[2].1.push(
                common::measure(QUERIES_PER_TASK, move |org| {
                    let pool = pool.clone();
                    async move {
                        let rows: Vec<(i64, String, String)> = sqlx::query_as(PAGE_SQL)
                            .bind(format!("org-{org}"))
                            .bind(21_i64)
                            .fetch_all(&pool)
                            .await
                            .unwrap();
                        rows.len()
                    }
                })
                .await,
            );
            let pool = deadpool.clone();
            results[3].1.push(
                common::measure(QUERIES_PER_TASK, move |org| {
                    let pool = pool.clone();
                    async move {
                        let connection = pool.get().await.unwrap();
                        connection
                            .interact(move |c| read_page(c, org))
                            .await
                            .unwrap()
                    }
                })
                .await,
            );
        }
        let median = |v: &Vec<f64>| {
            let mut v = v.clone();
            v.sort_by(f64::total_cmp);
            v[1]
        };
        let baseline = median(&results[0].1);
        println!("{:<52} {:>12} {:>8}", "setup", "queries/s", "ratio");
        for (name, runs) in &results {
            let m = median(runs);
            println!("{name:<52} {m:>12.0} {:>8.2}", m / baseline);
        }
    });
}
