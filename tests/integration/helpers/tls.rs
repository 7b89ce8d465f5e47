//! Certificates of the tests' own (rcgen): an authority, a server
//! certificate it signs; and a TLS server on loopback that answers each
//! name it is asked for (SNI) with the certificate the test set for it,
//! as an edge serving many names does.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::task::JoinHandle;

/// A certificate authority of the test's own.
pub fn authority(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A server certificate for `names` that `ca` signed, and its key (PEM).
pub fn server_certificate(
    ca: &CertifiedIssuer<'static, KeyPair>,
    names: &[&str],
) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    let certificate = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, ca)
        .unwrap();
    (certificate.pem(), key.serialize_pem())
}

/// The certificates each name is answered with, and the names asked for.
#[derive(Debug, Default)]
struct ByName {
    served: Mutex<HashMap<String, Arc<CertifiedKey>>>,
    asked: Mutex<Vec<String>>,
}

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let name = hello.server_name()?.to_owned();
        self.asked.lock().unwrap().push(name.clone());
        self.served.lock().unwrap().get(&name).cloned()
    }
}

/// A TLS server on loopback: each connection's handshake, with the
/// certificate set for the name asked (none: the handshake fails), then
/// closed. Stopped when dropped.
pub struct TlsServer {
    addr: SocketAddr,
    names: Arc<ByName>,
    task: JoinHandle<()>,
}

impl TlsServer {
    pub async fn start() -> Self {
        let names = Arc::new(ByName::default());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(names.clone());
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    if let Ok(mut tls) = acceptor.accept(tcp).await {
                        let _ = tokio::io::AsyncWriteExt::shutdown(&mut tls).await;
                    }
                });
            }
        });
        Self { addr, names, task }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers `name` with `certificate` and its `key` (PEM), from now on.
    pub fn serve(&self, name: &str, (certificate, key): &(String, String)) {
        let chain = CertificateDer::pem_slice_iter(certificate.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
        let key = rustls::crypto::ring::sign::any_supported_type(&key).unwrap();
        let certified = Arc::new(CertifiedKey::new(chain, key));
        self.names
            .served
            .lock()
            .unwrap()
            .insert(name.to_owned(), certified);
    }

    /// Whether a handshake asked for `name`.
    pub fn was_asked(&self, name: &str) -> bool {
        self.asks(name) > 0
    }

    /// How many handshakes asked for `name`.
    pub fn asks(&self, name: &str) -> usize {
        let asked = self.names.asked.lock().unwrap();
        asked.iter().filter(|n| *n == name).count()
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
