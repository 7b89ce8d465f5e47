//! A project's custom domains (`docs/domains.md`): listProjectDomains,
//! getProjectDomain, createProjectDomain, updateProjectDomain,
//! deleteProjectDomain, and the background checks' two steps (which
//! names are due, and what a check found). Reads need the right to read
//! the project; writes the right to change it, but for an edge's report of
//! its certificate (`ssl_status` alone), which needs only the right to
//! read it, as reportEdge does. Each write is audited (object `domain`,
//! id `PROJECT/NAME`) and fed (`domain.*`).
//!
//! A name is once in an organization (`domains_organization_name`) and
//! verified in one organization at most (`domains_verified_name`, the last
//! word when two checks verify it at once).

use super::by_name::{NamePage, NamePageSql};
use super::readable::{Deleted, readable_project};
use super::write_request::{ObjectAnswer, WriteRequest};
use super::write_steps::{self, Change, Fed, Target};
use crate::domain::FieldError;
use crate::domain::access::Action;
use crate::domain::change::ChangeKind;
use crate::domain::domains::{CheckResult, CheckSchedule, StoredDomain, after_check};
use crate::domain::host_name::HostName;
use crate::domain::organization_set::OrganizationSet;
use crate::domain::time::Timestamp;
use crate::store::engine::operation::operation;
use crate::store::error::{Conflict, StoreError};
use crate::store::sql::db::{Db, Param, Row, exists, query_all, query_opt, to_json, transaction};

/// A domain's columns, as [`stored`] reads them.
const COLUMNS: &str = "name, project_id, token, verified, ssl, created_at, updated_at, version,
    last_result, checked_at, next_check_at, missing_since, misses";

fn no_such(kind: &'static str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: String::new(),
    }
}

/// How many names one project, and one organization's pending names, may
/// hold (`--domains-per-project`, `--pending-domains-per-organization`).
#[derive(Clone, Copy, Debug)]
pub struct DomainLimits {
    pub per_project: u32,
    pub pending_per_organization: u32,
}

/// A page of a project's domains, by name: at most `limit` after
/// `start_key` (a name), and whether more follow.
#[derive(Clone, Debug)]
pub struct ListDomains {
    pub project_id: String,
    pub visible_to: OrganizationSet,
    pub limit: u32,
    pub start_key: Option<String>,
}

operation!(ListDomains => list, Read, "list_project_domains" -> (Vec<StoredDomain>, bool));

async fn list(
    db: &mut dyn Db,
    query: &ListDomains,
) -> Result<(Vec<StoredDomain>, bool), StoreError> {
    let page = NamePage {
        project_id: &query.project_id,
        start_key: query.start_key.as_deref(),
        limit: query.limit,
    };
    let domains = transaction!(db, begin_read, {
        let visible_to = Some(&query.visible_to);
        readable_project(db, visible_to, &query.project_id, Deleted::Excluded).await?;
        let NamePageSql {
            after,
            params,
            limit_at,
        } = page.sql();
        let sql = format!(
            "SELECT {COLUMNS} FROM domains WHERE project_id = ?1{after} ORDER BY name LIMIT ?{limit_at}"
        );
        query_all(db, &sql, &params, stored).await
    })?;
    Ok(page.finish(domains))
}

/// getProjectDomain: one domain of a project the caller may read.
#[derive(Clone, Debug)]
pub struct GetDomain {
    pub project_id: String,
    pub name: String,
    pub visible_to: OrganizationSet,
}

operation!(GetDomain => get, Read, "get_project_domain" -> StoredDomain);

async fn get(db: &mut dyn Db, query: &GetDomain) -> Result<StoredDomain, StoreError> {
    transaction!(db, begin_read, {
        let visible_to = Some(&query.visible_to);
        readable_project(db, visible_to, &query.project_id, Deleted::Excluded).await?;
        read_domain(db, &query.project_id, &query.name)
            .await?
            .ok_or_else(|| no_such("domain"))
    })
}

async fn read_domain(
    db: &mut dyn Db,
    project_id: &str,
    name: &str,
) -> Result<Option<StoredDomain>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM domains WHERE project_id = ?1 AND name = ?2");
    query_opt(
        db,
        &sql,
        &[Param::Text(project_id), Param::Text(name)],
        stored,
    )
    .await
}

