//! How a client command finds the project (or organization) a person
//! names. The API addresses a project by its id only; a person knows it as
//! `ORG/SLUG`, as gh takes `OWNER/REPO`. Every command that takes a
//! project resolves it here, with [`resolve_project`].
//!
//! The order: a name holding a `/` is `ORG/SLUG` (an id never holds one);
//! any other name is tried as an id first (ids and slugs share their
//! characters, and an id names one project for sure), then as a slug that
//! exactly one of the caller's projects has.

use std::ops::ControlFlow;

use serde_json::Value;

use super::http::{ApiClient, Refused, Request, v1};
use crate::domain::project::check_slug;
use crate::output::printable;

/// The help of every argument that names a project.
pub const PROJECT_HELP: &str = "The project: its id, ORG/SLUG (its organization's slug, then its own, such as acme-corp/acme-shop), or its slug alone when no other project of yours has it";

/// The id of the project `given` names (see the module's text). What it
/// costs: an id, one request; `ORG/SLUG`, the caller's organizations (100
/// a request) until ORG, then that organization's projects until SLUG;
/// a slug alone, one request then every project of the caller (100 a
/// request), to be sure no other has it.
pub async fn resolve_project(client: &ApiClient, given: &str) -> anyhow::Result<String> {
    match given.split_once('/') {
        Some((organization, slug)) => in_organization(client, given, organization, slug).await,
        None => by_id_or_slug(client, given).await,
    }
}

/// The id of the organization `given` names among the caller's: its slug
/// or its id (in any letter case).
pub async fn resolve_organization(client: &ApiClient, given: &str) -> anyhow::Result<String> {
    let found = find_organization(client, given).await?;
    found.ok_or_else(|| {
        Unnamed(format!(
            "no organization {given:?} among yours (give its slug or id)"
        ))
        .into()
    })
}

/// A name that names no project (or organization) of the caller's, or
/// several, or is no name: asking again will not change it (what
/// `follow` needs to know, apart from a service it cannot reach).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unnamed(String);

/// Not found, or not one the token can see: the API answers both alike.
fn no_project(given: &str) -> anyhow::Error {
    Unnamed(format!(
        "no project {given:?} (or this token cannot see it)"
    ))
    .into()
}

async fn in_organization(
    client: &ApiClient,
    given: &str,
    organization: &str,
    slug: &str,
) -> anyhow::Result<String> {
    if organization.is_empty() || slug.is_empty() || slug.contains('/') {
        return Err(Unnamed(format!(
            "{given:?}: name a project as ORG/SLUG (such as acme-corp/acme-shop), by its id, or by its slug"
        ))
        .into());
    }
    let Some(organization_id) = find_organization(client, organization).await? else {
        return Err(Unnamed(format!(
            "no organization {organization:?} among yours (in {given:?})"
        ))
        .into());
    };
    let query = [("organization_id", organization_id)];
    let found = client
        .walk(&v1(&["projects"]), &query, |projects| {
            match projects.into_iter().find(|project| project["slug"] == slug) {
                Some(project) => ControlFlow::Break(project),
                None => ControlFlow::Continue(()),
            }
        })
        .await?;
    match found.as_ref().and_then(|project| project["id"].as_str()) {
        Some(id) => Ok(id.to_owned()),
        None => Err(no_project(given)),
    }
}

async fn by_id_or_slug(client: &ApiClient, given: &str) -> anyhow::Result<String> {
    let path = v1(&["projects", given]);
    match client.send(Request::new(reqwest::Method::GET, &path)).await {
        Ok(_) => return Ok(given.to_owned()),
        Err(error) => match error.downcast_ref::<Refused>() {
            // No project has that id (or it is no id at all): a slug?
            Some(refused) if refused.is_not_found() || refused.is_malformed_id() => {}
            _ => return Err(error),
        },
    }
    if check_slug(given).is_err() {
        return Err(no_project(given));
    }
    // (id, organization id) of each project with that slug.
    let mut found: Vec<(String, String)> = Vec::new();
    client
        .walk(&v1(&["projects"]), &[], |projects| {
            let named = projects.iter().filter(|project| project["slug"] == given);
            found.extend(
                named.map(|project| (text(&project["id"]), text(&project["organization_id"]))),
            );
            ControlFlow::<()>::Continue(())
        })
        .await?;
    match found.as_slice() {
        [] => Err(no_project(given)),
        [(id, _)] => Ok(id.clone()),
        several => {
            let slugs = organization_slugs(client).await?;
            let mut names: Vec<String> = several
                .iter()
                .map(|(_, organization)| {
                    let owner = slugs.get(organization).unwrap_or(organization);
                    printable(&format!("{owner}/{given}")).into_owned()
                })
                .collect();
            names.sort();
            Err(Unnamed(format!(
                "{} of your projects have the slug {given:?}: {}; name one as ORG/SLUG",
                several.len(),
                names.join(", ")
            ))
            .into())
        }
    }
}

/// The caller's organization whose slug is `given`, or whose id is (in
/// any letter case): its id. Stops at the page that has it.
async fn find_organization(client: &ApiClient, given: &str) -> anyhow::Result<Option<String>> {
    let found = client
        .walk(&v1(&["organizations"]), &[], |organizations| {
            let named = organizations.iter().find(|organization| {
                organization["slug"] == given
                    || organization["id"]
                        .as_str()
                        .is_some_and(|id| id.eq_ignore_ascii_case(given))
            });
            match named {
                Some(organization) => ControlFlow::Break(text(&organization["id"])),
                None => ControlFlow::Continue(()),
            }
        })
        .await?;
    Ok(found)
}

/// The slugs of the caller's organizations, by id.
async fn organization_slugs(
    client: &ApiClient,
) -> anyhow::Result<std::collections::HashMap<String, String>> {
    let mut slugs = std::collections::HashMap::new();
    client
        .walk(&v1(&["organizations"]), &[], |organizations| {
            slugs.extend(
                organizations
                    .iter()
                    .map(|organization| (text(&organization["id"]), text(&organization["slug"]))),
            );
            ControlFlow::<()>::Continue(())
        })
        .await?;
    Ok(slugs)
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}
