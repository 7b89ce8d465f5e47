//! A custom domain's name (`docs/domains.md`, "Names"): a host name, kept
//! in one form so that names that look alike are one name. IDNA (UTS 46,
//! the `idna` crate) maps it to ASCII: case folded, full-width and other
//! compatibility forms mapped, Unicode labels as `xn--` Punycode. Then the
//! rules of a host name that a certificate can be issued for: letters,
//! digits and hyphens (not first or last in a label), labels of 1 to 63
//! characters, at most 253 in all, at least two labels, no IP address, no
//! port. One trailing dot (the root) is dropped: `example.com.` is
//! `example.com`.
//!
//! A wildcard is one leading `*` label (`*.example.com`) over at least two
//! labels. It matches a host of exactly one more label (`a.example.com`,
//! not `example.com` nor `a.b.example.com`), as a certificate's wildcard
//! does; a name that is not a wildcard wins over one that is.

use std::net::IpAddr;

use idna::uts46::{AsciiDenyList, DnsLength, Hyphens, Uts46};

/// A name that passed the rules, in its one ASCII form.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostName(String);

/// The rules as a refusal says them, one per way a name can fail.
pub const NAME_RULES: &str = "must be a host name: labels of letters, digits and hyphens \
    (not first or last), 1 to 63 characters each, 253 in all, at least two labels; \
    internationalized names are taken and stored in their ASCII (xn--) form";
const NO_PORT: &str = "must be a host name without a port";
const NO_IP: &str = "must be a host name, not an IP address";
const ONE_LABEL: &str = "must have at least two labels (example.com, not example)";
const WILDCARD: &str =
    "may hold one wildcard only as its whole first label, over at least two labels (*.example.com)";
const EMPTY: &str = "must not be empty";

