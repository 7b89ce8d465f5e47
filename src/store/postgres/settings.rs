//! What a `postgres://` URL asks for, read as libpq reads it: the
//! connection's settings, and the TLS that `sslmode` and `sslrootcert` ask
//! for. tokio-postgres knows `sslmode=disable|prefer|require` only, and
//! neither `verify-ca`, `verify-full` nor `sslrootcert`: those two are taken
//! out of the URL here and applied to the rustls configuration.
//!
//! | sslmode       | encrypted                  | certificate checked            |
//! |---------------|----------------------------|--------------------------------|
//! | `disable`     | never                      | -                              |
//! | `prefer`      | when the server offers TLS | chain, if `sslrootcert` given  |
//! | `require`     | always                     | chain, if `sslrootcert` given  |
//! | `verify-ca`   | always                     | chain                          |
//! | `verify-full` | always                     | chain and host name            |
//!
//! As with libpq, `prefer` is the default, `verify-ca` and `verify-full`
//! need `sslrootcert`, and `sslrootcert=system` (the system's trusted
//! authorities) makes `verify-full` the default and refuses weaker modes.
//! Unlike libpq, a URL whose every host is this machine (`localhost`,
//! `127.0.0.0/8`, `::1`) and that says nothing of TLS does not negotiate
//! it: on loopback TLS hides nothing from a network and costs both sides
//! CPU (`docs/deployment.md`). Connections over a Unix socket are never
//! encrypted (PostgreSQL offers no TLS there).

use std::path::PathBuf;
use std::sync::Arc;

use percent_encoding::percent_decode_str;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres::Config;
use tokio_postgres::config::{Host, SslMode as DriverSslMode};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::tls_roots;

/// How a connection uses TLS (libpq's `sslmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    const NAMES: [(&'static str, Self); 5] = [
        ("disable", Self::Disable),
        ("prefer", Self::Prefer),
        ("require", Self::Require),
        ("verify-ca", Self::VerifyCa),
        ("verify-full", Self::VerifyFull),
    ];

    fn parse(value: &str) -> Result<Self, String> {
        if let Some((_, mode)) = Self::NAMES.iter().find(|(name, _)| *name == value) {
            return Ok(*mode);
        }
        let known = Self::NAMES.map(|(name, _)| name).join(", ");
        Err(match value {
            // libpq's "plain first, TLS if refused": tokio-postgres has no
            // such mode.
            "allow" => format!("sslmode=allow is not supported: give one of {known}"),
            _ => format!("sslmode={value:?} is not one of {known}"),
        })
    }

    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, mode)| *mode == self)
            .map(|(name, _)| *name)
            .expect("every mode has a name")
    }
}

/// Whose certificates a server's must chain to (libpq's `sslrootcert`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum RootCert {
    File(PathBuf),
    /// `sslrootcert=system`: the system's trusted authorities.
    System,
}

/// A connection's settings: tokio-postgres' configuration, and the TLS
/// connector `sslmode` and `sslrootcert` ask for. Every connection to
/// PostgreSQL is made with them (the service's, its migrations', the
/// tests' own).
#[derive(Clone)]
pub struct PostgresSettings {
    pub config: Config,
    pub tls: MakeRustlsConnect,
    pub sslmode: SslMode,
}

