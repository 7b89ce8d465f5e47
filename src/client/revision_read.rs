//! One revision of a project's proxy settings, read through the listing,
//! one short page positioned at it (the API has no single-revision read):
//! what `proxy-settings get` and `diff` show, and what `follow` writes.

use std::cmp::Ordering;

use anyhow::anyhow;
use serde_json::Value;

use super::http::{ApiClient, Page, Refused, v1};
use super::names::resolve_project;
use crate::domain::pagination::MAX_LIMIT;

/// A project as the person named it, and its id.
pub struct Project {
    pub given: String,
    pub id: String,
}

impl Project {
    /// A project the caller knows by its id (`follow`, from the feed).
    pub fn by_id(id: &str) -> Self {
        Self {
            given: id.to_owned(),
            id: id.to_owned(),
        }
    }

    pub async fn resolve(client: &ApiClient, given: String) -> anyhow::Result<Self> {
        let id = resolve_project(client, &given).await?;
        Ok(Self { given, id })
    }
}

/// Revision `number` of `project`, read with pages of one item: ascending
/// after `number - 1`, else (that one is no revision) descending after
/// `number + 1`; either page answers whether `number` exists. Revisions
/// are numbered without gaps unless an import left some: when neither
/// neighbour exists, pages walk down from the newest revision to `number`.
pub async fn fetch(client: &ApiClient, project: &Project, number: u32) -> anyhow::Result<Value> {
    let missing = || {
        anyhow!(
            "project {:?} has no proxy settings revision {number}",
            project.given
        )
    };
    // Revision 1 is the first item: no start key.
    let mut tries = vec![("ASC", (number > 1).then(|| (number - 1).to_string()))];
    tries.extend(
        number
            .checked_add(1)
            .map(|after| ("DESC", Some(after.to_string()))),
    );
    for (direction, after) in tries {
        if let Some(page) = page(client, project, direction, 1, after).await? {
            let first = page.items()?.into_iter().next();
            return first
                .filter(|item| revision_of(item) == Some(number))
                .ok_or_else(missing);
        }
    }
    let mut start_key = None;
    loop {
        let page = page(client, project, "DESC", MAX_LIMIT, start_key.take())
            .await?
            .ok_or_else(missing)?;
        let next = page.next_key(Some(MAX_LIMIT));
        for item in page.items()? {
            match revision_of(&item).map(|revision| revision.cmp(&number)) {
                Some(Ordering::Equal) => return Ok(item),
                Some(Ordering::Less) => return Err(missing()),
                _ => {}
            }
        }
        start_key = Some(next.ok_or_else(missing)?);
    }
}

/// One page of the project's revisions; `None` when `start_key` is no
/// revision of it.
async fn page(
    client: &ApiClient,
    project: &Project,
    direction: &str,
    limit: u32,
    start_key: Option<String>,
) -> anyhow::Result<Option<Page>> {
    let segments = v1(&["projects", &project.id, "proxy-settings"]);
    let mut query = vec![
        ("limit", limit.to_string()),
        ("order_direction", direction.to_owned()),
    ];
    query.extend(start_key.map(|key| ("start_key", key)));
    match client.page(&segments, &query).await {
        Ok(page) => Ok(Some(page)),
        Err(error) => match error.downcast_ref::<Refused>() {
            Some(refused) if refused.is_unknown_start_key() => Ok(None),
            // Gone since it was named.
            Some(refused) if refused.is_not_found() => Err(anyhow!(
                "no project {:?} (or this token cannot see it)",
                project.given
            )),
            _ => Err(error),
        },
    }
}

pub fn revision_of(item: &Value) -> Option<u32> {
    item["revision"]
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
}
