//! The verified names as `follow`'s certificate helpers read them: the
//! `ask` endpoint ([`super::ask`]) and the probe ([`super::certificates`]).
//! After each change it applied, the follower publishes the routing index
//! as it now stands (a `watch`: each reader takes the latest, none waits
//! on another, nobody waits on the service), and notes what the service
//! last said of each name's certificate (`ssl_status`), so that the probe
//! reports only what differs.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::answers::ListedDomain;
use super::routing::RoutingIndex;
use crate::domain::host_name::HostName;

/// The names of the routing index, looked up by host.
#[derive(Default)]
pub struct VerifiedNames {
    /// Each exact name, to its project.
    exact: HashMap<String, String>,
    /// Each wildcard, `*.example.com`.
    wildcards: HashSet<String>,
}

impl VerifiedNames {
    fn of(index: &RoutingIndex) -> Self {
        let mut names = Self::default();
        for (project, name) in index.names() {
            match name.is_wildcard() {
                true => names.wildcards.insert(name.as_str().to_owned()),
                false => names
                    .exact
                    .insert(name.as_str().to_owned(), project.to_owned())
                    .is_none(),
            };
        }
        names
    }

    /// Whether `host` routes here: an exact name of the index, or one
    /// label under one of its wildcards (`domain::host_name`). A wildcard
    /// itself is no host: no certificate is asked for it.
    pub fn routes(&self, host: &HostName) -> bool {
        if host.is_wildcard() {
            return false;
        }
        self.exact.contains_key(host.as_str())
            || host
                .covering_wildcard()
                .is_some_and(|wildcard| self.wildcards.contains(&wildcard))
    }

    /// Each exact name and its project.
    pub fn exact(&self) -> impl Iterator<Item = (&str, &str)> {
        self.exact
            .iter()
            .map(|(name, project)| (name.as_str(), project.as_str()))
    }

    pub fn has_exact(&self, name: &str) -> bool {
        self.exact.contains_key(name)
    }
}

/// What the service last said of each exact name's `ssl_status`: from
/// the domains' listings follow reads (again at every `domain.*` change,
/// whoever changed the status) and from the answers to the probe's own
/// reports. A name it has said nothing of since follow started is
/// unknown.
#[derive(Clone, Default)]
pub struct Said(Arc<Mutex<HashMap<String, bool>>>);

impl Said {
    pub fn get(&self, name: &str) -> Option<bool> {
        self.lock().get(name).copied()
    }

    pub fn set(&self, name: &str, ssl_status: bool) {
        self.lock().insert(name.to_owned(), ssl_status);
    }

    /// Forgets the names `keep` does not hold.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.lock().retain(|name, _| keep(name));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, bool>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Where the follower publishes the names and notes what the service said.
pub struct Served {
    names: watch::Sender<Arc<VerifiedNames>>,
    said: Said,
}

impl Default for Served {
    fn default() -> Self {
        Self {
            names: watch::Sender::new(Arc::default()),
            said: Said::default(),
        }
    }
}

impl Served {
    /// The names, as published from now on.
    pub fn subscribe(&self) -> watch::Receiver<Arc<VerifiedNames>> {
        self.names.subscribe()
    }

    pub fn said(&self) -> Said {
        self.said.clone()
    }

    /// `index` as it now stands, to every reader (none: nothing is done).
    pub fn publish(&self, index: &RoutingIndex) {
        if self.names.receiver_count() > 0 {
            self.names.send_replace(Arc::new(VerifiedNames::of(index)));
        }
    }

    /// A project's verified domains as the service listed them.
    pub fn heard(&self, domains: &[ListedDomain]) {
        for domain in domains {
            self.said.set(&domain.name, domain.ssl_status);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> HostName {
        HostName::parse(name).unwrap()
    }

    #[test]
    fn a_host_routes_by_its_exact_name_or_one_label_under_a_wildcard() {
        let mut index = RoutingIndex::default();
        index.set("p1", ["shop.example.com", "*.example.org"]);
        let names = VerifiedNames::of(&index);
        assert!(names.routes(&host("shop.example.com")));
        assert!(names.routes(&host("SHOP.example.com.")));
        assert!(names.routes(&host("a.example.org")));
        assert!(!names.routes(&host("a.b.example.org")));
        assert!(!names.routes(&host("example.org")));
        assert!(!names.routes(&host("*.example.org")));
        assert!(!names.routes(&host("other.example.com")));
        let exact: Vec<_> = names.exact().collect();
        assert_eq!(exact, [("shop.example.com", "p1")]);
    }
}
