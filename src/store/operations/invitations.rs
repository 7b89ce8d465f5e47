//! Invitations (docs/teams.md, "Invitations"): listInvitations,
//! createInvitation, getInvitation, deleteInvitation, and proxydeck's own
//! acceptInvitation. The secret never reaches the store (only its SHA-256
//! digest), nor does it or the email reach the audit (object
//! `invitation`, its id) or a kept idempotency answer.
//!
//! An invitation's version (its strong `ETag`) is the millisecond of its
//! latest change: its creation, or its deletion.

use super::api_tokens::insert_token;
use super::memberships::{put_membership, refresh_summary, role};
use super::write_request::{ObjectAnswer, WriteRequest};
use super::write_steps::{self, Change, Target};
use crate::domain::access::{self, Action, Facts, Refusal, Standing};
use crate::domain::api_token::ApiToken;
use crate::domain::directory::Role;
use crate::domain::pagination::PageRequest;
use crate::domain::teams::{Invitation, InvitationStatus, InvitationTag};
use crate::domain::time::Timestamp;
use crate::domain::token::TokenDigest;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::page::JsonPage;
use crate::store::sql::db::{Db, Param, Row, exists, query_opt, to_json, transaction};
use crate::store::sql::keyset::{objects_page, timestamp};
use crate::store::tokens::NewToken;

/// What a caller is told it could not find.
const KIND: &str = "invitation";

/// The columns [`invitation`] reads, of `invitations i` (a macro, for
/// `concat!`).
macro_rules! invitation_columns {
    () => {
        "i.id, i.organization_id, i.email, i.role, i.created_at, i.expires_at"
    };
}

/// What is still an invitation: neither accepted nor deleted.
macro_rules! open {
    () => {
        "i.accepted_at IS NULL AND i.deleted_at IS NULL"
    };
}

fn no_invitation() -> StoreError {
    StoreError::NotFound {
        kind: KIND,
        id: String::new(),
    }
}

/// An invitation object from a row selected with [`invitation_columns`]
/// first, its status at `now`.
fn invitation(row: &dyn Row, now: Timestamp) -> Result<Invitation, StoreError> {
    let expires_at = timestamp(row, 5)?;
    Ok(Invitation {
        object: InvitationTag::Tag,
        id: row.text(0)?,
        organization_id: row.text(1)?,
        email: row.text(2)?,
        role: role(row, 3)?,
        created_at: timestamp(row, 4)?,
        expires_at,
        status: InvitationStatus::at(expires_at, now),
    })
}

/// The access rule's refusal about an organization, told about an
/// invitation instead (the caller named the invitation).
fn as_invitation(error: StoreError) -> StoreError {
    match error {
        StoreError::Refused { refusal, .. } => StoreError::refused(refusal, KIND),
        StoreError::NotFound { .. } => no_invitation(),
        other => other,
    }
}

/// Where the caller (`user_id`) stands in `organization_id`: its role
/// there, read now.
async fn standing(
    db: &mut dyn Db,
    user_id: &str,
    organization_id: &str,
) -> Result<Standing, StoreError> {
    let found = query_opt(
        db,
        "SELECT role FROM memberships WHERE user_id = ?1 AND organization_id = ?2",
        &[Param::Text(user_id), Param::Text(organization_id)],
        |row| role(row, 0),
    )
    .await?;
    Ok(found.map_or(Standing::Stranger, |role| Standing::Member(Some(role))))
}

/// listInvitations: the pending and expired invitations of one
/// organization the caller administers, or of every one it does, newest
/// first by default, keyset-paged by (`created_at`, `id`).
#[derive(Clone, Debug)]
pub struct ListInvitations {
    pub user_id: String,
    /// A normalised organization id.
    pub organization_id: Option<String>,
    pub page: PageRequest,
}

operation!(ListInvitations => list, Read, "list_invitations" -> JsonPage);