impl HostName {
    /// The name's one form, or the rule it breaks.
    pub fn parse(text: &str) -> Result<Self, &'static str> {
        let text = text.strip_suffix('.').unwrap_or(text);
        if text.is_empty() {
            return Err(EMPTY);
        }
        if text.parse::<IpAddr>().is_ok()
            || text
                .strip_prefix('[')
                .is_some_and(|rest| rest.ends_with(']'))
        {
            return Err(NO_IP);
        }
        if text.contains(':') {
            return Err(NO_PORT);
        }
        let (wildcard, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if rest.contains('*') {
            return Err(WILDCARD);
        }
        let ascii = Uts46::new()
            .to_ascii(
                rest.as_bytes(),
                AsciiDenyList::STD3,
                Hyphens::CheckFirstLast,
                DnsLength::Verify,
            )
            .map_err(|_| NAME_RULES)?;
        let labels = ascii.split('.').count();
        if labels < 2 {
            return Err(if wildcard { WILDCARD } else { ONE_LABEL });
        }
        // An all-digit last label is no top-level domain: `10.1.2.3` in
        // another spelling (`010.1.2.3`, `1.2.3.4.`).
        let last = ascii.rsplit('.').next().unwrap_or_default();
        if last.bytes().all(|b| b.is_ascii_digit()) {
            return Err(NO_IP);
        }
        let name = if wildcard {
            format!("*.{ascii}")
        } else {
            ascii.into_owned()
        };
        if name.len() > 253 {
            return Err(NAME_RULES);
        }
        Ok(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    pub fn is_wildcard(&self) -> bool {
        self.0.starts_with("*.")
    }

    /// The name the DNS records are looked for under: a wildcard's without
    /// its `*` label (one owner proves the whole zone below it).
    pub fn base(&self) -> &str {
        self.0.strip_prefix("*.").unwrap_or(&self.0)
    }

    /// Whether a request for `host` (already in this form: [`Self::parse`]
    /// of the request's host) is for this name: the same name, or one
    /// label under a wildcard's base.
    pub fn matches(&self, host: &str) -> bool {
        match self.0.strip_prefix("*.") {
            None => self.0 == host,
            Some(base) => host
                .strip_suffix(base)
                .and_then(|label| label.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty() && !label.contains('.')),
        }
    }

    /// The wildcard that would match this host name, if it has one more
    /// label than two: `a.example.com` → `*.example.com`. What a host is
    /// looked up by once its exact name is not found.
    pub fn covering_wildcard(&self) -> Option<String> {
        if self.is_wildcard() {
            return None;
        }
        let (_, base) = self.0.split_once('.')?;
        base.contains('.').then(|| format!("*.{base}"))
    }
}

impl std::fmt::Display for HostName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> String {
        HostName::parse(text)
            .unwrap_or_else(|rule| panic!("{text}: {rule}"))
            .into_string()
    }

    #[test]
    fn names_are_kept_in_one_ascii_form() {
        assert_eq!(parsed("Shop.Example.COM"), "shop.example.com");
        assert_eq!(parsed("shop.example.com."), "shop.example.com");
        // Full-width letters fold to the same name.
        assert_eq!(parsed("ｓｈｏｐ.example.com"), "shop.example.com");
        assert_eq!(parsed("bücher.example"), "xn--bcher-kva.example");
        assert_eq!(parsed("BÜCHER.example"), "xn--bcher-kva.example");
        assert_eq!(parsed("xn--bcher-kva.example"), "xn--bcher-kva.example");
        assert_eq!(parsed("*.Example.com"), "*.example.com");
        // Two hyphens in the third and fourth places are a real world name.
        assert_eq!(parsed("r3---sn-abc.example.com"), "r3---sn-abc.example.com");
        let longest_label = "a".repeat(63);
        assert_eq!(
            parsed(&format!("{longest_label}.com")),
            format!("{longest_label}.com")
        );
    }

    #[test]
    fn what_is_not_a_host_name_is_refused_by_its_rule() {
        for (text, rule) in [
            ("", EMPTY),
            (".", EMPTY),
            ("example", ONE_LABEL),
            ("10.0.0.1", NO_IP),
            ("010.0.0.1", NO_IP),
            ("::1", NO_IP),
            ("[::1]", NO_IP),
            ("example.com:443", NO_PORT),
            ("a.*.example.com", WILDCARD),
            ("**.example.com", WILDCARD),
            ("*example.com", WILDCARD),
            ("*.com", WILDCARD),
            ("shop..example.com", NAME_RULES),
            ("-shop.example.com", NAME_RULES),
            ("shop-.example.com", NAME_RULES),
            ("shop_1.example.com", NAME_RULES),
            ("shop example.com", NAME_RULES),
            ("shop.example.com/path", NAME_RULES),
            ("user@example.com", NAME_RULES),
        ] {
            assert_eq!(HostName::parse(text), Err(rule), "{text:?}");
        }
        let long_label = format!("{}.com", "a".repeat(64));
        assert_eq!(HostName::parse(&long_label), Err(NAME_RULES));
        let long_name = ["abcdefghi"; 26].join(".");
        assert!(long_name.len() > 253);
        assert_eq!(HostName::parse(&long_name), Err(NAME_RULES));
    }

    #[test]
    fn a_wildcard_matches_one_label_under_its_base() {
        let wildcard = HostName::parse("*.example.com").unwrap();
        assert_eq!(wildcard.base(), "example.com");
        assert!(wildcard.matches("a.example.com"));
        assert!(!wildcard.matches("example.com"));
        assert!(!wildcard.matches("a.b.example.com"));
        assert!(!wildcard.matches("aexample.com"));
        assert!(!wildcard.matches(".example.com"));
        let exact = HostName::parse("shop.example.com").unwrap();
        assert!(exact.matches("shop.example.com"));
        assert!(!exact.matches("a.shop.example.com"));
        assert_eq!(exact.covering_wildcard().as_deref(), Some("*.example.com"));
        assert_eq!(
            HostName::parse("example.com").unwrap().covering_wildcard(),
            None
        );
    }
}
