//! Writes a deterministic NDJSON data set in the import format, for
//! benchmarks: organizations, one user each plus a benchmark user,
//! projects with every optional field filled, and proxy settings revisions.
//!
//! cargo run --release --example generate -- --projects 1000000 \
//!     --organizations 1000 --focus-projects 100000 > data.ndjson
//!
//! The first organization ("focus") holds `--focus-projects` projects and
//! the user `bench-user`; the first `--revised-projects` of its projects
//! get `--revisions` proxy settings revisions each (the last one active).

use std::io::{BufWriter, Write};

use proxydeck::domain::directory::{Organization, OrganizationTag, User, UserTag};
use proxydeck::domain::project::Project;
use proxydeck::domain::proxy_settings::ProxySettings;
use proxydeck::domain::time::Timestamp;
use serde_json::json;

struct Shape {
    projects: u64,
    organizations: u64,
    focus_projects: u64,
    revised_projects: u64,
    revisions: u32,
}

fn main() -> anyhow::Result<()> {
    let shape = parse_args()?;
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let base = Timestamp::parse("2025-01-01T00:00:00Z")?;
    let at = |seconds: u64| base.plus_seconds(seconds as i64);
    let org_id = |n: u64| format!("{:08x}-0000-7000-8000-{n:012x}", n + 1);

    for n in 0..shape.organizations {
        let organization = Organization {
            object: OrganizationTag::Tag,
            id: org_id(n),
            name: format!("Organization {n}"),
            created_at: at(n),
        };
        writeln!(out, "{}", serde_json::to_string(&organization)?)?;
    }
    let user = |id: String, organizations: Vec<String>, n: u64| User {
        object: UserTag::Tag,
        id: id.clone(),
        email: format!("{id}@bench.example"),
        organizations,
        created_at: at(shape.organizations + n),
    };
    writeln!(
        out,
        "{}",
        serde_json::to_string(&user("bench-user".into(), vec![org_id(0)], 0))?
    )?;
    for n in 0..shape.organizations {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&user(format!("user-{n}"), vec![org_id(n)], n + 1))?
        )?;
    }

    let mut project = template();
    let others = shape.organizations.saturating_sub(1).max(1);
    for i in 0..shape.projects {
        // The focus organization's projects first, the rest spread round
        // the others; every fourth project shares the previous one's time.
        let organization = if i < shape.focus_projects || shape.organizations == 1 {
            0
        } else {
            1 + (i - shape.focus_projects) % others
        };
        let created = at(100_000 + i - i / 4);
        project.id = project_id(i);
        project.organization_id = org_id(organization);
        project.slug = format!("site-{i}");
        project.description = format!("Benchmark project {i} of organization {organization}");
        project.created_at = created;
        project.updated_at = created;
        writeln!(out, "{}", serde_json::to_string(&project)?)?;
    }

    for i in 0..shape
        .revised_projects
        .min(shape.focus_projects)
        .min(shape.projects)
    {
        for revision in 1..=shape.revisions {
            let settings = revision_of(&project_id(i), revision, revision == shape.revisions);
            writeln!(out, "{}", serde_json::to_string(&settings)?)?;
        }
    }
    out.flush()?;
    Ok(())
}

fn project_id(i: u64) -> String {
    format!("prj-{i:08}")
}

/// A project with every optional field set, about 1.5 KB as JSON.
fn template() -> Project {
    serde_json::from_value(json!({
        "id": "template", "organization_id": "00000001-0000-7000-8000-000000000000",
        "type": "proxy", "avatar_url": "https://avatars.bench.example/p.png",
        "external_project_url": "https://www.bench.example", "log_severity": "WARNING",
        "edgee_behind_proxy_cache": true, "force_https": true, "cache": true,
        "override_cache_enabled": true,
        "override_cache": [{"path": "^/static/", "regex": true, "ttl": 3600, "swr": 60, "pass": false, "rank": 1,
            "conditions": {"request_cookies": {"present": ["session"], "absent": [], "values": {}},
                "request_headers": {"present": [], "absent": ["authorization"], "values": {"accept": "text/html"}},
                "request_query_params": {"present": [], "absent": [], "values": {}},
                "response_headers": {"present": [], "absent": ["set-cookie"], "values": {}},
                "request_methods": ["GET", "HEAD"], "response_status": [200, 301, 404]}}],
        "cookie_name": "_bench", "cookie_domain": ".bench.example", "proxy_only": false,
        "proxy_only_path_regex": "^/api/", "inject_sdk": true, "inject_sdk_position": "prepend",
        "cookieless": false,
        "autocapture": {"pageview": true, "spa_pageview": true, "engagement": true, "click": true, "form": false, "scroll": true},
        "enforce_no_store_policy": false, "trusted_ips": ["10.0.0.0/8", "2001:db8::/32"],
        "password_protection": false, "blocked_ips": ["203.0.113.7"], "cookie_whitelist": ["session", "csrftoken"],
        "forwarded_headers": [{"name": "X-Env", "value": "benchmark"}],
        "rate_limiting_enabled": true,
        "rate_limiting": [{"rank": 1, "limit": 100, "window": "10s", "block_duration": 60, "key": ["ip", "ua"],
            "conditions": {"path": "/login", "regex": false, "method": ["POST"], "continent": ["EU"], "country": ["FR", "DE"]}}]
    }))
    .expect("the template follows the rules")
}

fn revision_of(project_id: &str, revision: u32, active: bool) -> ProxySettings {
    serde_json::from_value(json!({
        "project_id": project_id, "revision": revision, "description": format!("revision {revision}"),
        "is_active": active,
        "backends": [
            {"name": "origin", "address": "origin.bench.example:443", "enable_ssl": true,
             "check_certificate": "origin.bench.example", "sni_hostname": "origin.bench.example", "default": true},
            {"name": "static", "address": "static.bench.example:80", "enable_ssl": false, "default": false,
             "override_host": "static.bench.example"}],
        "routes": [
            {"path": "/assets/", "regex": false, "backend_name": "static", "rank": "1", "continent": [], "region": [], "country": []},
            {"path": "^/eu/", "regex": true, "backend_name": "origin", "rank": "2", "continent": ["EU"], "region": [], "country": ["FR"]}]
    }))
    .expect("the revision follows the rules")
}

fn parse_args() -> anyhow::Result<Shape> {
    let mut shape = Shape {
        projects: 1_000,
        organizations: 10,
        focus_projects: 100,
        revised_projects: 10,
        revisions: 50,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value: u64 = args
            .next()
            .ok_or_else(|| anyhow::anyhow!("{flag} needs a number"))?
            .parse()?;
        match flag.as_str() {
            "--projects" => shape.projects = value,
            "--organizations" => shape.organizations = value.max(1),
            "--focus-projects" => shape.focus_projects = value,
            "--revised-projects" => shape.revised_projects = value,
            "--revisions" => shape.revisions = u32::try_from(value)?,
            _ => anyhow::bail!(
                "unknown flag {flag}: --projects --organizations --focus-projects --revised-projects --revisions"
            ),
        }
    }
    Ok(shape)
}
