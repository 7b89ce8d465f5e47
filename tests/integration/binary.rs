//! Running the real `proxydeck` binary: as a child process to its end
//! (`finish`), in a temporary folder on its own SQLite file (`Sandbox`),
//! or as a `serve`/`demo` server answering over loopback HTTP (`Server`),
//! killed when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, mpsc};

use std::time::{Duration, Instant};
use tokio::sync::watch;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::helpers::*;

/// Longest any one command may run before the test gives up on it.
pub(crate) const COMMAND_DEADLINE: Duration = Duration::from_secs(20);
/// Longest a server may take to accept connections.
pub(crate) const START_DEADLINE: Duration = Duration::from_secs(10);

// ----- Running the binary -----

/// What a finished command left behind.
#[derive(Debug)]
pub(crate) struct Out {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Out {
    /// Asserts success and answers the single JSON document on stdout.
    #[track_caller]
    pub(crate) fn json(&self) -> Value {
        assert!(self.status.success(), "the command failed: {self:#?}");
        one_json_document(&self.stdout)
    }

    /// Asserts failure with exactly one line on stderr, starting with
    /// `error:` and holding every one of `needles`; answers that line.
    #[track_caller]
    pub(crate) fn error(&self, needles: &[&str]) -> String {
        assert!(!self.status.success(), "the command succeeded: {self:#?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "not exactly one line on stderr: {self:#?}");
        let line = lines[0];
        assert!(line.starts_with("error:"), "{line}");
        for needle in needles {
            assert!(line.contains(needle), "{line:?} does not hold {needle:?}");
        }
        assert!(
            self.stdout.trim().is_empty(),
            "a failed command printed a result: {self:#?}"
        );
        line.to_owned()
    }

    /// Like [`Out::error`] for `serve` and `demo`, which log to stderr at
    /// `info` from the start: the one error line comes last, after log
    /// lines only.
    #[track_caller]
    pub(crate) fn error_after_logs(&self, needles: &[&str]) -> String {
        assert!(!self.status.success(), "the command succeeded: {self:#?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        let (last, logs) = lines.split_last().expect("something on stderr");
        for log in logs {
            let is_log = log.starts_with(|c: char| c.is_ascii_digit())
                && [" INFO ", " WARN ", " DEBUG "]
                    .iter()
                    .any(|level| log.contains(level));
            assert!(
                is_log,
                "a line that is neither a log nor the error: {self:#?}"
            );
        }
        let error = Self {
            status: self.status,
            stdout: self.stdout.clone(),
            stderr: format!("{last}\n"),
        };
        error.error(needles)
    }
}

/// Exactly one JSON document, whitespace aside.
#[track_caller]
pub(crate) fn one_json_document(text: &str) -> Value {
    let mut documents = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let first = documents
        .next()
        .unwrap_or_else(|| panic!("no JSON document on stdout: {text:?}"))
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {text:?}"));
    assert!(
        documents.next().is_none(),
        "more than one JSON document on stdout: {text:?}"
    );
    first
}

/// The binary, run in `cwd`, with none of our own environment that could
/// change what it does; its configuration folder (where `proxydeck login`
/// keeps profiles) is `cwd/.config`, not the user's.
pub(crate) fn proxydeck(cwd: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_proxydeck"));
    command.current_dir(cwd);
    without_our_environment(&mut command);
    command.env("XDG_CONFIG_HOME", cwd.join(".config"));
    command
}

/// Takes from `command`'s environment what would change what the binary
/// does: every `PROXYDECK_` variable, proxies, `RUST_LOG`, `NO_COLOR`
/// and `COLUMNS`.
pub(crate) fn without_our_environment(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PROXYDECK_") {
            command.env_remove(&key);
        }
    }
    // Loopback needs no proxy.
    for proxy in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        command.env_remove(proxy);
    }
    command
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS");
}

/// The commit the binary says it was built from (`--version`, the metrics'
/// `proxydeck_build_info`), as this checkout tells it: what
/// `PROXYDECK_BUILD_COMMIT` gave the build, else `git rev-parse
/// --short=12 HEAD`, else `unknown` (not a git checkout). The binary adds
/// `-dirty` when tracked files had changes: see [`commit_of_build`].
pub(crate) fn checkout_commit() -> String {
    if let Some(given) = option_env!("PROXYDECK_BUILD_COMMIT").filter(|c| !c.trim().is_empty()) {
        return given.trim().to_owned();
    }
    let output = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match output {
        Ok(output) if output.status.success() => {
            String::from_utf8(output.stdout).unwrap().trim().to_owned()
        }
        _ => "unknown".to_owned(),
    }
}

/// A commit as the binary shows it, without the `-dirty` mark.
pub(crate) fn commit_of_build(shown: &str) -> &str {
    shown.strip_suffix("-dirty").unwrap_or(shown)
}

/// Runs `command` to its end (at most [`COMMAND_DEADLINE`]), feeding it
/// `stdin`, and collects what it printed. A command may stop reading its
/// input early (an import that fails on line N of a big input): the rest
/// of `stdin` is then dropped.
#[track_caller]
pub(crate) fn finish(mut command: Command, stdin: Option<&str>) -> Out {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the binary starts");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("a stdin pipe");
        if let Err(error) = pipe.write_all(input.as_bytes()) {
            assert_eq!(
                error.kind(),
                std::io::ErrorKind::BrokenPipe,
                "stdin takes the input"
            );
        }
    }
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("a stdout pipe")));
    let stderr = drain(Box::new(child.stderr.take().expect("a stderr pipe")));
    let exit = Exit::of(child);
    let Some(status) = exit.within(COMMAND_DEADLINE) else {
        exit.kill();
        panic!(
            "{command:?} still ran after {COMMAND_DEADLINE:?}; stderr: {}",
            stderr.join().unwrap_or_default()
        );
    };
    Out {
        status,
        stdout: stdout.join().expect("stdout is read"),
        stderr: stderr.join().expect("stderr is read"),
    }
}

