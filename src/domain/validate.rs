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

/// Officially assigned ISO 3166-1 alpha-2 codes, plus `XK` (Kosovo), which
/// geo-IP databases use.
const COUNTRY_CODES: &str = "\
ADAEAFAGAIALAMAOAQARASATAUAWAXAZBABBBDBEBFBGBHBIBJBLBMBNBOBQBRBSBTBVBWBYBZ\
CACCCDCFCGCHCICKCLCMCNCOCRCUCVCWCXCYCZDEDJDKDMDODZECEEEGEHERESETFIFJFKFMFOFR\
GAGBGDGEGFGGGHGIGLGMGNGPGQGRGSGTGUGWGYHKHMHNHRHTHUIDIEILIMINIOIQIRISITJEJMJOJP\
KEKGKHKIKMKNKPKRKWKYKZLALBLCLILKLRLSLTLULVLYMAMCMDMEMFMGMHMKMLMMMNMOMPMQMRMSMT\
MUMVMWMXMYMZNANCNENFNGNINLNONPNRNUNZOMPAPEPFPGPHPKPLPMPNPRPSPTPWPYQARERORSRURW\
SASBSCSDSESGSHSISJSKSLSMSNSOSRSSSTSVSXSYSZTCTDTFTGTHTJTKTLTMTNTOTRTTTVTWTZ\
UAUGUMUSUYUZVAVCVEVGVIVNVUWFWSXKYEYTZAZMZW";

pub fn country_code(value: &str) -> bool {
    value.len() == 2
        && COUNTRY_CODES
            .as_bytes()
            .chunks(2)
            .any(|code| code == value.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The served document lists the same codes, so that generated
    /// clients and fuzzers know the rule.
    #[test]
    fn the_document_lists_the_country_codes() {
        let document: serde_json::Value =
            serde_json::from_str(crate::http::openapi::DOCUMENT).unwrap();
        let listed: String = document
            .pointer("/components/schemas/RateConditionsInput/properties/country/items/enum")
            .and_then(|codes| codes.as_array())
            .expect("the input schema lists the country codes")
            .iter()
            .map(|code| code.as_str().unwrap())
            .collect();
        assert_eq!(listed, COUNTRY_CODES);
    }

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
    fn country_list_has_the_249_iso_codes_and_xk() {
        assert_eq!(COUNTRY_CODES.len() / 2, 250);
        for good in ["FR", "US", "XK", "ZW", "AD"] {
            assert!(country_code(good), "{good}");
        }
        for bad in ["fr", "ZZ", "USA", "", "F"] {
            assert!(!country_code(bad), "{bad}");
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
