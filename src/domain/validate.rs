//! Small checks shared by the resources, each failing with the path of the
//! offending field.

use std::fmt;
use std::net::IpAddr;

/// A value rule broken by one field; `field` is a path such as
/// `override_cache[2].ttl`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    /// An error about a whole value, to be placed with [`FieldError::within`].
    pub fn value(message: impl Into<String>) -> Self {
        Self::new("", message)
    }

    /// Puts `parent` in front of the path: `ttl` becomes `override_cache[2].ttl`.
    pub fn within(self, parent: &str) -> Self {
        let field = if self.field.is_empty() {
            parent.to_owned()
        } else {
            format!("{parent}.{}", self.field)
        };
        Self {
            field,
            message: self.message,
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}

/// Runs `check` on every element, naming `list[i]` in the error.
pub fn each<'a, T>(
    list: &'a [T],
    name: &str,
    mut check: impl FnMut(&'a T) -> Result<(), FieldError>,
) -> Result<(), FieldError> {
    list.iter()
        .enumerate()
        .try_for_each(|(i, item)| check(item).map_err(|e| e.within(&format!("{name}[{i}]"))))
}

/// `field` must hold 1 to `max` characters with no control characters.
pub fn text(field: &str, value: &str, max: usize) -> Result<(), FieldError> {
    if value.is_empty() {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if value.chars().count() > max {
        return Err(FieldError::new(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(FieldError::new(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

pub const WEB_URL_RULE: &str = "must be an absolute http or https URL, or empty";

/// An empty string, or an absolute URL whose scheme is `http` or `https`
/// (any letter case), written `http://` or `https://`: never
/// `javascript:`, `data:` or another scheme a browser would run or open.
pub fn optional_web_url(field: &str, value: &str) -> Result<(), FieldError> {
    let web = |scheme: &str| {
        value
            .get(..scheme.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
    };
    if value.is_empty() || ((web("http://") || web("https://")) && url::Url::parse(value).is_ok()) {
        Ok(())
    } else {
        Err(FieldError::new(field, WEB_URL_RULE))
    }
}

/// An IPv4/IPv6 address or a CIDR block such as `10.0.0.0/8`.
pub fn ip_or_cidr(value: &str) -> bool {
    match value.split_once('/') {
        None => value.parse::<IpAddr>().is_ok(),
        Some((address, prefix)) => {
            let max_prefix = match address.parse::<IpAddr>() {
                Ok(IpAddr::V4(_)) => 32,
                Ok(IpAddr::V6(_)) => 128,
                Err(_) => return false,
            };
            !prefix.is_empty()
                && prefix.bytes().all(|b| b.is_ascii_digit())
                && prefix.parse::<u8>().is_ok_and(|p| p <= max_prefix)
        }
    }
}

/// The largest program a regex member may compile to: the `regex`
/// crate's own default (10 MiB), the limit under which the platform's
/// proxy compiles a route's regex (`Regex::new`), so that every regex an
/// edge takes is taken here. Near it a regex takes about 50 ms to compile
/// (a release build on the 2-core VM: `^/\w{200}$`, Unicode-aware, passes
/// in 50 ms, `^/\w{300}$` is refused after 52 ms). What all the regexes of
/// one request may cost is bounded by `regexes::REGEX_BUDGET`, which
/// compiles them (`regexes::RegexChecks`).
pub const REGEX_SIZE_LIMIT: usize = 10 * 1024 * 1024;

/// The rule of every regex member (a route's `path` with `regex`,
/// `proxy_only_path_regex`, a cache or rate-limiting rule's `path` with
/// `regex`).
pub const REGEX_RULE: &str =
    "must be a regular expression in the RE2-like syntax of Rust's regex crate";

pub const ADDRESS_RULE: &str = "must be a host, then optionally :port: a DNS name, an IPv4 address or an IPv6 address in brackets, and a port from 1 to 65535 (origin.example.com, 192.0.2.7:8080, [2001:db8::1]:443); without a port an edge connects to 443 when TLS is on, else 80";

/// A backend's `address`, as the platform's proxy reads it (it connects
/// to `https://{address}` or `http://{address}`): a host, then optionally
/// `:port`. The host is a DNS name (labels of 1 to 63 letters, digits,
/// `-` and `_`, not starting or ending with `-`, at most 253 characters
/// in all, the last label not all digits, one trailing dot allowed), an
/// IPv4 address in dotted decimal, or an IPv6 address in brackets (no
/// zone); the port decimal digits from 1 to 65535, without a leading
/// zero. Without a port, the edge's port follows from TLS (443, else 80).
pub fn backend_address(value: &str) -> bool {
    let (host, port) = match value.rsplit_once(':') {
        // A colon outside brackets: host:port ([v6]:port included).
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        // No colon, or only the colons of a bracketed IPv6 address.
        _ => (value, None),
    };
    let port_ok = port.is_none_or(|port| {
        (1..=5).contains(&port.len())
            && port.bytes().all(|b| b.is_ascii_digit())
            && !port.starts_with('0')
            && port.parse::<u16>().is_ok()
    });
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => host.parse::<std::net::Ipv4Addr>().is_ok() || dns_name(host),
    };
    port_ok && host_ok
}

fn dns_name(host: &str) -> bool {
    // An absolute name's trailing dot (`origin.example.com.`) names the
    // same host.
    let host = host.strip_suffix('.').unwrap_or(host);
    let label = |label: &str| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    (1..=253).contains(&host.len())
        && host.split('.').all(label)
        && host
            .rsplit('.')
            .next()
            .is_some_and(|last| !last.bytes().all(|b| b.is_ascii_digit()))
}

pub const PEM_RULE: &str =
    "must be PEM: one or more -----BEGIN CERTIFICATE----- ... -----END CERTIFICATE----- blocks";

/// PEM holding one or more `CERTIFICATE` blocks and no other block (a
/// private key pasted by mistake is refused, and never repeated back),
/// each block's content base64 (decoded by `rustls-pki-types`, the
/// parser rustls itself uses). Text outside the blocks is allowed (RFC
/// 7468's explanatory text); what the certificates hold is not checked.
pub fn pem_certificates(value: &str) -> Result<(), FieldError> {
    use rustls_pki_types::pem::{Error, PemObject, SectionKind};
    let refused = |why: &str| Err(FieldError::value(format!("{PEM_RULE}; {why}")));
    let other_block = value.lines().any(|line| {
        line.trim()
            .strip_prefix("-----BEGIN ")
            .is_some_and(|label| label != "CERTIFICATE-----")
    });
    if other_block {
        return refused("it holds another kind of block (never put a private key here)");
    }
    let mut certificates = 0;
    for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(value.as_bytes()) {
        match section {
            Ok((SectionKind::Certificate, der)) if !der.is_empty() => certificates += 1,
            Ok((SectionKind::Certificate, _)) => return refused("a block is empty"),
            Ok(_) => {
                return refused("it holds another kind of block (never put a private key here)");
            }
            Err(Error::MissingSectionEnd { .. }) => {
                return refused("a block has no -----END CERTIFICATE----- line");
            }
            Err(Error::IllegalSectionStart { .. }) => {
                return refused("a -----BEGIN line is malformed");
            }
            Err(Error::Base64Decode(_)) => return refused("a block's content is not base64"),
            Err(_) => return refused("it does not parse"),
        }
    }
    if certificates == 0 {
        return refused("it holds no certificate");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scheme part of [`optional_web_url`], as the served document's
    /// input schemas state it (`pattern`), so that clients know the rule.
    const WEB_URL_PATTERN: &str = "^$|^[Hh][Tt][Tt][Pp][Ss]?://";

    /// The document's input schemas state the URL members' scheme rule as
    /// that pattern, and it accepts what the code accepts (the code asks
    /// for an absolute URL besides, which the description says).
    #[test]
    fn the_document_states_the_web_url_rule() {
        let document: serde_json::Value =
            serde_json::from_str(crate::http::openapi::DOCUMENT).unwrap();
        for schema in ["ProjectCreateInput", "ProjectUpdateInput"] {
            let pointer =
                format!("/components/schemas/{schema}/properties/external_project_url/pattern");
            assert_eq!(
                document.pointer(&pointer).and_then(|p| p.as_str()),
                Some(WEB_URL_PATTERN),
                "{schema}"
            );
        }
        let pattern = jsonschema::validator_for(&serde_json::json!({"pattern": WEB_URL_PATTERN}))
            .expect("the pattern compiles");
        for value in [
            "",
            "http://example.com",
            "https://example.com/a?b=c#d",
            "HTTPS://EXAMPLE.COM",
            "hTtP://x.example:8080/",
            "javascript:alert(1)",
            "JavaScript://%0aalert(1)",
            "data:text/html,<script>alert(1)</script>",
            "ftp://example.com",
            "file:///etc/passwd",
            "mailto:a@example.com",
            "http:example.com",
            "https:/example.com",
            " https://example.com",
            "//example.com",
            "example.com",
            "httpx://example.com",
        ] {
            let by_code = optional_web_url("url", value).is_ok();
            let by_document = pattern.is_valid(&serde_json::json!(value));
            assert_eq!(by_code, by_document, "{value:?}");
        }
        // What the pattern lets through must still be an absolute URL.
        assert!(optional_web_url("url", "http://").is_err());
        assert!(optional_web_url("url", "https://exa mple.com").is_err());
    }

    #[test]
    fn backend_addresses_take_a_port_or_none() {
        for good in [
            "origin.example.com:443",
            "origin.example.com",
            "origin.example.com.",
            "origin.example.com.:8443",
            "Origin.Example.COM",
            "origin:1",
            "localhost",
            "my_service:8080",
            "a-b.c:65535",
            "192.0.2.7:8080",
            "192.168.0.10",
            "[2001:db8::1]:443",
            "[2001:db8::1]",
            "[::1]:80",
            "[::1]",
            "xn--bcher-kva.example:443",
        ] {
            assert!(backend_address(good), "{good}");
        }
        let long_label = format!("{}.example:443", "a".repeat(64));
        let longest_name = format!("{}a:443", "a.".repeat(126));
        assert!(backend_address(&longest_name), "253 characters");
        let long_name = format!("{}a:443", "a.".repeat(127));
        for bad in [
            "origin.example.com:",
            "origin.example.com:0",
            "origin.example.com:65536",
            "origin.example.com:0443",
            "origin.example.com:+443",
            "https://origin.example.com:443",
            "https://origin.example.com",
            "origin.example.com:443/",
            "origin.example.com/",
            "user@origin.example.com",
            ":443",
            "-a.example:443",
            "a-.example:443",
            "a..example:443",
            "example.com..",
            ".",
            "exa mple.com:443",
            "exa mple.com",
            "bücher.example",
            "1.2.3.256:443",
            "1.2.3.256",
            "01.2.3.4:443",
            "2001:db8::1:443",
            "2001:db8::1",
            "[2001:db8::1]:",
            "[fe80::1%eth0]:443",
            "[192.0.2.7]:443",
            "[2001:db8::1]443",
            long_label.as_str(),
            long_name.as_str(),
            "",
        ] {
            assert!(!backend_address(bad), "{bad}");
        }
    }

    /// A certificate rcgen would write, cut to its frame: rustls-pki-types
    /// decodes base64 only.
    const CERTIFICATE: &str =
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUCw==\n-----END CERTIFICATE-----\n";

    #[test]
    fn pem_holds_certificates_only() {
        let two = format!("{CERTIFICATE}{CERTIFICATE}");
        let explained = format!("Our CA\n{CERTIFICATE}");
        for good in [
            CERTIFICATE,
            two.as_str(),
            explained.as_str(),
            CERTIFICATE.trim_end(),
        ] {
            assert!(pem_certificates(good).is_ok(), "{good}");
        }
        let key =
            "-----BEGIN PRIVATE KEY-----\nMIIBszCCAVmgAwIBAgIUCw==\n-----END PRIVATE KEY-----\n";
        let with_key = format!("{CERTIFICATE}{key}");
        let unknown = CERTIFICATE.replace("CERTIFICATE", "FOO");
        let not_base64 = CERTIFICATE.replace("MIIB", "M*IB");
        for (bad, reason) in [
            ("", "no certificate"),
            ("just text", "no certificate"),
            ("-----BEGIN CERTIFICATE-----", "no -----END"),
            ("-----BEGIN CERTIFICATE-----\nMIIB\n", "no -----END"),
            (key, "another kind"),
            (with_key.as_str(), "another kind"),
            (unknown.as_str(), "another kind"),
            (not_base64.as_str(), "not base64"),
            (
                "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----",
                "empty",
            ),
        ] {
            let error = pem_certificates(bad).unwrap_err();
            assert!(error.message.contains(reason), "{bad:?}: {error}");
            assert!(!error.message.contains("MIIB"), "{bad:?}: {error}");
        }
    }

    #[test]
    fn addresses_and_blocks() {
        for good in [
            "10.0.0.1",
            "10.0.0.0/8",
            "::1",
            "2001:db8::/32",
            "0.0.0.0/0",
        ] {
            assert!(ip_or_cidr(good), "{good}");
        }
        for bad in [
            "",
            "10.0.0",
            "10.0.0.0/33",
            "::/129",
            "10.0.0.0/",
            "10.0.0.0/+8",
            "host",
        ] {
            assert!(!ip_or_cidr(bad), "{bad}");
        }
    }

    #[test]
    fn text_rule() {
        assert!(text("name", "ok", 10).is_ok());
        assert_eq!(
            text("name", "", 10).unwrap_err().message,
            "must not be empty"
        );
        assert!(text("name", "a\nb", 10).is_err());
        assert!(text("name", &"x".repeat(11), 10).is_err());
    }

    #[test]
    fn errors_carry_their_path() {
        let err = each(&[1, 2, 3], "list", |n| {
            if *n == 2 {
                Err(FieldError::new("value", "bad"))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "list[1].value: bad");
    }
}