/// createProjectDomain: a pending name, its token new, its first check due
/// now. With an idempotency key, the key's first answer may come instead.
#[derive(Clone, Debug)]
pub struct CreateDomain {
    pub request: WriteRequest,
    pub project_id: String,
    pub name: HostName,
    pub token: String,
    pub limits: DomainLimits,
}

operation!(CreateDomain => create, Write, "create_project_domain" -> ObjectAnswer);

async fn create(db: &mut dyn Db, query: &CreateDomain) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let request = &query.request;
    let project = Param::Text(&query.project_id);
    let name = Param::Text(query.name.as_str());
    transaction!(db, begin_write, {
        let target = Target::Project(&query.project_id);
        let organization = write_steps::authorize(db, request, Action::ChangeProjects, target, now)
            .await?
            .ok_or_else(|| no_such("project"))?;
        let number = write_steps::lock_organization(db, &organization)
            .await?
            .ok_or_else(|| no_such("project"))?;
        if let Some(answer) = write_steps::replay(db, request, &query.project_id, now).await? {
            return Ok(answer);
        }
        let sql = "SELECT project_id FROM domains WHERE organization_number = ?1 AND name = ?2";
        let held = query_opt(db, sql, &[Param::Int(number), name], |row| row.text(0)).await?;
        if let Some(project_id) = held {
            return Err(StoreError::Conflict(Conflict::DomainInOrganization {
                name: query.name.to_string(),
                project_id,
            }));
        }
        let sql = "SELECT 1 FROM domains WHERE name = ?1 AND verified = ?2";
        if exists(db, sql, &[name, Param::Bool(true)]).await? {
            return Err(StoreError::Conflict(Conflict::DomainVerifiedElsewhere {
                name: query.name.to_string(),
            }));
        }
        let limits = query.limits;
        let sql = "SELECT COUNT(*) FROM domains WHERE project_id = ?1";
        let in_project = query_opt(db, sql, &[project], |row| row.int(0)).await?;
        if in_project.unwrap_or(0) >= i64::from(limits.per_project) {
            return Err(StoreError::Invalid(FieldError::new(
                "name",
                format!(
                    "is one name too many: a project holds at most {} domains",
                    limits.per_project
                ),
            )));
        }
        let sql = "SELECT COUNT(*) FROM domains WHERE organization_number = ?1 AND verified = ?2";
        let pending = query_opt(db, sql, &[Param::Int(number), Param::Bool(false)], |row| {
            row.int(0)
        })
        .await?;
        if pending.unwrap_or(0) >= i64::from(limits.pending_per_organization) {
            return Err(StoreError::Invalid(FieldError::new(
                "name",
                format!(
                    "is one pending name too many: an organization holds at most {} names \
                     not verified yet (verify or remove some first)",
                    limits.pending_per_organization
                ),
            )));
        }
        let domain = StoredDomain {
            name: query.name.to_string(),
            project_id: query.project_id.clone(),
            token: query.token.clone(),
            verified: false,
            ssl: false,
            created_at: now,
            updated_at: now,
            version: 1,
            last_result: None,
            checked_at: None,
            next_check_at: Some(now),
            missing_since: None,
            misses: 0,
        };
        db.execute(
            "INSERT INTO domains (project_id, name, organization_number, token, verified, ssl,
                                  created_at, updated_at, version, next_check_at, misses)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?6, 1, ?6, 0)",
            &[
                project,
                name,
                Param::Int(number),
                Param::Text(&domain.token),
                Param::Bool(false),
                Param::Int(now.as_millis()),
            ],
        )
        .await?;
        // Not verified: the grace period has no part in its answer.
        let answer = answer(&domain, 0)?;
        let kind = Some(ChangeKind::DomainCreated);
        record(db, request, now, &domain, kind, None).await?;
        write_steps::keep_answer(db, request, &query.project_id, &answer, now).await?;
        Ok(answer)
    })
}

/// The answer of a write: the domain's object and version.
fn answer(domain: &StoredDomain, grace_millis: i64) -> Result<ObjectAnswer, StoreError> {
    Ok(ObjectAnswer {
        body: to_json(&domain.answer(grace_millis))?,
        version: domain.version,
    })
}

