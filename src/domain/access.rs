//! Who may do what: every action of the API and the one decision that
//! allows or refuses it, from the caller's facts toward the target
//! ([`Facts`]).
//!
//! The rules (`docs/management.md`, `docs/security.md` "Who sees what" and "Who
//! may write what"):
//! - a token revoked, expired or unknown is refused (401) whatever the
//!   target, before anything about the target is told;
//! - a caller who is not a member of the target's organization (or not the
//!   owner of the target token) learns nothing: the target is not found
//!   (404), whether it exists or not, whatever the method;
//! - every member may read the organization's projects and their proxy
//!   settings; editors and admins may change them, a member is refused
//!   (403);
//! - every role manages its own tokens, and no one else's;
//! - every member reads the organization's members; only admins rename or
//!   delete it, change roles, remove others and invite (docs/teams.md);
//!   every member may leave; any user may create an organization (the
//!   service's `--organization-creation` may keep that to operators);
//! - a user is read by itself and by those it shares an organization
//!   with, and changed by itself only.
//!
//! Nothing here reads the store: the callers read the facts and ask. Reads
//! ask on the token's cached organizations (which know membership, not the
//! role); writes ask on facts read in their own transaction (the token as
//! stored now, the role). Listings filter in SQL by the same rule; the
//! table-driven test `access_rules` checks each filter against [`decide`].

use super::directory::Role;
use super::time::Timestamp;

/// What a caller does to a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// listProjects (of an organization), getProject, and the listing of a
    /// project's proxy settings.
    ReadProjects,
    /// createProject, updateProject, deleteProject, createProjectProxySettings,
    /// and a revision's description (updateProjectProxySettings).
    ChangeProjects,
    /// Making a revision the active one (updateProjectProxySettings with
    /// `is_active`): what the edges serve.
    ActivateRevision,
    /// getOrganization, getMyOrganization, and the organizations listing.
    ReadOrganization,
    /// getMe, and the listing and getApiToken of the caller's own tokens.
    ReadOwn,
    /// createApiToken, deleteApiToken: the caller's own tokens.
    ChangeOwnTokens,
    /// createOrganization: asked with the caller as the target's owner.
    CreateOrganization,
    /// listOrganizationsUsers.
    ReadMembers,
    /// updateOrganization, deleteOrganization, updateOrganizationUser,
    /// deleteOrganizationUser of another user, and the invitations
    /// (create, list, get, delete).
    ManageOrganization,
    /// deleteOrganizationUser of the caller itself.
    LeaveOrganization,
    /// getUser: the caller itself, or a user it shares an organization
    /// with (a member of it).
    ReadUser,
    /// updateUser: the caller itself only.
    ChangeOwnUser,
}

impl Action {
    pub const ALL: [Action; 12] = [
        Action::ReadProjects,
        Action::ChangeProjects,
        Action::ActivateRevision,
        Action::ReadOrganization,
        Action::ReadOwn,
        Action::ChangeOwnTokens,
        Action::CreateOrganization,
        Action::ReadMembers,
        Action::ManageOrganization,
        Action::LeaveOrganization,
        Action::ReadUser,
        Action::ChangeOwnUser,
    ];

    /// What a refused role may not do, as the 403 says it.
    fn forbidden(self) -> &'static str {
        match self {
            Action::ActivateRevision => "activate the organization's proxy settings",
            Action::ManageOrganization => "manage the organization, its members and invitations",
            Action::ChangeOwnUser => "change another user",
            _ => "change the organization's projects",
        }
    }
}

/// The caller's token as the deciding read finds it.
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

/// Where the caller stands toward the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Not a member of the target's organization, not the target's owner,
    /// or no such target: the two are never told apart.
    Stranger,
    /// A member of the target's organization, with its role when the
    /// deciding read knows it (a write's does; the token's cached
    /// organizations know membership only).
    Member(Option<Role>),
    /// The target is the caller's own (its token, its user).
    Owner,
}

/// Everything the decision reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    pub token: TokenState,
    pub standing: Standing,
}

impl Facts {
    /// A live token's caller standing so toward the target: what a read
    /// knows once authentication let its token through.
    pub fn live(standing: Standing) -> Self {
        Self {
            token: TokenState::Live,
            standing,
        }
    }
}

/// Why an action is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 401: the token no longer authenticates anyone.
    Token(TokenState),
    /// 404: the caller cannot see the target.
    NotFound,
    /// 403: the caller sees the target with a role that may not do this.
    Forbidden { role: Role, may_not: &'static str },
}

