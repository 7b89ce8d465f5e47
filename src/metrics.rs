//! Prometheus metrics: their names, the process's recorder, and the few
//! functions the rest of the service calls to record.
//!
//! Recording goes through the `metrics` facade into
//! `metrics-exporter-prometheus` (docs/choices.md says why): a counter is
//! an atomic add and a histogram sample an append to a lock-free bucket;
//! the work of aggregating is done when `/metrics` is scraped, and every
//! few seconds by an upkeep thread so that samples never pile up.
//!
//! The handles a request records into are looked up once per thread and
//! label set, then kept: the facade's own look-up builds a key (an
//! allocation) and read-locks a shard of a registry that every thread
//! shares, which a request need not pay each time.
//!
//! The names and labels are listed, with their meaning, in
//! docs/operations.md.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use ::metrics::{
    Counter, Histogram, Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge,
    histogram,
};
use axum::http::{Method, StatusCode};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

pub const HTTP_REQUESTS: &str = "proxydeck_http_requests_total";
pub const HTTP_DURATION: &str = "proxydeck_http_request_duration_seconds";
pub const STORE_DURATION: &str = "proxydeck_store_query_duration_seconds";
pub const POOL_SIZE: &str = "proxydeck_db_pool_size";
pub const POOL_CONNECTIONS: &str = "proxydeck_db_pool_connections";
pub const POOL_WAITING: &str = "proxydeck_db_pool_waiting";
pub const TOKEN_CACHE_HITS: &str = "proxydeck_token_cache_hits_total";
pub const TOKEN_CACHE_MISSES: &str = "proxydeck_token_cache_misses_total";
pub const RATE_LIMIT_REJECTIONS: &str = "proxydeck_rate_limit_rejections_total";
pub const TOKEN_MISSES_REMEMBERED: &str = "proxydeck_token_misses_remembered_total";
pub const AUTH_FAILURE_REJECTIONS: &str = "proxydeck_auth_failure_rejections_total";
pub const PAGE_BODIES: &str = "proxydeck_db_page_bodies_total";
pub const SHARED_READS: &str = "proxydeck_db_shared_reads_total";
pub const SQLITE_VM_STEPS: &str = "proxydeck_sqlite_vm_steps_total";
pub const HTTP_CONNECTIONS: &str = "proxydeck_http_connections";
pub const HTTP_CONNECTIONS_LIMIT: &str = "proxydeck_http_connections_limit";
pub const HTTP_CONNECTION_LIMIT_REACHED: &str = "proxydeck_http_connection_limit_reached_total";
pub const BUILD_INFO: &str = "proxydeck_build_info";
pub const REPLICA_LAG: &str = "proxydeck_db_replica_lag_seconds";
pub const REPLICA_USABLE: &str = "proxydeck_db_replica_usable";
pub const READS_SERVED: &str = "proxydeck_db_reads_total";
pub const REGEXES_COMPILED: &str = "proxydeck_regexes_compiled_total";
pub const CHECKS_GIVEN_UP: &str = "proxydeck_checks_given_up_total";
const WRITES_PAST_DEADLINE: &str = "proxydeck_db_writes_past_deadline_total";
pub const DOMAIN_CHECKS: &str = "proxydeck_domain_checks_total";

/// The `route` label of a request no route matched: one value, whatever
/// the path (raw paths would make a series per path anyone cares to send).
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// Upper bounds of the latency buckets, in seconds: a page answers in well
/// under a millisecond when all is well, a store that does not answer
/// takes `--db-timeout` (2 s) to fail.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// How often samples are folded into the histograms when nobody scrapes.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The process's recorder, and the handles that are the same on every
/// thread.
struct Recorder {
    prometheus: PrometheusHandle,
    /// The `process_*` metrics, read from the system at each scrape.
    process: metrics_process::Collector,
    token_cache_hits: Counter,
    token_cache_misses: Counter,
    rate_limit_rejections: Counter,
    token_misses_remembered: Counter,
    auth_failure_rejections: Counter,
    page_bodies_from_memory: Counter,
    page_bodies_from_database: Counter,
    sqlite_vm_steps: Counter,
    regexes_compiled: Counter,
    checks_given_up: Counter,
}

/// Installs the process's recorder, if it is not yet. Recording installs
/// it too, so that nothing is ever recorded into the void; servers call
/// this first so that `/metrics` lists every metric from the start.
pub fn install() {
    recorder();
}

