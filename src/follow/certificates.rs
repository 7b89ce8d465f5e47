//! `--tls-check`: the edge's report of its certificates
//! (`docs/domains.md`, "Certificates"). After each change follow applied,
//! and every minute, each exact verified name of the routing index is
//! probed: a TLS handshake with the edge at `--tls-check` ADDR, the name
//! as SNI, the certificate checked as a browser would (its chain to the
//! roots of `--tls-check-ca`, or the system's, its name, its dates). The
//! result is reported as the name's `ssl_status` (updateProjectDomain,
//! which needs only the right to read the project) when it differs from
//! what the service last said (a name it has said nothing of since follow
//! started is read first): nothing is written while nothing changes, a
//! restart included.
//!
//! Wildcards are not probed: no handshake shows a wildcard certificate
//! rather than one for the single name asked, and an on-demand edge
//! obtains one certificate per name. Their `ssl_status` is reported by
//! `updateProjectDomain` from a token allowed to.
//!
//! Bounded: [`PROBES_IN_FLIGHT`] handshakes at once, each within
//! [`PROBE_TIMEOUT`]; a round that runs long delays the next, never
//! overlaps it. The probe's handshake is also what asks an on-demand edge
//! for the certificate of a name just verified.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use futures_util::StreamExt as _;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::TlsConnector;

use super::verified::{Said, VerifiedNames};
use crate::client::http::{ApiClient, Request, v1};
use crate::tls_roots;

/// Handshakes at once.
pub const PROBES_IN_FLIGHT: usize = 4;
/// A handshake's longest time, the connection included. An on-demand edge
/// obtains a certificate during the first handshake for a name: this
/// leaves it time to (a probe that times out is tried next round).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Every name is probed again this often, changes or not.
const PROBE_EVERY: Duration = Duration::from_secs(60);

/// The edge probed, and how a certificate is checked.
pub struct Probe {
    /// `--tls-check`: HOST:PORT.
    edge: String,
    tls: TlsConnector,
}

impl Probe {
    /// A probe of the edge at `edge` (HOST:PORT), trusting the
    /// authorities of the PEM file `ca`, or the system's.
    pub fn new(edge: &str, ca: Option<&Path>) -> anyhow::Result<Self> {
        let roots = match ca {
            Some(path) => tls_roots::from_pem_file("--tls-check-ca", path),
            None => tls_roots::system().map_err(|why| {
                format!("--tls-check: {why}: install its certificates (ca-certificates) or give --tls-check-ca")
            }),
        }
        .map_err(|error| anyhow!(error))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("cannot set up TLS")?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            edge: edge.to_owned(),
            tls: TlsConnector::from(Arc::new(config)),
        })
    }

    /// Whether the edge serves a valid certificate for `name`; `Err`
    /// says why not.
    async fn check(&self, name: &str) -> Result<(), String> {
        let server_name =
            ServerName::try_from(name.to_owned()).map_err(|e| format!("not a host name: {e}"))?;
        let handshake = async {
            let tcp = TcpStream::connect(&self.edge)
                .await
                .map_err(|e| format!("cannot connect to {}: {e}", self.edge))?;
            let mut tls = self
                .tls
                .connect(server_name, tcp)
                .await
                .map_err(|e| format!("TLS handshake: {e}"))?;
            // A clean close: the edge logs no broken handshake.
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut tls).await;
            Ok(())
        };
        match tokio::time::timeout(PROBE_TIMEOUT, handshake).await {
            Ok(done) => done,
            Err(_) => Err(format!("no handshake within {} s", PROBE_TIMEOUT.as_secs())),
        }
    }
}

/// `--tls-check ADDR` as clap checks it: HOST:PORT.
pub fn parse_edge(text: &str) -> Result<String, String> {
    match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
            Ok(text.to_owned())
        }
        _ => Err("must be HOST:PORT, such as 127.0.0.1:443".into()),
    }
}

/// Probes every exact name after each change published and every
/// [`PROBE_EVERY`], reporting what differs, until follow ends.
pub async fn run(
    probe: Probe,
    client: ApiClient,
    mut names: watch::Receiver<Arc<VerifiedNames>>,
    said: Said,
) {
    loop {
        let snapshot = names.borrow_and_update().clone();
        round(&probe, &client, &snapshot, &said).await;
        tokio::select! {
            changed = names.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(PROBE_EVERY) => {}
        }
    }
}

/// One probe of each exact name, and the reports of those whose result
/// the service does not say.
async fn round(probe: &Probe, client: &ApiClient, names: &VerifiedNames, said: &Said) {
    said.retain(|name| names.has_exact(name));
    let exact: Vec<(String, String)> = names
        .exact()
        .map(|(name, project)| (name.to_owned(), project.to_owned()))
        .collect();
    let results: Vec<_> = futures_util::stream::iter(exact)
        .map(|(name, project)| probed(probe, name, project))
        .buffer_unordered(PROBES_IN_FLIGHT)
        .collect()
        .await;
    for (name, project, result) in results {
        let (name, project) = (name.as_str(), project.as_str());
        let valid = result.is_ok();
        // Unknown since follow started (it resumed from its cursor): read
        // rather than report, so that a restart writes nothing that did
        // not change.
        let known = match said.get(name) {
            Some(known) => Some(known),
            None => read(client, project, name).await.ok(),
        };
        if known == Some(valid) {
            said.set(name, valid);
            continue;
        }
        match &result {
            Ok(()) => eprintln!("follow: {name}: the edge serves a valid certificate"),
            Err(why) => eprintln!("follow: {name}: no valid certificate from the edge: {why}"),
        }
        match report(client, project, name, valid).await {
            Ok(now) => said.set(name, now),
            Err(error) => eprintln!("follow: {name}: cannot report its ssl_status: {error:#}"),
        }
    }
}

/// `name`'s probe, with its name and project.
async fn probed(
    probe: &Probe,
    name: String,
    project: String,
) -> (String, String, Result<(), String>) {
    let result = probe.check(&name).await;
    (name, project, result)
}

/// What follow reads of a domain the service answers.
#[derive(Deserialize)]
struct Reported {
    ssl_status: bool,
}

/// getProjectDomain: what the service says of `name`'s certificate.
async fn read(client: &ApiClient, project: &str, name: &str) -> anyhow::Result<bool> {
    let path = v1(&["projects", project, "domains", name]);
    let answer = client
        .send(Request::new(reqwest::Method::GET, &path))
        .await?;
    ssl_status_of(&answer.body)
}

fn ssl_status_of(body: &[u8]) -> anyhow::Result<bool> {
    let domain: Reported = serde_json::from_slice(body)
        .map_err(|e| anyhow!("the service's answer is not a domain: {e}"))?;
    Ok(domain.ssl_status)
}

/// updateProjectDomain `{"ssl_status": valid}`; answers what the service
/// now says.
async fn report(
    client: &ApiClient,
    project: &str,
    name: &str,
    valid: bool,
) -> anyhow::Result<bool> {
    let path = v1(&["projects", project, "domains", name]);
    let body = serde_json::json!({ "ssl_status": valid });
    let answer = client
        .send(Request::new(reqwest::Method::POST, &path).body(body))
        .await?;
    ssl_status_of(&answer.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edge_is_host_and_port() {
        assert!(parse_edge("127.0.0.1:443").is_ok());
        assert!(parse_edge("edge.internal:8443").is_ok());
        assert!(parse_edge("[::1]:443").is_ok());
        assert!(parse_edge("127.0.0.1").is_err());
        assert!(parse_edge(":443").is_err());
        assert!(parse_edge("edge:0").is_err());
    }
}
