//! `--ask-listen`: the endpoint Caddy's on-demand TLS asks before it
//! obtains a certificate for a name it was sent (`docs/domains.md`,
//! "Certificates"): `GET /ask?domain=NAME` answers 200 when NAME routes
//! here (an exact verified name of the routing index, or one label under
//! a verified wildcard), 404 otherwise, with no body either way. The name
//! is taken in its one form (`HostName::parse`), so that spellings fold
//! as the service folds them.
//!
//! It answers from the names this follow follows (its token's projects),
//! as the routing index holds them: no request reaches the service, so
//! an edge asking for many names costs the service nothing, and nothing
//! is learned of another organization's names.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::verified::VerifiedNames;
use crate::domain::host_name::HostName;

type Names = watch::Receiver<Arc<VerifiedNames>>;

/// The endpoint's socket, bound before follow starts: an address that
/// cannot be had ends follow at once.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("--ask-listen {addr}: cannot listen"))
}

/// Answers on `listener` until follow ends.
pub async fn serve(listener: TcpListener, names: Names) {
    let router = Router::new().route("/ask", get(ask)).with_state(names);
    if let Err(error) = axum::serve(listener, router).await {
        eprintln!("follow: the ask endpoint stopped: {error}");
    }
}

async fn ask(State(names): State<Names>, uri: Uri) -> StatusCode {
    let domain = uri.query().and_then(|query| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(key, _)| key == "domain")
            .map(|(_, value)| value.into_owned())
    });
    let routes = domain
        .and_then(|domain| HostName::parse(&domain).ok())
        .is_some_and(|host| names.borrow().routes(&host));
    match routes {
        true => StatusCode::OK,
        false => StatusCode::NOT_FOUND,
    }
}
