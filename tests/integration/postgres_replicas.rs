//! Reads from a streaming replica (`--database-replica`): a real replica
//! made by `pg_basebackup -R` of a throwaway primary, its replay paused
//! (`pg_wal_replay_pause()`) to make it fall behind.
//!
//! Which server answered shows in the data: with the replay paused, a
//! write made after the pause is on the primary only.

use std::time::{Duration, Instant};

use proxydeck::rate_limit::redis::{CALL_TIMEOUT, RETRY_INTERVAL};
use proxydeck::store::{DatabaseUrl, Replicas, StoreOptions};
use serde_json::{Value, json};

use crate::binary::*;
use crate::helpers::*;
use crate::postgres_cluster::PrivateCluster;

/// A primary, its replica, and the service reading from it with
/// `max_lag`, and `positions_redis`; users u1 and u2 in one organization.
struct Setup {
    /// Kept running while the test runs.
    _primary: PrivateCluster,
    replica: PrivateCluster,
    app: TestApp,
    u1: String,
    u2: String,
}

async fn setup(max_lag: Duration, positions_redis: Option<&str>) -> Option<Setup> {
    let primary = PrivateCluster::start()?;
    let replica = primary.replica();
    let options = StoreOptions {
        replicas: Replicas {
            urls: vec![replica.cluster.url()],
            max_lag,
            positions_redis: positions_redis.map(str::to_owned),
        },
        ..StoreOptions::default()
    };
    let data = TestStore::at(DatabaseUrl::Postgres(primary.cluster.url()), options).await;
    let app = TestApp::on(data).await;
    app.seed(vec![org(1), user("u1", &[1]), user("u2", &[1])])
        .await;
    let (u1, u2) = (app.token("u1").await, app.token("u2").await);
    // The replica has the tokens once it is read from: replay is running.
    until("the replica is read from", || reads_from_replica(&app)).await;
    let metrics = replica_metrics(&app).await;
    let replica_name = format!("{}/.s.PGSQL.5432", replica.dir.display());
    assert!(
        metrics.contains(&format!(
            "proxydeck_db_replica_usable{{replica=\"{replica_name}\"}} 1"
        )),
        "{metrics:?}"
    );
    Some(Setup {
        _primary: primary,
        replica,
        app,
        u1,
        u2,
    })
}

/// Whether the service reads from its replica now (its own store's view:
/// the metrics are the test process's, shared by its instances).
fn reads_from_replica(app: &TestApp) -> bool {
    app.store.replica_use().iter().any(|replica| replica.usable)
}

/// The service's `/metrics` text.
async fn metrics_text(app: &TestApp) -> String {
    app.client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("the metrics answer")
        .text()
        .await
        .expect("a text")
}

/// What the metrics say of the replica.
async fn replica_metrics(app: &TestApp) -> Vec<String> {
    let metrics = metrics_text(app).await;
    metrics
        .lines()
        .filter(|line| line.starts_with("proxydeck_db_replica_"))
        .map(str::to_owned)
        .collect()
}

fn pause_replay(replica: &PrivateCluster) {
    postgres_admin(&replica.cluster.url(), "SELECT pg_wal_replay_pause()");
}

fn resume_replay(replica: &PrivateCluster) {
    postgres_admin(&replica.cluster.url(), "SELECT pg_wal_replay_resume()");
}