/// A temporary folder, and the database its commands run on: the SQLite
/// file `x.db` in it, or a PostgreSQL schema of its own.
pub(crate) struct Sandbox {
    pub(crate) dir: TempDir,
    /// The schema the commands use instead of `x.db`; dropped with it.
    postgres: Option<Schema>,
}

impl Sandbox {
    /// A sandbox on its SQLite file.
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary folder"),
            postgres: None,
        }
    }

    /// A sandbox on `backend`: its SQLite file, or a new schema of the test
    /// PostgreSQL (the caller has checked it is there with `require!`).
    pub(crate) fn on(backend: Backend) -> Self {
        let mut sandbox = Self::new();
        if let Backend::Postgres = backend {
            let base = postgres_base_url().expect("PostgreSQL");
            sandbox.postgres = Some(Schema::create(base));
        }
        sandbox
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn db_path(&self) -> PathBuf {
        self.path().join("x.db")
    }

    pub(crate) fn db_url(&self) -> String {
        match &self.postgres {
            Some(schema) => schema.url(),
            None => format!("sqlite://{}", self.db_path().display()),
        }
    }

    /// The command line's arguments for this folder's database.
    pub(crate) fn database_args(&self) -> Vec<String> {
        match &self.postgres {
            Some(schema) => schema.database_args(),
            None => vec!["--database".to_owned(), self.db_url()],
        }
    }

    /// The binary in this folder, on this folder's database.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = proxydeck(self.path());
        command.args(args).args(self.database_args());
        command
    }

    #[track_caller]
    pub(crate) fn run(&self, args: &[&str]) -> Out {
        finish(self.command(args), None)
    }

    #[track_caller]
    pub(crate) fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Out {
        finish(self.command(args), Some(stdin))
    }

    /// Runs `args --json`, asserts success and answers the document.
    #[track_caller]
    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let mut with_json = args.to_vec();
        with_json.push("--json");
        self.run(&with_json).json()
    }

    /// Writes `lines` as an NDJSON file in this folder; answers its path.
    pub(crate) fn ndjson(&self, name: &str, lines: &[String]) -> String {
        let path = self.path().join(name);
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text).expect("the file is written");
        path.display().to_string()
    }

    /// `admin import` of `lines`, asserting success; answers the counts.
    #[track_caller]
    pub(crate) fn import(&self, lines: &[Value]) -> Value {
        let lines: Vec<String> = lines.iter().map(Value::to_string).collect();
        let file = self.ndjson("import.ndjson", &lines);
        self.json(&["admin", "import", &file])
    }

    /// An organization, a user in it and a token of that user, all made
    /// through the command line; answers the user id and the secret.
    #[track_caller]
    pub(crate) fn directory(&self, org: u32, user_id: &str) -> String {
        let organization = org_id(org);
        self.json(&[
            "admin",
            "org",
            "create",
            "--name",
            &format!("Org {org}"),
            "--id",
            &organization,
        ]);
        self.json(&[
            "admin",
            "user",
            "create",
            "--email",
            &format!("{user_id}@example.com"),
            "--org",
            &organization,
            "--id",
            user_id,
        ]);
        self.token(user_id, "cli")
    }

    /// A new token of `user_id` through the command line; answers the secret.
    #[track_caller]
    pub(crate) fn token(&self, user_id: &str, name: &str) -> String {
        let token = self.json(&[
            "admin", "token", "create", "--user", user_id, "--name", name,
        ]);
        token["token"].as_str().expect("a secret").to_owned()
    }

    /// `proxydeck serve` on this sandbox's database, its token cache
    /// trusting a token for 200 ms unless `extra` sets `--token-cache-ttl`.
    pub(crate) fn serve(&self, extra: &[&str]) -> Server {
        Server::start(|listen| {
            let mut args = vec!["serve", "--listen", listen];
            if !extra.contains(&"--token-cache-ttl") {
                args.extend(["--token-cache-ttl", "200ms"]);
            }
            args.extend_from_slice(extra);
            self.command(&args)
        })
    }
}

