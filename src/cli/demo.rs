//! `proxydeck demo`: demo data on the embedded store, a fresh token, and
//! the service.
//!
//! The data has fixed ids, so running the demo again on the same file
//! changes nothing but adds a new token.

use anyhow::bail;
use serde_json::json;
use std::sync::Arc;
use tokio::sync::mpsc;

use crate::app::{Listeners, Service, ServiceOptions, shutdown_signal};
use crate::domain::directory::{
    Organization, OrganizationTag, OrganizationType, Role, User, UserTag,
};
use crate::domain::import::{ImportBatch, ImportRecord, ObjectCounts};
use crate::domain::project::Project;
use crate::domain::proxy_settings::ProxySettings;
use crate::domain::time::Timestamp;
use crate::output::Output;
use crate::store::operator::admin::CreateToken;
use crate::store::operator::import::Import;
use crate::store::{self, DatabaseUrl, NewToken, StoreOptions};

const ACME: &str = "0190b7a4-0000-7000-8000-000000000001";
const GLOBEX: &str = "0190b7a4-0000-7000-8000-000000000002";
const INITECH: &str = "0190b7a4-0000-7000-8000-000000000003";
pub const DEMO_USER: &str = "demo-user";

pub async fn run(
    database: &DatabaseUrl,
    store_options: &StoreOptions,
    options: ServiceOptions,
    out: &Output,
) -> anyhow::Result<()> {
    let DatabaseUrl::Sqlite(path) = database else {
        bail!("the demo runs on the embedded store: pass --database sqlite://PATH");
    };
    let shutdown = shutdown_signal()?;
    // The address first: a start that cannot listen creates no store.
    let listeners = Listeners::bind(&options).await?;
    let new_file = !path.exists();
    let started = load(database, store_options).await;
    let (store, summary, secret) = match started {
        Ok(started) => started,
        Err(error) => {
            // A failed start leaves nothing behind: the file it made goes.
            if new_file {
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    let mut file = path.clone().into_os_string();
                    file.push(suffix);
                    let _ = std::fs::remove_file(file);
                }
            }
            return Err(error);
        }
    };
    let service = Service::on(listeners, Arc::new(store), options)?;
    let url = format!("http://{}", service.local_addr());
    #[derive(serde::Serialize)]
    struct Started<'a> {
        url: &'a str,
        token: &'a str,
    }
    out.print(&Started { url: &url, token: &secret }, || {
        format!(
            "proxydeck demo: {} organizations, {} users, {} projects, {} proxy settings revisions\n\
             serving on {url}\n\n\
             token: {secret}\n\n\
             the web console (sign in with the token): {url}/console\n\n\
             for the terminal client (then: proxydeck projects list):\n  \
             export PROXYDECK_URL='{url}' PROXYDECK_TOKEN='{secret}'\n\n\
             try:\n  \
             curl -H 'Authorization: Bearer {secret}' '{url}/v1/projects?limit=5'\n  \
             curl -H 'Authorization: Bearer {secret}' '{url}/v1/projects?organization_id={GLOBEX}&order_direction=ASC'\n  \
             curl -H 'Authorization: Bearer {secret}' '{url}/v1/api_tokens'\n  \
             curl -H 'Authorization: Bearer {secret}' '{url}/v1/projects/acme-shop/proxy-settings'\n\n\
             Ctrl-C stops it.",
            summary.organizations, summary.users, summary.projects, summary.proxy_settings
        )
    })?;
    service.run(shutdown).await;
    Ok(())
}

/// The store with the demo data, the import's summary and a new token's
/// secret.
async fn load(
    database: &DatabaseUrl,
    store_options: &StoreOptions,
) -> anyhow::Result<(store::Store, ObjectCounts, String)> {
    let store = store::open(database, store_options).await?;
    let (sender, receiver) = mpsc::channel::<ImportBatch>(1);
    let batch = demo_records()
        .into_iter()
        .enumerate()
        .map(|(line, record)| Ok((line as u64 + 1, record)))
        .collect();
    sender.send(batch).await?;
    drop(sender);
    let summary =
        Import::outcome(store.run(Import::new(receiver)).await).map_err(anyhow::Error::msg)?;
    let (token, secret) = NewToken::mint(DEMO_USER.into(), "demo".into(), None);
    store.run(CreateToken(token)).await?;
    Ok((store, summary, secret))
}

