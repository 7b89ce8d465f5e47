//! What only the PostgreSQL store does: a server that stops and comes back,
//! instances that migrate at the same time, and the move from the embedded
//! store.

use std::sync::Arc;
use std::time::{Duration, Instant};

use proxydeck::store::engine::deadline::ANSWER_MARGIN;
use proxydeck::store::{self, DatabaseUrl, StoreOptions};

use crate::binary::*;
use crate::helpers::*;
use crate::postgres_cluster::{Cluster, PrivateCluster};

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
        ..StoreOptions::default()
    };
    let app =
        TestApp::on(TestStore::at(DatabaseUrl::Postgres(server.cluster.url()), options).await)
            .await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let token = app.token("u1").await;
    assert_eq!(app.get("/v1/projects", &token).await.status(), 200);

    // Requests flow from four clients the whole time.
    let started = Instant::now();
    let load = RequestLoad::start(&app, "/v1/projects", &token, 4);
    load.until("requests flow", |seen| seen.count(200, started) >= 8)
        .await;
    let stopped = Instant::now();
    server.cluster.stop().expect("the server stops");
    // Every client meets the outage, twice on average.
    load.until("503s while PostgreSQL is down", |seen| {
        seen.count(503, stopped) >= 8
    })
    .await;
    let restarted = Instant::now();
    server.cluster.start().expect("the server starts again");
    // The service notices on its own: no restart, no poke.
    load.until("the service recovers", |seen| {
        seen.count(200, restarted) >= 1
    })
    .await;
    let recovered = Instant::now();
    load.until("answers to requests sent after the recovery", |seen| {
        seen.answered_after(recovered + Duration::from_millis(500)) >= 8
    })
    .await;
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

/// The binary serving on `server` (`--db-timeout` 800 ms), with one
/// organization, user `u1` and a token of it made through the operator's
/// commands: the sandbox, the server, the token's secret.
fn serve_on_private_cluster(server: &PrivateCluster) -> (Sandbox, Server, String) {
    let sandbox = Sandbox::new();
    let database = server.cluster.url();
    let on_postgres = |args: &[&str]| {
        let mut command = proxydeck(sandbox.path());
        command.args(args).args(["--database", &database]);
        command
    };
    let organization = org_id(1);
    let run = |args: &[&str]| finish(on_postgres(args), None).json();
    run(&[
        "admin",
        "org",
        "create",
        "--name",
        "Acme",
        "--id",
        &organization,
        "--json",
    ]);
    run(&[
        "admin",
        "user",
        "create",
        "--email",
        "u1@example.com",
        "--org",
        &organization,
        "--id",
        "u1",
        "--json",
    ]);
    let token = run(&[
        "admin", "token", "create", "--user", "u1", "--name", "t", "--json",
    ]);
    let token = token["token"].as_str().unwrap().to_owned();
    let serving = Server::start(|listen| {
        on_postgres(&["serve", "--listen", listen, "--db-timeout", "800ms"])
    });
    (sandbox, serving, token)
}

/// A store outage's log line names the request it failed by the id the
/// response carries, so that a client's report leads to it. The outage
/// may be met first by a task of no request (the change feed's tail polls
/// every 200 ms): its line then says the database is down, and the
/// request, refused without trying, has its own line with its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_outage_is_logged_with_the_failed_request_id() {
    let Some(server) = PrivateCluster::start() else {
        return;
    };
    let (_sandbox, serving, token) = serve_on_private_cluster(&server);
    let ask = |id: &'static str| {
        serving
            .client
            .get(format!("{}/v1/projects", serving.base))
            .bearer_auth(&token)
            .header("x-request-id", id)
            .send()
    };
    assert_eq!(ask("before-outage").await.unwrap().status(), 200);
    server.cluster.stop().expect("the server stops");
    let failed = ask("during-outage").await.unwrap();
    assert_eq!(failed.status(), 503);
    assert_eq!(failed.headers()["x-request-id"], "during-outage");
    // The request's own line is written after the warning.
    let log = serving
        .log_once(|log| log.contains("status=503 latency_us"))
        .await;
    // The request's own warning (the HTTP layer's), when the request met
    // the outage itself.
    match log
        .lines()
        .find(|line| line.contains("proxydeck::http::error: store unavailable"))
    {
        Some(line) => assert!(line.contains("request_id=\"during-outage\""), "{line}"),
        None => assert!(
            log.contains("the database is down"),
            "no store warning: {log}"
        ),
    }
    // The request line of the same request follows it.
    assert!(
        log.lines().any(
            |line| line.contains("status=503") && line.contains("request_id=\"during-outage\"")
        ),
        "{log}"
    );
}