/// Whether the caller of `facts` may do `action`.
pub fn decide(action: Action, facts: Facts) -> Result<(), Refusal> {
    if facts.token != TokenState::Live {
        return Err(Refusal::Token(facts.token));
    }
    match (action, facts.standing) {
        (Action::ReadProjects | Action::ReadOrganization, Standing::Member(_)) => Ok(()),
        (Action::ChangeProjects | Action::ActivateRevision, Standing::Member(role)) => {
            // A write decides on the role read in its own transaction; one
            // that did not read it is refused as the least role.
            let role = role.unwrap_or(Role::Member);
            if role.may_write_projects() {
                Ok(())
            } else {
                Err(Refusal::Forbidden {
                    role,
                    may_not: action.forbidden(),
                })
            }
        }
        (Action::ManageOrganization, Standing::Member(role)) => {
            let role = role.unwrap_or(Role::Member);
            if role == Role::Admin {
                Ok(())
            } else {
                Err(Refusal::Forbidden {
                    role,
                    may_not: action.forbidden(),
                })
            }
        }
        (Action::ReadMembers | Action::LeaveOrganization, Standing::Member(_)) => Ok(()),
        (Action::ReadUser, Standing::Member(_) | Standing::Owner) => Ok(()),
        (Action::ChangeOwnUser, Standing::Member(role)) => Err(Refusal::Forbidden {
            role: role.unwrap_or(Role::Member),
            may_not: action.forbidden(),
        }),
        (
            Action::ReadOwn
            | Action::ChangeOwnTokens
            | Action::CreateOrganization
            | Action::ChangeOwnUser,
            Standing::Owner,
        ) => Ok(()),
        _ => Err(Refusal::NotFound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_that_is_not_live_is_refused_whatever_the_rest() {
        for action in Action::ALL {
            for token in [
                TokenState::Revoked,
                TokenState::Expired,
                TokenState::Unknown,
            ] {
                for standing in [
                    Standing::Stranger,
                    Standing::Member(Some(Role::Admin)),
                    Standing::Owner,
                ] {
                    assert_eq!(
                        decide(action, Facts { token, standing }),
                        Err(Refusal::Token(token))
                    );
                }
            }
        }
    }

    #[test]
    fn each_standing_gets_its_answer() {
        use Action::*;
        let member = |role| Facts::live(Standing::Member(role));
        for action in Action::ALL {
            assert_eq!(
                decide(action, Facts::live(Standing::Stranger)),
                Err(Refusal::NotFound),
                "{action:?}"
            );
        }
        for role in [
            None,
            Some(Role::Admin),
            Some(Role::Editor),
            Some(Role::Member),
        ] {
            assert_eq!(decide(ReadProjects, member(role)), Ok(()));
            assert_eq!(decide(ReadOrganization, member(role)), Ok(()));
            assert_eq!(decide(ReadOwn, member(role)), Err(Refusal::NotFound));
        }
        for action in [CreateOrganization, ReadUser, ChangeOwnUser] {
            assert_ne!(
                decide(action, Facts::live(Standing::Owner)),
                Err(Refusal::NotFound)
            );
        }
        for action in [ChangeProjects, ActivateRevision] {
            assert_eq!(decide(action, member(Some(Role::Admin))), Ok(()));
            assert_eq!(decide(action, member(Some(Role::Editor))), Ok(()));
            for role in [None, Some(Role::Member)] {
                assert!(matches!(
                    decide(action, member(role)),
                    Err(Refusal::Forbidden {
                        role: Role::Member,
                        ..
                    })
                ));
            }
            assert_eq!(
                decide(action, Facts::live(Standing::Owner)),
                Err(Refusal::NotFound)
            );
        }
        for action in [
            ReadOwn,
            ChangeOwnTokens,
            CreateOrganization,
            ReadUser,
            ChangeOwnUser,
        ] {
            assert_eq!(decide(action, Facts::live(Standing::Owner)), Ok(()));
        }
    }

    #[test]
    fn only_admins_manage_an_organization_and_every_member_reads_and_leaves() {
        use Action::*;
        let member = |role| Facts::live(Standing::Member(role));
        assert_eq!(
            decide(ManageOrganization, member(Some(Role::Admin))),
            Ok(())
        );
        for role in [None, Some(Role::Editor), Some(Role::Member)] {
            assert!(matches!(
                decide(ManageOrganization, member(role)),
                Err(Refusal::Forbidden { may_not, .. }) if may_not.contains("members")
            ));
            assert_eq!(decide(ReadMembers, member(role)), Ok(()));
            assert_eq!(decide(LeaveOrganization, member(role)), Ok(()));
            assert_eq!(decide(ReadUser, member(role)), Ok(()));
            assert!(matches!(
                decide(ChangeOwnUser, member(role)),
                Err(Refusal::Forbidden { .. })
            ));
            assert_eq!(
                decide(CreateOrganization, member(role)),
                Err(Refusal::NotFound)
            );
        }
        for action in [ManageOrganization, ReadMembers, LeaveOrganization] {
            assert_eq!(
                decide(action, Facts::live(Standing::Owner)),
                Err(Refusal::NotFound)
            );
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
