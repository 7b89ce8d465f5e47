//! Prometheus metrics: their names, the process's recorder, and the few
//! functions the rest of the service calls to record.
//!
//! Recording goes through the `metrics` facade into
//! `metrics-exporter-prometheus` (docs/choices.md says why): a counter is
//! an atomic add and a histogram sample an append to a lock-free bucket;
//! the work of aggregating is done when `/metrics` is scraped, and every
//! few seconds by an upkeep thread so that samples never pile up.
//!
//! The names and labels are listed, with their meaning, in
//! docs/operations.md.

use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use ::metrics::{
    SharedString, Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge,
    histogram,
};
use axum::http::{Method, StatusCode};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::store::PoolUse;

pub const HTTP_REQUESTS: &str = "proxydeck_http_requests_total";
pub const HTTP_DURATION: &str = "proxydeck_http_request_duration_seconds";
pub const STORE_DURATION: &str = "proxydeck_store_query_duration_seconds";
pub const POOL_SIZE: &str = "proxydeck_db_pool_size";
pub const POOL_CONNECTIONS: &str = "proxydeck_db_pool_connections";
pub const POOL_WAITING: &str = "proxydeck_db_pool_waiting";
pub const TOKEN_CACHE_HITS: &str = "proxydeck_token_cache_hits_total";
pub const TOKEN_CACHE_MISSES: &str = "proxydeck_token_cache_misses_total";
pub const RATE_LIMIT_REJECTIONS: &str = "proxydeck_rate_limit_rejections_total";
pub const BUILD_INFO: &str = "proxydeck_build_info";

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

/// The process's recorder, installed on first use. Installing it once for
/// the process, not per server, is what a global facade allows; tests that
/// run several servers in one process share it.
pub fn install() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets(LATENCY_BUCKETS)
            .expect("the latency buckets are not empty")
            .build_recorder();
        let handle = recorder.handle();
        if ::metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed; /metrics will stay empty");
        }
        describe();
        let upkeep = handle.clone();
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
        handle
    })
}

/// Help texts and units, and the metrics that exist from the start (at
/// zero) so that dashboards and alerts see them before the first event.
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
    describe_gauge!(
        BUILD_INFO,
        "Always 1; the labels say which build is running."
    );
    counter!(TOKEN_CACHE_HITS).absolute(0);
    counter!(TOKEN_CACHE_MISSES).absolute(0);
    counter!(RATE_LIMIT_REJECTIONS).absolute(0);
    gauge!(
        BUILD_INFO,
        "version" => env!("CARGO_PKG_VERSION"),
        "profile" => if cfg!(debug_assertions) { "debug" } else { "release" },
    )
    .set(1.0);
}

/// The exposition text: the pools' use is read now, then everything is
/// rendered.
pub fn render(pools: &[PoolUse]) -> String {
    let handle = install();
    for pool in pools {
        let name = pool.pool;
        gauge!(POOL_SIZE, "pool" => name).set(pool.max_size as f64);
        gauge!(POOL_CONNECTIONS, "pool" => name, "state" => "idle").set(pool.idle as f64);
        gauge!(POOL_CONNECTIONS, "pool" => name, "state" => "in_use").set(pool.in_use as f64);
        if let Some(waiting) = pool.waiting {
            gauge!(POOL_WAITING, "pool" => name).set(waiting as f64);
        }
    }
    handle.render()
}

/// One answered request. `route` is the route template (or
/// [`UNMATCHED_ROUTE`]), never the raw path.
pub fn request_answered(route: &SharedString, method: &Method, status: StatusCode, took: Duration) {
    let method = method_label(method);
    counter!(
        HTTP_REQUESTS,
        "route" => route.clone(),
        "method" => method,
        "status" => status_label(status),
    )
    .increment(1);
    histogram!(HTTP_DURATION, "route" => route.clone(), "method" => method)
        .record(took.as_secs_f64());
}

/// A route template as a label value, made once per request and shared by
/// the labels that need it.
pub fn route_label(route: Option<&str>) -> SharedString {
    match route {
        Some(template) => SharedString::from(Arc::<str>::from(template)),
        None => SharedString::const_str(UNMATCHED_ROUTE),
    }
}

/// A store operation (a method of [`crate::store::Store`]) that took `took`.
pub fn store_operation(operation: &'static str, took: Duration) {
    histogram!(STORE_DURATION, "operation" => operation).record(took.as_secs_f64());
}

pub fn token_cache_hit() {
    counter!(TOKEN_CACHE_HITS).increment(1);
}

pub fn token_cache_miss() {
    counter!(TOKEN_CACHE_MISSES).increment(1);
}

/// A request refused by the per-token rate limit: the limiter calls this
/// for each 429 it answers.
pub fn rate_limit_rejected() {
    counter!(RATE_LIMIT_REJECTIONS).increment(1);
}

/// Standard methods by name; any other (clients may send any token) as one
/// value, so that the label stays bounded.
fn method_label(method: &Method) -> &'static str {
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

/// The three digits of a status, without an allocation per request.
fn status_label(status: StatusCode) -> &'static str {
    // Every status code is 100 to 999: "100101102...999".
    static DIGITS: LazyLock<String> =
        LazyLock::new(|| (100..1000).map(|c| c.to_string()).collect());
    let at = (usize::from(status.as_u16()) - 100) * 3;
    &DIGITS[at..at + 3]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_bounded_and_exact() {
        for code in [100, 200, 304, 404, 503, 599, 999] {
            let status = StatusCode::from_u16(code).unwrap();
            assert_eq!(status_label(status), code.to_string());
        }
        assert_eq!(method_label(&Method::HEAD), "HEAD");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
        assert_eq!(&*route_label(None), UNMATCHED_ROUTE);
        assert_eq!(&*route_label(Some("/v1/projects")), "/v1/projects");
    }
}
