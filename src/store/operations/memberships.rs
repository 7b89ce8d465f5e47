//! The memberships' reads for the API: the caller with its roles, and the
//! organizations it belongs to. Each reads the caller's memberships on an
//! index made for it (migrations/sqlite/V6): a page of organizations is a
//! range read of `limit` entries, whatever the number the caller is in.

use std::collections::BTreeMap;

use crate::domain::access::{self, Action, Facts, Refusal, Standing};
use crate::domain::directory::{
    OrganizationObject, OrganizationTag, OrganizationType, Role, UserTag, UserWithRoles,
};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::listing::OrganizationsQuery;
use crate::store::page::JsonPage;
use crate::store::sql::db::{Db, Param, Row, exists, query_all, query_opt, to_json, transaction};
use crate::store::sql::keyset::{objects_page, timestamp};

/// The columns [`organization`] reads, in its order, of `organizations o`
/// (a macro, for `concat!`).
macro_rules! organization_columns {
    () => {
        "o.id, o.name, o.slug, o.type, o.created_at, o.updated_at"
    };
}

/// A user's memberships from the oldest: by the membership's age, then
/// the organization's creation, then its id.
macro_rules! oldest_first {
    () => {
        "ORDER BY m.created_at, m.organization_created_at, m.organization_id"
    };
}

/// The caller's (`?1`) memberships with their organizations.
macro_rules! from_memberships {
    () => {
        "FROM memberships m JOIN organizations o ON o.id = m.organization_id WHERE m.user_id = ?1"
    };
}

pub(crate) fn role(row: &dyn Row, column: usize) -> Result<Role, StoreError> {
    let text = row.str(column)?;
    Role::parse(text).ok_or_else(|| StoreError::Internal(format!("stored role {text:?}")))
}

pub(crate) fn organization_type(
    row: &dyn Row,
    column: usize,
) -> Result<OrganizationType, StoreError> {
    let text = row.str(column)?;
    OrganizationType::parse(text)
        .ok_or_else(|| StoreError::Internal(format!("stored organization type {text:?}")))
}

fn organization(row: &dyn Row) -> Result<OrganizationObject, StoreError> {
    Ok(OrganizationObject {
        object: OrganizationTag::Tag,
        id: row.text(0)?,
        name: row.text(1)?,
        slug: row.text(2)?,
        kind: organization_type(row, 3)?,
        created_at: timestamp(row, 4)?,
        updated_at: timestamp(row, 5)?,
    })
}

/// getMe: the user with its roles; `None` when there is no such user.
#[derive(Clone, Debug)]
pub struct Me {
    pub user_id: String,
}

operation!(Me => me, Read, "get_me" -> Option<UserWithRoles>);

async fn me(db: &mut dyn Db, Me { user_id }: &Me) -> Result<Option<UserWithRoles>, StoreError> {
    transaction!(db, begin_read, {
        Ok(user_with_roles(db, user_id, None)
            .await?
            .map(|(user, _)| user))
    })
}

/// The user `user_id` with its roles and its version, `None` when there
/// is no such user. Seen by another user (`seen_by`), its roles are
/// those of the organizations both belong to; by itself, all of them. A
/// user in no organization shown has the role `member` and no `roles`.
pub(crate) async fn user_with_roles(
    db: &mut dyn Db,
    user_id: &str,
    seen_by: Option<&str>,
) -> Result<Option<(UserWithRoles, i64)>, StoreError> {
    let Some((mut user, version)) = query_opt(
        db,
        "SELECT id, email, name, avatar_url, created_at, updated_at, version
           FROM users WHERE id = ?1",
        &[Param::Text(user_id)],
        |row| {
            Ok((
                UserWithRoles {
                    object: UserTag::Tag,
                    id: row.text(0)?,
                    email: row.text(1)?,
                    name: row.text(2)?,
                    avatar_url: (!row.is_null(3)?).then(|| row.text(3)).transpose()?,
                    // The first membership below says which role.
                    role: Role::Member,
                    roles: BTreeMap::new(),
                    created_at: timestamp(row, 4)?,
                    updated_at: timestamp(row, 5)?,
                },
                row.int(6)?,
            ))
        },
    )
    .await?
    else {
        return Ok(None);
    };
    let mut oldest = None;
    let mut each = |row: &dyn Row| {
        let role = role(row, 1)?;
        oldest.get_or_insert(role);
        user.roles.insert(row.text(0)?, role);
        Ok(true)
    };
    match seen_by {
        None => {
            db.query(
                concat!(
                    "SELECT m.organization_id, m.role FROM memberships m WHERE m.user_id = ?1 ",
                    oldest_first!()
                ),
                &[Param::Text(user_id)],
                &mut each,
            )
            .await?
        }
        Some(caller) => {
            db.query(
                concat!(
                    "SELECT m.organization_id, m.role FROM memberships m
                       JOIN memberships c ON c.organization_id = m.organization_id
                                         AND c.user_id = ?2
                      WHERE m.user_id = ?1 ",
                    oldest_first!()
                ),
                &[Param::Text(user_id), Param::Text(caller)],
                &mut each,
            )
            .await?
        }
    }
    user.role = oldest.unwrap_or(Role::Member);
    Ok(Some((user, version)))
}