/// Audits a domain's write and feeds its change, if it is one the feed
/// tells (`kind`): a check that changed no status is audited only.
async fn record(
    db: &mut dyn Db,
    request: &WriteRequest,
    now: Timestamp,
    domain: &StoredDomain,
    kind: Option<ChangeKind>,
    version_before: Option<i64>,
) -> Result<(), StoreError> {
    let object_id = format!("{}/{}", domain.project_id, domain.name);
    let change = Change {
        object: "domain",
        object_id: &object_id,
        version_before,
        // A deletion's too, as a project's: what the feed's change names.
        version_after: Some(domain.version),
        feed: kind.map(|kind| Fed {
            kind,
            project_id: &domain.project_id,
            revision: None,
            domain: Some(&domain.name),
            rollout: None,
        }),
    };
    write_steps::record(db, request, now, change).await
}

/// updateProjectDomain: a check's result (`dns_status: true` asked for
/// one, made by the caller before), an edge's report of the certificate
/// (`ssl_status`), or both.
#[derive(Clone, Debug)]
pub struct UpdateDomain {
    pub request: WriteRequest,
    pub project_id: String,
    pub name: String,
    pub check: Option<CheckResult>,
    pub ssl: Option<bool>,
    pub schedule: CheckSchedule,
}

operation!(UpdateDomain => update, Write, "update_project_domain" -> ObjectAnswer);

async fn update(db: &mut dyn Db, query: &UpdateDomain) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let request = &query.request;
    // Reporting the certificate is an edge's: it needs the right to read
    // the project, as reportEdge does. Anything else changes it.
    let action = match (query.check, query.ssl) {
        (None, Some(_)) => Action::ReadProjects,
        _ => Action::ChangeProjects,
    };
    transaction!(db, begin_write, {
        let domain =
            locked_domain(db, request, action, &query.project_id, &query.name, now).await?;
        let mut after = match query.check {
            Some(result) => {
                let result = claimed_elsewhere(db, &domain, result).await?;
                after_check(&domain, result, now, &query.schedule)
            }
            None => domain.clone(),
        };
        if let Some(ssl) = query.ssl {
            if ssl && !after.verified {
                return Err(StoreError::Invalid(FieldError::new(
                    "ssl_status",
                    "can be true only for a name whose dns_status is true: \
                     no certificate is served for a name that does not route",
                )));
            }
            after.ssl = ssl;
        }
        let fed = write_domain(db, &domain, &mut after, now).await?;
        let kind = fed.then_some(ChangeKind::DomainUpdated);
        record(db, request, now, &after, kind, Some(domain.version)).await?;
        answer(&after, query.schedule.grace_millis)
    })
}

/// The domain a write changes, read under its organization's lock once the
/// caller may do `action` to its project: 401, 403, or the same 404 for a
/// project unknown or invisible; 404 for a name the project lacks; 412
/// when `If-Match` names another version.
async fn locked_domain(
    db: &mut dyn Db,
    request: &WriteRequest,
    action: Action,
    project_id: &str,
    name: &str,
    now: Timestamp,
) -> Result<StoredDomain, StoreError> {
    let target = Target::Project(project_id);
    let organization = write_steps::authorize(db, request, action, target, now)
        .await?
        .ok_or_else(|| no_such("project"))?;
    write_steps::lock_organization(db, &organization).await?;
    let domain = read_domain(db, project_id, name)
        .await?
        .ok_or_else(|| no_such("domain"))?;
    write_steps::check_if_match(request, domain.version)?;
    Ok(domain)
}

/// A check that found the record, for a name another organization has
/// verified: it stays theirs (until their record is gone past the grace
/// period).
async fn claimed_elsewhere(
    db: &mut dyn Db,
    domain: &StoredDomain,
    result: CheckResult,
) -> Result<CheckResult, StoreError> {
    if result != CheckResult::Found || domain.verified {
        return Ok(result);
    }
    let sql = "SELECT 1 FROM domains WHERE name = ?1 AND verified = ?2 AND project_id <> ?3";
    let params = [
        Param::Text(&domain.name),
        Param::Bool(true),
        Param::Text(&domain.project_id),
    ];
    Ok(if exists(db, sql, &params).await? {
        CheckResult::VerifiedElsewhere
    } else {
        result
    })
}

