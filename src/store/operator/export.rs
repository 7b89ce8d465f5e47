//! The whole store, read in creation order: for `admin export` (streamed
//! line by line from one snapshot) and the operator's listings.

use std::collections::{BTreeMap, HashMap};

use tokio::sync::mpsc;

use crate::domain::api_token::TokenRecord;
use crate::domain::directory::{Organization, OrganizationTag, Role, User, UserTag};
use crate::domain::domains::{DomainLine, DomainTag};
use crate::domain::import::ObjectCounts;
use crate::domain::proxy_settings::ProxySettings;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::operations::api_tokens::{api_token, token_columns};
use crate::store::operations::memberships::{organization_type, role};
use crate::store::sql::db::{Db, Param, exists, query_all, query_opt, to_json, transaction};
use crate::store::sql::keyset::{timestamp, timestamp_opt};

/// How many objects of each kind an export would write now.
#[derive(Clone, Copy, Debug)]
pub struct CountObjects;

operation!(CountObjects => count_objects, OperatorRead, "admin_export_count" -> ObjectCounts);

async fn count_objects(db: &mut dyn Db, _: &CountObjects) -> Result<ObjectCounts, StoreError> {
    async fn count(db: &mut dyn Db, sql: &str) -> Result<u64, StoreError> {
        let n = query_opt(db, sql, &[], |row| row.int(0)).await?;
        Ok(n.unwrap_or(0) as u64)
    }
    transaction!(db, begin_read, {
        Ok(ObjectCounts {
            organizations: count(
                db,
                "SELECT count(*) FROM organizations WHERE deleted_at IS NULL",
            )
            .await?,
            users: count(db, "SELECT count(*) FROM users").await?,
            projects: count(db, "SELECT count(*) FROM projects WHERE deleted_at IS NULL").await?,
            proxy_settings: count(
                db,
                "SELECT count(*) FROM proxy_settings s JOIN projects p ON p.id = s.project_id
                 WHERE p.deleted_at IS NULL",
            )
            .await?,
            // A deleted project's domains went with it.
            domains: count(db, "SELECT count(*) FROM domains").await?,
        })
    })
}

/// The whole store, tokens excepted, as lines of the import format
/// (without line breaks), from one snapshot: organizations, users,
/// projects, proxy settings, domains, each in creation order. Sends each line into
/// the sender; stops early (without error) when the receiving side is
/// gone. It blocks while the receiver catches up: it runs on a thread of
/// its own.
#[derive(Clone, Debug)]
pub struct Export(pub mpsc::Sender<String>);

operation!(Export => export, OperatorStream, "admin_export" -> ObjectCounts);

async fn export(db: &mut dyn Db, Export(lines): &Export) -> Result<ObjectCounts, StoreError> {
    // One read transaction: the export is one consistent snapshot.
    transaction!(db, begin_read, {
        let mut counts = ObjectCounts::default();
        let send = |line: String| lines.blocking_send(line).is_ok();
        let mut open = each_organization(db, &mut |organization| {
            counts.organizations += 1;
            Ok(send(to_json(&organization)?))
        })
        .await?;
        open = open
            && each_user(db, &mut |user| {
                counts.users += 1;
                Ok(send(to_json(&user)?))
            })
            .await?;
        if open {
            // Projects are stored as the exact JSON the listing (and so the
            // export) shows.
            db.query(
                "SELECT body FROM projects WHERE deleted_at IS NULL ORDER BY created_at, id",
                &[],
                &mut |row| {
                    counts.projects += 1;
                    open = send(row.text(0)?);
                    Ok(open)
                },
            )
            .await?;
        }
        if open {
            db.query(
                "SELECT s.project_id, s.body FROM projects p JOIN proxy_settings s ON s.project_id = p.id
                 WHERE p.deleted_at IS NULL ORDER BY p.created_at, p.id, s.revision",
                &[],
                &mut |row| {
                    let mut revision: ProxySettings = serde_json::from_str(&row.text(1)?).map_err(|e| {
                        StoreError::Internal(format!("stored proxy settings are not valid: {e}"))
                    })?;
                    revision.project_id = Some(row.text(0)?);
                    counts.proxy_settings += 1;
                    Ok(send(to_json(&revision)?))
                },
            )
            .await?;
        }
        if open {
            db.query(
                "SELECT project_id, name, token, verified, ssl, created_at, updated_at
                   FROM domains ORDER BY created_at, project_id, name",
                &[],
                &mut |row| {
                    let domain = DomainLine {
                        object: DomainTag::Tag,
                        project_id: row.text(0)?,
                        name: row.text(1)?,
                        token: Some(row.text(2)?),
                        dns_status: row.boolean(3)?,
                        ssl_status: row.boolean(4)?,
                        created_at: Some(timestamp(row, 5)?),
                        updated_at: Some(timestamp(row, 6)?),
                    };
                    counts.domains += 1;
                    Ok(send(to_json(&domain)?))
                },
            )
            .await?;
        }
        Ok(counts)
    })
}