impl PostgresSettings {
    /// The settings of `url`. Errors are one line and never repeat the
    /// URL (it may hold a password); an `sslrootcert` file is read here,
    /// so a missing or empty one is told at once.
    pub fn from_url(url: &str) -> Result<Self, String> {
        let (rest, sslmode, root) = take_tls_parameters(url)?;
        let mut config: Config = rest
            .parse()
            .map_err(|e| format!("the PostgreSQL URL is not valid: {e}"))?;
        let sslmode = match (sslmode, &root) {
            (Some(mode), _) => mode,
            (None, Some(RootCert::System)) => SslMode::VerifyFull,
            (None, None) if only_loopback(&config) => SslMode::Disable,
            (None, _) => SslMode::Prefer,
        };
        let client = client_config(sslmode, root.as_ref())?;
        // PostgreSQL offers no TLS on a Unix socket; libpq then ignores
        // sslmode, while tokio-postgres would fail `require`.
        let only_sockets = config.get_hostaddrs().is_empty()
            && !config.get_hosts().is_empty()
            && config
                .get_hosts()
                .iter()
                .all(|host| !matches!(host, Host::Tcp(_)));
        config.ssl_mode(match sslmode {
            _ if only_sockets => DriverSslMode::Disable,
            SslMode::Disable => DriverSslMode::Disable,
            SslMode::Prefer => DriverSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => DriverSslMode::Require,
        });
        Ok(Self {
            config,
            tls: MakeRustlsConnect::new(client),
            sslmode,
        })
    }
}

/// Whether every server the settings name is this machine, by its
/// name (`localhost`), a loopback address, or a Unix socket, and so is
/// every `hostaddr` (where the connections go when given).
fn only_loopback(config: &Config) -> bool {
    let loopback_name = |name: &str| {
        name.eq_ignore_ascii_case("localhost")
            || name
                .trim_matches(|c| c == '[' || c == ']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|address| address.is_loopback())
    };
    !config.get_hosts().is_empty()
        && config.get_hosts().iter().all(|host| match host {
            Host::Tcp(name) => loopback_name(name),
            Host::Unix(_) => true,
        })
        && config
            .get_hostaddrs()
            .iter()
            .all(|address| address.is_loopback())
}

/// `url` without its `sslmode` and `sslrootcert` query parameters, and
/// their values (the last one given wins, as in libpq).
fn take_tls_parameters(url: &str) -> Result<(String, Option<SslMode>, Option<RootCert>), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), None, None));
    };
    let decode = |text: &str, what: &str| {
        percent_decode_str(text)
            .decode_utf8()
            .map(|decoded| decoded.into_owned())
            .map_err(|_| format!("the PostgreSQL URL's {what} is not UTF-8 once decoded"))
    };
    let (mut sslmode, mut root, mut kept) = (None, None, Vec::new());
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match decode(key, "query")?.as_str() {
            "sslmode" => sslmode = Some(SslMode::parse(&decode(value, "sslmode")?)?),
            "sslrootcert" => {
                let value = decode(value, "sslrootcert")?;
                root = match value.as_str() {
                    "" => return Err("sslrootcert is empty: give a file's path, or system".into()),
                    "system" => Some(RootCert::System),
                    path => Some(RootCert::File(path.into())),
                };
            }
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, sslmode, root))
}

/// The rustls configuration for `sslmode` and `sslrootcert`.
fn client_config(sslmode: SslMode, root: Option<&RootCert>) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let check = |roots: Option<RootCertStore>| CertificateCheck {
        roots: roots.map(Arc::new),
        names: sslmode == SslMode::VerifyFull,
        algorithms: provider.signature_verification_algorithms,
    };
    let check = match (sslmode, root) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(format!(
                "sslmode={} needs sslrootcert: the path of the certificate (PEM) of the authority that signed the server's, or sslrootcert=system for the system's trusted authorities",
                sslmode.name()
            ));
        }
        (SslMode::Disable, _) | (_, None) => check(None),
        (SslMode::VerifyFull, Some(RootCert::System)) => check(Some(system_roots()?)),
        (weaker, Some(RootCert::System)) => {
            return Err(format!(
                "sslmode={} may not be used with sslrootcert=system (use verify-full)",
                weaker.name()
            ));
        }
        // With a root certificate, libpq checks the chain in every mode
        // that encrypts.
        (_, Some(RootCert::File(path))) => check(Some(root_store(path)?)),
    };
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(check))
        .with_no_client_auth();
    // As libpq 17 sends: the protocol PostgreSQL's servers expect (and
    // that sslnegotiation=direct needs).
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(config)
}

/// The certificates of the PEM file at `path`, as trust anchors.
fn root_store(path: &std::path::Path) -> Result<RootCertStore, String> {
    tls_roots::from_pem_file("sslrootcert", path)
}