/// Three organizations; the demo user belongs to two of them, so the third
/// one's projects show what a caller cannot see.
fn demo_records() -> Vec<ImportRecord> {
    let base = Timestamp::parse("2026-01-05T09:00:00Z").expect("a valid timestamp");
    let at = |minutes: i64| base.plus_seconds(minutes * 60);
    let mut records = Vec::new();
    for (id, name, minute) in [
        (ACME, "Acme Corp", 0),
        (GLOBEX, "Globex", 1),
        (INITECH, "Initech", 2),
    ] {
        records.push(ImportRecord::Organization(Organization {
            object: OrganizationTag::Tag,
            id: id.into(),
            name: name.into(),
            slug: None,
            kind: OrganizationType::Pro,
            created_at: at(minute),
        }));
    }
    for (id, email, name, roles) in [
        (
            DEMO_USER,
            "demo@proxydeck.example",
            "Demo User",
            vec![(ACME, Role::Admin), (GLOBEX, Role::Editor)],
        ),
        (
            "initech-admin",
            "admin@initech.example",
            "Initech Admin",
            vec![(INITECH, Role::Admin)],
        ),
    ] {
        records.push(ImportRecord::User(User {
            object: UserTag::Tag,
            id: id.into(),
            email: email.into(),
            name: Some(name.into()),
            roles: roles
                .into_iter()
                .map(|(org, role)| (org.to_owned(), role))
                .collect(),
            organizations: None,
            created_at: at(3),
        }));
    }
    let sites = [
        "shop", "blog", "docs", "status", "api", "app", "careers", "help", "cdn", "news",
    ];
    let mut minute = 10;
    for (organization, prefix, count) in [
        (ACME, "acme", 30),
        (GLOBEX, "globex", 15),
        (INITECH, "initech", 5),
    ] {
        for i in 0..count {
            let site = sites[i % sites.len()];
            let id = if i < sites.len() {
                format!("{prefix}-{site}")
            } else {
                format!("{prefix}-{site}-{}", i / sites.len() + 1)
            };
            // Every third project shares its creation time with the one
            // before: the order falls back to the id.
            if i % 3 != 2 {
                minute += 7;
            }
            records.push(ImportRecord::Project(Box::new(demo_project(
                &id,
                organization,
                site,
                i,
                at(minute),
            ))));
        }
    }
    for (project, revisions) in [
        ("acme-shop", 3),
        ("acme-blog", 2),
        ("globex-api", 4),
        ("initech-shop", 1),
    ] {
        for revision in 1..=revisions {
            records.push(ImportRecord::ProxySettings(demo_settings(
                project, revision, revisions,
            )));
        }
    }
    records
}

fn demo_project(
    id: &str,
    organization: &str,
    site: &str,
    i: usize,
    created_at: Option<Timestamp>,
) -> Project {
    const TYPES: [&str; 4] = ["proxy", "proxy", "ai_analytics", "mcp"];
    const SEVERITIES: [&str; 4] = ["INFO", "DEBUG", "WARNING", "ERROR"];
    let owner = id.split('-').next().unwrap_or_default();
    let mut project: Project = serde_json::from_value(json!({
        "id": id,
        "organization_id": organization,
        "slug": id,
        "description": format!("The {site} site of {}", owner),
        "type": TYPES[i % 4],
        "avatar_url": format!("https://avatars.example/{id}.png"),
        "external_project_url": format!("https://{site}.{}.example", owner),
        "log_severity": SEVERITIES[i % 4],
        "cache": i.is_multiple_of(2),
        "override_cache_enabled": i.is_multiple_of(3),
        "override_cache": if i.is_multiple_of(3) { json!([{
            "path": "/static/", "regex": false, "ttl": 3600, "swr": 60, "pass": false, "rank": 1,
            "conditions": {"request_methods": ["GET", "HEAD"], "response_status": [200, 304],
                "request_headers": {"present": ["accept"], "absent": [], "values": {}}}
        }]) } else { json!([]) },
        "cookie_name": "_pd",
        "cookie_domain": format!(".{}.example", owner),
        "inject_sdk": i % 2 == 1,
        "inject_sdk_position": if i.is_multiple_of(5) { "prepend" } else { "append" },
        "autocapture": {"pageview": true, "spa_pageview": i.is_multiple_of(2), "engagement": true,
            "click": false, "form": false, "scroll": i.is_multiple_of(3)},
        "trusted_ips": if i.is_multiple_of(4) { json!(["10.0.0.0/8", "2001:db8::/32"]) } else { json!([]) },
        "blocked_ips": if i.is_multiple_of(6) { json!(["203.0.113.7"]) } else { json!([]) },
        "cookie_whitelist": if i.is_multiple_of(5) { json!(["session", "csrftoken"]) } else { json!([]) },
        "forwarded_headers": if i % 4 == 1 { json!([{"name": "X-Env", "value": "production"}]) } else { json!([]) },
        "rate_limiting_enabled": i % 4 == 2,
        "rate_limiting": if i % 4 == 2 { json!([{"rank": 1, "limit": 50, "window": "10s", "block_duration": 60,
            "key": ["ip"], "conditions": {"path": "/login", "method": ["POST"]}}]) } else { json!([]) },
    }))
    .expect("demo projects follow the rules");
    project.created_at = created_at;
    project.updated_at = created_at;
    project
}