/// Instances starting together on an empty database migrate it once: the
/// migration runs under an advisory lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_starting_together_migrate_once() {
    require!(Backend::Postgres);
    let schema = Schema::create(postgres_base_url().expect("PostgreSQL"));
    let url = DatabaseUrl::Postgres(schema.url());
    let options = StoreOptions {
        pooler: schema.pooler(),
        ..StoreOptions::default()
    };
    let starting: Vec<_> = (0..4)
        .map(|_| {
            let (url, options) = (url.clone(), options.clone());
            tokio::spawn(async move { store::open(&url, &options).await.map(drop) })
        })
        .collect();
    for start in starting {
        start.await.unwrap().expect("every instance starts");
    }
    let applied = postgres_count(
        &schema.direct_url(),
        "SELECT count(*) FROM refinery_schema_history",
    );
    let versions = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres"))
        .unwrap()
        .count() as i64;
    assert_eq!(applied, versions, "each migration is applied once");
}

/// A database migrated before PostgreSQL's versions were numbered as
/// SQLite's (SQLite's V5-V8 recorded as V4-V7, no V4, no V8) opens with
/// its data: the history is renumbered to the files', once. A fresh
/// database records the files' versions directly, and a history that
/// differs from the earlier numbering is left for refinery to refuse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_numbered_before_the_dialects_matched_is_renumbered_once() {
    require!(Backend::Postgres);
    let schema = Schema::create(postgres_base_url().expect("PostgreSQL"));
    let (url, sql_url) = (DatabaseUrl::Postgres(schema.url()), schema.direct_url());
    let options = StoreOptions {
        pooler: schema.pooler(),
        ..StoreOptions::default()
    };
    let first = TestApp::on(TestStore::at(url.clone(), options.clone()).await).await;
    assert_history_is_the_files(&migration_history(&sql_url));
    first
        .seed(vec![
            org(1),
            user("u1", &[1]),
            project("p1", 1, 0),
            project("p2", 1, 1),
            settings("p1", 1, true),
        ])
        .await;
    let token = first.token("u1").await;
    let pages = ["/v1/projects", "/v1/projects/p1/proxy-settings"];
    let mut before = Vec::new();
    for page in pages {
        before.push(first.get_json(page, &token).await);
    }
    assert!(
        before.iter().all(|(status, _)| *status == 200),
        "{before:?}"
    );
    assert_eq!(ids(&before[0].1).len(), 2, "{before:?}");
    first.stop().await;

    // The history as the earlier binary recorded it, from the top.
    let earlier = |file: &refinery::Migration| {
        let name = format!("V{}__{}", file.version() - 1, file.name());
        refinery::Migration::unapplied(&name, file.sql().unwrap()).unwrap()
    };
    let mut renumber = String::from("DELETE FROM refinery_schema_history WHERE version = 4;");
    for file in crate::migrations::files("postgres")
        .iter()
        .filter(|file| (5..=8).contains(&file.version()))
    {
        let old = earlier(file);
        renumber += &format!(
            "UPDATE refinery_schema_history SET version = {}, checksum = '{}' WHERE version = {};",
            old.version(),
            old.checksum(),
            file.version()
        );
    }
    postgres_admin(&sql_url, &renumber);
    let old_history = migration_history(&sql_url);
    let versions: Vec<i32> = old_history.iter().map(|row| row.0).collect();
    // The files after the renumbered ones were recorded as they are.
    let later: Vec<i32> = crate::migrations::files("postgres")
        .iter()
        .map(|file| file.version())
        .filter(|version| *version > 8)
        .collect();
    let recorded: Vec<i32> = (1..=7).chain(later.iter().copied()).collect();
    assert_eq!(versions, recorded);
    assert_eq!(old_history[3].1, "membership_roles");

    // Not the earlier history (a checksum of its own): refused, untouched.
    let set_checksum_6 = |checksum: &str| {
        postgres_admin(
            &sql_url,
            &format!(
                "UPDATE refinery_schema_history SET checksum = '{checksum}' WHERE version = 6"
            ),
        );
    };
    set_checksum_6("1");
    let edited = migration_history(&sql_url);
    let refused = store::open(&url, &options.clone()).await;
    assert!(refused.is_err(), "a history unlike any recorded opens");
    assert_eq!(migration_history(&sql_url), edited);
    set_checksum_6(&old_history[5].2);
    assert_eq!(migration_history(&sql_url), old_history);

    // The new binary opens it, with every row.
    let again = TestApp::on(TestStore::at(url.clone(), options.clone()).await).await;
    for (page, before) in pages.into_iter().zip(before) {
        assert_eq!(again.get_json(page, &token).await, before, "{page}");
    }
    again.stop().await;
    let renumbered = migration_history(&sql_url);
    assert_history_is_the_files(&renumbered);
    let applied_on = |history: &[(i32, String, String, String)], version: i32| {
        let row = history.iter().find(|row| row.0 == version).unwrap();
        row.3.clone()
    };
    for version in (1..=3).chain(5..=8).chain(later.iter().copied()) {
        let recorded_as = if (5..=8).contains(&version) {
            version - 1
        } else {
            version
        };
        assert_eq!(
            applied_on(&renumbered, version),
            applied_on(&old_history, recorded_as),
            "version {version} keeps when it was applied"
        );
    }

    // Opening again changes nothing.
    drop(store::open(&url, &options).await.unwrap());
    assert_eq!(migration_history(&sql_url), renumbered);
}