/// Writes a domain's new state (`after`, from `before`): its version one
/// more, its `updated_at` moved when what it says changed. Answers whether
/// it did: whether the feed is told.
async fn write_domain(
    db: &mut dyn Db,
    before: &StoredDomain,
    after: &mut StoredDomain,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let changed = (after.verified, after.ssl, after.missing_since.is_some())
        != (before.verified, before.ssl, before.missing_since.is_some());
    after.version = before.version + 1;
    if changed {
        // Forward, even when the clock is not.
        let at = now.as_millis().max(before.updated_at.as_millis() + 1);
        after.updated_at = Timestamp::from_millis(at).unwrap_or(now);
    }
    let millis = |t: Option<Timestamp>| t.map(Timestamp::as_millis);
    let written = db
        .execute(
            "UPDATE domains SET verified = ?3, ssl = ?4, updated_at = ?5, version = ?6,
                    last_result = ?7, checked_at = ?8, next_check_at = ?9,
                    missing_since = ?10, misses = ?11
              WHERE project_id = ?1 AND name = ?2 AND version = ?12",
            &[
                Param::Text(&before.project_id),
                Param::Text(&before.name),
                Param::Bool(after.verified),
                Param::Bool(after.ssl),
                Param::Int(after.updated_at.as_millis()),
                Param::Int(after.version),
                Param::OptText(after.last_result.map(CheckResult::as_str)),
                Param::OptInt(millis(after.checked_at)),
                Param::OptInt(millis(after.next_check_at)),
                Param::OptInt(millis(after.missing_since)),
                Param::Int(after.misses),
                Param::Int(before.version),
            ],
        )
        .await
        .map_err(|e| {
            e.conflict_named(|| Conflict::DomainVerifiedElsewhere {
                name: before.name.clone(),
            })
        })?;
    if written == 0 {
        return Err(StoreError::Retry);
    }
    Ok(changed)
}

/// deleteProjectDomain: the name stops routing with the commit.
#[derive(Clone, Debug)]
pub struct DeleteDomain {
    pub request: WriteRequest,
    pub project_id: String,
    pub name: String,
}

operation!(DeleteDomain => delete, Write, "delete_project_domain" -> ObjectAnswer);

async fn delete(db: &mut dyn Db, query: &DeleteDomain) -> Result<ObjectAnswer, StoreError> {
    let now = Timestamp::now();
    let request = &query.request;
    transaction!(db, begin_write, {
        let (project_id, name) = (&query.project_id, &query.name);
        let action = Action::ChangeProjects;
        let domain = locked_domain(db, request, action, project_id, name, now).await?;
        db.execute(
            "DELETE FROM domains WHERE project_id = ?1 AND name = ?2",
            &[Param::Text(&domain.project_id), Param::Text(&domain.name)],
        )
        .await?;
        let mut gone = domain.clone();
        gone.version += 1;
        let kind = Some(ChangeKind::DomainDeleted);
        record(db, request, now, &gone, kind, Some(domain.version)).await?;
        let body = to_json(&serde_json::json!({
            "object": "domain",
            "id": domain.name,
            "deleted": true,
        }))?;
        Ok(ObjectAnswer {
            body,
            version: gone.version,
        })
    })
}

/// Removes a project's domains, in the transaction that deletes it: its
/// names stop routing with it (the feed's `project.deleted` says so).
pub(crate) async fn remove_all(db: &mut dyn Db, project_id: &str) -> Result<(), StoreError> {
    db.execute(
        "DELETE FROM domains WHERE project_id = ?1",
        &[Param::Text(project_id)],
    )
    .await?;
    Ok(())
}

/// A name whose check is due, as the background checks take it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueCheck {
    pub project_id: String,
    pub name: String,
    pub token: String,
}

/// The names whose check is due by `now`, at most `limit`, the longest
/// due first; each put off by `lease_millis`, so that another instance
/// (or this one's next round) does not take it while it is checked.
#[derive(Clone, Debug)]
pub struct TakeDueChecks {
    pub now: Timestamp,
    pub limit: u32,
    pub lease_millis: i64,
}