/// Which of a user's organizations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WhichOrganization {
    /// The one with this id (a normalised organization id).
    Id(String),
    /// The oldest membership's: by the membership's age, then the
    /// organization's `created_at`, then its id.
    Oldest,
}

/// getOrganization, getMyOrganization: the organization `which` names,
/// when `user_id` may read it ([`access::decide`]: one of its members); a
/// 404 otherwise, whether it exists or not.
#[derive(Clone, Debug)]
pub struct MemberOrganization {
    pub user_id: String,
    pub which: WhichOrganization,
}

operation!(MemberOrganization => member_organization, Read, "get_organization" -> (OrganizationObject, i64));

/// The organization and its version (its `ETag`, which updateOrganization's
/// `If-Match` compares).
async fn member_organization(
    db: &mut dyn Db,
    MemberOrganization { user_id, which }: &MemberOrganization,
) -> Result<(OrganizationObject, i64), StoreError> {
    let with_role = |row: &dyn Row| {
        let role = (!row.is_null(6)?).then(|| role(row, 6)).transpose()?;
        Ok(((organization(row)?, row.int(7)?), role))
    };
    let found = match which {
        WhichOrganization::Id(id) => {
            query_opt(
                db,
                concat!(
                    "SELECT ",
                    organization_columns!(),
                    ", m.role, o.version FROM organizations o
                     LEFT JOIN memberships m ON m.organization_id = o.id AND m.user_id = ?1
                     WHERE o.id = ?2"
                ),
                &[Param::Text(user_id), Param::Text(id)],
                with_role,
            )
            .await?
        }
        WhichOrganization::Oldest => {
            query_opt(
                db,
                concat!(
                    "SELECT ",
                    organization_columns!(),
                    ", m.role, o.version ",
                    from_memberships!(),
                    " ",
                    oldest_first!(),
                    " LIMIT 1"
                ),
                &[Param::Text(user_id)],
                with_role,
            )
            .await?
        }
    };
    let (organization, role) = found.map_or((None, None), |(o, role)| (Some(o), role));
    let standing = match role {
        Some(role) => Standing::Member(Some(role)),
        None => Standing::Stranger,
    };
    access::decide(Action::ReadOrganization, Facts::live(standing))
        .map_err(|refusal| StoreError::refused(refusal, "organization"))?;
    organization.ok_or_else(|| StoreError::refused(Refusal::NotFound, "organization"))
}

/// A page of the caller's organizations, newest first by default, like
/// projects: a range read on the memberships' index (of the type asked
/// for, or of every type), the start organization found by a subquery
/// among the caller's (of that type). An empty page after a start key is
/// told apart from one that names no item of the list in one snapshot,
/// as the api_token listing does.
pub(crate) async fn page(
    db: &mut dyn Db,
    query: &OrganizationsQuery,
) -> Result<JsonPage, StoreError> {
    let found = organizations_page(db, query).await?;
    if found.count > 0 || query.page.start_key.is_none() {
        return Ok(found);
    }
    transaction!(db, begin_read, {
        let Some(start) = &query.page.start_key else {
            return Ok(JsonPage::default());
        };
        let of_the_list = match query.kind {
            None => {
                exists(
                    db,
                    "SELECT 1 FROM memberships WHERE user_id = ?1 AND organization_id = ?2",
                    &[Param::Text(&query.user_id), Param::Text(start)],
                )
                .await?
            }
            Some(kind) => {
                exists(
                    db,
                    "SELECT 1 FROM memberships WHERE user_id = ?1 AND organization_id = ?2
                       AND organization_type = ?3",
                    &[
                        Param::Text(&query.user_id),
                        Param::Text(start),
                        Param::Text(kind.as_str()),
                    ],
                )
                .await?
            }
        };
        if !of_the_list {
            return Err(StoreError::UnknownStartKey);
        }
        organizations_page(db, query).await
    })
}

