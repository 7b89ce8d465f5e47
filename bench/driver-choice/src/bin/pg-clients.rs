//! The PostgreSQL counterpart of `main.rs`: one keyset page (21 rows of
//! ~1.5 KB JSON) read over and over by 32 concurrent tasks on a 2-worker
//! tokio runtime, through each candidate client setup, 4 connections each.
//! Prints queries per second (median of 3 interleaved rounds) and the ratio
//! to the first setup.
//!
//! Run: cd bench/driver-choice && cargo run --release --bin pg-clients [URL]
//! (default postgres://postgres@127.0.0.1:5432/postgres; a schema
//! `driver_choice` is made there and dropped afterwards).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[path = "../common.rs"]
mod common;
use common::ORGS;

const ROWS: usize = 100_000;
const QUERIES_PER_TASK: usize = 1_000;
const POOL: usize = 4;
fn pool_size() -> usize {
    std::env::var("POOL")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(POOL)
}
const PAGE_SQL: &str = "SELECT created_at, id, body FROM driver_choice.projects
    WHERE deleted_at IS NULL AND organization_id = $1
    ORDER BY created_at DESC, id DESC LIMIT $2";

fn setup(url: &str) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.batch_execute(
        "DROP SCHEMA IF EXISTS driver_choice CASCADE; CREATE SCHEMA driver_choice;
         CREATE TABLE driver_choice.projects (id TEXT COLLATE \"C\" PRIMARY KEY,
             organization_id TEXT COLLATE \"C\" NOT NULL, created_at BIGINT NOT NULL,
             updated_at BIGINT NOT NULL, deleted_at BIGINT, body TEXT NOT NULL);
         CREATE INDEX ON driver_choice.projects (organization_id, created_at, id)
             WHERE deleted_at IS NULL;",
    )
    .unwrap();
    let body = format!(
        "{{\"object\":\"project\",\"description\":\"{}\"}}",
        "x".repeat(1450)
    );
    let mut tx = c.transaction().unwrap();
    let insert = tx
        .prepare("INSERT INTO driver_choice.projects VALUES ($1, $2, $3, $3, NULL, $4)")
        .unwrap();
    for i in 0..ROWS {
        let (id, org) = (format!("p{i:07}"), format!("org-{}", i % ORGS));
        tx.execute(&insert, &[&id, &org, &(i as i64), &body])
            .unwrap();
    }
    tx.commit().unwrap();
    c.batch_execute("ANALYZE driver_choice.projects").unwrap();
}

fn rows_of(rows: &[tokio_postgres::Row]) -> usize {
    // Reads every column, as a listing does.
    rows.iter()
        .map(|r| {
            let (_, id, body): (i64, &str, &str) = (r.get(0), r.get(1), r.get(2));
            usize::from(!id.is_empty() && !body.is_empty())
        })
        .sum()
}

struct SyncManager(String);

/// A blocking client with the page's statement prepared once.
struct SyncConnection(postgres::Client, postgres::Statement);

impl r2d2::ManageConnection for SyncManager {
    type Connection = SyncConnection;
    type Error = postgres::Error;
    fn connect(&self) -> Result<SyncConnection, postgres::Error> {
        let mut client = postgres::Client::connect(&self.0, postgres::NoTls)?;
        let statement = client.prepare(PAGE_SQL)?;
        Ok(SyncConnection(client, statement))
    }
    fn is_valid(&self, _: &mut SyncConnection) -> Result<(), postgres::Error> {
        Ok(())
    }
    fn has_broken(&self, c: &mut SyncConnection) -> bool {
        c.0.is_closed()
    }
}

fn main() {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into());
    setup(&url);
    let sync_pool = r2d2::Pool::builder()
        .max_size(pool_size() as u32)
        .test_on_check_out(false)
        .build(SyncManager(url.clone()))
        .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config: tokio_postgres::Config = url.parse().unwrap();
        let manager = deadpool_postgres::Manager::from_config(
            config.clone(),
            tokio_postgres::NoTls,
            deadpool_postgres::ManagerConfig {
                recycling_method: deadpool_postgres::RecyclingMethod::Fast,
            },
        );
        let deadpool = deadpool_postgres::Pool::builder(manager)
            .max_size(pool_size())
            .build()
            .unwrap();
        let mut shared = Vec::new();
        for _ in 0..pool_size() {
            let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            let statement = client.prepare(PAGE_SQL).await.unwrap();
            shared.push((client, statement));
        }
        let shared = Arc::new(shared);
        let next = Arc::new(AtomicUsize::new(0));

        let mut results: Vec<(&str, Vec<f64>)> = vec![
            ("postgres (sync) + r2d2 on spawn_blocking", vec![]),
            (
                "tokio-postgres + deadpool-postgres, one query per checkout",
                vec![],
            ),
            (
                "tokio-postgres, 4 clients shared, queries pipelined",
                vec![],
            ),
            (
                "shared pipelined clients, block_on from spawn_blocking",
                vec![],
            ),
        ];
        let rounds = std::env::var("ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(3);
        for _round in 0..rounds {
            let pool = sync_pool.clone();
            results[0].1.push(
                common::measure(QUERIES_PER_TASK, move |org| {
                    let pool = pool.clone();
                    async move {
                        tokio::task::spawn_blocking(move || {
                            let mut c = pool.get().unwrap();
                            let SyncConnection(client, statement) = &mut *c;
                            let rows = client
                                .query(&*statement, &[&format!("org-{org}"), &21_i64])
                                .unwrap();
                            rows_of(&rows)
                        })
                        .await
                        .unwrap()
                    }
                })
                .await,
            );
            let pool = deadpool.clone();
            results[1].1.push(
                common::measure(QUERIES_PER_TASK, move |org| {
                    let pool = pool.clone();
                    async move {
                        let c = pool.get().await.unwrap();
                        let statement = c.prepare_cached(PAGE_SQL).await.unwrap();
                        let rows = c
                            .query(&statement, &[&format!("org-{org}"), &21_i64])
                            .await
                            .unwrap();
                        rows_of(&rows)
                    }
                })
                .await,
            );
            let (clients, next) = (shared.clone(), next.clone());
            results[2].1.push(
                common::measure(QUERIES_PER_TASK, move |org| {
                    let (clients, next) = (clients.clone(), next.clone());
                    async move {
                        let (client, statement) =
                            &clients[next.fetch_add(1, Ordering::Relaxed) % clients.len()];
                        let rows = client
                            .query(statement, &[&format!("org-{org}"), &21_i64])
                            .await
                            .unwrap();
                        rows_of(&rows)
                    }
                })
                .await,
            );
            let (clients, next) = (shared.clone(), Arc::new(AtomicUsize::new(0)));
            results[3].1.push(
                common::measure(QUERIES_PER_TASK, move |org| {
                    let (clients, next) = (clients.clone(), next.clone());
                    async move {
                        tokio::task::spawn_blocking(move || {
                            let (client, statement) =
                                &clients[next.fetch_add(1, Ordering::Relaxed) % clients.len()];
                            let rows = futures_executor::block_on(
                                client.query(statement, &[&format!("org-{org}"), &21_i64]),
                            )
                            .unwrap();
                            rows_of(&rows)
                        })
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
            v[v.len() / 2]
        };
        let baseline = median(&results[0].1);
        println!("{:<60} {:>10} {:>7}", "setup", "queries/s", "ratio");
        for (name, runs) in &results {
            let m = median(runs);
            println!("{name:<60} {m:>10.0} {:>7.2}", m / baseline);
        }
    });
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute("DROP SCHEMA driver_choice CASCADE")
        .unwrap();
}
