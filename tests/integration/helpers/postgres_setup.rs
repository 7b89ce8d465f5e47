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

/// The transaction pooler (Debian's pgbouncer, `pool_mode = transaction`)
/// in front of the test PostgreSQL, when `PROXYDECK_TEST_POSTGRES_POOLER_URL`
/// names one (`.ci/pgbouncer` starts it): the tests' services then reach
/// their schema through it. It must let any role log in (`auth_user`).
pub fn pooler_url() -> Option<&'static str> {
    static FOUND: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            std::env::var("PROXYDECK_TEST_POSTGRES_POOLER_URL")
                .ok()
                .filter(|url| !url.is_empty())
        })
        .as_deref()
}

/// A schema of its own in the test PostgreSQL database, dropped with this
/// guard: tests run in parallel and leave nothing behind.
///
/// Connections find the schema through their session's `search_path`,
/// which a transaction pooler lets no client set: through one, the schema
/// belongs to a role of its own, of the same name, and PostgreSQL's
/// default `search_path` (`"$user", public`) finds it.
pub struct Schema {
    base_url: String,
    name: String,
    /// The pooler the service goes through, if any.
    pooler_url: Option<&'static str>,
}

impl Schema {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new, empty schema.
    pub fn create(base_url: &str) -> Self {
        let name = format!("test_{}", uuid::Uuid::new_v4().simple());
        let pooler_url = pooler_url();
        postgres_admin(
            base_url,
            &match pooler_url {
                None => format!("CREATE SCHEMA {name}"),
                // A superuser, as the tests' side statements need.
                Some(_) => format!(
                    "CREATE ROLE {name} LOGIN SUPERUSER; CREATE SCHEMA {name} AUTHORIZATION {name}"
                ),
            },
        );
        Self {
            base_url: base_url.to_owned(),
            name,
            pooler_url,
        }
    }

    /// The database URL the service is given: its connections work in
    /// this schema, named after it (`application_name`: `pg_stat_activity`
    /// tells them apart).
    pub fn url(&self) -> String {
        match self.pooler_url {
            Some(pooler) => as_role(pooler, &self.name),
            None => self.direct_url(),
        }
    }

    /// A URL to the schema straight to PostgreSQL: for the migrations, and
    /// the tests' own statements (which prepare named statements).
    pub fn direct_url(&self) -> String {
        match self.pooler_url {
            Some(_) => as_role(&self.base_url, &self.name),
            None => with_params(
                &self.base_url,
                &format!(
                    "options=-csearch_path%3D{}&application_name={}",
                    self.name, self.name
                ),
            ),
        }
    }

    /// How [`Schema::url`] reaches PostgreSQL.
    pub fn pooler(&self) -> Pooler {
        match self.pooler_url {
            Some(_) => Pooler::Transaction {
                direct_url: self.direct_url(),
            },
            None => Pooler::Direct,
        }
    }

    /// The command line's arguments for this schema.
    pub fn database_args(&self) -> Vec<String> {
        database_args(self.url(), &self.pooler())
    }
}

/// The command line's arguments for the database at `url`, reached as
/// `pooler` says.
pub fn database_args(url: String, pooler: &Pooler) -> Vec<String> {
    let mut args = vec!["--database".to_owned(), url];
    if let Pooler::Transaction { direct_url } = pooler {
        args.extend([
            "--database-pooler".to_owned(),
            "transaction".to_owned(),
            "--database-direct-url".to_owned(),
            direct_url.clone(),
        ]);
    }
    args
}

/// `url` with `params` added to its query.
fn with_params(url: &str, params: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{params}")
}

/// `url` logged in as `role` (its user replaced), named after it.
fn as_role(url: &str, role: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    with_params(
        &format!("{scheme}://{role}@{host}"),
        &format!("application_name={role}"),
    )
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
        // The role's connections (kept by the pooler) end with it.
        let name = &self.name;
        let role = match self.pooler_url {
            Some(_) => format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{name}';
                 DROP ROLE IF EXISTS {name};"
            ),
            None => String::new(),
        };
        let sql = format!(
            "SET lock_timeout = '1s';
             SELECT pg_terminate_backend(l.pid) FROM pg_locks l
               JOIN pg_class c ON c.oid = l.relation
               JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = '{name}' AND l.pid <> pg_backend_pid();
             DROP SCHEMA IF EXISTS {name} CASCADE;
             {role}"
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
