//! The listings' reads: a [`Listing`] says everything that decides a
//! page's answer, and its [`ListingKey`] (hashed once per request) is what
//! the read path knows it by.

use crate::domain::directory::{OrganizationType, Role};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::pagination::PageRequest;

/// A read of one page of a listing: everything that decides its answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Listing {
    /// Projects of `organizations`, by `created_at` then `id`.
    Projects(ProjectsQuery),
    /// A user's tokens that are not revoked, by `created_at` then `id`; each
    /// item is an api_token object with its hint in `token`.
    ApiTokens(ApiTokensQuery),
    /// Revisions of a project visible to the caller, by `revision`;
    /// `StoreError::NotFound` when the project is unknown or invisible.
    ProxySettings(ProxySettingsQuery),
    /// A user's organizations, each an organization object, by the
    /// organization's `created_at` then `id`.
    Organizations(OrganizationsQuery),
    /// An organization's members, each an OrganizationUser object, by
    /// when they joined then the user's id.
    Members(MembersQuery),
}

impl Listing {
    /// The store operation's name, as metrics know it.
    pub fn operation(&self) -> &'static str {
        match self {
            Self::Projects(_) => "list_projects",
            Self::ApiTokens(_) => "list_api_tokens",
            Self::ProxySettings(_) => "list_proxy_settings",
            Self::Organizations(_) => "list_organizations",
            Self::Members(_) => "list_organizations_users",
        }
    }
}

/// A [`Listing`] with its hash, computed once per request: the key every
/// cache of the read path knows the read by.
#[derive(Clone, Debug)]
pub struct ListingKey {
    listing: Listing,
    hash: u64,
}

impl ListingKey {
    pub fn new(listing: Listing) -> Self {
        use std::hash::{Hash, Hasher};
        let mut hasher = twox_hash::XxHash3_64::default();
        listing.hash(&mut hasher);
        Self {
            hash: hasher.finish(),
            listing,
        }
    }

    pub fn listing(&self) -> &Listing {
        &self.listing
    }

    /// A 64-bit digest of everything in the read.
    pub fn digest(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
impl ListingKey {
    /// A key of its own for each `name` (a user's first page of tokens),
    /// for tests of caches, which never look inside a key.
    pub(crate) fn example(name: &str) -> Self {
        Self::new(Listing::ApiTokens(ApiTokensQuery {
            user_id: name.into(),
            name: None,
            page: PageRequest {
                start_key: None,
                direction: Default::default(),
                limit: 20,
            },
        }))
    }
}

impl PartialEq for ListingKey {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.listing == other.listing
    }
}

impl Eq for ListingKey {}

impl std::hash::Hash for ListingKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProjectsQuery {
    /// The organizations whose projects make the list; already narrowed to
    /// those the caller belongs to.
    pub organizations: OrganizationSet,
    pub page: PageRequest,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OrganizationsQuery {
    pub user_id: String,
    /// Only organizations of this type.
    pub kind: Option<OrganizationType>,
    pub page: PageRequest,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MembersQuery {
    /// The organization (the caller is one of its members: decided
    /// before).
    pub organization_id: String,
    /// Only the members of this role.
    pub role: Option<Role>,
    pub page: PageRequest,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ApiTokensQuery {
    pub user_id: String,
    /// Exact match on the token's name.
    pub name: Option<String>,
    pub page: PageRequest,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProxySettingsQuery {
    pub project_id: String,
    /// The caller's organizations: the project must belong to one of them.
    pub visible_to: OrganizationSet,
    pub page: PageRequest,
}
