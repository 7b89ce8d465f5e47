//! Serves a router on a listener: HTTP/1.1 with keep-alive (and HTTP/2 by
//! prior knowledge), timeouts on slow clients, a hard bound on the request
//! head, and graceful shutdown that lets in-flight requests finish.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// A client must send its whole request head within this time of
    /// connecting or of its previous request; idle keep-alive connections
    /// close after it too.
    pub header_read_timeout: Duration,
    /// Largest request head the connection will buffer at all; beyond it
    /// hyper answers 431 and closes. The router's own, smaller limits
    /// answer in JSON first.
    pub max_head_bytes: usize,
    /// How long shutdown waits for in-flight requests.
    pub shutdown_grace: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            max_head_bytes: 64 * 1024,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops
/// accepting, lets in-flight requests finish (up to the grace period) and
/// returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    options: ServerOptions,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .max_buf_size(options.max_head_bytes)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(options.max_head_bytes as u32)
        .keep_alive_interval(Duration::from_secs(20))
        .keep_alive_timeout(Duration::from_secs(20));

    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
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
        let (builder, app, watcher) = (builder.clone(), app.clone(), graceful.watcher());
        let silence_limit = options.header_read_timeout;
        tokio::spawn(async move {
            // The HTTP version is known only once the client speaks, and
            // hyper's header timeout starts only then: bound the silence
            // before the first byte here.
            if !first_byte(&stream, silence_limit).await {
                return;
            }
            let connection = builder
                .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app))
                .into_owned();
            if let Err(error) = watcher.watch(connection).await {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tracing::info!(
        connections = graceful.count(),
        "shutting down; letting in-flight requests finish"
    );
    if tokio::time::timeout(options.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(grace = ?options.shutdown_grace, "connections still open after the grace period");
    }
}

/// Waits at most `limit` for the client's first byte; false when none came.
async fn first_byte(stream: &TcpStream, limit: Duration) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(limit, stream.peek(&mut byte)).await,
        Ok(Ok(read)) if read > 0
    )
}