async fn list(db: &mut dyn Db, query: &ListInvitations) -> Result<JsonPage, StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_read, {
        if let Some(organization_id) = &query.organization_id {
            let standing = standing(db, &query.user_id, organization_id).await?;
            access::decide(Action::ManageOrganization, Facts::live(standing))
                .map_err(|refusal| StoreError::refused(refusal, "organization"))?;
        }
        let found = invitations_page(db, query, now).await?;
        if found.count > 0 {
            return Ok(found);
        }
        let Some(start) = &query.page.start_key else {
            return Ok(found);
        };
        // An empty page after a start key: the end of the list, or a key
        // that names none of its invitations.
        let of_the_list = match &query.organization_id {
            Some(organization_id) => exists(
                db,
                concat!(
                    "SELECT 1 FROM invitations i WHERE i.id = ?1 AND i.organization_id = ?2 AND ",
                    open!()
                ),
                &[Param::Text(start), Param::Text(organization_id)],
            )
            .await?,
            None => {
                exists(
                    db,
                    concat!(
                        "SELECT 1 FROM invitations i JOIN memberships m
                           ON m.organization_id = i.organization_id AND m.user_id = ?2
                          AND m.role = 'admin'
                        WHERE i.id = ?1 AND ",
                        open!()
                    ),
                    &[Param::Text(start), Param::Text(&query.user_id)],
                )
                .await?
            }
        };
        if of_the_list {
            Ok(found)
        } else {
            Err(StoreError::UnknownStartKey)
        }
    })
}

async fn invitations_page(
    db: &mut dyn Db,
    query: &ListInvitations,
    now: Timestamp,
) -> Result<JsonPage, StoreError> {
    let object = move |row: &dyn Row| {
        let invitation = invitation(row, now)?;
        Ok((invitation.id.clone(), to_json(&invitation)?))
    };
    match &query.organization_id {
        // A range read on invitations_by_organization.
        Some(organization_id) => {
            objects_page(
                db,
                (
                    concat!(
                        "SELECT ",
                        invitation_columns!(),
                        " FROM invitations i WHERE i.organization_id = ?1 AND ",
                        open!()
                    ),
                    "SELECT created_at, id FROM invitations WHERE id = ?2 AND organization_id = ?1",
                ),
                &["i.created_at", "i.id"],
                vec![Param::Text(organization_id)],
                &query.page,
                object,
            )
            .await
        }
        None => {
            objects_page(
                db,
                (
                    concat!(
                        "SELECT ",
                        invitation_columns!(),
                        " FROM invitations i JOIN memberships m
                            ON m.organization_id = i.organization_id AND m.user_id = ?1
                           AND m.role = 'admin'
                         WHERE ",
                        open!()
                    ),
                    "SELECT created_at, id FROM invitations WHERE id = ?2",
                ),
                &["i.created_at", "i.id"],
                vec![Param::Text(&query.user_id)],
                &query.page,
                object,
            )
            .await
        }
    }
}

/// getInvitation: one pending or expired invitation of an organization the
/// caller administers.
#[derive(Clone, Debug)]
pub struct GetInvitation {
    pub user_id: String,
    pub id: String,
}

operation!(GetInvitation => get, Read, "get_invitation" -> ObjectAnswer);

async fn get(db: &mut dyn Db, read: &GetInvitation) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let found = query_opt(
        db,
        concat!(
            "SELECT ",
            invitation_columns!(),
            ", m.role FROM invitations i
               LEFT JOIN memberships m ON m.organization_id = i.organization_id AND m.user_id = ?2
              WHERE i.id = ?1 AND ",
            open!()
        ),
        &[Param::Text(&read.id), Param::Text(&read.user_id)],
        |row| {
            let role = (!row.is_null(6)?).then(|| role(row, 6)).transpose()?;
            Ok((invitation(row, now)?, role))
        },
    )
    .await?;
    let standing = match &found {
        Some((_, Some(role))) => Standing::Member(Some(*role)),
        _ => Standing::Stranger,
    };
    access::decide(Action::ManageOrganization, Facts::live(standing))
        .map_err(|refusal| StoreError::refused(refusal, KIND))?;
    let (invitation, _) = found.ok_or_else(no_invitation)?;
    Ok(ObjectAnswer {
        body: to_json(&invitation)?,
        version: invitation.created_at.as_millis(),
    })
}

