//! Failed authentications per client address: a flood of made-up tokens
//! from one address is refused (429) before its look-ups reach the store,
//! once the address has failed more than its policy allows. The same GCRA
//! as the per-token limits, in memory, keyed by the address.
//!
//! A refused address still gets through with a token the authenticator
//! remembers (its cache answers without the store); a token it would have
//! to look up waits for the address's bucket to drain.

use std::net::IpAddr;
use std::sync::Arc;

use super::{LocalLimiter, Policy, Verdict};
use crate::clock::Clock;

/// 10 failures a second sustained, 20 at once: a person mistyping, a
/// script with a stale token retrying, never come near it.
pub fn default_policy() -> Policy {
    Policy::new(10.0, None).expect("the default policy is valid")
}

pub struct FailureLimiter {
    addresses: LocalLimiter,
}

impl FailureLimiter {
    pub fn new(policy: &Policy, clock: Clock) -> Self {
        Self {
            addresses: LocalLimiter::new(policy, clock),
        }
    }

    /// The refusal a request from `address` gets before a store look-up,
    /// when the address has failed too often; `None` when it may go on.
    pub fn refusal(&self, address: IpAddr) -> Option<Verdict> {
        self.addresses.refusal(&address.to_string())
    }

    /// Counts one failed authentication from `address`.
    pub fn record(&self, address: IpAddr) {
        self.addresses.check(&address.to_string());
    }

    /// Drops addresses whose bucket is full again, every sweep interval.
    pub async fn run_sweeper(self: Arc<Self>) {
        self.addresses.keep_swept().await;
    }
}