/// A port that was free a moment ago.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("an address")
        .port()
}

pub(crate) fn accepts(port: u16) -> bool {
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&address, Duration::from_millis(100)).is_ok()
}

/// A child process's end as an event: a thread of its own waits for it,
/// so that a test waits for the exit (within a deadline) rather than
/// polling. The process is killed when this is dropped, if still running.
pub(crate) struct Exit {
    pid: u32,
    ended: Arc<Ended>,
}

/// The exit status, set by the waiting thread.
#[derive(Default)]
struct Ended {
    status: Mutex<Option<ExitStatus>>,
    changed: Condvar,
}

impl Ended {
    fn within(&self, limit: Duration) -> Option<ExitStatus> {
        let status = self.status.lock().unwrap();
        let (status, _) = self
            .changed
            .wait_timeout_while(status, limit, |status| status.is_none())
            .unwrap();
        *status
    }
}

impl Exit {
    pub(crate) fn of(mut child: Child) -> Self {
        let pid = child.id();
        let ended = Arc::new(Ended::default());
        let report = ended.clone();
        std::thread::spawn(move || {
            let status = child.wait().expect("the child can be waited on");
            *report.status.lock().unwrap() = Some(status);
            report.changed.notify_all();
        });
        Self { pid, ended }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The exit status, once the process has ended; `None` when it has
    /// not within `limit`.
    pub(crate) fn within(&self, limit: Duration) -> Option<ExitStatus> {
        self.ended.within(limit)
    }

    /// [`Exit::within`], without holding up the runtime's thread.
    pub(crate) async fn within_async(&self, limit: Duration) -> Option<ExitStatus> {
        let ended = self.ended.clone();
        tokio::task::spawn_blocking(move || ended.within(limit))
            .await
            .expect("the wait ends")
    }

    /// Kills the process unless it has ended, and waits for its end.
    pub(crate) fn kill(&self) {
        if self.within(Duration::ZERO).is_none() {
            let _ = Command::new("kill")
                .args(["-KILL", &self.pid.to_string()])
                .status();
            self.within(COMMAND_DEADLINE);
        }
    }
}

impl Drop for Exit {
    fn drop(&mut self) {
        self.kill();
    }
}

// ----- A server child process -----

/// A running `serve` or `demo` process, listening where it said in its
/// `serving` log line; killed when dropped.
pub(crate) struct Server {
    exit: Exit,
    pub(crate) address: SocketAddr,
    pub(crate) base: String,
    pub(crate) client: reqwest::Client,
    /// Its stdout, line by line as printed.
    stdout_lines: mpsc::Receiver<String>,
    stdout: watch::Receiver<String>,
    /// Its stderr (its log) so far.
    stderr: watch::Receiver<String>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

/// Reads `pipe` line by line on a thread of its own into `text`, handing
/// each line to `each` too.
fn follow(
    pipe: impl Read + Send + 'static,
    text: watch::Sender<String>,
    mut each: impl FnMut(&str) + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            each(&line);
            text.send_modify(|text| {
                text.push_str(&line);
                text.push('\n');
            });
        }
    })
}

