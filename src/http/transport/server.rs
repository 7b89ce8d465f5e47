//! Serves a router on a listener: HTTP/1.1 with keep-alive, timeouts on
//! slow clients, a hard bound on the request head, and graceful shutdown
//! that lets in-flight requests finish.
//!
//! HTTP/1.1 only, on purpose: hyper's HTTP/1 connection starts its
//! header-read timer the moment it waits for a request (a silent or
//! trickling client is cut off; between requests `client_stream` gives it
//! the idle timeout until a byte comes), and its graceful shutdown closes
//! at once a connection that has not begun a request. Sniffing for
//! cleartext HTTP/2 would add an untimed phase before either applies, and
//! h2c is rarely spoken to an API behind a proxy.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::client_stream::{ClientStream, Drain};
use crate::metrics;

#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// A client must send its whole request head within this time: the
    /// first one of connecting, a later one of its first byte.
    pub header_read_timeout: Duration,
    /// How long a kept-alive connection may wait for the first byte of
    /// its next request before it is closed: longer than the load
    /// balancers in front keep theirs, so that they close first.
    pub idle_timeout: Duration,
    /// Connections open at once, at most. At the limit the server stops
    /// accepting: new connections wait in the kernel's listen queue (and
    /// time out there, for a client that gives up) instead of each taking
    /// memory and a file descriptor.
    pub max_connections: usize,
    /// Largest request head the connection will buffer at all; beyond it
    /// hyper answers 431 and closes. The router's own, smaller limits
    /// answer in JSON first.
    pub max_head_bytes: usize,
    /// How long shutdown waits for in-flight requests.
    pub shutdown_grace: Duration,
    /// Longest a write may wait for the client to take a byte of an
    /// answer; then the connection closes (`client_stream`).
    pub write_timeout: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(75),
            max_connections: 10_000,
            max_head_bytes: 64 * 1024,
            shutdown_grace: Duration::from_secs(30),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// How long, at most, connections are served on after shutdown began
/// before those left (idle ones) are closed.
const DRAIN_WINDOW: Duration = Duration::from_secs(1);
/// How long no client may send a byte for the drain to end early.
const DRAIN_QUIET: Duration = Duration::from_millis(100);
/// How often the drain checks whether every connection has closed.
const DRAIN_CHECK: Duration = Duration::from_millis(10);

/// A connection's place under the limit and in the gauges, given back
/// when it ends, however it ends.
struct OpenConnection {
    _slot: OwnedSemaphorePermit,
    gauges: Arc<metrics::ConnectionGauges>,
}

impl OpenConnection {
    fn new(slot: OwnedSemaphorePermit, gauges: Arc<metrics::ConnectionGauges>) -> Self {
        gauges.opened();
        Self {
            _slot: slot,
            gauges,
        }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.gauges.closed();
    }
}

/// Serves `app` on `listener` (named `name` in metrics and logs) until
/// `shutdown` resolves, then stops accepting, lets in-flight requests
/// finish (up to the grace period) and returns.
pub async fn serve(
    name: &'static str,
    listener: TcpListener,
    app: Router,
    options: ServerOptions,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = http1::Builder::new();
    builder
        .header_read_timeout(options.header_read_timeout)
        .max_header_size(options.max_head_bytes)
        .keep_alive(true);

    let graceful = GracefulShutdown::new();
    // Begun at shutdown: every answer from then on says `Connection: close`.
    let drain = Arc::new(Drain::default());
    let slots = Arc::new(Semaphore::new(options.max_connections));
    let gauges = Arc::new(metrics::ConnectionGauges::new(
        name,
        options.max_connections,
    ));
    // Whether the limit was reached and said so, not to say it again for
    // every connection until the load falls.
    let mut at_limit = false;
    tokio::pin!(shutdown);
    loop {
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => {
                at_limit = false;
                slot
            }
            Err(_) => {
                if !at_limit {
                    gauges.limit_reached();
                    tracing::warn!(
                        listener = name,
                        max_connections = options.max_connections,
                        "connection limit reached; new connections wait until one closes"
                    );
                    at_limit = true;
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
                    () = &mut shutdown => break,
                }
            }
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, say: back off instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        // Each request knows the connection's peer (axum's ConnectInfo).
        let service = tower::ServiceExt::map_request(
            app.clone(),
            move |mut request: axum::extract::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            },
        );
        let stream = ClientStream::new(stream, options.write_timeout, drain.clone());
        let connection = builder
            .clone()
            .timer(stream.head_timer(options.idle_timeout))
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        let open = OpenConnection::new(slot, gauges.clone());
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(open);
        });
    }
    drop(listener);
    tracing::info!(
        connections = graceful.count(),
        "shutting down; letting in-flight requests finish"
    );
    // Hyper's graceful shutdown closes a connection at once when it is
    // between requests, though its client may have sent the next one
    // already (it is in the socket, or pipelined behind the last answer).
    // So first every connection goes on being served, each answer saying
    // `Connection: close`: a client that reads it sends no more and closes
    // once its answers are in, and nothing it sent is lost. When every
    // connection has closed, or no client has sent a byte for a moment,
    // or at the latest after the drain window, the connections left (idle
    // ones, and requests still being answered) are shut down gracefully.
    drain.begin();
    let started = Instant::now();
    let window = DRAIN_WINDOW.min(options.shutdown_grace);
    let (mut reads, mut quiet_since) = (drain.reads(), Instant::now());
    while graceful.count() > 0 && started.elapsed() < window && quiet_since.elapsed() < DRAIN_QUIET
    {
        tokio::time::sleep(DRAIN_CHECK).await;
        if drain.reads() != reads {
            (reads, quiet_since) = (drain.reads(), Instant::now());
        }
    }
    let grace = options.shutdown_grace.saturating_sub(started.elapsed());
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(grace = ?options.shutdown_grace, "connections still open after the grace period");
    }
}