/// `refinery_schema_history`: version, name, checksum, applied_on, by
/// version.
fn migration_history(url: &str) -> Vec<(i32, String, String, String)> {
    let url = url.to_owned();
    std::thread::spawn(move || {
        postgres_client(&url)
            .query(
                "SELECT version, name, checksum, applied_on FROM refinery_schema_history
                  ORDER BY version",
                &[],
            )
            .expect("the history reads")
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
            .collect()
    })
    .join()
    .expect("the history thread ends")
}

/// The history records migrations/postgres: each file once, with its
/// version, name and checksum, and nothing else.
fn assert_history_is_the_files(history: &[(i32, String, String, String)]) {
    let recorded: Vec<(i32, &str, &str)> = history
        .iter()
        .map(|(version, name, checksum, _)| (*version, name.as_str(), checksum.as_str()))
        .collect();
    let files = crate::migrations::files("postgres");
    let checksums: Vec<String> = files
        .iter()
        .map(|file| file.checksum().to_string())
        .collect();
    let expected: Vec<(i32, &str, &str)> = files
        .iter()
        .zip(&checksums)
        .map(|(file, checksum)| (file.version(), file.name(), checksum.as_str()))
        .collect();
    assert_eq!(recorded, expected);
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
    sandbox.import(&crate::cli::transfer::rich_data().lines);
    let from_sqlite = sandbox.path().join("from-sqlite.ndjson");
    sandbox.json(&["admin", "export", from_sqlite.to_str().unwrap()]);

    let on_postgres = |args: &[&str]| {
        let mut command = proxydeck(sandbox.path());
        command.args(args).args(target.database_args());
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

/// The URL's connection settings reach tokio-postgres whole: every host in
/// turn, a port each, `load_balance_hosts`, `target_session_attrs`; and a
/// failure names the servers tried, never the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_are_tried_in_turn_and_a_read_only_server_is_refused_when_asked() {
    use postgres::config::Host;
    require!(Backend::Postgres);
    let base: postgres::Config = postgres_base_url().unwrap().parse().unwrap();
    let schema = Schema::create(postgres_base_url().unwrap());
    let (host, port) = match (&base.get_hosts()[0], base.get_ports().first()) {
        (Host::Tcp(name), port) => (name.clone(), port.copied().unwrap_or(5432)),
        (Host::Unix(folder), port) => (folder.display().to_string(), port.copied().unwrap_or(5432)),
    };
    // Straight to PostgreSQL, as the schema's user and with its session
    // options (if any): these are libpq's rules for hosts.
    let direct: postgres::Config = schema.direct_url().parse().unwrap();
    let user = direct.get_user().unwrap_or("postgres").to_owned();
    let dbname = base.get_dbname().unwrap_or(&user).to_owned();
    // The extras below add to these options.
    let schema_option = direct
        .get_options()
        .unwrap_or_default()
        .replace(' ', "%20")
        .replace('=', "%3D");
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    // In a URL's query, each host is a `host=` of its own.
    let url = |hosts: &[&str], ports: &str, extra: &str| {
        let hosts: Vec<String> = hosts.iter().map(|host| format!("host={host}")).collect();
        format!(
            "postgres://{user}:hunter2@/{dbname}?{}&port={ports}&options={schema_option}{extra}",
            hosts.join("&")
        )
    };
    let open = |url: String| async move {
        let options = StoreOptions {
            pool_size: 2,
            timeout: Duration::from_secs(5),
            ..StoreOptions::default()
        };
        store::open(&DatabaseUrl::parse(&url).unwrap(), &options).await
    };

    // The first host refuses: the second serves.
    let failover = url(&["127.0.0.1", &host], &format!("1,{port}"), "");
    open(failover.clone())
        .await
        .expect("the second host serves");
    for _ in 0..4 {
        let random = format!("{failover}&load_balance_hosts=random");
        open(random).await.expect("whichever host comes first");
    }

    // No host serves: the error names the last one tried, not the password.
    let error = open(url(&["127.0.0.1"], "1", ""))
        .await
        .map(drop)
        .expect_err("nothing listens on port 1");
    let text = format!("{error:#}");
    assert!(text.contains("127.0.0.1:1"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");

    // A server whose sessions are read-only: refused at connection when
    // the URL asks for a read-write server, whatever hosts follow.
    let read_only = "%20-cdefault_transaction_read_only%3Don";
    let asked = format!("{read_only}&target_session_attrs=read-write");
    let error = open(url(&[&host], &port.to_string(), &asked))
        .await
        .map(drop)
        .expect_err("a read-only server is refused");
    let text = format!("{error:#}");
    assert!(text.contains("does not allow writes"), "{text}");
    // Not asked: it connects, and migrating is what fails.
    let error = open(url(&[&host], &port.to_string(), read_only))
        .await
        .map(drop)
        .expect_err("migrations cannot run read-only");
    let text = format!("{error:#}");
    assert!(!text.contains("does not allow writes"), "{text}");
}

/// Identical reads that arrive while a statement for them is out share
/// the next statement. Here the first read's statement waits on a lock
/// held by a transaction that changes a row; five identical reads arrive
/// meanwhile and send nothing (one statement waits on the lock, not six);
/// once the change commits, the five get one statement's answer, which
/// shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_reads_at_the_same_time_share_one_statement() {
    require!(Backend::Postgres);
    let store = Arc::new(TestStore::new(Backend::Postgres).await);
    let mut lines = vec![org(1), user("u1", &[1])];
    lines.extend((0..5).map(|i| project(&format!("p{i}"), 1, i)));
    seed(store.store.as_ref(), lines).await.unwrap();
    let url = store.sql_url().to_owned();
    let waiting_on_lock = {
        let url = url.clone();
        move || {
            postgres_count(
                &url,
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'projects'::regclass",
            )
        }
    };
    let statements =
        || metric("proxydeck_store_query_duration_seconds_count{operation=\"list_projects\"}");
    let shared = || metric("proxydeck_db_shared_reads_total{operation=\"list_projects\"}");
    let (statements_before, shared_before) = (statements(), shared());

    let org_1 = organizations(store.store.as_ref(), &[1]).await;
    let holder = Held::in_transaction(
        &url,
        "LOCK TABLE projects IN ACCESS EXCLUSIVE MODE;
         UPDATE projects SET body = replace(body, '\"slug\":\"p3\"', '\"slug\":\"changed\"')
          WHERE id = 'p3'",
    );
    let read = || {
        let (store, org_1) = (store.clone(), org_1.clone());
        tokio::spawn(async move { first_page_of(store.store.as_ref(), &org_1, 3).await })
    };
    let first = read();
    until("the first read reaches the lock", || waiting_on_lock() >= 1).await;
    let later: Vec<_> = (0..5).map(|_| read()).collect();
    // What is checked is that nothing happens: no statement is sent. The
    // reads get time to send one, were they to; no event marks that they
    // have decided not to (they wait inside the store).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        waiting_on_lock(),
        1,
        "the later reads sent statements of their own"
    );
    holder.commit();
    first.await.unwrap().unwrap();
    let mut answers = Vec::new();
    for read in later {
        answers.push(read.await.unwrap().unwrap());
    }
    assert!(answers[0].contains("\"changed\""), "{}", answers[0]);
    assert!(answers.iter().all(|answer| *answer == answers[0]));
    assert_eq!(
        statements() - statements_before,
        2.0,
        "one statement for the first read, one for the five"
    );
    assert_eq!(shared() - shared_before, 5.0);
}

/// The remembered pages are forgotten when the connection is made again:
/// the server may be another one, whose transaction ids started over. Here
/// it is a new cluster at the same address, given the same data by the
/// same steps but for one description: its row has the very `xmin` the
/// first server's row had, so a page remembered across the switch would
/// show the first server's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_remembered_from_one_server_are_not_trusted_on_another() {
    let Some(server) = PrivateCluster::start() else {
        return;
    };
    let url = DatabaseUrl::Postgres(server.cluster.url());
    let with_description = |text: &str| {
        let mut p1 = project("p1", 1, 1);
        p1["description"] = text.into();
        vec![org(1), user("u1", &[1]), project("p0", 1, 0), p1]
    };
    let first = TestStore::at(url.clone(), StoreOptions::default()).await;
    seed(first.store.as_ref(), with_description("first server"))
        .await
        .unwrap();
    // Organization 1 has the same number on both servers: same steps.
    let org_1 = organizations(first.store.as_ref(), &[1]).await;
    let read = || first_page_of(first.store.as_ref(), &org_1, 5);
    for _ in 0..3 {
        assert!(read().await.unwrap().contains("first server"));
    }
    let xmin_before = xmin_of_p1(&server.cluster.url());

    server.cluster.stop().expect("the first server stops");
    std::fs::remove_dir_all(server.dir.join("data")).unwrap();
    let second = Cluster::create(&server.dir, 5432).expect("a second server starts");
    let other = TestStore::at(url, StoreOptions::default()).await;
    seed(other.store.as_ref(), with_description("second server"))
        .await
        .unwrap();
    assert_eq!(
        xmin_of_p1(&second.url()),
        xmin_before,
        "the second server gave the row another xmin: this test shows nothing"
    );

    eventually("the store reconnects", || async { read().await.is_ok() }).await;
    let page = read().await.expect("the store reads again");
    assert!(page.contains("second server"), "{page}");
    assert!(!page.contains("first server"), "{page}");
}

