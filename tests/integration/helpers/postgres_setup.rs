//! The PostgreSQL the tests use: found or started once per process, a
//! schema of its own per test, statements run beside the service.

use super::*;

/// True when `backend` cannot be reached here: the caller should end the
/// test. PostgreSQL is found through `PROXYDECK_TEST_POSTGRES_URL`, else a
/// throwaway cluster (`initdb`/`pg_ctl`); without either, the test is
/// skipped with a loud line, or fails when `PROXYDECK_REQUIRE_POSTGRES` is
/// set (CI sets it).
pub fn unavailable(backend: Backend) -> bool {
    let Backend::Postgres = backend else {
        return false;
    };
    let Err(why) = postgres_base_url() else {
        return false;
    };
    if std::env::var_os("PROXYDECK_REQUIRE_POSTGRES").is_some() {
        panic!("PostgreSQL is required (PROXYDECK_REQUIRE_POSTGRES) but unavailable: {why}");
    }
    eprintln!(
        "\n######## SKIPPED: no PostgreSQL for this test ({why}).\n######## Set PROXYDECK_TEST_POSTGRES_URL=postgres://user@host:port/db or install initdb/pg_ctl.\n"
    );
    true
}

/// The PostgreSQL server tests use, found once per test process.
pub fn postgres_base_url() -> Result<&'static str, &'static str> {
    static FOUND: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Ok(url) = std::env::var("PROXYDECK_TEST_POSTGRES_URL") {
                return Ok(url);
            }
            shared_cluster()
        })
        .as_deref()
        .map_err(String::as_str)
}

/// A throwaway cluster for every test process of every run, made the first
/// time and started when needed, under a lock file. It is left running for
/// the next run; `pg_ctl -D target/tmp/postgres-cluster/data stop` stops it
/// (as root: `runuser -u postgres -- pg_ctl ...`).
fn shared_cluster() -> Result<String, String> {
    use crate::postgres_cluster::Cluster;
    const PORT: u16 = 54329;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("postgres-cluster");
    let lock = std::fs::File::create(dir.with_extension("lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    let cluster = if Cluster::exists(&dir) {
        Cluster::reuse(&dir, PORT)?
    } else {
        Cluster::create(&dir, PORT)?
    };
    Ok(cluster.url())
}

/// A schema of its own in the test PostgreSQL database, dropped with this
/// guard: tests run in parallel and leave nothing behind.
pub struct Schema {
    base_url: String,
    name: String,
}

impl Schema {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new, empty schema.
    pub fn create(base_url: &str) -> Self {
        let name = format!("test_{}", uuid::Uuid::new_v4().simple());
        postgres_admin(base_url, &format!("CREATE SCHEMA {name}"));
        Self {
            base_url: base_url.to_owned(),
            name,
        }
    }

    /// A database URL whose connections work in this schema, named after
    /// it (`application_name`: `pg_stat_activity` tells them apart).
    pub fn url(&self) -> String {
        let separator = if self.base_url.contains('?') {
            '&'
        } else {
            '?'
        };
        format!(
            "{}{separator}options=-csearch_path%3D{}&application_name={}",
            self.base_url, self.name, self.name
        )
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // A connection of the test's server may still be inside a
        // transaction here (the last_used_at flusher's, say) while the
        // thread that would finish it waits on this drop: the DROP would
        // wait for its locks forever. End such connections first.
        // A connection may also take its first lock between the two
        // statements: the DROP then gives up after a second (lock_timeout)
        // and both run again, rather than waiting for ever.
        let name = &self.name;
        let sql = format!(
            "SET lock_timeout = '1s';
             SELECT pg_terminate_backend(l.pid) FROM pg_locks l
               JOIN pg_class c ON c.oid = l.relation
               JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = '{name}' AND l.pid <> pg_backend_pid();
             DROP SCHEMA IF EXISTS {name} CASCADE"
        );
        let mut failures = 0;
        while let Err(error) = try_postgres_admin(&self.base_url, &sql) {
            failures += 1;
            assert!(failures < 30, "cannot drop schema {name}: {error}");
        }
    }
}

/// A blocking client on `url`, connected as the service connects (the
/// URL's TLS settings included: [`PostgresSettings`]); not for an async
/// thread.
pub fn postgres_client(url: &str) -> postgres::Client {
    let settings = PostgresSettings::from_url(url).expect("the PostgreSQL URL is valid");
    postgres::Config::from(settings.config)
        .connect(settings.tls)
        .expect("PostgreSQL answers")
}

/// Runs `sql` on a connection of its own (on a thread of its own: the
/// blocking client may not run on an async thread).
pub fn postgres_admin(url: &str, sql: &str) {
    try_postgres_admin(url, sql).expect("the statement runs");
}

/// [`postgres_admin`], telling its error.
fn try_postgres_admin(url: &str, sql: &str) -> Result<(), postgres::Error> {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let mut client = postgres_client(&url);
        client.batch_execute(&sql)
    })
    .join()
    .expect("the admin thread ends")
}

/// The number `sql` (one row, one integer column) answers.
pub fn postgres_count(url: &str, sql: &str) -> i64 {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let mut client = postgres_client(&url);
        client.query_one(&sql, &[]).expect("the query runs").get(0)
    })
    .join()
    .expect("the admin thread ends")
}