async fn create_project(app: &TestApp, token: &str, slug: &str) -> String {
    let body = json!({"organization_id": org_id(1), "slug": slug});
    let (status, created, _) = send(
        app,
        reqwest::Method::POST,
        "/v1/projects",
        token,
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    created["id"].as_str().expect("an id").to_owned()
}

/// The ids of the projects `token`'s caller lists through `app`.
async fn listed(app: &TestApp, token: &str) -> Vec<String> {
    let (status, body) = app.get_json("/v1/projects?limit=100", token).await;
    assert_eq!(status, 200, "{body}");
    ids(&body)
}

async fn sees(app: &TestApp, token: &str, id: &str) -> bool {
    listed(app, token).await.iter().any(|seen| seen == id)
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("a page")
        .iter()
        .map(|item| item["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// Reads go to the replica; a caller's own write is seen at once by its
/// reads, on this instance and, through the shared positions in Redis, on
/// another; a caller who did not write sees the replica's (older) data
/// until the replica replays the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_go_to_the_replica_and_a_caller_reads_its_own_writes_on_any_instance() {
    // A database of Redis' own: no other test's positions.
    let redis = "redis://127.0.0.1:6379/11";
    let Some(setup) = setup(Duration::from_secs(60), Some(redis)).await else {
        return;
    };
    let Setup {
        app,
        replica,
        u1,
        u2,
        ..
    } = &setup;
    let options = StoreOptions {
        replicas: Replicas {
            urls: vec![replica.cluster.url()],
            max_lag: Duration::from_secs(60),
            positions_redis: Some(redis.to_owned()),
        },
        ..StoreOptions::default()
    };
    let other = app.another_instance_on(test_options(), options).await;
    until("the other instance reads from the replica", || {
        reads_from_replica(&other)
    })
    .await;

    pause_replay(replica);
    let written = create_project(app, u1, "after-the-pause").await;
    assert!(sees(app, u1, &written).await, "the writer reads its write");
    // Someone else reads the replica, which has not replayed the write.
    assert!(!sees(app, u2, &written).await, "u2's read is the replica's");
    assert!(!sees(&other, u2, &written).await);
    assert!(
        sees(&other, u1, &written).await,
        "the writer reads its write through another instance"
    );
    let (status, one) = other.get_json(&format!("/v1/projects/{written}"), u1).await;
    assert_eq!(status, 200, "{one}");

    // A token made now authenticates at once on either instance: token
    // look-ups read the primary (the replica has not replayed it).
    let body = json!({"name": "made-while-paused"});
    let (status, created, _) = send(
        app,
        reqwest::Method::POST,
        "/v1/api_tokens",
        u1,
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let secret = created["token"].as_str().expect("the secret");
    assert_eq!(other.get_json("/v1/projects", secret).await.0, 200);
    assert_eq!(app.get_json("/v1/projects", secret).await.0, 200);

    resume_replay(replica);
    eventually("the replica replays the write", || sees(app, u2, &written)).await;
}

/// A replica further behind than the allowed lag is skipped: reads go to
/// the primary and see every write; once it catches up it is read again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_behind_more_than_the_allowed_lag_is_skipped_until_it_catches_up() {
    let Some(setup) = setup(Duration::from_secs(2), None).await else {
        return;
    };
    let Setup {
        app,
        replica,
        u1,
        u2,
        ..
    } = &setup;
    pause_replay(replica);
    let first = create_project(app, u1, "first").await;
    // Within the lag, u2's reads are the replica's.
    assert!(!sees(app, u2, &first).await, "u2's read is the replica's");
    until_not_read_from(app).await;
    assert!(sees(app, u2, &first).await, "reads go to the primary");

    resume_replay(replica);
    assert_read_from_again(&setup, "second").await;
}

/// A replica that stops costs no request its answer (reads flowing to it
/// when it stops are answered by the primary), and is read from again
/// once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_stops_is_skipped_and_taken_back_when_it_restarts() {
    let Some(setup) = setup(Duration::from_secs(60), None).await else {
        return;
    };
    let Setup {
        app,
        replica,
        u1,
        u2,
        ..
    } = &setup;
    let load = RequestLoad::start(app, "/v1/projects", u2, 4);
    let started = Instant::now();
    load.until("reads flow", |seen| seen.count(200, started) >= 8)
        .await;
    replica.cluster.stop().expect("the replica stops");
    until_not_read_from(app).await;
    let skipped = Instant::now();
    load.until("reads flow without the replica", |seen| {
        seen.count(200, skipped) >= 8
    })
    .await;
    let failed: Vec<_> = load
        .finish()
        .await
        .into_iter()
        .filter(|answer| answer.status != 200)
        .collect();
    assert!(
        failed.is_empty(),
        "{} reads failed, the first: {:?}",
        failed.len(),
        failed.first()
    );
    let during = create_project(app, u1, "while-it-is-down").await;
    assert!(sees(app, u2, &during).await, "reads go to the primary");

    replica.cluster.start().expect("the replica starts again");
    assert_read_from_again(&setup, "after-it-came-back").await;
}

/// The replica is read from again: once the service finds it current,
/// with its replay paused, u1's new write `slug` is in u1's reads but not
/// in u2's, which are the replica's.
async fn assert_read_from_again(setup: &Setup, slug: &str) {
    let Setup {
        app,
        replica,
        u1,
        u2,
        ..
    } = setup;
    until("the replica is read again", || reads_from_replica(app)).await;
    pause_replay(replica);
    let written = create_project(app, u1, slug).await;
    assert!(
        !sees(app, u2, &written).await,
        "u2's read is the replica's again"
    );
    assert!(sees(app, u1, &written).await, "u1 reads its write");
}

async fn until_not_read_from(app: &TestApp) {
    until("the replica is not read from", || !reads_from_replica(app)).await;
}

/// `proxydeck_db_reads_total{server=...}` of this process.
fn reads_by(server: &str) -> f64 {
    metric(&format!("proxydeck_db_reads_total{{server=\"{server}\"}}"))
}

/// A read the replica fails (here: its copy lacks the table, renamed on
/// the primary and replayed, then named back while its replay is paused)
/// is answered by the primary and counted as the primary's; a read the
/// replica answers is the replica's. The replica's pools are in the pool
/// metrics, named for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_the_replica_fails_is_counted_as_the_primarys_and_its_pools_are_shown() {
    let Some(setup) = setup(Duration::from_secs(60), None).await else {
        return;
    };
    let Setup {
        _primary: primary,
        app,
        replica,
        u2,
        ..
    } = &setup;
    let (primary_url, replica_url) = (primary.cluster.url(), replica.cluster.url());
    postgres_admin(
        &primary_url,
        "ALTER TABLE projects RENAME TO projects_hidden",
    );
    until("the replica replays the rename", || {
        postgres_count(
            &replica_url,
            "SELECT count(*) FROM pg_class WHERE relname = 'projects_hidden'",
        ) == 1
    })
    .await;
    pause_replay(replica);
    postgres_admin(
        &primary_url,
        "ALTER TABLE projects_hidden RENAME TO projects",
    );

    let (replica_before, primary_before) = (reads_by("replica"), reads_by("primary"));
    let (status, body) = app.get_json("/v1/projects", u2).await;
    assert_eq!(status, 200, "the primary answers: {body}");
    assert_eq!(
        (reads_by("replica"), reads_by("primary")),
        (replica_before, primary_before + 1.0),
        "the read the replica failed is the primary's"
    );

    resume_replay(replica);
    until("the replica replays the name back", || {
        postgres_count(
            &replica_url,
            "SELECT count(*) FROM pg_class WHERE relname = 'projects'",
        ) == 1
    })
    .await;
    until("the replica is read from", || reads_from_replica(app)).await;
    let (replica_before, primary_before) = (reads_by("replica"), reads_by("primary"));
    let (status, body) = app.get_json("/v1/projects", u2).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (reads_by("replica"), reads_by("primary")),
        (replica_before + 1.0, primary_before),
        "the replica answered"
    );

    let metrics = metrics_text(app).await;
    let replica_label = format!("replica=\"{}/.s.PGSQL.5432\"", replica.dir.display());
    for pool in ["shared", "exclusive"] {
        let size = metrics.lines().find(|line| {
            line.starts_with("proxydeck_db_pool_size{")
                && line.contains(&format!("pool=\"{pool}\""))
                && line.contains(&replica_label)
        });
        assert!(size.is_some(), "no {pool} pool of the replica: {metrics}");
    }
}

