//! What only the PostgreSQL store does: a server that stops and comes back,
//! instances that migrate at the same time, and the move from the embedded
//! store.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use proxydeck::store::{self, DatabaseUrl, StoreOptions};

use crate::binary::*;
use crate::helpers::*;
use crate::postgres_cluster::{Cluster, server_bin};

/// A cluster of this test's own, stopped and removed with the guard.
struct PrivateCluster {
    cluster: Cluster,
    dir: PathBuf,
}

impl PrivateCluster {
    /// `None` (the test ends, loudly) when `initdb`/`pg_ctl` are missing,
    /// unless PostgreSQL is required here.
    fn start() -> Option<Self> {
        if server_bin().is_none() {
            if std::env::var_os("PROXYDECK_REQUIRE_POSTGRES").is_some() {
                panic!("this fault test needs initdb and pg_ctl to run a server it can stop");
            }
            eprintln!(
                "\n######## SKIPPED: initdb/pg_ctl are not installed; the fault test needs them.\n"
            );
            return None;
        }
        // In the system's temporary folder: the postgres user must be able
        // to reach it, which a checkout in a private folder would not allow.
        let dir =
            std::env::temp_dir().join(format!("proxydeck-fault-{}", uuid::Uuid::new_v4().simple()));
        let cluster = Cluster::create(&dir, 5432).expect("a throwaway cluster starts");
        Some(Self { cluster, dir })
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = self.cluster.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Stop PostgreSQL while requests flow: they get 503 `api_error` promptly,
/// never hang past the store timeout, the service stays up and serves again
/// by itself once PostgreSQL is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_postgres_gives_prompt_503s_and_the_service_recovers() {
    let Some(server) = PrivateCluster::start() else {
        return;
    };
    let timeout = Duration::from_millis(800);
    let options = StoreOptions {
        pool_size: 4,
        timeout,
    };
    let app =
        TestApp::on(TestStore::at(DatabaseUrl::Postgres(server.cluster.url()), options).await)
            .await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let token = app.token("u1").await;
    assert_eq!(app.get("/v1/projects", &token).await.status(), 200);

    // Requests flow from four clients the whole time.
    let load = RequestLoad::start(&app, "/v1/projects", &token, 4);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopped = Instant::now();
    server.cluster.stop().expect("the server stops");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.cluster.start().expect("the server starts again");
    // Give the service a moment to notice on its own: no restart, no poke.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if app.get("/v1/projects", &token).await.status() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the service did not recover within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let answers = load.finish().await;
    // Never a hang: at most the store timeout, and one retry within it.
    // Connections broken by the restart may cost a request or two after
    // the first success.
    assert_outage_answers(
        &answers,
        stopped,
        recovered + Duration::from_millis(500),
        timeout * 2 + Duration::from_millis(700),
    );
    app.stop().await;
}

/// Instances starting together on an empty database migrate it once: the
/// migration runs under an advisory lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_starting_together_migrate_once() {
    require!(Backend::Postgres);
    let schema = Schema::create(postgres_base_url().expect("PostgreSQL"));
    let url = DatabaseUrl::Postgres(schema.url());
    let starting: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { store::open(&url, &StoreOptions::default()).await.map(drop) })
        })
        .collect();
    for start in starting {
        start.await.unwrap().expect("every instance starts");
    }
    let applied = postgres_count(
        &schema.url(),
        "SELECT count(*) FROM refinery_schema_history",
    );
    let versions = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres"))
        .unwrap()
        .count() as i64;
    assert_eq!(applied, versions, "each migration is applied once");
}

/// Moving from the embedded store: `admin export` from SQLite, `admin
/// import` into PostgreSQL; exporting from PostgreSQL then gives the same
/// bytes.
#[test]
fn moving_from_sqlite_to_postgres_keeps_every_byte() {
    require!(Backend::Postgres);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let target = runtime.block_on(TestStore::new(Backend::Postgres));
    let sandbox = Sandbox::new();
    sandbox.import(&crate::transfer::rich_data().lines);
    let from_sqlite = sandbox.path().join("from-sqlite.ndjson");
    sandbox.json(&["admin", "export", from_sqlite.to_str().unwrap()]);

    let on_postgres = |args: &[&str]| {
        let mut command = proxydeck(sandbox.path());
        command
            .args(args)
            .arg("--database")
            .arg(target.database_arg());
        finish(command, None)
    };
    let counts = on_postgres(&["admin", "import", from_sqlite.to_str().unwrap(), "--json"]).json();
    assert!(counts["projects"].as_u64().unwrap() > 0, "{counts}");
    let from_postgres = sandbox.path().join("from-postgres.ndjson");
    let out = on_postgres(&["admin", "export", from_postgres.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let (a, b) = (
        std::fs::read(&from_sqlite).unwrap(),
        std::fs::read(&from_postgres).unwrap(),
    );
    assert!(a == b, "the PostgreSQL export differs from the SQLite one");
    // And `migrate` on PostgreSQL is a no-op once done.
    let migrated = on_postgres(&["migrate", "--json"]).json();
    assert_eq!(migrated["migrated"], true);
    drop(runtime);
}
