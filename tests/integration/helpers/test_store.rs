//! A fresh store on either backend, filled through the import path, with
//! tokens minted through the store.

use super::*;

/// A fresh store: a SQLite file in its own temporary folder, or a
/// PostgreSQL schema of its own.
pub struct TestStore {
    pub store: Arc<Store>,
    /// Where the data is: another store, process or command can open it.
    pub url: DatabaseUrl,
    /// What the store was opened with; among them, how `url` reaches
    /// PostgreSQL (`pooler`: through the tests' pooler or not).
    pub options: StoreOptions,
    /// The SQLite file (meaningless on PostgreSQL).
    pub path: PathBuf,
    pub dir: TempDir,
    /// Kept for its `Drop`: the PostgreSQL schema goes with the store.
    _schema: Option<Schema>,
}

impl TestStore {
    pub async fn new(backend: Backend) -> Self {
        Self::with_options(backend, StoreOptions::default()).await
    }

    pub async fn with_options(backend: Backend, mut options: StoreOptions) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("proxydeck.db");
        let (url, schema) = match backend {
            Backend::Sqlite => (DatabaseUrl::Sqlite(path.clone()), None),
            Backend::Postgres => {
                let base =
                    postgres_base_url().expect("PostgreSQL is available (require! it first)");
                let schema = Schema::create(base);
                options.pooler = schema.pooler();
                (DatabaseUrl::Postgres(schema.url()), Some(schema))
            }
        };
        let store = store::open(&url, &options).await.expect("the store opens");
        Self {
            store: Arc::new(store),
            url,
            options,
            path,
            dir,
            _schema: schema,
        }
    }

    /// A store on data that already exists somewhere (no clean-up).
    pub async fn at(url: DatabaseUrl, options: StoreOptions) -> Self {
        let store = store::open(&url, &options).await.expect("the store opens");
        Self {
            store: Arc::new(store),
            url,
            options,
            path: PathBuf::new(),
            dir: tempfile::tempdir().expect("a temporary folder"),
            _schema: None,
        }
    }

    /// The generic plan (`EXPLAIN`) of the latest statement whose text holds
    /// `marker` that a connection to this PostgreSQL schema other than the
    /// test's ran: its text is read from `pg_stat_activity` and prepared
    /// again on a connection of the test's own.
    pub fn postgres_plan_of_last(&self, marker: &str) -> String {
        let (DatabaseUrl::Postgres(_), Some(schema)) = (&self.url, &self._schema) else {
            panic!("a PostgreSQL schema of the test's own");
        };
        let url = self.sql_url();
        // The blocking client runs a runtime of its own: not on the test's.
        std::thread::scope(|scope| {
            scope
                .spawn(|| plan_of_last(url, schema.name(), marker))
                .join()
                .expect("the plan is read")
        })
    }

    /// The command line's arguments for this store: `--database` and, on
    /// PostgreSQL through the tests' pooler, `--database-pooler` and
    /// `--database-direct-url`.
    pub fn database_args(&self) -> Vec<String> {
        let url = match &self.url {
            DatabaseUrl::Sqlite(path) => format!("sqlite://{}", path.display()),
            DatabaseUrl::Postgres(url) => url.clone(),
        };
        database_args(url, &self.options.pooler)
    }

    /// A URL for the tests' own statements on PostgreSQL: straight to the
    /// server (they prepare named statements, which a transaction pooler
    /// does not keep).
    pub fn sql_url(&self) -> &str {
        match (&self.options.pooler, &self.url) {
            (Pooler::Transaction { direct_url }, _) => direct_url,
            (Pooler::Direct, DatabaseUrl::Postgres(url)) => url,
            (Pooler::Direct, DatabaseUrl::Sqlite(_)) => panic!("not a PostgreSQL store"),
        }
    }

    /// Whether a transaction holds the right to write the projects: SQLite's
    /// write lock (another connection cannot begin an immediate
    /// transaction), PostgreSQL's row-exclusive lock on `projects`, seen
    /// from a connection of the test's own.
    pub fn projects_write_locked(&self) -> bool {
        match &self.url {
            DatabaseUrl::Sqlite(path) => {
                let connection = rusqlite::Connection::open(path).expect("the file opens");
                connection
                    .busy_timeout(Duration::ZERO)
                    .expect("no busy wait");
                match connection.execute_batch("BEGIN IMMEDIATE; ROLLBACK") {
                    Ok(()) => false,
                    Err(error) => {
                        assert_eq!(
                            error.sqlite_error_code(),
                            Some(rusqlite::ErrorCode::DatabaseBusy),
                            "{error}"
                        );
                        true
                    }
                }
            }
            DatabaseUrl::Postgres(_) => {
                postgres_count(
                    self.sql_url(),
                    "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                      WHERE c.relname = 'projects'
                        AND c.relnamespace = current_schema()::regnamespace
                        AND l.mode = 'RowExclusiveLock' AND l.pid <> pg_backend_pid()",
                ) > 0
            }
        }
    }

    /// Runs raw SQL on the store's data, beside the service: to break
    /// things on purpose.
    pub fn execute(&self, sql: &str) {
        match &self.url {
            DatabaseUrl::Sqlite(path) => {
                rusqlite::Connection::open(path)
                    .expect("the file opens")
                    .execute_batch(sql)
                    .expect("the statement runs");
            }
            DatabaseUrl::Postgres(_) => postgres_admin(self.sql_url(), sql),
        }
    }

    /// The number `sql` (one row, one integer column) answers, read beside
    /// the service.
    pub fn count(&self, sql: &str) -> i64 {
        match &self.url {
            DatabaseUrl::Sqlite(path) => rusqlite::Connection::open(path)
                .expect("the file opens")
                .query_row(sql, [], |row| row.get(0))
                .expect("the query runs"),
            DatabaseUrl::Postgres(_) => postgres_count(self.sql_url(), sql),
        }
    }
}

