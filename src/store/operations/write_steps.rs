//! The parts every write of the management API shares, on any SQL
//! backend, each run inside the write's own transaction: the caller's role
//! in an organization, `If-Match` against an object's version, the replay
//! and keeping of `Idempotency-Key` answers, and the audit record.

use super::changes;
use super::memberships::role;
use super::write_request::{IDEMPOTENCY_WINDOW_MILLIS, ObjectAnswer, WriteRequest};
use crate::domain::access::{self, Action, Facts, Standing, TokenState};
use crate::domain::change::ChangeKind;
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::sql::db::{Db, Param, query_opt};
use crate::store::sql::keyset::timestamp_opt;

/// Expired idempotency keys removed by one write, at most: the clean-up is
/// bounded work, spread over the writes that use keys.
const EXPIRED_KEYS_PER_WRITE: i64 = 100;

/// [`lock_organization`]'s statement.
pub(crate) const LOCK_ORGANIZATION: &str =
    "UPDATE organizations SET name = name WHERE id = ?1 RETURNING number";

/// Takes the organization's row lock for the rest of the transaction, so
/// that writes to one organization's objects run one after the other
/// (PostgreSQL; SQLite's write transactions already do). Answers the
/// organization's number (where its projects are stored), `None` when it
/// does not exist.
///
/// The column set is `name`, never the key: SQLite checks the foreign keys
/// of every row that references a key named in an UPDATE, even one set to
/// itself, which made each write to an organization of 100,000 projects
/// take over a second (found by the benchmark's HTTP write runs; the
/// SQLite store's tests check the statement's plan).
pub(super) async fn lock_organization(
    db: &mut dyn Db,
    organization_id: &str,
) -> Result<Option<i64>, StoreError> {
    query_opt(
        db,
        LOCK_ORGANIZATION,
        &[Param::Text(organization_id)],
        |row| row.int(0),
    )
    .await
}