/// The `xmin` of project p1, read on a connection of its own.
fn xmin_of_p1(url: &str) -> String {
    let url = url.to_owned();
    std::thread::spawn(move || {
        let mut client = postgres_client(&url);
        client
            .query_one("SELECT xmin::text FROM projects WHERE id = 'p1'", &[])
            .expect("p1 is there")
            .get(0)
    })
    .join()
    .unwrap()
}

/// With PostgreSQL down, requests get their 503 at once and the log says
/// so once, not once per request: connection attempts are made one at a
/// time with backoff (each failed one logs its request's line), the
/// others are refused without trying; "back up" is said once when it
/// returns. Before, every request logged a warning and tried to connect
/// twice (13,000 lines a second under load).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_answered_at_once_and_logged_once() {
    let Some(server) = PrivateCluster::start() else {
        return;
    };
    let (_sandbox, serving, token) = serve_on_private_cluster(&server);
    let ask = || {
        serving
            .client
            .get(format!("{}/v1/projects", serving.base))
            .bearer_auth(&token)
            .send()
    };
    assert_eq!(ask().await.unwrap().status(), 200);
    server.cluster.stop().expect("the server stops");
    let mut latencies = Vec::new();
    for _ in 0..300 {
        let started = Instant::now();
        let answer = ask().await.unwrap();
        latencies.push(started.elapsed());
        assert_eq!(answer.status(), 503);
        assert!(answer.headers().contains_key("retry-after"));
    }
    latencies.sort();
    assert!(
        latencies[latencies.len() / 2] < Duration::from_millis(20),
        "answered at once: median {:?}",
        latencies[latencies.len() / 2]
    );
    let log = serving
        .log_once(|log| log.matches("status=503").count() >= 300)
        .await;
    assert_eq!(log.matches("the database is down").count(), 1, "{log}");
    let per_request = log.matches("store unavailable").count();
    assert!(
        (1..=20).contains(&per_request),
        "{per_request} warnings for 300 requests: {log}"
    );
    server.cluster.start().expect("the server starts again");
    // The service only finds the database again through a request, after
    // its backoff.
    eventually("the service serves again", || async {
        ask().await.unwrap().status() == 200
    })
    .await;
    let log = serving
        .log_once(|log| log.contains("the database is back up"))
        .await;
    assert_eq!(log.matches("the database is back up").count(), 1, "{log}");
    assert_eq!(log.matches("the database is down").count(), 1, "{log}");
}