operation!(TakeDueChecks => take_due, Write, "take_due_domain_checks" -> Vec<DueCheck>);

async fn take_due(db: &mut dyn Db, query: &TakeDueChecks) -> Result<Vec<DueCheck>, StoreError> {
    let now = query.now.as_millis();
    // One statement: on PostgreSQL an instance taking the same rows at
    // once waits for this one's commit, then finds them no longer due
    // (the outer condition is checked again on the rows it updates).
    query_all(
        db,
        "UPDATE domains SET next_check_at = ?3
          WHERE next_check_at <= ?1 AND (project_id, name) IN
                (SELECT project_id, name FROM domains
                  WHERE next_check_at IS NOT NULL AND next_check_at <= ?1
                  ORDER BY next_check_at LIMIT ?2)
          RETURNING project_id, name, token",
        &[
            Param::Int(now),
            Param::Int(i64::from(query.limit)),
            Param::Int(now + query.lease_millis),
        ],
        |row| {
            Ok(DueCheck {
                project_id: row.text(0)?,
                name: row.text(1)?,
                token: row.text(2)?,
            })
        },
    )
    .await
}

/// What a background check found for a name: written if the name is still
/// the same claim (its token), fed when its status changed. Answers
/// whether it was verified before, and the domain after, if it is still
/// there.
#[derive(Clone, Debug)]
pub struct RecordCheck {
    pub check: DueCheck,
    pub result: CheckResult,
    pub schedule: CheckSchedule,
}

operation!(RecordCheck => record_check, Write, "record_domain_check" -> Option<(bool, StoredDomain)>);

async fn record_check(
    db: &mut dyn Db,
    query: &RecordCheck,
) -> Result<Option<(bool, StoredDomain)>, StoreError> {
    let now = Timestamp::now();
    let check = &query.check;
    transaction!(db, begin_write, {
        let organization = query_opt(
            db,
            "SELECT organization_id FROM projects WHERE id = ?1 AND deleted_at IS NULL",
            &[Param::Text(&check.project_id)],
            |row| row.text(0),
        )
        .await?;
        let Some(organization) = organization else {
            return Ok(None);
        };
        write_steps::lock_organization(db, &organization).await?;
        let domain = read_domain(db, &check.project_id, &check.name).await?;
        let Some(domain) = domain.filter(|domain| domain.token == check.token) else {
            return Ok(None);
        };
        let result = claimed_elsewhere(db, &domain, query.result).await?;
        let mut after = after_check(&domain, result, now, &query.schedule);
        if write_domain(db, &domain, &mut after, now).await? {
            let fed = Fed {
                domain: Some(&after.name),
                ..Fed::of(ChangeKind::DomainUpdated, &after.project_id, None)
            };
            super::changes::record(db, fed, after.version, now).await?;
        }
        Ok(Some((domain.verified, after)))
    })
}

/// A domain, from its [`COLUMNS`].
fn stored(row: &dyn Row) -> Result<StoredDomain, StoreError> {
    let unreadable =
        |what: &str| StoreError::Internal(format!("a domain's {what} is stored unreadable"));
    let time = |column: usize| -> Result<Option<Timestamp>, StoreError> {
        row.opt_int(column)?
            .map(|millis| Timestamp::from_millis(millis).ok_or_else(|| unreadable("time")))
            .transpose()
    };
    let last_result = if row.is_null(8)? {
        None
    } else {
        Some(CheckResult::parse(row.str(8)?).ok_or_else(|| unreadable("last check"))?)
    };
    Ok(StoredDomain {
        name: row.text(0)?,
        project_id: row.text(1)?,
        token: row.text(2)?,
        verified: row.boolean(3)?,
        ssl: row.boolean(4)?,
        created_at: time(5)?.ok_or_else(|| unreadable("time"))?,
        updated_at: time(6)?.ok_or_else(|| unreadable("time"))?,
        version: row.int(7)?,
        last_result,
        checked_at: time(9)?,
        next_check_at: time(10)?,
        missing_since: time(11)?,
        misses: row.int(12)?,
    })
}