/// What a write acts on, as its caller's facts are read.
#[derive(Clone, Copy, Debug)]
pub(super) enum Target<'a> {
    /// A project (by id) of some organization: updateProject,
    /// deleteProject, a project's proxy settings.
    Project(&'a str),
    /// An organization (by id): createProject.
    Organization(&'a str),
    /// The caller's own tokens, as a whole: createApiToken.
    OwnTokens,
    /// A token (by id), the caller's or not: deleteApiToken.
    Token(&'a str),
    /// The caller itself: createOrganization.
    Caller,
    /// A user (by id): the caller itself, one it shares an organization
    /// with (a member of it, the caller's role there), or a stranger:
    /// updateUser.
    User(&'a str),
}

impl Target<'_> {
    /// What the caller is told it could not find.
    fn kind(self) -> &'static str {
        match self {
            Self::Project(_) => "project",
            Self::Organization(_) => "organization",
            Self::OwnTokens | Self::Token(_) => "api token",
            Self::Caller | Self::User(_) => "user",
        }
    }
}

/// The caller's token and where it stands toward the target, in one
/// statement. The columns: revoked, expires_at, the target's organization
/// (when the target is a project, or the caller a member of it), the
/// caller's role there, whether the target token is the caller's own.
const CALLER_AND_PROJECT: &str = "SELECT t.revoked_at IS NOT NULL, t.expires_at,
        p.organization_id, m.role, FALSE
   FROM api_tokens t
   LEFT JOIN projects p ON p.id = ?2 AND p.deleted_at IS NULL
   LEFT JOIN memberships m ON m.organization_id = p.organization_id AND m.user_id = t.user_id
  WHERE t.id = ?1";
const CALLER_IN_ORGANIZATION: &str = "SELECT t.revoked_at IS NOT NULL, t.expires_at,
        m.organization_id, m.role, FALSE
   FROM api_tokens t
   LEFT JOIN memberships m ON m.organization_id = ?2 AND m.user_id = t.user_id
  WHERE t.id = ?1";
const CALLER: &str = "SELECT t.revoked_at IS NOT NULL, t.expires_at,
        CAST(NULL AS TEXT), CAST(NULL AS TEXT), TRUE
   FROM api_tokens t
  WHERE t.id = ?1";
const CALLER_AND_TOKEN: &str = "SELECT t.revoked_at IS NOT NULL, t.expires_at,
        CAST(NULL AS TEXT), CAST(NULL AS TEXT), o.id IS NOT NULL
   FROM api_tokens t
   LEFT JOIN api_tokens o ON o.id = ?2 AND o.user_id = t.user_id AND o.revoked_at IS NULL
  WHERE t.id = ?1";

const CALLER_AND_USER: &str = "SELECT t.revoked_at IS NOT NULL, t.expires_at,
        CAST(NULL AS TEXT),
        CASE WHEN t.user_id = ?2 THEN NULL ELSE
          (SELECT c.role FROM memberships c
             JOIN memberships u ON u.organization_id = c.organization_id AND u.user_id = ?2
            WHERE c.user_id = t.user_id LIMIT 1) END,
        t.user_id = ?2
   FROM api_tokens t
  WHERE t.id = ?1";

/// Decides whether the write's caller may do `action` to `target`
/// ([`access::decide`]), from facts read in the write's transaction: the
/// token as stored now (a token revoked a moment ago writes nothing, on
/// any instance, whatever the token cache holds) and where the caller
/// stands toward the target (its role in the target's organization, or
/// whether the target token is its own). Answers the target's
/// organization, for the lock.
///
/// A target that does not exist and one the caller cannot see cost the
/// same one statement and are refused alike, before any lock is taken:
/// the time of a refusal does not tell them apart.
pub(super) async fn authorize(
    db: &mut dyn Db,
    request: &WriteRequest,
    action: Action,
    target: Target<'_>,
    now: Timestamp,
) -> Result<Option<String>, StoreError> {
    let token = Param::Text(&request.actor.token_id);
    let (sql, id) = match target {
        Target::Project(id) => (CALLER_AND_PROJECT, Some(id)),
        Target::Organization(id) => (CALLER_IN_ORGANIZATION, Some(id)),
        Target::OwnTokens | Target::Caller => (CALLER, None),
        Target::User(id) => (CALLER_AND_USER, Some(id)),
        Target::Token(id) => (CALLER_AND_TOKEN, Some(id)),
    };
    let params: &[Param] = match &id {
        Some(id) => &[token, Param::Text(id)],
        None => &[token],
    };
    let found = query_opt(db, sql, params, |row| {
        let token = TokenState::at(row.boolean(0)?, timestamp_opt(row, 1)?, now);
        let organization = (!row.is_null(2)?).then(|| row.text(2)).transpose()?;
        let standing = if !row.is_null(3)? {
            Standing::Member(Some(role(row, 3)?))
        } else if row.boolean(4)? {
            Standing::Owner
        } else {
            Standing::Stranger
        };
        Ok((Facts { token, standing }, organization))
    })
    .await?;
    let (facts, organization) = found.unwrap_or((
        Facts {
            token: TokenState::Unknown,
            standing: Standing::Stranger,
        },
        None,
    ));
    access::decide(action, facts).map_err(|refusal| StoreError::refused(refusal, target.kind()))?;
    Ok(organization)
}

/// Whether a write's caller may do `action` to a project or in an
/// organization, asked before the write does any work that grows with its
/// body (checking its regexes): the same statement and refusals (401,
/// 403, 404 alike for what does not exist and what the caller cannot see)
/// as the write's own transaction, which decides again. A read: no lock
/// is taken, nothing is written.
#[derive(Clone, Debug)]
pub struct MayWrite {
    pub request: WriteRequest,
    pub action: Action,
    pub target: WriteTarget,
}

/// What a [`MayWrite`] asks about.
#[derive(Clone, Debug)]
pub enum WriteTarget {
    /// A project, by id (updateProject, a project's proxy settings).
    Project(String),
    /// An organization, by id (createProject).
    Organization(String),
}

operation!(MayWrite => may_write, FreshRead, "may_write" -> ());

async fn may_write(db: &mut dyn Db, asked: &MayWrite) -> Result<(), StoreError> {
    let now = Timestamp::now();
    let target = match &asked.target {
        WriteTarget::Project(id) => Target::Project(id),
        WriteTarget::Organization(id) => Target::Organization(id),
    };
    // One statement: no transaction needed.
    let organization = authorize(db, &asked.request, asked.action, target, now).await?;
    match (organization, target) {
        (Some(_), _) => Ok(()),
        (None, target) => Err(StoreError::NotFound {
            kind: target.kind(),
            id: String::new(),
        }),
    }
}

/// Takes the user's row lock for the rest of the transaction (PostgreSQL;
/// SQLite's writes are one at a time): a user's creations at once cannot
/// pass an hourly bound together, nor its updates interleave. The column set is not a key:
/// SQLite checks no foreign key for it.
pub(super) async fn lock_user(db: &mut dyn Db, user_id: &str) -> Result<(), StoreError> {
    db.execute(
        "UPDATE users SET email = email WHERE id = ?1",
        &[Param::Text(user_id)],
    )
    .await?;
    Ok(())
}

/// An hour, as the hourly bounds count it.
const HOUR_MILLIS: i64 = 3_600_000;

/// Whether an hourly bound is full (docs/security.md, "Limits per
/// caller"): `nth_newest` is the bound's own statement, on its own index,
/// selecting the `created_at` of an owner's (`?1`) creations after `?2`,
/// newest first, `LIMIT 1 OFFSET ?3`. The `most`-th newest of the hour:
/// while it is in the hour the owner has made `most`, and a slot is free
/// when it leaves it. Answers `Some` whole seconds until then (at least
/// one) when the bound is full. The caller holds the lock that keeps
/// creations at once from passing the bound together.
pub(super) async fn hourly_bound_full(
    db: &mut dyn Db,
    nth_newest: &str,
    owner: &str,
    most: u32,
    now: Timestamp,
) -> Result<Option<u64>, StoreError> {
    let nth = query_opt(
        db,
        nth_newest,
        &[
            Param::Text(owner),
            Param::Int(now.as_millis() - HOUR_MILLIS),
            Param::Int(i64::from(most) - 1),
        ],
        |row| row.int(0),
    )
    .await?;
    Ok(nth.map(|created_at| {
        let wait = created_at + HOUR_MILLIS - now.as_millis();
        u64::try_from(wait.max(0))
            .unwrap_or(0)
            .div_ceil(1000)
            .max(1)
    }))
}

/// `If-Match` against the object's version now.
pub(super) fn check_if_match(request: &WriteRequest, version: i64) -> Result<(), StoreError> {
    match &request.if_match {
        Some(condition) if !condition.accepts(version) => Err(StoreError::VersionMismatch),
        _ => Ok(()),
    }
}

/// The kept answer of the request's idempotency key, if it has one: the
/// same body gets it again; another body is refused. A key is kept for
/// its user, operation and `target` (the object of the request's path,
/// empty when the path names none): the same key sent to another project
/// is a request of its own. Run after [`authorize`]: a caller who may no
/// longer make the request gets its refusal, not the kept answer. Expired
/// keys are removed here, a bounded number at a time.
pub(super) async fn replay(
    db: &mut dyn Db,
    request: &WriteRequest,
    target: &str,
    now: Timestamp,
) -> Result<Option<ObjectAnswer>, StoreError> {
    let Some(idempotency) = &request.idempotency else {
        return Ok(None);
    };
    let oldest = now.as_millis() - IDEMPOTENCY_WINDOW_MILLIS;
    db.execute(
        "DELETE FROM idempotency_keys WHERE (user_id, operation, target, key) IN
           (SELECT user_id, operation, target, key FROM idempotency_keys
             WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)",
        &[Param::Int(oldest), Param::Int(EXPIRED_KEYS_PER_WRITE)],
    )
    .await?;
    let kept = query_opt(
        db,
        "SELECT digest, answer, version FROM idempotency_keys
          WHERE user_id = ?1 AND operation = ?2 AND target = ?3 AND key = ?4
            AND created_at >= ?5",
        &[
            Param::Text(&request.actor.user_id),
            Param::Text(request.operation),
            Param::Text(target),
            Param::Text(&idempotency.key),
            Param::Int(oldest),
        ],
        |row| Ok((row.text(0)?, row.text(1)?, row.opt_int(2)?)),
    )
    .await?;
    match kept {
        None => Ok(None),
        Some((digest, body, version)) if digest == idempotency.digest => Ok(Some(ObjectAnswer {
            body,
            version: version.unwrap_or(0),
        })),
        Some(_) => Err(StoreError::IdempotencyKeyReused),
    }
}

/// Keeps a 200 answer for the request's idempotency key on `target`, if
/// any. A key kept meanwhile by a concurrent request with the same key
/// makes the write [`StoreError::Retry`]: tried again, it replays that
/// answer.
pub(super) async fn keep_answer(
    db: &mut dyn Db,
    request: &WriteRequest,
    target: &str,
    answer: &ObjectAnswer,
    now: Timestamp,
) -> Result<(), StoreError> {
    let Some(idempotency) = &request.idempotency else {
        return Ok(());
    };
    let scope = [
        Param::Text(&request.actor.user_id),
        Param::Text(request.operation),
        Param::Text(target),
        Param::Text(&idempotency.key),
    ];
    // An expired row the clean-up has not reached yet is replaced.
    db.execute(
        "DELETE FROM idempotency_keys
          WHERE user_id = ?1 AND operation = ?2 AND target = ?3 AND key = ?4",
        &scope,
    )
    .await?;
    db.execute(
        "INSERT INTO idempotency_keys
           (user_id, operation, target, key, digest, status, answer, version, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 200, ?6, ?7, ?8)",
        &[
            scope[0],
            scope[1],
            scope[2],
            scope[3],
            Param::Text(&idempotency.digest),
            Param::Text(&answer.body),
            Param::Int(answer.version),
            Param::Int(now.as_millis()),
        ],
    )
    .await
    .map_err(|e| match e {
        StoreError::Conflict(_) => StoreError::Retry,
        other => other,
    })?;
    Ok(())
}

/// What a write did to one object, for the audit (and the change feed).
pub(super) struct Change<'a> {
    pub object: &'static str,
    pub object_id: &'a str,
    pub version_before: Option<i64>,
    pub version_after: Option<i64>,
    /// What the change feed tells of it; `None` for what followers are not
    /// told of (tokens).
    pub feed: Option<Fed<'a>>,
}

