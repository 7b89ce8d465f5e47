//! What the benchmark's examples share: the project and revision templates,
//! the ids the generator gives, and a small seeded random source, so that
//! the generator and the writer (`bench_store`) make the same objects.

#![allow(dead_code)] // each example uses a part

use proxydeck::domain::project::Project;
use proxydeck::domain::proxy_settings::ProxySettings;
use proxydeck::domain::time::Timestamp;
use serde_json::json;

/// The id of the organization numbered `n`.
pub fn org_id(n: u64) -> String {
    format!("{:08x}-0000-7000-8000-{n:012x}", n + 1)
}

/// The id of the project numbered `i` (numbers follow creation order).
pub fn project_id(i: u64) -> String {
    format!("prj-{i:08}")
}

/// When the `n`-th object of a data set was created: one second apart from
/// a fixed instant.
pub fn at(seconds: u64) -> Timestamp {
    let base = Timestamp::parse("2025-01-01T00:00:00Z").expect("a valid instant");
    base.plus_seconds(seconds as i64)
        .expect("within the representable range")
}

/// When project `i` was created: every fourth project shares the previous
/// one's instant, so that ties on `created_at` fall to the id.
pub fn project_created(i: u64) -> Timestamp {
    at(100_000 + i - i / 4)
}

/// Project `i` of `organization`, with every optional field set (about
/// 1.5 KB as JSON).
pub fn project(i: u64, organization: u64, description: String) -> Project {
    let mut project = template();
    let created = project_created(i);
    project.id = project_id(i);
    project.organization_id = org_id(organization);
    project.slug = format!("site-{i}");
    project.description = description;
    project.created_at = Some(created);
    project.updated_at = Some(created);
    project
}

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

/// Revision `revision` of a project's proxy settings.
pub fn revision_of(project_id: &str, revision: u32, active: bool) -> ProxySettings {
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

/// A seeded random source (SplitMix64): the same data set from the same
/// seed on every machine.
pub struct Random(u64);

impl Random {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }

    /// A number in `0.0..1.0`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A number from `low` to `high`, spread evenly over their logarithms:
    /// as many between 10 and 100 as between 100 and 1,000.
    pub fn log_uniform(&mut self, low: u64, high: u64) -> u64 {
        let (low, high) = ((low.max(1)) as f64, (high.max(low)) as f64);
        (low * (high / low).powf(self.unit())).round() as u64
    }

    /// `count` distinct numbers of `0..bound`, in increasing order.
    pub fn distinct(&mut self, count: u64, bound: u64) -> Vec<u64> {
        let count = count.min(bound);
        let mut chosen = std::collections::BTreeSet::new();
        if count * 2 > bound {
            // Most of them: choose those left out.
            let mut out = std::collections::BTreeSet::new();
            while (out.len() as u64) < bound - count {
                out.insert(self.below(bound));
            }
            return (0..bound).filter(|n| !out.contains(n)).collect();
        }
        while (chosen.len() as u64) < count {
            chosen.insert(self.below(bound));
        }
        chosen.into_iter().collect()
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}
