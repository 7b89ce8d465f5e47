//! The authorities a TLS client of proxydeck's trusts (PostgreSQL's
//! connections, `sslrootcert`; `follow --tls-check-ca`): the certificates
//! of a PEM file, or the system's. One place, so that both read a file
//! and say what is wrong with it alike.

use std::path::Path;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

/// The certificates of the PEM file at `path`, as trust anchors; an error
/// names `setting` (`sslrootcert`, `--tls-check-ca`) and the file.
pub fn from_pem_file(setting: &str, path: &Path) -> Result<RootCertStore, String> {
    let shown = path.display();
    let text = std::fs::read(path).map_err(|e| format!("{setting} {shown}: cannot read: {e}"))?;
    let certificates = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{setting} {shown} is not a PEM file of certificates: {e}"))?;
    if certificates.is_empty() {
        return Err(format!(
            "{setting} {shown} holds no certificate (PEM, -----BEGIN CERTIFICATE-----)"
        ));
    }
    let mut roots = RootCertStore::empty();
    for certificate in certificates {
        roots
            .add(certificate)
            .map_err(|e| format!("{setting} {shown}: a certificate cannot be used: {e}"))?;
    }
    Ok(roots)
}

/// The authorities the system trusts, where OpenSSL (and so libpq) finds
/// them: `SSL_CERT_FILE` and `SSL_CERT_DIR` when set, else the system's
/// store (`/etc/ssl/certs` on Debian); the error says why there are none.
pub fn system() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    // One unreadable file among many does not make the others useless.
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        let why = found
            .errors
            .first()
            .map(|error| format!(" ({error})"))
            .unwrap_or_default();
        return Err(format!("this system trusts no authority{why}"));
    }
    Ok(roots)
}