/// Revisions that differ as a project's do: a new origin address each
/// time; from the second, an images backend and its route ahead of the
/// others (rank 0); from the third, the static backend over TLS and one more
/// country on the EU route (`proxy-settings diff acme-shop 1 3` shows each).
fn demo_settings(project: &str, revision: u32, latest: u32) -> ProxySettings {
    let mut backends = vec![
        json!({"name": "origin", "address": format!("origin-{revision}.{project}.example:443"),
         "enable_ssl": true, "check_certificate": format!("origin.{project}.example"),
         "sni_hostname": format!("origin.{project}.example"), "default": true}),
        if revision >= 3 {
            json!({"name": "static", "address": "static.example:443", "enable_ssl": true,
                   "default": false, "override_host": "static.example"})
        } else {
            json!({"name": "static", "address": "static.example:80", "enable_ssl": false,
                   "default": false, "override_host": "static.example"})
        },
    ];
    let mut routes = vec![
        json!({"path": "/assets/", "regex": false, "backend_name": "static", "rank": "1",
         "continent": [], "region": [], "country": []}),
        json!({"path": "^/eu/.*", "regex": true, "backend_name": "origin", "rank": "2",
         "continent": ["EU"], "region": [],
         "country": if revision >= 3 { json!(["FR", "DE", "ES"]) } else { json!(["FR", "DE"]) }}),
    ];
    if revision >= 2 {
        backends.push(json!({"name": "images", "address": "images.example:443",
                             "enable_ssl": true, "default": false}));
        routes.insert(
            0,
            json!({"path": "/images/", "regex": false, "backend_name": "images",
                                "rank": "0", "continent": [], "region": [], "country": []}),
        );
    }
    serde_json::from_value(json!({
        "project_id": project,
        "revision": revision,
        "description": format!("revision {revision} of {project}"),
        "is_active": revision == latest,
        "backends": backends,
        "routes": routes,
    }))
    .expect("demo proxy settings follow the rules")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_records_follow_every_rule() {
        for record in demo_records() {
            let line = match &record {
                ImportRecord::Organization(o) => serde_json::to_string(o),
                ImportRecord::User(u) => serde_json::to_string(u),
                ImportRecord::Project(p) => serde_json::to_string(p),
                ImportRecord::ProxySettings(s) => serde_json::to_string(s),
                ImportRecord::Domain(d) => serde_json::to_string(d),
            }
            .unwrap();
            let parsed =
                crate::domain::import::parse_line(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(parsed, record);
            // The API's checks too: every demo revision can be activated.
            if let ImportRecord::ProxySettings(settings) = &record {
                let written = serde_json::to_value(settings).unwrap();
                let mut regexes = crate::domain::regexes::RegexChecks::new(Default::default());
                let problems =
                    crate::domain::proxy_settings::activation_problems(&written, &mut regexes)
                        .unwrap();
                assert!(problems.is_empty(), "{line}: {problems:?}");
            }
        }
    }
}
