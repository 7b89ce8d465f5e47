//! What authentication and the token operations exchange with the store:
//! a token as authentication needs it, its uses, and a new token (its
//! digest and hint: the secret never reaches the store).

use crate::domain::ids;
use crate::domain::organization_set::OrganizationSet;
use crate::domain::time::Timestamp;
use crate::domain::token::{self, TokenDigest};

/// A token as authentication needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenGrant {
    pub token_id: String,
    pub user_id: String,
    /// The user's organizations.
    pub organizations: OrganizationSet,
    pub expires_at: Option<Timestamp>,
    pub revoked: bool,
    pub last_used_at: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenUse {
    pub token_id: String,
    pub used_at: Timestamp,
}

/// A token to store. The secret itself is not here: only its digest and
/// hint.
#[derive(Clone, Debug)]
pub struct NewToken {
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub from_browser: bool,
    pub digest: TokenDigest,
    pub hint: String,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
}

impl NewToken {
    /// A fresh token for `user_id`: the record to store, and the secret,
    /// which is shown once to its owner and never stored.
    pub fn mint(user_id: String, name: String, expires_at: Option<Timestamp>) -> (Self, String) {
        let secret = token::generate();
        let token = Self {
            id: ids::new_id(),
            user_id,
            name,
            from_browser: false,
            digest: token::digest(&secret),
            hint: token::hint(&secret),
            created_at: Timestamp::now(),
            expires_at,
        };
        (token, secret)
    }
}