/// What the store keeps of PostgreSQL's errors for its log lines is the
/// SQLSTATE and the names the server gives (constraint, table, column),
/// not the server's message, which may quote a value the request sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_errors_log_text_is_its_sqlstate_and_names_not_its_message() {
    require!(Backend::Postgres);
    let data = TestStore::new(Backend::Postgres).await;
    // As the suite reaches the server (TLS when the URL asks for it).
    let settings = store::PostgresSettings::from_url(data.sql_url()).expect("a valid URL");
    let (client, connection) = settings
        .config
        .connect(settings.tls)
        .await
        .expect("PostgreSQL answers");
    tokio::spawn(connection);
    let logged = |error: tokio_postgres::Error| store::StoreError::from(error).to_string();

    let bad_value = client
        .simple_query("SELECT 'secret-value-4711'::int")
        .await
        .expect_err("not a number");
    let message = bad_value
        .as_db_error()
        .expect("the server's error")
        .message();
    assert!(
        message.contains("secret-value-4711"),
        "the server's message quotes the value: {message}"
    );
    let text = logged(bad_value);
    assert!(!text.contains("secret-value-4711"), "{text}");
    assert!(text.contains("22P02"), "{text}");

    client
        .batch_execute(
            "CREATE TEMPORARY TABLE kept (v text CONSTRAINT kept_v_once UNIQUE);
             INSERT INTO kept VALUES ('secret-value-4712')",
        )
        .await
        .expect("the table is made");
    let twice = client
        .batch_execute("INSERT INTO kept VALUES ('secret-value-4712')")
        .await
        .expect_err("a duplicate");
    let text = logged(twice);
    assert!(!text.contains("secret-value-4712"), "{text}");
    assert!(
        text.contains("23505") && text.contains("kept_v_once") && text.contains("kept"),
        "{text}"
    );
}