/// A change as the feed tells it (`changes::record`).
#[derive(Clone, Copy)]
pub(crate) struct Fed<'a> {
    pub kind: ChangeKind,
    pub project_id: &'a str,
    pub revision: Option<u32>,
    /// The domain's name, for a domain's change.
    pub domain: Option<&'a str>,
    /// The rollout's number, for a rollout's change.
    pub rollout: Option<u32>,
}

impl<'a> Fed<'a> {
    /// A change of the project itself, or one naming only a revision.
    pub fn of(kind: ChangeKind, project_id: &'a str, revision: Option<u32>) -> Self {
        Self {
            kind,
            project_id,
            revision,
            domain: None,
            rollout: None,
        }
    }

    /// The object the audit names: a project by its id, a revision as
    /// `PROJECT/REVISION`, a domain as `PROJECT/NAME`, a rollout as
    /// `PROJECT/rollouts/NUMBER`.
    pub fn audited_object(&self) -> (&'static str, String) {
        match (self.rollout, self.revision, self.domain) {
            (Some(number), _, _) => ("rollout", format!("{}/rollouts/{number}", self.project_id)),
            (None, Some(revision), _) => {
                ("proxy_settings", format!("{}/{revision}", self.project_id))
            }
            (None, None, Some(name)) => ("domain", format!("{}/{name}", self.project_id)),
            (None, None, None) => ("project", self.project_id.to_owned()),
        }
    }
}

