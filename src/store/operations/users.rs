//! Users (docs/teams.md, "Users"): getUser (the caller itself, or a user
//! it shares an organization with, whose roles are then those of the
//! shared organizations only) and updateUser (the caller itself).

use super::memberships::user_with_roles;
use super::write_request::{ObjectAnswer, WriteRequest};
use super::write_steps::{self, Change, Target};
use crate::domain::access::{self, Action, Facts, Refusal, Standing};
use crate::domain::directory::UserWithRoles;
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::sql::db::{Db, Param, to_json, transaction};

/// getUser: `user_id` as the caller `caller_id` may see it, with its
/// version (the `ETag` updateUser's `If-Match` compares).
#[derive(Clone, Debug)]
pub struct GetUser {
    pub caller_id: String,
    pub user_id: String,
}

operation!(GetUser => get, Read, "get_user" -> (UserWithRoles, i64));

async fn get(db: &mut dyn Db, query: &GetUser) -> Result<(UserWithRoles, i64), StoreError> {
    let itself = query.caller_id == query.user_id;
    let seen_by = (!itself).then_some(query.caller_id.as_str());
    let found = transaction!(db, begin_read, {
        user_with_roles(db, &query.user_id, seen_by).await
    })?;
    // Another user is seen only through an organization both are in.
    let standing = match &found {
        _ if itself => Standing::Owner,
        Some((user, _)) if !user.roles.is_empty() => Standing::Member(None),
        _ => Standing::Stranger,
    };
    access::decide(Action::ReadUser, Facts::live(standing))
        .map_err(|refusal| StoreError::refused(refusal, "user"))?;
    found.ok_or_else(|| StoreError::refused(Refusal::NotFound, "user"))
}

/// A member of updateUser's body: absent (unchanged), `null` (cleared) or
/// a value.
#[derive(Clone, Debug, Default)]
pub enum Set {
    #[default]
    Unchanged,
    Clear,
    To(String),
}

/// updateUser: the caller's avatar and accepted terms and privacy
/// versions.
#[derive(Clone, Debug)]
pub struct UpdateUser {
    pub request: WriteRequest,
    pub user_id: String,
    pub avatar_url: Set,
    pub terms_version: Set,
    pub privacy_version: Set,
}

operation!(UpdateUser => update, Write, "update_user" -> ObjectAnswer);

async fn update(db: &mut dyn Db, query: &UpdateUser) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let request = &query.request;
    transaction!(db, begin_write, {
        let target = Target::User(&query.user_id);
        write_steps::authorize(db, request, Action::ChangeOwnUser, target, now).await?;
        // Updates of one user run one after the other.
        write_steps::lock_user(db, &query.user_id).await?;
        let no_user = || StoreError::refused(Refusal::NotFound, "user");
        let (_, version) = user_with_roles(db, &query.user_id, None)
            .await?
            .ok_or_else(no_user)?;
        write_steps::check_if_match(request, version)?;
        let mut sets = vec!["updated_at = ?2".to_owned(), "version = version + 1".into()];
        let mut params = vec![Param::Text(&query.user_id), Param::Int(now.as_millis())];
        for (column, set) in [
            ("avatar_url", &query.avatar_url),
            ("terms_version", &query.terms_version),
            ("privacy_version", &query.privacy_version),
        ] {
            match set {
                Set::Unchanged => continue,
                Set::Clear => params.push(Param::OptText(None)),
                Set::To(value) => params.push(Param::Text(value)),
            }
            sets.push(format!("{column} = ?{}", params.len()));
        }
        let sql = format!("UPDATE users SET {} WHERE id = ?1", sets.join(", "));
        db.execute(&sql, &params).await?;
        let (user, version_after) = user_with_roles(db, &query.user_id, None)
            .await?
            .ok_or_else(no_user)?;
        let change = Change {
            object: "user",
            object_id: &query.user_id,
            version_before: Some(version),
            version_after: Some(version_after),
            feed: None,
        };
        write_steps::record(db, request, now, change).await?;
        Ok(ObjectAnswer {
            body: to_json(&user)?,
            version: version_after,
        })
    })
}