impl Server {
    /// Starts the command `make(listen)` builds, `listen` being the address
    /// to give it (port 0: the system picks a free one), and waits for the
    /// `serving` line that tells the address. The signal handlers exist
    /// before that line is written.
    #[track_caller]
    pub(crate) fn start(make: impl FnOnce(&str) -> Command) -> Self {
        // Built before the child starts: nothing after the spawn may panic
        // before the child is owned by a guard that kills it.
        let client = crate::helpers::client_builder()
            .build()
            .expect("an HTTP client");
        let mut command = make("127.0.0.1:0");
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("the server starts");
        let (address_found, address) = mpsc::channel::<SocketAddr>();
        let (stderr_text, stderr) = watch::channel(String::new());
        let (stdout_text, stdout) = watch::channel(String::new());
        let (line_sender, stdout_lines) = mpsc::channel();
        let readers = vec![
            follow(child.stderr.take().unwrap(), stderr_text, move |line| {
                if let Some(address) = serving_address(line) {
                    let _ = address_found.send(address);
                }
            }),
            follow(child.stdout.take().unwrap(), stdout_text, move |line| {
                let _ = line_sender.send(line.to_owned());
            }),
        ];
        let exit = Exit::of(child);
        // Ends with the line, or when stderr closes (the process ended).
        let Ok(address) = address.recv_timeout(START_DEADLINE) else {
            exit.kill();
            panic!(
                "{command:?} did not say where it serves within {START_DEADLINE:?}: {}",
                stderr.borrow().as_str()
            );
        };
        Self {
            exit,
            address,
            base: format!("http://{address}"),
            client,
            stdout_lines,
            stdout,
            stderr,
            readers,
        }
    }

    /// Its log (stderr) so far.
    pub(crate) fn log(&self) -> String {
        self.stderr.borrow().clone()
    }

    /// Its log as soon as `done` holds of it, or as it is after
    /// [`START_DEADLINE`]: a server's lines are written by a thread of its
    /// own, a moment after the response they tell of.
    pub(crate) async fn log_once(&self, done: impl Fn(&str) -> bool) -> String {
        let mut log = self.stderr.clone();
        let _ = tokio::time::timeout(START_DEADLINE, log.wait_for(|text| done(text))).await;
        self.log()
    }

