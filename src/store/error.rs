//! How the store fails: one error type for every operation and driver.
//! Drivers map their own errors to it (lost connections to `Unavailable`,
//! uniqueness violations to `Conflict`); the HTTP layer maps it to answers.

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
    /// The write would break a uniqueness rule.
    #[error("{0}")]
    Conflict(String),
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

impl StoreError {
    /// A uniqueness violation (which drivers report as `Conflict`) with its
    /// proper message; anything else keeps its meaning.
    pub(crate) fn conflict_named(self, message: impl FnOnce() -> String) -> Self {
        match self {
            Self::Conflict(_) => Self::Conflict(message()),
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
