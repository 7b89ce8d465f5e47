//! Who may do what: the actions of the management API's writes and the one
//! decision that allows or refuses each, from what the write read of its
//! caller in its own transaction ([`Facts`]).
//!
//! The rules (`management.md`, `docs/security.md` "Who may write what"):
//! - a token revoked, expired or unknown is refused (401) whatever the
//!   target, before anything about the target is told;
//! - a caller who is not a member of the target's organization learns
//!   nothing: the target is not found (404), whether it exists or not;
//! - a member may see the organization's projects but not change them
//!   (403); editors and admins may.
//!
//! Nothing here reads the store: the store reads the facts and asks.

use super::directory::Role;
use super::time::Timestamp;

/// What a caller does to a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// createProject, updateProject, deleteProject, and a project's proxy
    /// settings (createProjectProxySettings, updateProjectProxySettings,
    /// activation included).
    ChangeProjects,
    /// createApiToken, deleteApiToken: the caller's own tokens, whatever
    /// its roles.
    ChangeOwnTokens,
}

/// The caller's token as the write's transaction finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenState {
    Live,
    Revoked,
    Expired,
    /// No such token: removed since it authenticated.
    Unknown,
}

impl TokenState {
    /// Why a token in this state is refused, as the 401 says it.
    pub fn refusal(self) -> &'static str {
        match self {
            Self::Live => "the API token is valid",
            Self::Revoked => "the API token has been revoked",
            Self::Expired => "the API token has expired",
            Self::Unknown => "the API token is not valid",
        }
    }

    /// The state of a stored token at `now`.
    pub fn at(revoked: bool, expires_at: Option<Timestamp>, now: Timestamp) -> Self {
        if revoked {
            Self::Revoked
        } else if expires_at.is_some_and(|expiry| now >= expiry) {
            Self::Expired
        } else {
            Self::Live
        }
    }
}

/// Everything the decision reads: the caller's token, and its role in the
/// organization of the target (`None`: not a member, or no such target).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    pub token: TokenState,
    pub role: Option<Role>,
}

/// Why an action is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 401: the token no longer authenticates anyone.
    Token(TokenState),
    /// 404: the caller cannot see the target.
    NotFound,
    /// 403: the caller sees the target with a role that may not do this.
    Forbidden(Role),
}

/// Whether the caller of `facts` may do `action`.
pub fn decide(action: Action, facts: Facts) -> Result<(), Refusal> {
    if facts.token != TokenState::Live {
        return Err(Refusal::Token(facts.token));
    }
    match action {
        Action::ChangeOwnTokens => Ok(()),
        Action::ChangeProjects => match facts.role {
            None => Err(Refusal::NotFound),
            Some(role) if role.may_write_projects() => Ok(()),
            Some(role) => Err(Refusal::Forbidden(role)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_and_token_state_gets_its_answer() {
        let live = |role| Facts {
            token: TokenState::Live,
            role,
        };
        for action in [Action::ChangeProjects, Action::ChangeOwnTokens] {
            for token in [
                TokenState::Revoked,
                TokenState::Expired,
                TokenState::Unknown,
            ] {
                for role in [None, Some(Role::Admin)] {
                    assert_eq!(
                        decide(action, Facts { token, role }),
                        Err(Refusal::Token(token))
                    );
                }
            }
        }
        let projects = Action::ChangeProjects;
        assert_eq!(decide(projects, live(None)), Err(Refusal::NotFound));
        assert_eq!(
            decide(projects, live(Some(Role::Member))),
            Err(Refusal::Forbidden(Role::Member))
        );
        assert_eq!(decide(projects, live(Some(Role::Editor))), Ok(()));
        assert_eq!(decide(projects, live(Some(Role::Admin))), Ok(()));
        for role in [None, Some(Role::Member), Some(Role::Admin)] {
            assert_eq!(decide(Action::ChangeOwnTokens, live(role)), Ok(()));
        }
    }

    #[test]
    fn a_token_expires_at_its_instant() {
        let at = |ms| Timestamp::from_millis(ms).unwrap();
        assert_eq!(TokenState::at(false, None, at(5)), TokenState::Live);
        assert_eq!(TokenState::at(false, Some(at(6)), at(5)), TokenState::Live);
        assert_eq!(
            TokenState::at(false, Some(at(5)), at(5)),
            TokenState::Expired
        );
        assert_eq!(TokenState::at(true, None, at(5)), TokenState::Revoked);
    }
}