/// The service on a PostgreSQL schema with a "replica" that is its own
/// primary (not a standby: never read from) and the replica positions in
/// the Redis at `positions_redis`: every authenticated read asks that
/// Redis for its caller's last write.
async fn with_positions_redis(positions_redis: &str) -> (TestApp, String) {
    let base = postgres_base_url().expect("PostgreSQL (require! it first)");
    let store_options = StoreOptions {
        replicas: Replicas {
            urls: vec![base.to_owned()],
            max_lag: Duration::from_secs(5),
            positions_redis: Some(positions_redis.to_owned()),
        },
        ..suite_store_options()
    };
    let app = TestApp::spawn_with(Backend::Postgres, test_options(), store_options).await;
    app.seed(vec![org(1), user("u1", &[1])]).await;
    let token = app.token("u1").await;
    (app, token)
}

/// A positions' Redis that accepts connections and never answers (as one
/// dropping packets does) costs one read the call's bound, not every
/// read: while it fails, one read a retry interval tries it again and the
/// others go to the primary at once, as the rate limiter does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_positions_redis_costs_one_short_wait_per_retry_interval() {
    require!(Backend::Postgres);
    let (port, _server) = crate::rate_limits::silent_server().await;
    let (app, token) = with_positions_redis(&format!("redis://127.0.0.1:{port}")).await;
    let slow_reads = |count: usize| {
        let (app, token) = (&app, &token);
        async move {
            let mut slow = 0;
            for _ in 0..count {
                let started = Instant::now();
                let (status, body) = app.get_json("/v1/projects", token).await;
                assert_eq!(status, 200, "{body}");
                if started.elapsed() >= CALL_TIMEOUT {
                    slow += 1;
                }
            }
            slow
        }
    };
    // One read waited for Redis; the others, within the retry interval
    // (the service's clock stands still), did not (a loaded machine may
    // add one more).
    let slow = slow_reads(10).await;
    assert!((1..=2).contains(&slow), "{slow} of 10 reads waited");
    // A retry interval later, one read tries Redis again.
    app.clock.advance(RETRY_INTERVAL);
    let slow = slow_reads(5).await;
    assert!((1..=2).contains(&slow), "{slow} of 5 reads waited");
}

