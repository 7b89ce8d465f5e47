//! How the store fails: one error type for every operation and driver.
//! Drivers map their own errors to it (lost connections to `Unavailable`,
//! uniqueness violations to `Conflict::Unique`); the HTTP layer maps it to
//! answers, with their status and words.

use crate::domain::FieldError;
use crate::domain::access::Refusal;

/// How a store fails.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached or is not answering in time. The message
    /// is for the server's log only: it never holds SQL or secrets.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Refused without trying: the database is known to be down, and the
    /// outage is logged where it is tracked (`outage`), not per request.
    #[error("store unavailable: the database is down")]
    Down,
    /// Anything else that should not happen. Log only, like `Unavailable`.
    #[error("store fault: {0}")]
    Internal(String),
    /// `start_key` never named an item of the list as the caller sees it.
    #[error("start_key does not name an item of this list")]
    UnknownStartKey,
    #[error("no {kind} with id {id}")]
    NotFound { kind: &'static str, id: String },
    /// The write conflicts with what the store holds.
    #[error("{0}")]
    Conflict(Conflict),
    /// The write names something that does not exist or breaks a rule.
    #[error("{0}")]
    Invalid(FieldError),
    /// The access rule (`domain::access`) refused the caller this action
    /// on a `kind` of object: its token no longer authenticates anyone (a
    /// write reads its token in its own transaction), its role may not, or
    /// it may not see the object. The HTTP layer words the answer.
    #[error("refused on a {kind}: {refusal:?}")]
    Refused {
        refusal: Refusal,
        kind: &'static str,
    },
    /// The user created their most API tokens in the last hour; one of
    /// them leaves the hour in `retry_after_seconds`.
    #[error("the user created {most} API tokens in the last hour")]
    TooManyNewTokens { most: u32, retry_after_seconds: u64 },
    /// The user created their most organizations in the last hour
    /// (createOrganization, `--organizations-per-user-per-hour`).
    #[error("the user created {most} organizations in the last hour")]
    TooManyNewOrganizations { most: u32, retry_after_seconds: u64 },
    /// The organization created its most invitations in the last hour
    /// (deleted and accepted ones count); one leaves the hour in
    /// `retry_after_seconds`.
    #[error("the organization created {most} invitations in the last hour")]
    TooManyNewInvitations { most: u32, retry_after_seconds: u64 },
    /// The object's version is none of those the write's `If-Match`
    /// names.
    #[error("the object's version does not match If-Match")]
    VersionMismatch,
    /// The idempotency key was used with another body.
    #[error("the idempotency key was used with another request body")]
    IdempotencyKeyReused,
    /// The write met a concurrent one and should be tried once more (two
    /// requests with one idempotency key).
    #[error("the write met a concurrent one")]
    Retry,
}

/// What a write conflicted with in the store. The HTTP layer words the
/// answer (`http/error.rs`); this `Display` is for the logs and the
/// operator's commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// A uniqueness rule of the database that the operation did not name:
    /// the driver's description of it (constraint, table, column).
    #[error("a uniqueness rule of the database: {0}")]
    Unique(String),
    /// An object of this kind and id exists already.
    #[error("{kind} {id} already exists")]
    Exists { kind: &'static str, id: String },
    /// An organization with this id, or another with this slug, exists.
    #[error("organization {id} or slug {slug} already exists")]
    OrganizationExists { id: String, slug: String },
    /// Another project of the organization has the slug.
    #[error("slug {slug} taken in the organization")]
    SlugTaken { slug: String },
    /// The project holds its most edge reports, and too few are stale to
    /// make room for a new edge's.
    #[error("the project holds {most} edge reports, too few stale")]
    EdgeReportsFull { most: u32 },
    /// Another project of the organization has the domain name.
    #[error("domain {name} is a domain of project {project_id} of the organization")]
    DomainInOrganization { name: String, project_id: String },
    /// Another organization has verified the domain name.
    #[error("domain {name} is verified by another organization")]
    DomainVerifiedElsewhere { name: String },
    /// The project's revision numbers are all used.
    #[error("no revision number left")]
    NoRevisionNumberLeft,
    /// Another organization has the slug (slugs are unique across the
    /// service).
    #[error("organization slug {slug} taken")]
    OrganizationSlugTaken { slug: String },
    /// The organization still has projects: each is deleted first.
    #[error("the organization has {projects} projects")]
    OrganizationHasProjects { projects: i64 },
    /// The write would leave the organization without an admin.
    #[error("the organization's last admin")]
    LastAdmin,
    /// The revision was deactivated after the request read it for its
    /// checks, which were therefore not run.
    #[error("revision {revision} deactivated while being checked")]
    DeactivatedWhileChecked { revision: u32 },
    /// A rule of rollouts (`docs/rollouts.md`): one at a time, an active
    /// revision to go back to, an action the rollout's state allows.
    #[error("{0}")]
    Rollout(crate::domain::rollout::RolloutRefusal),
}

impl StoreError {
    /// A uniqueness violation (which drivers report as
    /// [`Conflict::Unique`]) as the conflict the operation knows it to be;
    /// anything else keeps its meaning.
    pub(crate) fn conflict_named(self, conflict: impl FnOnce() -> Conflict) -> Self {
        match self {
            Self::Conflict(Conflict::Unique(_)) => Self::Conflict(conflict()),
            other => other,
        }
    }

    /// The store is down or not answering: `outage` logs that once, so a
    /// background task that meets it says nothing more above debug.
    pub(crate) fn is_outage(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Down)
    }
}

impl StoreError {
    /// The access rule's refusal of an action on a `kind` of object.
    pub(crate) fn refused(refusal: Refusal, kind: &'static str) -> Self {
        Self::Refused { refusal, kind }
    }
}