pub async fn mint(
    store: &Store,
    user_id: &str,
    name: &str,
    expires_at: Option<Timestamp>,
) -> (ApiToken, String) {
    let (new_token, secret) = NewToken::mint(user_id.into(), name.into(), expires_at);
    let token = store
        .run(CreateToken(new_token))
        .await
        .expect("the token is stored");
    (token, secret)
}

/// Imports `lines` (JSON objects in the NDJSON format) into `store`.
pub async fn seed(store: &Store, lines: Vec<Value>) -> Result<ObjectCounts, ImportError> {
    let (sender, receiver) = mpsc::channel::<ImportBatch>(1);
    let batch = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let number = i as u64 + 1;
            parse_line(&line.to_string())
                .map(|record| (number, record))
                .map_err(|e| ImportError::from_field(number, e))
        })
        .collect();
    sender.send(batch).await.expect("the channel is open");
    drop(sender);
    Import::outcome(store.run(Import::new(receiver)).await)
}

/// [`TestStore::postgres_plan_of_last`] on a thread that may block.
fn plan_of_last(url: &str, schema: &str, marker: &str) -> String {
    let mut client = postgres_client(url);
    let statement: String = client
        .query_one(
            "SELECT query FROM pg_stat_activity
                  WHERE application_name = $1 AND pid <> pg_backend_pid()
                    AND position($2 in query) > 0
                  ORDER BY query_start DESC LIMIT 1",
            &[&schema, &marker],
        )
        .expect("a statement of the store's")
        .get(0);
    let parameters = (1..=99)
        .take_while(|n| statement.contains(&format!("${n}")))
        .count();
    client
        .batch_execute(&format!(
            "SET plan_cache_mode = force_generic_plan; PREPARE listing AS {statement}"
        ))
        .expect("the statement prepares");
    let nulls = vec!["NULL"; parameters].join(", ");
    client
        .query(&format!("EXPLAIN EXECUTE listing({nulls})"), &[])
        .expect("the plan")
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}