    /// The next line the process printed on stdout.
    #[track_caller]
    pub(crate) fn stdout_line(&self) -> String {
        self.stdout_lines
            .recv_timeout(START_DEADLINE)
            .expect("a line on stdout")
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(crate) fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.exit.pid().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} failed");
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.exit.pid()
    }

    /// Waits for the exit; `None` when it did not come within `limit`.
    pub(crate) async fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        self.exit.within_async(limit).await
    }

    /// Signals, then checks a clean exit within a few seconds; answers how
    /// long it took, the exit status, and all of stdout and stderr.
    pub(crate) async fn stop_with(
        &mut self,
        signal: &str,
    ) -> (Duration, ExitStatus, String, String) {
        let started = Instant::now();
        self.signal(signal);
        let status = self.wait_exit(Duration::from_secs(5)).await;
        let took = started.elapsed();
        let Some(status) = status else {
            panic!(
                "the binary still runs 5s after SIG{signal}; stderr:\n{}",
                self.log()
            );
        };
        for reader in self.readers.drain(..) {
            reader.join().expect("the output reader ends");
        }
        let stdout = self.stdout.borrow().clone();
        (took, status, stdout, self.log())
    }

    pub(crate) async fn get_raw(&self, path: &str, token: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .expect("the request is answered")
    }

    /// GET: the status and the body, checked to be JSON.
    pub(crate) async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        json_of(self.get_raw(path, token).await).await
    }

    /// GET answering 200: the body's exact text.
    pub(crate) async fn text(&self, path: &str, token: &str) -> String {
        let response = self.get_raw(path, token).await;
        let status = response.status();
        let body = response.text().await.expect("a body");
        assert_eq!(status, 200, "{path}: {body}");
        body
    }

    /// Every project the token sees, oldest first, as listed.
    pub(crate) async fn projects(&self, token: &str) -> Vec<Value> {
        let mut all = Vec::new();
        let mut path = "/v1/projects?limit=100&order_direction=ASC".to_owned();
        loop {
            let (status, body) = self.get(&path, token).await;
            assert_eq!(status, 200, "{body}");
            all.extend(body["data"].as_array().expect("data").iter().cloned());
            if body["has_more"] != json!(true) {
                return all;
            }
            let last = body["last_key"].as_str().expect("last_key");
            path = format!("/v1/projects?limit=100&order_direction=ASC&start_key={last}");
        }
    }

    /// The proxy settings revisions of a project, by revision.
    pub(crate) async fn revisions(&self, project_id: &str, token: &str) -> Vec<Value> {
        let path =
            format!("/v1/projects/{project_id}/proxy-settings?limit=100&order_direction=ASC");
        let (status, body) = self.get(&path, token).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["has_more"], json!(false), "{body}");
        body["data"].as_array().expect("data").clone()
    }

    /// The value of a counter or gauge (`series`, with its labels if any)
    /// in the server's own `/metrics`; 0 when it has no sample yet.
    pub(crate) async fn metric(&self, series: &str) -> f64 {
        let response = self
            .client
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .expect("/metrics answers");
        assert_eq!(response.status(), 200);
        let text = response.text().await.expect("the metrics text");
        sample(&text, series).unwrap_or(0.0)
    }

    /// The caller's tokens, as listed.
    pub(crate) async fn tokens(&self, token: &str) -> Vec<Value> {
        let (status, body) = self.get("/v1/api_tokens?limit=100", token).await;
        assert_eq!(status, 200, "{body}");
        body["data"].as_array().expect("data").clone()
    }
}

/// The address in the `serving` log line, text or JSON.
fn serving_address(line: &str) -> Option<SocketAddr> {
    if !line.contains("serving") {
        return None;
    }
    if let Ok(object) = serde_json::from_str::<Value>(line) {
        return object["address"].as_str()?.parse().ok();
    }
    let at = line.find("address=")?;
    line[at + "address=".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

// ----- The store on disk -----

/// Every row of every table of the SQLite file, as text, sorted: equal
/// dumps mean nothing was written.
pub(crate) fn dump(path: &Path) -> Vec<String> {
    let connection = rusqlite::Connection::open(path).expect("the file opens");
    let tables: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!tables.is_empty(), "no tables in {}", path.display());
    let mut rows = Vec::new();
    for table in tables {
        let mut statement = connection
            .prepare(&format!("SELECT * FROM \"{table}\""))
            .unwrap();
        let columns = statement.column_count();
        let mut result = statement.query([]).unwrap();
        while let Some(row) = result.next().unwrap() {
            let values: Vec<String> = (0..columns)
                .map(|i| format!("{:?}", row.get_ref(i).unwrap()))
                .collect();
            rows.push(format!("{table}: {}", values.join(" | ")));
        }
    }
    rows.sort();
    rows
}