/// Installed once for the process, not per server, as a global facade
/// allows: tests that run several servers in one process share it.
fn recorder() -> &'static Recorder {
    static RECORDER: OnceLock<Recorder> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets(LATENCY_BUCKETS)
            .expect("the latency buckets are not empty")
            .build_recorder();
        let prometheus = recorder.handle();
        if ::metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed; /metrics will stay empty");
        }
        describe();
        let process = metrics_process::Collector::default();
        process.describe();
        let upkeep = prometheus.clone();
        let spawned = std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(UPKEEP_INTERVAL);
                    upkeep.run_upkeep();
                }
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start the metrics upkeep thread");
        }
        // Registered now, at zero, so that dashboards and alerts see them
        // before the first event.
        Recorder {
            prometheus,
            process,
            token_cache_hits: counter!(TOKEN_CACHE_HITS),
            token_cache_misses: counter!(TOKEN_CACHE_MISSES),
            rate_limit_rejections: counter!(RATE_LIMIT_REJECTIONS),
            token_misses_remembered: counter!(TOKEN_MISSES_REMEMBERED),
            auth_failure_rejections: counter!(AUTH_FAILURE_REJECTIONS),
            page_bodies_from_memory: counter!(PAGE_BODIES, "from" => "memory"),
            page_bodies_from_database: counter!(PAGE_BODIES, "from" => "database"),
            sqlite_vm_steps: counter!(SQLITE_VM_STEPS),
            regexes_compiled: counter!(REGEXES_COMPILED),
            checks_given_up: counter!(CHECKS_GIVEN_UP),
        }
    })
}

/// Help texts and units, and the build's labels.
fn describe() {
    describe_counter!(
        HTTP_REQUESTS,
        "Requests answered, by route template, method and status."
    );
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "Time from the request's arrival to its answer, by route template and method."
    );
    describe_histogram!(
        STORE_DURATION,
        Unit::Seconds,
        "Time a store operation took, retries and waiting for a connection included, by operation."
    );
    describe_gauge!(
        POOL_SIZE,
        "Most connections a pool of the store keeps, by pool."
    );
    describe_gauge!(
        POOL_CONNECTIONS,
        "Connections of a pool of the store, by pool and state (idle, in_use)."
    );
    describe_gauge!(
        POOL_WAITING,
        "Requests waiting for a connection of a pool of the store (PostgreSQL's exclusive pool)."
    );
    describe_counter!(
        WRITES_PAST_DEADLINE,
        "Writes rolled back because they had not committed by their deadline (--db-timeout, or the request's): each was answered 503 and changed nothing."
    );
    describe_counter!(
        TOKEN_CACHE_HITS,
        "Authentications answered from the token cache."
    );
    describe_counter!(
        TOKEN_CACHE_MISSES,
        "Authentications that looked the token up in the store."
    );
    describe_counter!(
        RATE_LIMIT_REJECTIONS,
        "Requests refused with 429 by the per-token rate limit."
    );
    describe_counter!(
        TOKEN_MISSES_REMEMBERED,
        "Authentications refused without a store look-up: the token was unknown a moment ago."
    );
    describe_counter!(
        AUTH_FAILURE_REJECTIONS,
        "Requests refused with 429 before a token look-up: their address failed to authenticate too often."
    );
    describe_counter!(
        PAGE_BODIES,
        "Project bodies of pages read with a page memory, by where they came from (memory, database)."
    );
    describe_counter!(
        SQLITE_VM_STEPS,
        "Steps of SQLite's virtual machine run by the embedded store's statements: the work requests make it do, index entries and rows read included (0 on PostgreSQL)."
    );
    describe_counter!(
        SHARED_READS,
        "Listing reads answered by a statement another identical read, asked for at the same time, sent; by operation."
    );
    describe_gauge!(
        HTTP_CONNECTIONS,
        "Client connections open now, by listener (api, admin)."
    );
    describe_gauge!(
        HTTP_CONNECTIONS_LIMIT,
        "Most client connections open at once (--max-connections), by listener."
    );
    describe_counter!(
        HTTP_CONNECTION_LIMIT_REACHED,
        "Times a listener reached its connection limit and stopped accepting until a connection closed."
    );
    describe_gauge!(
        REPLICA_LAG,
        "How far each read replica was behind the primary at its last check (seconds; absent while it does not answer)."
    );
    describe_gauge!(
        REPLICA_USABLE,
        "1 when a read replica answered its last check within --replica-max-lag and is read from, 0 otherwise."
    );
    describe_counter!(
        READS_SERVED,
        "With read replicas: reads a replica answered (server=replica), and reads that could have gone to one that the primary answered (server=primary: none was current enough, none answers, or the one chosen failed the read)."
    );
    describe_counter!(
        DOMAIN_CHECKS,
        "Custom domains' DNS checks made (in the background and on request), by what each found (result: found, absent, mismatch, lookup_failed)."
    );
    describe_counter!(
        REGEXES_COMPILED,
        "Regexes compiled to check a request's body or a revision being activated (identical patterns of one request count once)."
    );
    describe_counter!(
        CHECKS_GIVEN_UP,
        "Checks of a request's regexes stopped before their end: the caller closed the connection or the request timed out."
    );
    describe_gauge!(
        BUILD_INFO,
        "Always 1; the labels say which build is running."
    );
    gauge!(
        BUILD_INFO,
        "version" => env!("CARGO_PKG_VERSION"),
        "commit" => crate::BUILD_COMMIT,
        "profile" => if cfg!(debug_assertions) { "debug" } else { "release" },
    )
    .set(1.0);
}