async fn organizations_page(
    db: &mut dyn Db,
    query: &OrganizationsQuery,
) -> Result<JsonPage, StoreError> {
    let page = &query.page;
    let mut params = vec![Param::Text(&query.user_id)];
    let (select, start) = match query.kind {
        None => (
            concat!("SELECT ", organization_columns!(), " ", from_memberships!()),
            "SELECT organization_created_at, organization_id FROM memberships
             WHERE user_id = ?1 AND organization_id = ?2",
        ),
        Some(kind) => {
            params.push(Param::Text(kind.as_str()));
            (
                concat!(
                    "SELECT ",
                    organization_columns!(),
                    " ",
                    from_memberships!(),
                    " AND m.organization_type = ?2"
                ),
                "SELECT organization_created_at, organization_id FROM memberships
                 WHERE user_id = ?1 AND organization_type = ?2 AND organization_id = ?3",
            )
        }
    };
    objects_page(
        db,
        (select, start),
        &["m.organization_created_at", "m.organization_id"],
        params,
        page,
        |row| {
            let organization = organization(row)?;
            Ok((organization.id.clone(), to_json(&organization)?))
        },
    )
    .await
}

/// Makes `user_id` a member of `organization_id` with `role` (or sets the
/// role of a membership it has: the membership keeps its age, its version
/// steps). A new membership is as old as the later of `joined_at` and the
/// organization's creation (docs/management.md, "Roles and
/// organizations"). An organization that does not exist or was deleted
/// makes no row: answers whether the membership is there now (a role
/// already held is no change, and its version stays). The caller runs
/// [`refresh_summary`] once its memberships are as they will stay.
pub(crate) async fn put_membership(
    db: &mut dyn Db,
    user_id: &str,
    organization_id: &str,
    role: Role,
    joined_at: Timestamp,
) -> Result<bool, StoreError> {
    let written = db
        .execute(
            "INSERT INTO memberships
               (user_id, organization_id, role, created_at, organization_created_at, organization_type)
             SELECT ?1, o.id, ?3, CASE WHEN o.created_at > ?4 THEN o.created_at ELSE ?4 END,
                    o.created_at, o.type
               FROM organizations o WHERE o.id = ?2 AND o.deleted_at IS NULL
             ON CONFLICT (user_id, organization_id) DO UPDATE
                SET role = excluded.role,
                    version = CASE WHEN memberships.role = excluded.role
                                   THEN memberships.version ELSE memberships.version + 1 END",
            &[
                Param::Text(user_id),
                Param::Text(organization_id),
                Param::Text(role.as_str()),
                Param::Int(joined_at.as_millis()),
            ],
        )
        .await?;
    Ok(written > 0)
}

/// Rewrites the user's organizations, whole, as authentication reads
/// them (`users.memberships`, migrations/sqlite/V3): run in the
/// transaction of every write that adds, removes or ends a membership.
pub(crate) async fn refresh_summary(db: &mut dyn Db, user_id: &str) -> Result<(), StoreError> {
    let members = query_all(
        db,
        "SELECT m.organization_id, o.number FROM memberships m
         JOIN organizations o ON o.id = m.organization_id WHERE m.user_id = ?1",
        &[Param::Text(user_id)],
        |row| Ok((row.text(0)?, row.int(1)?)),
    )
    .await?;
    db.execute(
        "UPDATE users SET memberships = ?2 WHERE id = ?1",
        &[
            Param::Text(user_id),
            Param::Text(OrganizationSet::new(members).summary()),
        ],
    )
    .await?;
    Ok(())
}
