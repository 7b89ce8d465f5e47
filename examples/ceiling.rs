//! The benchmark's ceiling: proxydeck's own HTTP stack (accept loop,
//! router, middleware, logging, allocator) answering every request with a
//! fixed JSON body of a given size: no authentication, no store. A listing's
//! throughput divided by this one's is the share the listing keeps of what
//! the HTTP stack alone can do.
//!
//! cargo run --release --example ceiling -- 127.0.0.1:9090 37000

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;

use proxydeck::http::transport::server::{ServerOptions, serve};
use proxydeck::http::{RequestLimits, with_middleware};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:9090".into());
    let size: usize = args.next().map_or(Ok(37_000), |n| n.parse())?;
    let _log = proxydeck::telemetry::init_serving(proxydeck::telemetry::SERVING);

    // A JSON document of exactly `size` bytes: {"data":"xxx…"}.
    let filler = size.saturating_sub(r#"{"data":""}"#.len());
    let body = Bytes::from(format!(r#"{{"data":"{}"}}"#, "x".repeat(filler)));
    let answer = move || {
        let body = body.clone();
        async move {
            (
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    ),
                    (
                        header::CACHE_CONTROL,
                        HeaderValue::from_static("private, no-cache"),
                    ),
                ],
                body,
            )
                .into_response()
        }
    };
    let routes = Router::new().fallback(answer);
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    let shutdown = proxydeck::app::shutdown_signal()?;
    serve(
        "api",
        listener,
        with_middleware(routes, RequestLimits::default()),
        ServerOptions::default(),
        shutdown,
    )
    .await;
    Ok(())
}
