//! An organization's members (docs/teams.md, "Members"):
//! listOrganizationsUsers (a keyset page on the memberships' member
//! indexes, `memberships_members` and `memberships_members_by_role`: a
//! range read of `limit` entries whatever the number of members),
//! updateOrganizationUser (admins change a role) and
//! deleteOrganizationUser (admins remove a member; anyone leaves).
//!
//! **An organization always keeps an admin**: the writes decide under the
//! organization's row lock (`organizations::authorize_locked`), so two
//! admins demoting or removing each other at once leave one.

use super::memberships::{put_membership, refresh_summary, role};
use super::organizations::authorize_locked;
use super::write_request::{ObjectAnswer, WriteRequest};
use super::write_steps::{self, Change};
use crate::domain::access::Action;
use crate::domain::directory::{OrganizationUser, Role, UserTag, slug_of};
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::{Conflict, StoreError};
use crate::store::listing::MembersQuery;
use crate::store::page::JsonPage;
use crate::store::sql::db::{Db, Param, Row, exists, query_opt, to_json, transaction};
use crate::store::sql::keyset::{objects_page, timestamp};

/// The columns [`member`] reads, of `memberships m JOIN users u`.
macro_rules! member_columns {
    () => {
        "u.id, u.email, u.name, u.avatar_url, m.role, u.created_at, u.updated_at, m.version"
    };
}

macro_rules! from_members {
    () => {
        " FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organization_id = ?1"
    };
}

fn member(row: &dyn Row) -> Result<(OrganizationUser, i64), StoreError> {
    let name = row.text(2)?;
    Ok((
        OrganizationUser {
            object: UserTag::Tag,
            id: row.text(0)?,
            email: row.text(1)?,
            slug: slug_of(&name),
            name,
            avatar_url: (!row.is_null(3)?).then(|| row.text(3)).transpose()?,
            role: role(row, 4)?,
            created_at: timestamp(row, 5)?,
            updated_at: timestamp(row, 6)?,
        },
        row.int(7)?,
    ))
}

fn no_member() -> StoreError {
    StoreError::NotFound {
        kind: "user",
        id: String::new(),
    }
}

/// A page of the organization's members, newest member first by default.
/// The caller's right to read them is decided before (the handler, on the
/// caller's organizations). An empty page after a start key is told apart
/// from one that names no member of the list in one snapshot.
pub(crate) async fn page(db: &mut dyn Db, query: &MembersQuery) -> Result<JsonPage, StoreError> {
    let found = members_page(db, query).await?;
    if found.count > 0 || query.page.start_key.is_none() {
        return Ok(found);
    }
    transaction!(db, begin_read, {
        let Some(start) = &query.page.start_key else {
            return Ok(JsonPage::default());
        };
        let organization = Param::Text(&query.organization_id);
        let of_the_list = match query.role {
            None => {
                exists(
                    db,
                    "SELECT 1 FROM memberships WHERE organization_id = ?1 AND user_id = ?2",
                    &[organization, Param::Text(start)],
                )
                .await?
            }
            Some(role) => {
                exists(
                    db,
                    "SELECT 1 FROM memberships WHERE organization_id = ?1 AND user_id = ?2
                       AND role = ?3",
                    &[organization, Param::Text(start), Param::Text(role.as_str())],
                )
                .await?
            }
        };
        if !of_the_list {
            return Err(StoreError::UnknownStartKey);
        }
        members_page(db, query).await
    })
}

/// The statements of a page: of every role, and of one.
pub(crate) const MEMBERS_PAGE: (&str, &str) = (
    concat!("SELECT ", member_columns!(), from_members!()),
    "SELECT created_at, user_id FROM memberships WHERE organization_id = ?1 AND user_id = ?2",
);
pub(crate) const MEMBERS_OF_A_ROLE_PAGE: (&str, &str) = (
    concat!(
        "SELECT ",
        member_columns!(),
        from_members!(),
        " AND m.role = ?2"
    ),
    "SELECT created_at, user_id FROM memberships
      WHERE organization_id = ?1 AND role = ?2 AND user_id = ?3",
);

async fn members_page(db: &mut dyn Db, query: &MembersQuery) -> Result<JsonPage, StoreError> {
    let mut params = vec![Param::Text(&query.organization_id)];
    let statements = match query.role {
        None => MEMBERS_PAGE,
        Some(role) => {
            params.push(Param::Text(role.as_str()));
            MEMBERS_OF_A_ROLE_PAGE
        }
    };
    objects_page(
        db,
        statements,
        &["m.created_at", "m.user_id"],
        params,
        &query.page,
        |row| {
            let (member, _) = member(row)?;
            Ok((member.id.clone(), to_json(&member)?))
        },
    )
    .await
}