/// Finishes a versioned update of a project or of a revision (`fed`
/// names which) in its transaction: the `UPDATE ... WHERE version = ?`
/// must have changed the row (else it changed since it was read, only
/// possible without the organization's lock: 412), and the step from
/// `version` to `version + 1` is recorded.
pub(super) async fn record_update(
    db: &mut dyn Db,
    request: &WriteRequest,
    at: Timestamp,
    changed: u64,
    version: i64,
    fed: Fed<'_>,
) -> Result<(), StoreError> {
    if changed == 0 {
        return Err(StoreError::VersionMismatch);
    }
    let (object, object_id) = fed.audited_object();
    let change = Change {
        object,
        object_id: &object_id,
        version_before: Some(version),
        version_after: Some(version + 1),
        feed: Some(fed),
    };
    record(db, request, at, change).await
}

/// Records an accepted write, in its transaction: its audit record, and
/// its change for the feed's followers.
pub(super) async fn record(
    db: &mut dyn Db,
    request: &WriteRequest,
    at: Timestamp,
    change: Change<'_>,
) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO audit_log (at, user_id, token_id, request_id, operation, object, object_id,
                                version_before, version_after)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        &[
            Param::Int(at.as_millis()),
            Param::Text(&request.actor.user_id),
            Param::Text(&request.actor.token_id),
            Param::Text(&request.actor.request_id),
            Param::Text(request.operation),
            Param::Text(change.object),
            Param::Text(change.object_id),
            Param::OptInt(change.version_before),
            Param::OptInt(change.version_after),
        ],
    )
    .await?;
    if let Some(fed) = change.feed {
        let version = change.version_after.unwrap_or_default();
        changes::record(db, fed, version, at).await?;
    }
    Ok(())
}