/// How one pool of store connections is used at a moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolUse {
    /// Which pool: `reader` or `writer` on SQLite; `shared` or `exclusive`
    /// on PostgreSQL.
    pub pool: &'static str,
    /// The read replica whose pool it is (its `host:port` or socket);
    /// `None` for the primary's (and SQLite's).
    pub replica: Option<String>,
    /// Most connections the pool keeps.
    pub max_size: usize,
    pub idle: usize,
    pub in_use: usize,
    /// Requests waiting for a connection, when the pool can tell.
    pub waiting: Option<usize>,
}

/// A read replica as its last check found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaUse {
    /// Its `host:port` (or socket).
    pub replica: String,
    /// How far behind the primary; `None` when it did not answer.
    pub lag: Option<Duration>,
    /// Whether it is read from.
    pub usable: bool,
}

/// The exposition text: the pools' use and the process's figures are read
/// now, then everything is rendered.
pub fn render(pools: &[PoolUse], replicas: &[ReplicaUse]) -> String {
    let recorder = recorder();
    recorder.process.collect();
    let prometheus = &recorder.prometheus;
    for pool in pools {
        // A replica's pools carry its name; the primary's have no
        // `replica` label, as before replicas were read from.
        let mut labels = vec![::metrics::Label::new("pool", pool.pool)];
        if let Some(replica) = &pool.replica {
            labels.push(::metrics::Label::new("replica", replica.clone()));
        }
        let with_state = |state: &'static str| {
            let mut labels = labels.clone();
            labels.push(::metrics::Label::new("state", state));
            labels
        };
        gauge!(POOL_SIZE, labels.clone()).set(pool.max_size as f64);
        gauge!(POOL_CONNECTIONS, with_state("idle")).set(pool.idle as f64);
        gauge!(POOL_CONNECTIONS, with_state("in_use")).set(pool.in_use as f64);
        if let Some(waiting) = pool.waiting {
            gauge!(POOL_WAITING, labels).set(waiting as f64);
        }
    }
    for replica in replicas {
        let name = replica.replica.clone();
        if let Some(lag) = replica.lag {
            gauge!(REPLICA_LAG, "replica" => name.clone()).set(lag.as_secs_f64());
        }
        let usable = if replica.usable { 1.0 } else { 0.0 };
        gauge!(REPLICA_USABLE, "replica" => name).set(usable);
    }
    prometheus.render()
}

/// What a request's route, method and status record into.
struct RequestHandles {
    method: &'static str,
    status: StatusCode,
    requests: Counter,
    latency: Histogram,
}

/// One answered request. `route` is the route template, `None` when no
/// route matched: never the raw path.
pub fn request_answered(route: Option<&str>, method: &Method, status: StatusCode, took: Duration) {
    // This thread's handles by route; the lists stay short, since methods
    // and statuses are few.
    thread_local! {
        static HANDLES: RefCell<HashMap<String, Vec<RequestHandles>>> = RefCell::new(HashMap::new());
    }
    let route = route.unwrap_or(UNMATCHED_ROUTE);
    let method = method_label(method);
    let record = |handles: &RequestHandles| {
        handles.requests.increment(1);
        handles.latency.record(took.as_secs_f64());
    };
    HANDLES.with_borrow_mut(|by_route| {
        let known = by_route.get(route).and_then(|list| {
            list.iter()
                .find(|h| h.method == method && h.status == status)
        });
        if let Some(handles) = known {
            return record(handles);
        }
        recorder();
        let handles = RequestHandles {
            method,
            status,
            requests: counter!(
                HTTP_REQUESTS,
                "route" => route.to_owned(),
                "method" => method,
                "status" => status.as_str().to_owned(),
            ),
            latency: histogram!(HTTP_DURATION, "route" => route.to_owned(), "method" => method),
        };
        record(&handles);
        by_route.entry(route.to_owned()).or_default().push(handles);
    });
}