async fn read_member(
    db: &mut dyn Db,
    organization_id: &str,
    user_id: &str,
) -> Result<Option<(OrganizationUser, i64)>, StoreError> {
    query_opt(
        db,
        concat!(
            "SELECT ",
            member_columns!(),
            from_members!(),
            " AND m.user_id = ?2"
        ),
        &[Param::Text(organization_id), Param::Text(user_id)],
        member,
    )
    .await
}

/// Refuses a change that would take the organization's last admin away:
/// `member` is an admin, and no other is.
async fn keeps_an_admin(
    db: &mut dyn Db,
    organization_id: &str,
    member: &OrganizationUser,
) -> Result<(), StoreError> {
    if member.role != Role::Admin {
        return Ok(());
    }
    let other = exists(
        db,
        "SELECT 1 FROM memberships WHERE organization_id = ?1 AND role = ?2 AND user_id <> ?3",
        &[
            Param::Text(organization_id),
            Param::Text(Role::Admin.as_str()),
            Param::Text(&member.id),
        ],
    )
    .await?;
    if other {
        Ok(())
    } else {
        Err(StoreError::Conflict(Conflict::LastAdmin))
    }
}

fn audited(organization_id: &str, user_id: &str) -> String {
    format!("{organization_id}/{user_id}")
}

/// updateOrganizationUser: a member's new role (admins).
#[derive(Clone, Debug)]
pub struct UpdateMember {
    pub request: WriteRequest,
    pub organization_id: String,
    pub user_id: String,
    pub role: Role,
}

operation!(UpdateMember => update, Write, "update_organization_user" -> ObjectAnswer);

async fn update(db: &mut dyn Db, query: &UpdateMember) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let request = &query.request;
    let organization = &query.organization_id;
    transaction!(db, begin_write, {
        authorize_locked(db, request, Action::ManageOrganization, organization, now).await?;
        let (before, version) = read_member(db, organization, &query.user_id)
            .await?
            .ok_or_else(no_member)?;
        write_steps::check_if_match(request, version)?;
        if query.role != Role::Admin {
            keeps_an_admin(db, organization, &before).await?;
        }
        put_membership(db, &query.user_id, organization, query.role, now).await?;
        let (after, version_after) = read_member(db, organization, &query.user_id)
            .await?
            .ok_or_else(no_member)?;
        let object_id = audited(organization, &query.user_id);
        let change = Change {
            object: "membership",
            object_id: &object_id,
            version_before: Some(version),
            version_after: Some(version_after),
            feed: None,
        };
        write_steps::record(db, request, now, change).await?;
        Ok(ObjectAnswer {
            body: to_json(&after)?,
            version: version_after,
        })
    })
}

/// deleteOrganizationUser: an admin removes a member, or a member leaves
/// (`user_id` is the caller's). Answers the membership's version before.
#[derive(Clone, Debug)]
pub struct RemoveMember {
    pub request: WriteRequest,
    pub organization_id: String,
    pub user_id: String,
}

operation!(RemoveMember => remove, Write, "delete_organization_user" -> i64);

async fn remove(db: &mut dyn Db, query: &RemoveMember) -> Result<i64, StoreError> {
    let now = Timestamp::now();
    let request = &query.request;
    let organization = &query.organization_id;
    let action = if query.user_id == request.actor.user_id {
        Action::LeaveOrganization
    } else {
        Action::ManageOrganization
    };
    transaction!(db, begin_write, {
        authorize_locked(db, request, action, organization, now).await?;
        let (member, version) = read_member(db, organization, &query.user_id)
            .await?
            .ok_or_else(no_member)?;
        write_steps::check_if_match(request, version)?;
        keeps_an_admin(db, organization, &member).await?;
        db.execute(
            "DELETE FROM memberships WHERE organization_id = ?1 AND user_id = ?2",
            &[Param::Text(organization), Param::Text(&query.user_id)],
        )
        .await?;
        refresh_summary(db, &query.user_id).await?;
        let object_id = audited(organization, &query.user_id);
        let change = Change {
            object: "membership",
            object_id: &object_id,
            version_before: Some(version),
            version_after: None,
            feed: None,
        };
        write_steps::record(db, request, now, change).await?;
        Ok(version)
    })
}