/// A write waiting on a lock lets go at its deadline (`statement_timeout`,
/// `store/engine/deadline.rs`) rather than wait for the lock and keep its
/// connection: it is answered 503, waits on nothing afterwards, and
/// commits nothing once the lock goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_held_by_a_lock_lets_go_at_its_deadline() {
    require!(Backend::Postgres);
    let mut options = test_options();
    options.limits.timeout = ANSWER_MARGIN + Duration::from_millis(300);
    let app = TestApp::spawn_with(Backend::Postgres, options, suite_store_options()).await;
    app.seed(vec![org(1), user("u1", &[1])]).await;
    let token = app.token("u1").await;
    let url = app.data.sql_url().to_owned();
    // Reads go on; inserts wait.
    let holder = Held::in_transaction(&url, "LOCK TABLE projects IN SHARE MODE");
    let body = serde_json::json!({"organization_id": org_id(1), "slug": "held"});
    let (status, answer, _) = send(
        &app,
        reqwest::Method::POST,
        "/v1/projects",
        &token,
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(status, 503, "{answer}");
    until("the write no longer waits on the lock", || {
        postgres_count(
            &url,
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'projects'::regclass",
        ) == 0
    })
    .await;
    holder.commit();
    let (status, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200);
    assert_eq!(
        listing["data"],
        serde_json::json!([]),
        "nothing was created"
    );
}

/// A transaction of another session that ran `sql` and stays open (its
/// locks held) until [`Held::commit`].
struct Held {
    release: std::sync::mpsc::Sender<()>,
    holder: std::thread::JoinHandle<()>,
}

impl Held {
    fn in_transaction(url: &str, sql: &str) -> Self {
        let (locked, is_locked) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (url, sql) = (url.to_owned(), sql.to_owned());
        let holder = std::thread::spawn(move || {
            let mut client = postgres_client(&url);
            let mut transaction = client.transaction().unwrap();
            transaction.batch_execute(&sql).unwrap();
            locked.send(()).unwrap();
            released.recv().unwrap();
            transaction.commit().unwrap();
        });
        is_locked.recv().unwrap();
        Self { release, holder }
    }

    fn commit(self) {
        self.release.send(()).unwrap();
        self.holder.join().unwrap();
    }
}
