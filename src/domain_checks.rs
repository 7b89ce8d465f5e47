//! The DNS checks of custom domains (`docs/domains.md`, "Checks"): in the
//! background, the names whose check is due (new ones at once, pending
//! ones later each time, verified ones every hour), and now, for
//! updateProjectDomain's `dns_status: true`. A bounded number of lookups
//! is in flight at once, each bounded in time, and none runs on a
//! request's behalf for longer than its timeout: a resolver that does not
//! answer costs a request at most that, and holds no thread.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};

use crate::dns::{Lookup, Resolver};
use crate::domain::domains::{CheckResult, CheckSchedule, challenge_name, holds};
use crate::domain::time::Timestamp;
use crate::metrics;
use crate::store::Store;
use crate::store::operations::domains::{DomainLimits, DueCheck, RecordCheck, TakeDueChecks};

/// What `serve` is told of custom domains.
#[derive(Clone, Debug)]
pub struct DomainOptions {
    /// The DNS server checks ask (`--dns-resolver`); `None`: the system's.
    pub resolver: Option<SocketAddr>,
    /// How long one lookup may take, tries included (`--dns-timeout`).
    pub lookup_timeout: Duration,
    /// Lookups in flight at once, at most (`--dns-checks-in-flight`).
    pub in_flight: usize,
    /// How often the background checks look for names due when nothing
    /// woke them (`--domain-check-poll`).
    pub poll: Duration,
    pub schedule: CheckSchedule,
    pub limits: DomainLimits,
}

impl Default for DomainOptions {
    fn default() -> Self {
        Self {
            resolver: None,
            lookup_timeout: Duration::from_secs(2),
            in_flight: 16,
            poll: Duration::from_secs(5),
            schedule: CheckSchedule::default(),
            limits: DomainLimits {
                per_project: 100,
                pending_per_organization: 1000,
            },
        }
    }
}

pub struct DomainChecks {
    store: Arc<Store>,
    resolver: Resolver,
    /// One permit a lookup in flight.
    slots: Arc<Semaphore>,
    /// Told of a new name, so that its first check does not wait a poll.
    wake: Notify,
    pub options: DomainOptions,
}

impl DomainChecks {
    pub fn new(store: Arc<Store>, options: DomainOptions) -> anyhow::Result<Self> {
        let resolver = Resolver::new(options.resolver)?.with_timeout(options.lookup_timeout);
        Ok(Self {
            store,
            resolver,
            slots: Arc::new(Semaphore::new(options.in_flight.max(1))),
            wake: Notify::new(),
            options,
        })
    }

    /// Looks for the record of the name whose records are under `base`
    /// (a wildcard's base), holding `token`. Waits for a slot no longer
    /// than a lookup takes: with every slot busy, the resolver is too slow
    /// to conclude anything now.
    pub async fn check(&self, base: &str, token: &str) -> CheckResult {
        let wait = self.options.lookup_timeout;
        let Ok(Ok(_slot)) = tokio::time::timeout(wait, self.slots.acquire()).await else {
            metrics::domain_checked(CheckResult::LookupFailed.as_str());
            return CheckResult::LookupFailed;
        };
        let lookup = tokio::time::timeout(wait, self.resolver.txt(&challenge_name(base))).await;
        let result = match lookup {
            Ok(Lookup::Found(records)) if holds(&records, token) => CheckResult::Found,
            Ok(Lookup::Found(_)) => CheckResult::Mismatch,
            Ok(Lookup::Absent) => CheckResult::Absent,
            Ok(Lookup::Failed) | Err(_) => CheckResult::LookupFailed,
        };
        metrics::domain_checked(result.as_str());
        result
    }

    /// A name was added: its first check runs now, not at the next poll.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// The background checks, until the service stops: each round takes
    /// the names due (put off meanwhile, so that another instance does not
    /// take them too), checks them with at most `in_flight` lookups at
    /// once, and records what each found.
    pub async fn run(self: Arc<Self>) {
        loop {
            let more = self.round().await;
            if !more {
                tokio::select! {
                    () = self.wake.notified() => {}
                    () = tokio::time::sleep(self.options.poll) => {}
                }
            }
        }
    }

    /// One round; answers whether more names may be due now.
    async fn round(self: &Arc<Self>) -> bool {
        let batch = (self.options.in_flight * 4).max(1) as u32;
        // Longer than a round can take, so that a name is not taken twice.
        let lease = self.options.lookup_timeout * 4 + Duration::from_secs(30);
        let taken = self
            .store
            .run(TakeDueChecks {
                now: Timestamp::now(),
                limit: batch,
                lease_millis: lease.as_millis() as i64,
            })
            .await;
        let due = match taken {
            Ok(due) => due,
            Err(error) => {
                if !error.is_outage() {
                    tracing::warn!(%error, "cannot read the domains due for a DNS check");
                }
                return false;
            }
        };
        let full = due.len() == batch as usize;
        let mut checks = tokio::task::JoinSet::new();
        for check in due {
            let this = self.clone();
            checks.spawn(async move { this.check_and_record(check).await });
        }
        while checks.join_next().await.is_some() {}
        full
    }

    async fn check_and_record(&self, check: DueCheck) {
        let base = check
            .name
            .strip_prefix("*.")
            .unwrap_or(&check.name)
            .to_owned();
        let result = self.check(&base, &check.token).await;
        let name = check.name.clone();
        let recorded = self
            .store
            .run(RecordCheck {
                check,
                result,
                schedule: self.options.schedule,
            })
            .await;
        // Names are logged: they passed the host name rules, and what an
        // operator needs to know is which one changed.
        match recorded {
            Ok(Some((before, after))) => {
                let project_id = &after.project_id;
                match (before, after.verified) {
                    (false, true) => {
                        tracing::info!(domain = %name, %project_id, "domain verified: it routes")
                    }
                    (true, false) => tracing::warn!(
                        domain = %name,
                        %project_id,
                        "domain's DNS record missing past its grace period: it no longer routes"
                    ),
                    (true, true) if after.missing_since.is_some() => tracing::warn!(
                        domain = %name,
                        %project_id,
                        "verified domain's DNS record is missing: it stops routing when its grace period ends"
                    ),
                    _ => {}
                }
            }
            Ok(None) => {}
            Err(error) => {
                if !error.is_outage() {
                    tracing::warn!(%error, domain = %name, "cannot record a domain's DNS check");
                }
            }
        }
    }
}
