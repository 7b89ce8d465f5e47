//! The service's side of rollouts (`docs/rollouts.md`, "Who drives it"):
//! every instance looks at the live rollouts once a second, and at once
//! when one begins here, and takes the step each one's rules call for (a
//! stage reached, a success, a rollback). Each step is one write that
//! decides again under the organization's lock from what is stored, and
//! changes the rollout only from the version it read: instances side by
//! side, or one restarted, never take a step twice, and a step due while
//! none ran is taken at the first look after.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::store::Store;
use crate::store::operations::rollouts::{LiveRollouts, StepRollout};

/// How often the live rollouts are looked at: a stage's health is judged
/// within this of a report, its bake within this of its end.
const LOOK_EVERY: Duration = Duration::from_secs(1);

pub struct Rollouts {
    store: Arc<Store>,
    /// Told of a rollout begun here, so that a plan without bake time
    /// goes on without waiting a look.
    wake: Notify,
}

impl Rollouts {
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            wake: Notify::new(),
        }
    }

    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Looks until the service stops.
    pub async fn run(self: Arc<Self>) {
        loop {
            self.look().await;
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(LOOK_EVERY) => {}
            }
        }
    }

    /// One look at every live rollout.
    async fn look(&self) {
        let live = match self.store.run(LiveRollouts).await {
            Ok(live) => live,
            Err(error) => {
                if !error.is_outage() {
                    tracing::warn!(%error, "cannot read the live rollouts");
                }
                return;
            }
        };
        for (project_id, number) in live {
            let step = StepRollout {
                project_id: project_id.clone(),
                number,
            };
            match self.store.run(step).await {
                Ok(Some(taken)) => match &taken.reason {
                    Some(reason) => tracing::warn!(
                        %project_id, rollout = number, state = taken.state.as_str(), %reason,
                        "rollout ended: every edge back on the previous revision"
                    ),
                    None => tracing::info!(
                        %project_id, rollout = number, state = taken.state.as_str(),
                        stage = taken.stage, "rollout went on"
                    ),
                },
                Ok(None) => {}
                // Another instance took the step first: it is taken.
                Err(crate::store::StoreError::VersionMismatch) => {}
                Err(error) => {
                    if !error.is_outage() {
                        tracing::warn!(%error, %project_id, rollout = number, "cannot step a rollout");
                    }
                }
            }
        }
    }
}