/// Every organization, in creation order.
#[derive(Clone, Copy, Debug)]
pub struct AllOrganizations;

operation!(AllOrganizations => organizations, OperatorRead, "admin_org_list" -> Vec<Organization>);

async fn organizations(
    db: &mut dyn Db,
    _: &AllOrganizations,
) -> Result<Vec<Organization>, StoreError> {
    let mut all = Vec::new();
    each_organization(db, &mut |organization| {
        all.push(organization);
        Ok(true)
    })
    .await?;
    Ok(all)
}

/// Every user with its organizations, in creation order.
#[derive(Clone, Copy, Debug)]
pub struct AllUsers;

operation!(AllUsers => users, OperatorRead, "admin_user_list" -> Vec<User>);

async fn users(db: &mut dyn Db, _: &AllUsers) -> Result<Vec<User>, StoreError> {
    transaction!(db, begin_read, {
        let mut all = Vec::new();
        each_user(db, &mut |user| {
            all.push(user);
            Ok(true)
        })
        .await?;
        Ok(all)
    })
}

/// Every token of a user, revoked ones included, in creation order.
#[derive(Clone, Debug)]
pub struct UserTokens(pub String);

operation!(UserTokens => user_tokens, OperatorRead, "admin_token_list" -> Vec<TokenRecord>);

async fn user_tokens(
    db: &mut dyn Db,
    UserTokens(user_id): &UserTokens,
) -> Result<Vec<TokenRecord>, StoreError> {
    transaction!(db, begin_read, {
        if !exists(
            db,
            "SELECT 1 FROM users WHERE id = ?1",
            &[Param::Text(user_id)],
        )
        .await?
        {
            return Err(StoreError::NotFound {
                kind: "user",
                id: user_id.to_owned(),
            });
        }
        let sql = concat!(
            "SELECT ",
            token_columns!(),
            ", revoked_at FROM api_tokens WHERE user_id = ?1 ORDER BY created_at, id"
        );
        query_all(db, sql, &[Param::Text(user_id)], |row| {
            Ok(TokenRecord {
                token: api_token(row)?,
                revoked_at: timestamp_opt(row, 9)?,
            })
        })
        .await
    })
}

/// Calls `each` on every organization in creation order while it answers
/// `Ok(true)`; answers whether it went to the end.
async fn each_organization(
    db: &mut dyn Db,
    each: &mut (dyn FnMut(Organization) -> Result<bool, StoreError> + Send),
) -> Result<bool, StoreError> {
    let mut complete = true;
    db.query(
        "SELECT id, name, slug, type, created_at FROM organizations WHERE deleted_at IS NULL ORDER BY created_at, id",
        &[],
        &mut |row| {
            complete = each(Organization {
                object: OrganizationTag::Tag,
                id: row.text(0)?,
                name: row.text(1)?,
                slug: Some(row.text(2)?),
                kind: organization_type(row, 3)?,
                created_at: Some(timestamp(row, 4)?),
            })?;
            Ok(complete)
        },
    )
    .await?;
    Ok(complete)
}

/// Like [`each_organization`], for users with their roles.
async fn each_user(
    db: &mut dyn Db,
    each: &mut (dyn FnMut(User) -> Result<bool, StoreError> + Send),
) -> Result<bool, StoreError> {
    // Users and memberships are read whole before calling `each`: a driver
    // cannot run a second statement while the first one streams rows.
    let users = query_all(
        db,
        "SELECT id, email, name, created_at FROM users ORDER BY created_at, id",
        &[],
        |row| Ok((row.text(0)?, row.text(1)?, row.text(2)?, timestamp(row, 3)?)),
    )
    .await?;
    let mut memberships: HashMap<String, BTreeMap<String, Role>> = HashMap::new();
    db.query(
        "SELECT user_id, organization_id, role FROM memberships",
        &[],
        &mut |row| {
            memberships
                .entry(row.text(0)?)
                .or_default()
                .insert(row.text(1)?, role(row, 2)?);
            Ok(true)
        },
    )
    .await?;
    for (id, email, name, created_at) in users {
        let roles = memberships.remove(&id).unwrap_or_default();
        let user = User {
            object: UserTag::Tag,
            id,
            email,
            name: Some(name),
            roles,
            organizations: None,
            created_at: Some(created_at),
        };
        if !each(user)? {
            return Ok(false);
        }
    }
    Ok(true)
}