/// A Redis URL's password (here from the password files, refused by the
/// local Redis, which has none) reaches no log line of the binary: not
/// the replica positions' Redis's, not the rate limit's, whose failures
/// are logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_urls_password_never_reaches_a_log_line() {
    require!(Backend::Postgres);
    if crate::rate_limits::redis_unavailable() {
        return;
    }
    let sandbox = Sandbox::on(Backend::Postgres);
    let secret = sandbox.directory(1, "u1");
    // Letters and digits: percent-encoding in the URL leaves it as it is.
    let password = "hunter2redispass";
    let file = sandbox.path().join("redis-password");
    std::fs::write(&file, format!("{password}\n")).expect("the file is written");
    let file = file.display().to_string();
    let replica = sandbox.db_url();
    let server = sandbox.serve(&[
        "--database-replica",
        &replica,
        "--replica-positions-redis",
        "redis://127.0.0.1:6379/11",
        "--replica-positions-redis-password-file",
        &file,
        "--rate-limit-redis",
        "redis://127.0.0.1:6379/12",
        "--rate-limit-redis-password-file",
        &file,
    ]);
    let response = server.get_raw("/v1/projects", &secret).await;
    assert_eq!(response.status(), 200);
    let log = server
        .log_once(|log| {
            log.contains("the replica positions' Redis failed")
                && log.contains("rate limit Redis unavailable")
        })
        .await;
    assert!(!log.contains(password), "{log}");
}
