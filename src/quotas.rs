//! What one caller may hold of the service at once, so that no caller
//! holds it for everyone else (`docs/security.md`, "Limits per caller"):
//! the change feed's open streams and long polls per token and per user
//! (counted per instance), new API tokens per user per hour (counted in
//! the store), and edge reports per project (kept in the store).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The limits, each a `serve` flag.
#[derive(Clone, Debug)]
pub struct QuotaOptions {
    /// Streams and long polls one API token may hold open at once on one
    /// instance (`--feed-follows-per-token`).
    pub follows_per_token: u32,
    /// Streams and long polls one user may hold open at once on one
    /// instance, whatever tokens they come with (`--feed-follows-per-user`).
    pub follows_per_user: u32,
    /// API tokens one user may create in an hour (`--tokens-per-user-per-hour`).
    pub tokens_per_user_per_hour: u32,
    /// Edge reports a project keeps (`--edge-reports-per-project`).
    pub edge_reports_per_project: u32,
    /// Who creates organizations (`--organization-creation`).
    pub organization_creation: OrganizationCreation,
    /// Organizations one user may create over the API in an hour
    /// (`--organizations-per-user-per-hour`).
    pub organizations_per_user_per_hour: u32,
}

/// Who may create an organization (docs/teams.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OrganizationCreation {
    /// Any user with a live token (createOrganization).
    #[default]
    Anyone,
    /// Only the operator (`proxydeck admin org create`): createOrganization
    /// is a 403.
    Operators,
}

impl Default for QuotaOptions {
    fn default() -> Self {
        Self {
            follows_per_token: 20,
            follows_per_user: 50,
            tokens_per_user_per_hour: 100,
            edge_reports_per_project: 1000,
            organization_creation: OrganizationCreation::Anyone,
            organizations_per_user_per_hour: 10,
        }
    }
}

/// How a refused follow is retried: a stream closes when its client goes,
/// so a second is as good a guess as any.
pub const FOLLOW_RETRY_AFTER_SECONDS: u64 = 1;

/// The open follows (streams and long polls) of this instance, by token
/// and by user.
#[derive(Debug)]
pub struct Follows {
    per_token: u32,
    per_user: u32,
    open: Arc<Mutex<Open>>,
}

#[derive(Debug, Default)]
struct Open {
    tokens: HashMap<String, u32>,
    users: HashMap<String, u32>,
}

/// Why a follow was refused: which count is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FollowRefusal {
    Token(u32),
    User(u32),
}

impl Follows {
    pub fn new(options: &QuotaOptions) -> Self {
        Self {
            per_token: options.follows_per_token,
            per_user: options.follows_per_user,
            open: Arc::default(),
        }
    }

    /// One more open follow for `token_id` of `user_id`, held until the
    /// answer drops the [`FollowSlot`]; refused when either count is full.
    pub fn open(&self, token_id: &str, user_id: &str) -> Result<FollowSlot, FollowRefusal> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let by_token = open.tokens.get(token_id).copied().unwrap_or(0);
        let by_user = open.users.get(user_id).copied().unwrap_or(0);
        if by_token >= self.per_token {
            return Err(FollowRefusal::Token(self.per_token));
        }
        if by_user >= self.per_user {
            return Err(FollowRefusal::User(self.per_user));
        }
        *open.tokens.entry(token_id.to_owned()).or_default() += 1;
        *open.users.entry(user_id.to_owned()).or_default() += 1;
        Ok(FollowSlot {
            open: self.open.clone(),
            token_id: token_id.to_owned(),
            user_id: user_id.to_owned(),
        })
    }
}

/// An open follow, counted until dropped.
#[derive(Debug)]
pub struct FollowSlot {
    open: Arc<Mutex<Open>>,
    token_id: String,
    user_id: String,
}

impl Drop for FollowSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let Open { tokens, users } = &mut *open;
        for (counts, key) in [(tokens, &self.token_id), (users, &self.user_id)] {
            if let Some(count) = counts.get_mut(key) {
                *count -= 1;
                // Keys of callers gone are let go: the maps hold only the
                // callers following now.
                if *count == 0 {
                    counts.remove(key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_are_counted_per_token_and_per_user_until_dropped() {
        let follows = Follows::new(&QuotaOptions {
            follows_per_token: 2,
            follows_per_user: 3,
            ..QuotaOptions::default()
        });
        let a1 = follows.open("a", "u").unwrap();
        let _a2 = follows.open("a", "u").unwrap();
        assert_eq!(follows.open("a", "u").unwrap_err(), FollowRefusal::Token(2));
        let _b1 = follows.open("b", "u").unwrap();
        assert_eq!(follows.open("b", "u").unwrap_err(), FollowRefusal::User(3));
        let _other = follows.open("c", "v").unwrap();
        drop(a1);
        let _b2 = follows.open("b", "u").unwrap();
        drop(_b2);
        drop(_b1);
        drop(_a2);
        let open = follows.open.lock().unwrap();
        assert_eq!(open.tokens.len(), 1);
        assert_eq!(open.users.len(), 1);
    }
}
