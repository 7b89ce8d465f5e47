//! What every write of the management API brings to the store, whatever
//! the object: who writes (for the audit), the operation, the request's
//! `If-Match` and `Idempotency-Key`, and what it answers: one object's JSON
//! with its version (the strong `ETag`). The SQL side of it is
//! `write_steps.rs`; each resource adds its operations on top.

/// How long an `Idempotency-Key` answers with its first answer.
pub const IDEMPOTENCY_WINDOW_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// Who makes a write, as the audit records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    pub user_id: String,
    pub token_id: String,
    pub request_id: String,
}

/// A write request's context: the same for every write operation.
#[derive(Clone, Debug)]
pub struct WriteRequest {
    pub actor: Actor,
    /// The operationId (`createProject`): the audit's `operation` and the
    /// scope of idempotency keys.
    pub operation: &'static str,
    pub if_match: Option<IfMatch>,
    pub idempotency: Option<IdempotencyKey>,
}

/// An `If-Match` header: `*`, or the versions its strong tags name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IfMatch {
    Any,
    Versions(Vec<i64>),
}

impl IfMatch {
    /// Whether an object at `version` meets the condition.
    pub fn accepts(&self, version: i64) -> bool {
        match self {
            Self::Any => true,
            Self::Versions(versions) => versions.contains(&version),
        }
    }
}

/// An `Idempotency-Key` and the digest of the request body it came with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyKey {
    pub key: String,
    /// SHA-256 of the body, lower-case hex.
    pub digest: String,
}

/// One object, as a single-object answer writes it: its JSON and its
/// version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectAnswer {
    pub body: String,
    pub version: i64,
}