/// A store operation (a method of [`crate::store::Store`]) that took `took`.
pub fn store_operation(operation: &'static str, took: Duration) {
    thread_local! {
        static HANDLES: RefCell<Vec<(&'static str, Histogram)>> = const { RefCell::new(Vec::new()) };
    }
    HANDLES.with_borrow_mut(|handles| {
        let at = match handles.iter().position(|(known, _)| *known == operation) {
            Some(at) => at,
            None => {
                recorder();
                let latency = histogram!(STORE_DURATION, "operation" => operation);
                handles.push((operation, latency));
                handles.len() - 1
            }
        };
        handles[at].1.record(took.as_secs_f64());
    });
}

pub fn token_cache_hit() {
    recorder().token_cache_hits.increment(1);
}

pub fn token_cache_miss() {
    recorder().token_cache_misses.increment(1);
}

/// A page of projects read with the page memory: how many of its bodies
/// were remembered and how many PostgreSQL sent.
/// Counts the virtual-machine steps a SQLite statement ran.
pub fn sqlite_vm_steps(steps: u64) {
    recorder().sqlite_vm_steps.increment(steps);
}

pub fn page_bodies(from_memory: u64, from_database: u64) {
    let recorder = recorder();
    recorder.page_bodies_from_memory.increment(from_memory);
    recorder.page_bodies_from_database.increment(from_database);
}

/// The count of `operation`'s reads answered by a statement another read
/// sent (an identical read asked for at the same time), shown from now on.
pub fn shared_reads(operation: &'static str) -> Counter {
    recorder();
    counter!(SHARED_READS, "operation" => operation)
}

/// A read that could go to a replica was answered by one, or by the
/// primary.
pub fn read_served(by_replica: bool) {
    recorder();
    let server = if by_replica { "replica" } else { "primary" };
    counter!(READS_SERVED, "server" => server).increment(1);
}

/// A write rolled back at its deadline (`store/engine/deadline.rs`).
/// A custom domain's DNS check and what it found (`domain_checks`).
pub fn domain_checked(result: &'static str) {
    recorder();
    counter!(DOMAIN_CHECKS, "result" => result).increment(1);
}

pub fn write_past_deadline() {
    recorder();
    counter!(WRITES_PAST_DEADLINE).increment(1);
}

/// A request refused by the per-token rate limit: the limiter calls this
/// for each 429 it answers.
pub fn rate_limit_rejected() {
    recorder().rate_limit_rejections.increment(1);
}

/// A regex compiled by a request's checks (`domain::regexes`).
pub fn regex_compiled() {
    recorder().regexes_compiled.increment(1);
}

/// A request's checks stopped because nobody waits for them any more.
pub fn check_given_up() {
    recorder().checks_given_up.increment(1);
}

pub fn token_miss_remembered() {
    recorder().token_misses_remembered.increment(1);
}

pub fn auth_failure_rejected() {
    recorder().auth_failure_rejections.increment(1);
}

/// The connection counts of one listener (`api` or `admin`), registered
/// at zero when it starts serving with a limit of `limit`.
pub struct ConnectionGauges {
    open: ::metrics::Gauge,
    limit_reached: Counter,
}

impl ConnectionGauges {
    pub fn new(listener: &'static str, limit: usize) -> Self {
        recorder();
        gauge!(HTTP_CONNECTIONS_LIMIT, "listener" => listener).set(limit as f64);
        Self {
            open: gauge!(HTTP_CONNECTIONS, "listener" => listener),
            limit_reached: counter!(HTTP_CONNECTION_LIMIT_REACHED, "listener" => listener),
        }
    }

    pub fn opened(&self) {
        self.open.increment(1.0);
    }

    pub fn closed(&self) {
        self.open.decrement(1.0);
    }

    /// The listener stopped accepting at its limit: once per episode, until
    /// it accepts again without waiting.
    pub fn limit_reached(&self) {
        self.limit_reached.increment(1);
    }
}

/// Standard methods by name; any other (clients may send any token) as one
/// value, so that the label stays bounded. The request log shows the same:
/// any other method is a value the client chose.
pub(crate) fn method_label(method: &Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "PATCH" => "PATCH",
        "OPTIONS" => "OPTIONS",
        "CONNECT" => "CONNECT",
        "TRACE" => "TRACE",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_labels_are_bounded() {
        assert_eq!(method_label(&Method::HEAD), "HEAD");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
    }
}
