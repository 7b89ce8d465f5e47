//! The DNS lookups that prove who holds a custom domain (issue 46): the
//! TXT records at `_proxydeck-challenge.<base name>`
//! (`domain::domains::challenge_name`), asked of one resolver (the
//! system's, or the one `--dns-resolver` names).
//!
//! A check must see the record as it is now, the one the customer has
//! just created or changed, so nothing is cached here. It must not hold
//! whoever waits for it either, so every lookup is bounded: a total time
//! shared by at most [`ATTEMPTS`] attempts. And a lookup tells three
//! answers apart ([`Lookup`]): the records, an answer that there are none,
//! and no answer, which proves nothing either way.
//!
//! The records' values are secrets of a kind (whoever reads one early can
//! claim the domain before its holder does): nothing here logs them, and
//! hickory's own lines, which quote whole answers, are never logged below
//! `info` (`telemetry::never_below_info`).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use hickory_resolver::TokioResolver;
use hickory_resolver::config::{NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::rr::{Name, RData};

/// A lookup's whole time, all attempts together, unless
/// [`Resolver::with_timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// How many times one lookup asks at most: a second time after a timeout
/// or an error answer, which a lost UDP packet or a resolver's passing
/// fault explains; never after an answer. (Within an attempt, hickory
/// sends a UDP query again when 333 ms pass without its answer.)
pub const ATTEMPTS: u32 = 2;

/// What one TXT lookup learned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The name's TXT records: each record's character-strings joined into
    /// one text, in the order the answer gave them.
    Found(Vec<String>),
    /// The answer says there is none: the name does not exist (NXDOMAIN)
    /// or has no TXT record.
    Absent,
    /// No answer to go by (a timeout, SERVFAIL, a refusal, an unreachable
    /// resolver, a name that cannot be asked): we cannot tell.
    Failed,
}

/// A TXT resolver without a cache, each lookup bounded in time.
#[derive(Clone)]
pub struct Resolver {
    inner: TokioResolver,
    timeout: Duration,
}

impl Resolver {
    /// The system's resolvers (`/etc/resolv.conf`) when `server` is `None`;
    /// otherwise that server alone, over UDP, and over TCP when an answer
    /// does not fit in a datagram.
    pub fn new(server: Option<SocketAddr>) -> anyhow::Result<Self> {
        let mut builder = match server {
            None => TokioResolver::builder_tokio()
                .context("reading the system's DNS configuration (/etc/resolv.conf)")?,
            Some(server) => {
                let mut name_server = NameServerConfig::udp_and_tcp(server.ip());
                for connection in &mut name_server.connections {
                    connection.port = server.port();
                }
                TokioResolver::builder_with_config(
                    ResolverConfig::from_name_servers(vec![name_server]),
                    TokioRuntimeProvider::default(),
                )
            }
        };
        let options: &mut ResolverOpts = builder.options_mut();
        // No cache: a size of 0 turns hickory's off altogether, so every
        // lookup asks the resolver again (a check must see the record as
        // it is now, not as it was at the last check).
        options.cache_size = 0;
        // The attempts are counted here (`txt`), each bounded here too:
        // hickory tries once, within a timeout that is only a backstop.
        options.attempts = 0;
        options.timeout = DEFAULT_TIMEOUT;
        // DNS only: /etc/hosts holds no TXT record, and must not answer
        // for a customer's name.
        options.use_hosts_file = ResolveHosts::Never;
        let inner = builder.build().context("setting up the DNS resolver")?;
        Ok(Self {
            inner,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// The same resolver with `timeout` as each lookup's whole time.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        Self { timeout, ..self }
    }

    /// The TXT records at `name` as the resolver answers now, within the
    /// timeout. Names are absolute: `example.com` is never looked up under
    /// a search domain.
    pub async fn txt(&self, name: &str) -> Lookup {
        let Some(absolute) = absolute_name(name) else {
            tracing::debug!(name, "DNS lookup not made: not a domain name");
            return Lookup::Failed;
        };
        let each = self.timeout / ATTEMPTS;
        let mut reason = "timed out";
        for _ in 0..ATTEMPTS {
            match tokio::time::timeout(each, self.inner.txt_lookup(absolute.clone())).await {
                Ok(Ok(answer)) => return found(answer.answers()),
                Ok(Err(NetError::Dns(DnsError::NoRecordsFound(_)))) => return Lookup::Absent,
                Ok(Err(NetError::Dns(DnsError::ResponseCode(_)))) => reason = "error answer",
                Ok(Err(_)) => reason = "no answer",
                Err(_elapsed) => reason = "timed out",
            }
        }
        // The name only: an error's text can quote the answer.
        tracing::debug!(name, reason, "DNS lookup failed");
        Lookup::Failed
    }
}

/// `name` as an absolute domain name (IDNA for Unicode, underscores
/// allowed), or `None` when it is not one.
fn absolute_name(name: &str) -> Option<Name> {
    let mut absolute = Name::from_str_relaxed(name).ok()?;
    absolute.set_fqdn(true);
    Some(absolute)
}

/// The TXT records among an answer's records; an answer of other records
/// only (a CNAME to a name without TXT) is an answer that there are none.
fn found(records: &[hickory_resolver::proto::rr::Record]) -> Lookup {
    let texts: Vec<String> = records
        .iter()
        .filter_map(|record| match &record.data {
            RData::TXT(txt) => Some(
                txt.txt_data
                    .iter()
                    .map(|part| String::from_utf8_lossy(part))
                    .collect(),
            ),
            _ => None,
        })
        .collect();
    if texts.is_empty() {
        Lookup::Absent
    } else {
        Lookup::Found(texts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_absolute_and_may_begin_with_an_underscore() {
        let name = absolute_name("_proxydeck-challenge.example.com").unwrap();
        assert!(name.is_fqdn());
        assert_eq!(name.to_ascii(), "_proxydeck-challenge.example.com.");
        assert!(absolute_name("example.com.").unwrap().is_fqdn());
        assert!(absolute_name("a..b").is_none());
    }
}