/// An invitation to store: its secret's digest only.
#[derive(Clone, Debug)]
pub struct NewInvitation {
    pub id: String,
    pub organization_id: String,
    pub email: String,
    pub role: Role,
    pub digest: TokenDigest,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

/// createInvitation: stores the invitation and answers it (never its
/// secret), with what its email says: who invites, to which organization.
#[derive(Clone, Debug)]
pub struct CreateInvitation {
    pub request: WriteRequest,
    pub invitation: NewInvitation,
    /// Invitations an organization may create in an hour
    /// (`--invitations-per-organization-per-hour`).
    pub most_per_hour: u32,
}

/// What createInvitation did.
#[derive(Clone, Debug)]
pub struct CreatedInvitation {
    /// The invitation as answered (and kept for an idempotency key).
    pub answer: ObjectAnswer,
    /// The kept answer of the request's idempotency key: nothing was
    /// created, nothing is to be sent.
    pub replayed: bool,
    /// The inviter's name and the organization's, for the email.
    pub inviter_name: String,
    pub organization_name: String,
}

operation!(CreateInvitation => create, Write, "create_invitation" -> CreatedInvitation);

async fn create(
    db: &mut dyn Db,
    CreateInvitation {
        request,
        invitation,
        most_per_hour,
    }: &CreateInvitation,
) -> Result<CreatedInvitation, StoreError> {
    let now = invitation.created_at;
    let organization_id = &invitation.organization_id;
    transaction!(db, begin_write, {
        let target = Target::Organization(organization_id);
        write_steps::authorize(db, request, Action::ManageOrganization, target, now)
            .await?
            .ok_or_else(|| StoreError::refused(Refusal::NotFound, "organization"))?;
        write_steps::lock_organization(db, organization_id)
            .await?
            .ok_or_else(|| StoreError::refused(Refusal::NotFound, "organization"))?;
        let (inviter_name, organization_name) = query_opt(
            db,
            "SELECT u.name, o.name FROM users u, organizations o WHERE u.id = ?1 AND o.id = ?2",
            &[
                Param::Text(&request.actor.user_id),
                Param::Text(organization_id),
            ],
            |row| Ok((row.text(0)?, row.text(1)?)),
        )
        .await?
        .unwrap_or_default();
        if let Some(answer) = write_steps::replay(db, request, organization_id, now).await? {
            return Ok(CreatedInvitation {
                answer,
                replayed: true,
                inviter_name,
                organization_name,
            });
        }
        within_hourly_bound(db, organization_id, *most_per_hour, now).await?;
        db.execute(
            "INSERT INTO invitations
               (id, organization_id, email, role, digest, created_by, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &[
                Param::Text(&invitation.id),
                Param::Text(organization_id),
                Param::Text(&invitation.email),
                Param::Text(invitation.role.as_str()),
                Param::Bytes(&invitation.digest.0),
                Param::Text(&request.actor.user_id),
                Param::Int(now.as_millis()),
                Param::Int(invitation.expires_at.as_millis()),
            ],
        )
        .await?;
        let object = Invitation {
            object: InvitationTag::Tag,
            id: invitation.id.clone(),
            organization_id: organization_id.clone(),
            email: invitation.email.clone(),
            role: invitation.role,
            created_at: now,
            expires_at: invitation.expires_at,
            status: InvitationStatus::at(invitation.expires_at, now),
        };
        let answer = ObjectAnswer {
            body: to_json(&object)?,
            version: now.as_millis(),
        };
        write_steps::record(
            db,
            request,
            now,
            Change {
                object: KIND,
                object_id: &invitation.id,
                version_before: None,
                version_after: Some(answer.version),
                feed: None,
            },
        )
        .await?;
        write_steps::keep_answer(db, request, organization_id, &answer, now).await?;
        Ok(CreatedInvitation {
            answer,
            replayed: false,
            inviter_name,
            organization_name,
        })
    })
}

/// Refuses a new invitation when the organization created `most` in the
/// last hour, deleted and accepted ones included (deleting and inviting
/// again would make a fresh bucket each time). Under the organization's
/// row lock: creations at once cannot pass the bound together.
async fn within_hourly_bound(
    db: &mut dyn Db,
    organization_id: &str,
    most: u32,
    now: Timestamp,
) -> Result<(), StoreError> {
    match write_steps::hourly_bound_full(
        db,
        "SELECT created_at FROM invitations WHERE organization_id = ?1 AND created_at > ?2
          ORDER BY created_at DESC LIMIT 1 OFFSET ?3",
        organization_id,
        most,
        now,
    )
    .await?
    {
        None => Ok(()),
        Some(retry_after_seconds) => Err(StoreError::TooManyNewInvitations {
            most,
            retry_after_seconds,
        }),
    }
}

/// deleteInvitation: ends a pending or expired invitation (its row stays,
/// for the hourly bound).
#[derive(Clone, Debug)]
pub struct DeleteInvitation {
    pub request: WriteRequest,
    pub id: String,
}

operation!(DeleteInvitation => delete, Write, "delete_invitation" -> ObjectAnswer);

async fn delete(
    db: &mut dyn Db,
    DeleteInvitation { request, id }: &DeleteInvitation,
) -> Result<ObjectAnswer, StoreError> {
    transaction!(db, begin_write, {
        let now = Timestamp::now();
        let found = query_opt(
            db,
            concat!(
                "SELECT i.organization_id, i.created_at FROM invitations i WHERE i.id = ?1 AND ",
                open!()
            ),
            &[Param::Text(id)],
            |row| Ok((row.text(0)?, row.int(1)?)),
        )
        .await?;
        // An unknown invitation costs the same statement as one of
        // another organization, and is refused alike.
        let organization_id = found.as_ref().map_or("", |(o, _)| o.as_str());
        let target = Target::Organization(organization_id);
        write_steps::authorize(db, request, Action::ManageOrganization, target, now)
            .await
            .map_err(as_invitation)?
            .ok_or_else(no_invitation)?;
        let (organization_id, created_at) = found.ok_or_else(no_invitation)?;
        write_steps::lock_organization(db, &organization_id).await?;
        // Forward, even when the clock is not.
        let at = now.as_millis().max(created_at + 1);
        let changed = db
            .execute(
                concat!(
                    "UPDATE invitations SET deleted_at = ?2 WHERE id = ?1 AND ",
                    "accepted_at IS NULL AND deleted_at IS NULL"
                ),
                &[Param::Text(id), Param::Int(at)],
            )
            .await?;
        if changed == 0 {
            return Err(no_invitation());
        }
        let at_time = Timestamp::from_millis(at)
            .ok_or_else(|| StoreError::Internal("the clock is out of range".into()))?;
        write_steps::record(
            db,
            request,
            at_time,
            Change {
                object: KIND,
                object_id: id,
                version_before: Some(created_at),
                version_after: Some(at),
                feed: None,
            },
        )
        .await?;
        let body = to_json(&serde_json::json!({"object": KIND, "id": id, "deleted": true}))?;
        Ok(ObjectAnswer { body, version: at })
    })
}

/// A user an acceptance without `Authorization` makes, when no user has
/// the invitation's email: its id, name and first API token (`console`).
#[derive(Clone, Debug)]
pub struct NewUser {
    pub id: String,
    pub name: String,
    pub token: NewToken,
}

/// acceptInvitation: the invitation its secret's digest names, for
/// `email`, accepted by the caller (`request`, with `Authorization`) or by
/// a new user (`new_user`, without).
#[derive(Clone, Debug)]
pub struct AcceptInvitation {
    pub digest: TokenDigest,
    pub email: String,
    /// The authenticated caller's write, when it came with `Authorization`.
    pub caller: Option<WriteRequest>,
    /// The user to make otherwise.
    pub new_user: NewUser,
    /// The request's id, for the audit of a new user's acceptance.
    pub request_id: String,
}

/// Why an acceptance was refused (both commit nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcceptRefusal {
    /// Deleted, used, expired, unknown, or for another email: one answer.
    NotAcceptable,
    /// Without `Authorization`, for an email that has an account.
    AccountExists,
}

/// What an acceptance did.
#[derive(Clone, Debug)]
pub struct Accepted {
    pub invitation_id: String,
    pub organization_id: String,
    pub role: Role,
    pub user_id: String,
    /// The new user's first token (its hint in `token`), when one was made.
    pub token: Option<ApiToken>,
}

operation!(AcceptInvitation => accept, Write, "accept_invitation" -> Result<Accepted, AcceptRefusal>);

async fn accept(
    db: &mut dyn Db,
    asked: &AcceptInvitation,
) -> Result<Result<Accepted, AcceptRefusal>, StoreError> {
    let now = Timestamp::now();
    transaction!(db, begin_write, {
        if let Some(request) = &asked.caller {
            // The caller's token as stored now: one revoked a moment ago
            // accepts nothing.
            write_steps::authorize(db, request, Action::ReadOwn, Target::OwnTokens, now).await?;
        }
        // Every invitation to this address locked first, in one order
        // (its index's): two acceptances for one new address (of two
        // invitations) run one after the other, and the second finds the
        // first's user (a 409) instead of making a second one.
        db.execute(
            "UPDATE invitations SET accepted_at = accepted_at WHERE lower(email) = lower(?1)",
            &[Param::Text(&asked.email)],
        )
        .await?;
        // Looked up by its digest, whatever makes it unacceptable, and its
        // row locked (an UPDATE that changes nothing): a second acceptance
        // at once waits here for the first to end, then finds it used and
        // gets the one 404 (a plain read would let it on to the account
        // check, which the first's new user would answer with a 409).
        let found = query_opt(
            db,
            "UPDATE invitations SET accepted_at = accepted_at
              WHERE digest = ?1 AND lower(email) = lower(?2) AND expires_at > ?3
                AND accepted_at IS NULL AND deleted_at IS NULL
                AND organization_id IN (SELECT id FROM organizations WHERE deleted_at IS NULL)
             RETURNING id, organization_id, role, created_at",
            &[
                Param::Bytes(&asked.digest.0),
                Param::Text(&asked.email),
                Param::Int(now.as_millis()),
            ],
            |row| Ok((row.text(0)?, row.text(1)?, role(row, 2)?, row.int(3)?)),
        )
        .await?;
        let Some((invitation_id, organization_id, role, created_at)) = found else {
            return Ok(Err(AcceptRefusal::NotAcceptable));
        };
        let user_id = match &asked.caller {
            Some(request) => {
                let same_email = exists(
                    db,
                    "SELECT 1 FROM users WHERE id = ?1 AND lower(email) = lower(?2)",
                    &[
                        Param::Text(&request.actor.user_id),
                        Param::Text(&asked.email),
                    ],
                )
                .await?;
                if !same_email {
                    return Ok(Err(AcceptRefusal::NotAcceptable));
                }
                request.actor.user_id.clone()
            }
            None => {
                let has_account = exists(
                    db,
                    "SELECT 1 FROM users WHERE lower(email) = lower(?1)",
                    &[Param::Text(&asked.email)],
                )
                .await?;
                if has_account {
                    return Ok(Err(AcceptRefusal::AccountExists));
                }
                asked.new_user.id.clone()
            }
        };
        // Used once: of two acceptances at once, the second finds it
        // taken once the first commits (its row lock), and writes nothing.
        let claimed = db
            .execute(
                concat!(
                    "UPDATE invitations SET accepted_at = ?2, accepted_by = ?3
                      WHERE id = ?1 AND expires_at > ?2 AND ",
                    "accepted_at IS NULL AND deleted_at IS NULL"
                ),
                &[
                    Param::Text(&invitation_id),
                    Param::Int(now.as_millis()),
                    Param::Text(&user_id),
                ],
            )
            .await?;
        if claimed == 0 {
            return Ok(Err(AcceptRefusal::NotAcceptable));
        }
        let mut token = None;
        let (actor_user, actor_token) = match &asked.caller {
            Some(request) => (
                request.actor.user_id.clone(),
                request.actor.token_id.clone(),
            ),
            None => {
                let new_user = &asked.new_user;
                db.execute(
                    "INSERT INTO users (id, email, name, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?4)",
                    &[
                        Param::Text(&new_user.id),
                        Param::Text(&asked.email),
                        Param::Text(&new_user.name),
                        Param::Int(now.as_millis()),
                    ],
                )
                .await?;
                token = Some(insert_token(db, &new_user.token).await?);
                (new_user.id.clone(), new_user.token.id.clone())
            }
        };
        // An organization deleted since the look-up takes no member:
        // everything above rolls back.
        if !put_membership(db, &user_id, &organization_id, role, now).await? {
            return Err(no_invitation());
        }
        refresh_summary(db, &user_id).await?;
        let request = WriteRequest {
            actor: super::write_request::Actor {
                user_id: actor_user,
                token_id: actor_token,
                request_id: asked.request_id.clone(),
            },
            operation: "acceptInvitation",
            if_match: None,
            idempotency: None,
        };
        write_steps::record(
            db,
            &request,
            now,
            Change {
                object: KIND,
                object_id: &invitation_id,
                version_before: Some(created_at),
                version_after: Some(now.as_millis().max(created_at + 1)),
                feed: None,
            },
        )
        .await?;
        Ok(Ok(Accepted {
            invitation_id,
            organization_id,
            role,
            user_id,
            token,
        }))
    })
}