/// The authorities the system trusts.
fn system_roots() -> Result<RootCertStore, String> {
    tls_roots::system().map_err(|why| {
        format!(
            "sslrootcert=system: {why}: install its certificates (ca-certificates) or give sslrootcert=PATH"
        )
    })
}

/// What a failed TLS handshake (`cause`, tokio-postgres' error's source)
/// means, in words, where rustls names it by a code only.
pub(super) fn tls_failure(cause: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    let failure = cause
        .downcast_ref::<std::io::Error>()?
        .get_ref()?
        .downcast_ref::<rustls::Error>()?;
    match failure {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => Some(
            "the server's certificate is not signed by an authority that sslrootcert names (rustls: UnknownIssuer)",
        ),
        _ => None,
    }
}

/// How a server's certificate is checked. Without `roots`, it is not (`prefer`
/// and `require` without `sslrootcert`: encrypted, not authenticated);
/// with them, it must chain to one of them (`verify-ca`, and `prefer` or
/// `require` with `sslrootcert`), and with `names` also be for the host
/// name connected to (`verify-full`). Either way the handshake's
/// signatures are checked.
#[derive(Debug)]
struct CertificateCheck {
    roots: Option<Arc<RootCertStore>>,
    names: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for CertificateCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(roots) = &self.roots else {
            return Ok(ServerCertVerified::assertion());
        };
        let certificate = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &certificate,
            roots,
            intermediates,
            now,
            self.algorithms.all,
        )?;
        if self.names {
            rustls::client::verify_server_name(&certificate, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(url: &str) -> String {
        match PostgresSettings::from_url(url) {
            Ok(_) => panic!("{url} was taken"),
            Err(error) => error,
        }
    }

    #[test]
    fn sslmode_defaults_to_prefer_and_is_taken_out_of_the_url() {
        let settings = PostgresSettings::from_url("postgres://u@db/x").unwrap();
        assert_eq!(settings.sslmode, SslMode::Prefer);
        assert_eq!(settings.config.get_ssl_mode(), DriverSslMode::Prefer);
        for (given, ours, driver) in [
            ("disable", SslMode::Disable, DriverSslMode::Disable),
            ("prefer", SslMode::Prefer, DriverSslMode::Prefer),
            ("require", SslMode::Require, DriverSslMode::Require),
        ] {
            let settings =
                PostgresSettings::from_url(&format!("postgres://u@db/x?sslmode={given}&user=v"))
                    .unwrap();
            assert_eq!(settings.sslmode, ours);
            assert_eq!(settings.config.get_ssl_mode(), driver);
            // The parameters around it are kept.
            assert_eq!(settings.config.get_user(), Some("v"));
        }
    }

    #[test]
    fn a_url_to_this_machine_that_says_nothing_of_tls_goes_without() {
        for url in [
            "postgres://u@localhost/x",
            "postgres://u@127.0.0.1:5432/x",
            "postgres://u@127.0.0.2/x",
            "postgres://u@[::1]:5432/x",
            "postgres://u@localhost,127.0.0.1/x",
            "postgres://u@/x?host=/run/postgresql&host=localhost",
            "postgres://u@localhost/x?hostaddr=127.0.0.1",
        ] {
            let settings = PostgresSettings::from_url(url).unwrap();
            assert_eq!(settings.sslmode, SslMode::Disable, "{url}");
            assert_eq!(
                settings.config.get_ssl_mode(),
                DriverSslMode::Disable,
                "{url}"
            );
        }
        // Elsewhere, or asked for: as libpq.
        for (url, sslmode) in [
            ("postgres://u@db.internal/x", SslMode::Prefer),
            ("postgres://u@10.0.0.5/x", SslMode::Prefer),
            ("postgres://u@localhost,db.internal/x", SslMode::Prefer),
            (
                "postgres://u@db.example/x?hostaddr=127.0.0.1",
                SslMode::Prefer,
            ),
            (
                "postgres://u@localhost/x?hostaddr=10.0.0.5",
                SslMode::Prefer,
            ),
            ("postgres://u@localhost/x?sslmode=prefer", SslMode::Prefer),
            ("postgres://u@127.0.0.1/x?sslmode=require", SslMode::Require),
            (
                "postgres://u@localhost/x?sslrootcert=system",
                SslMode::VerifyFull,
            ),
        ] {
            let settings = PostgresSettings::from_url(url).unwrap();
            assert_eq!(settings.sslmode, sslmode, "{url}");
            assert_ne!(
                settings.config.get_ssl_mode(),
                DriverSslMode::Disable,
                "{url}"
            );
        }
    }

    #[test]
    fn the_tls_parameters_leave_the_rest_of_the_url_as_it_was() {
        let (rest, sslmode, root) = take_tls_parameters(
            "postgres://u:p%40ss@db/x?application_name=a%20b&sslmode=verify-ca&sslrootcert=%2Fetc%2Fca.pem&options=-c%20x%3D1",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgres://u:p%40ss@db/x?application_name=a%20b&options=-c%20x%3D1"
        );
        assert_eq!(sslmode, Some(SslMode::VerifyCa));
        assert_eq!(root, Some(RootCert::File("/etc/ca.pem".into())));
        let (rest, sslmode, root) =
            take_tls_parameters("postgres://u@db/x?sslmode=require").unwrap();
        assert_eq!(
            (rest.as_str(), sslmode, root),
            ("postgres://u@db/x", Some(SslMode::Require), None)
        );
    }

    #[test]
    fn system_roots_mean_verify_full_and_nothing_weaker() {
        let settings = PostgresSettings::from_url("postgres://u@db/x?sslrootcert=system").unwrap();
        assert_eq!(settings.sslmode, SslMode::VerifyFull);
        assert_eq!(settings.config.get_ssl_mode(), DriverSslMode::Require);
        assert_eq!(
            error_of("postgres://u@db/x?sslrootcert=system&sslmode=require"),
            "sslmode=require may not be used with sslrootcert=system (use verify-full)"
        );
    }

    #[test]
    fn bad_tls_settings_are_told_by_name_without_the_url() {
        let secret = "postgres://u:hunter2@db/x";
        for (query, expected) in [
            (
                "sslmode=verify",
                "sslmode=\"verify\" is not one of disable, prefer, require, verify-ca, verify-full",
            ),
            (
                "sslmode=allow",
                "sslmode=allow is not supported: give one of disable, prefer, require, verify-ca, verify-full",
            ),
            (
                "sslrootcert=",
                "sslrootcert is empty: give a file's path, or system",
            ),
            (
                "sslmode=verify-full",
                "sslmode=verify-full needs sslrootcert: the path of the certificate (PEM) of the authority that signed the server's, or sslrootcert=system for the system's trusted authorities",
            ),
        ] {
            let error = error_of(&format!("{secret}?{query}"));
            assert_eq!(error, expected);
            assert!(!error.contains("hunter2"));
        }
    }

    #[test]
    fn a_root_certificate_file_must_exist_and_hold_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let error = error_of(&format!(
            "postgres://u@db/x?sslmode=verify-ca&sslrootcert={}",
            missing.display()
        ));
        assert!(
            error.starts_with(&format!("sslrootcert {}: cannot read: ", missing.display())),
            "{error}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        assert_eq!(
            error_of(&format!(
                "postgres://u@db/x?sslmode=verify-full&sslrootcert={}",
                empty.display()
            )),
            format!(
                "sslrootcert {} holds no certificate (PEM, -----BEGIN CERTIFICATE-----)",
                empty.display()
            )
        );
    }

    #[test]
    fn unix_sockets_are_never_encrypted() {
        let settings =
            PostgresSettings::from_url("postgres:///x?host=/run/postgresql&sslmode=require")
                .unwrap();
        assert_eq!(settings.sslmode, SslMode::Require);
        assert_eq!(settings.config.get_ssl_mode(), DriverSslMode::Disable);
    }
}
