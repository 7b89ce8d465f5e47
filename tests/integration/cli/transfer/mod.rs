//! `proxydeck admin export` and `admin import` (`docs/cli.md`): the real binary
//! on SQLite files in temporary folders. Round trips on data that sets
//! every optional field, the order of an export, where its output goes,
//! progress bars (absent off a terminal, drawn on a pseudo-terminal), and
//! all-or-nothing imports of big files.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use proxydeck::domain::time::Timestamp;
use serde_json::{Value, json};

use crate::binary::*;
use crate::helpers::*;

mod destinations;
mod progress;
mod round_trip;

/// A multi-line certificate, as PEM files hold them.
const PEM: &str = "-----BEGIN CERTIFICATE-----\n\
MIIBszCCAVmgAwIBAgIUQk9HVVMtVEVTVC1DRVJUSUZJQ0FURTAKBggqhkjOPQQD\n\
AjAaMRgwFgYDVQQDDA9vcmlnaW4uZXhhbXBsZTAeFw0yNjAxMDEwMDAwMDBaFw0z\n\
NjAxMDEwMDAwMDBaMBoxGDAWBgNVBAMMD29yaWdpbi5leGFtcGxlMFkwEwYHKoZI\n\
-----END CERTIFICATE-----\n";

/// `utc` (a `Z` timestamp) written as the same instant at +02:00.
fn plus_two(utc: &str) -> String {
    let local = Timestamp::parse(utc)
        .expect("a timestamp")
        .plus_seconds(2 * 3600)
        .unwrap()
        .to_string();
    format!("{}+02:00", local.trim_end_matches('Z'))
}

/// A timestamp as the wire shows it: UTC, `Z`, milliseconds.
fn wire(text: &str) -> String {
    Timestamp::parse(text).expect("a timestamp").to_string()
}

/// `2026-02-01T08:00:00.250Z` plus `minutes`, in UTC.
fn project_time(minutes: i64) -> String {
    Timestamp::parse("2026-02-01T08:00:00.250Z")
        .unwrap()
        .plus_seconds(minutes * 60)
        .unwrap()
        .to_string()
}

/// Values of every JSON kind, nested, with unicode and escapes.
fn tricky_values(i: usize) -> Value {
    json!({
        "nested": {"list": [1, 2.5, -3, null, true, false, {"deep": ["x", {"deeper": null}]}],
                   "empty_object": {}, "empty_list": []},
        "unicode": "héllo wörld ✓ 日本語 🚀 Ωmega",
        "escapes": "quote \" backslash \\ slash / newline \n tab \t return \r nul \u{0} bell \u{7} \u{2028} \u{2029} </script>",
        "clé \"quotée\"": format!("value {i}"),
        "big": u64::MAX,
        "most_negative": i64::MIN,
        "float": 1.5e300,
        "tiny": 5e-324,
        "fraction": 0.1,
        "minus_zero": -0.0,
        "null": null,
        "empty": ""
    })
}

fn name_conditions(i: usize, prefix: &str) -> Value {
    json!({
        "present": [format!("{prefix}-present-{i}"), "ÿ-name"],
        "absent": [format!("{prefix}-absent")],
        "values": tricky_values(i)
    })
}

/// A project with every field set, none to its default; timestamps given
/// at +02:00.
fn rich_project(id: &str, organization: &str, created_utc: &str, i: usize) -> Value {
    json!({
        "object": "project",
        "id": id,
        "organization_id": organization,
        "slug": format!("slug-{id}"),
        "description": format!("Project {i}: ünïcødé ✓ \"quoted\" back\\slash\nsecond line\ttab"),
        "type": (["ai_analytics", "mcp"][i % 2]),
        "avatar_url": format!("https://cdn.example/avatars/{id}.png?size=64&x=%20"),
        "created_at": plus_two(created_utc),
        "updated_at": plus_two(&Timestamp::parse(created_utc).unwrap()
            .plus_seconds(86_400 + i as i64).unwrap().to_string()),
        "external_project_url": format!("https://{id}.example/path?q=1"),
        "log_severity": (["DEBUG", "WARNING", "ERROR"][i % 3]),
        "edgee_behind_proxy_cache": true,
        "force_https": false,
        "cache": true,
        "override_cache": [
            {"path": "^/static/(.*)\\.(css|js)$", "regex": true, "ttl": 3600 + i, "swr": 60,
             "pass": true, "rank": 1,
             "conditions": {
                 "request_cookies": name_conditions(i, "cookie"),
                 "request_headers": name_conditions(i, "header"),
                 "request_query_params": name_conditions(i, "query"),
                 "response_headers": name_conditions(i, "response"),
                 "request_methods": ["GET", "HEAD", "OPTIONS"],
                 "response_status": [200, 301, 404, 599]
             }},
            {"path": "/api/", "regex": false, "ttl": 0, "swr": 0, "pass": false, "rank": 2,
             "conditions": {
                 "request_cookies": {"present": [], "absent": [], "values": {"n": i}},
                 "request_headers": {"present": ["x-a"], "absent": ["x-b"], "values": {}},
                 "request_query_params": {"present": [], "absent": [], "values": {"a": [[], {}]}},
                 "response_headers": {"present": [], "absent": ["set-cookie"], "values": {}},
                 "request_methods": ["POST"],
                 "response_status": [100]
             }}
        ],
        "override_cache_enabled": true,
        "cookie_name": format!("_c{i}"),
        "cookie_domain": ".example.org",
        "proxy_only": true,
        "proxy_only_path_regex": "^/api/(v\\d+)/.*$",
        "inject_sdk": true,
        "inject_sdk_position": "prepend",
        "cookieless": true,
        "autocapture": {"pageview": true, "spa_pageview": true, "engagement": true,
                        "click": true, "form": true, "scroll": true},
        "enforce_no_store_policy": true,
        "trusted_ips": ["10.0.0.0/8", "192.0.2.1", "2001:db8::/32", "::1"],
        "password_protection": true,
        "blocked_ips": ["203.0.113.7", "198.51.100.0/24", "2001:db8:dead::beef"],
        "cookie_whitelist": ["session", "csrftoken", format!("c{i}")],
        "forwarded_headers": [
            {"name": "X-Env", "value": "production"},
            {"name": "X-Quote", "value": format!("a \"quoted\" value; n={i}")}
        ],
        "rate_limiting": [
            {"rank": 1, "limit": 50, "window": "1s", "block_duration": 300, "key": ["ip", "ua"],
             "conditions": {"path": "/login/ü", "regex": true,
                            "method": ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE"],
                            "continent": ["AF", "AN", "AS", "EU", "NA", "OC", "SA"],
                            "country": ["FR", "JP", "XK"]}},
            {"rank": 2, "limit": 7, "window": "60s", "block_duration": 1, "key": ["ua"],
             "conditions": {"path": "/x", "regex": false, "method": ["GET"],
                            "continent": ["EU"], "country": ["DE"]}}
        ],
        "rate_limiting_enabled": true
    })
}

/// A revision with every optional backend string and route member set.
fn rich_settings(project_id: &str, revision: u32, active: bool) -> Value {
    json!({
        "object": "proxy_settings", "project_id": project_id, "revision": revision,
        "description": format!("révision {revision}: \"quoted\"\nline two"),
        "is_active": active,
        "backends": [
            {"name": "origin", "address": "origin.example:443", "enable_ssl": true,
             "check_certificate": "origin.example", "ca_certificate": PEM,
             "sni_hostname": "sni.origin.example", "default": true,
             "override_host": "www.origin.example"},
            {"name": "static ü", "address": "[2001:db8::1]:8080", "enable_ssl": false,
             "check_certificate": "", "ca_certificate": "-----BEGIN CERTIFICATE-----\r\nAA==\r\n-----END CERTIFICATE-----",
             "sni_hostname": "static.example", "default": false,
             "override_host": "static.example"}
        ],
        "routes": [
            {"path": "^/eu/(.*)$", "regex": true, "backend_name": "origin", "rank": "1",
             "continent": ["EU", "AF"], "region": ["IDF", "BY"], "country": ["FR", "DE"]},
            {"path": "/static/", "regex": false, "backend_name": "static ü",
             "rank": format!("{}", 10 + revision),
             "continent": ["NA"], "region": ["CA-QC"], "country": ["CA"]}
        ]
    })
}

/// What an import file with every optional field looks like: organizations,
/// users, projects and proxy settings, with creation times out of file
/// order, ties, and +02:00 offsets.
pub(crate) struct RichData {
    pub(crate) lines: Vec<Value>,
    /// Project ids, in file order.
    projects: Vec<String>,
    /// The project deleted before the export, and its revisions.
    doomed: &'static str,
}

pub(crate) fn rich_data() -> RichData {
    let mut lines = vec![
        json!({"object": "organization", "id": org_id(1), "name": "Acme Corp", "slug": "acme",
               "type": "perso", "created_at": plus_two("2026-01-01T10:00:00.000Z")}),
        // Earlier than the line above.
        json!({"object": "organization", "id": org_id(2),
               "name": "Ünïcødé \"Quotes\" \\ Back-slash 🚀 日本",
               "created_at": plus_two("2026-01-01T07:00:00.500Z")}),
        // A tie: the same instant, the smaller id listed second.
        json!({"object": "organization", "id": org_id(0x30), "name": "Tie, larger id",
               "type": "pro", "created_at": plus_two("2026-01-02T00:00:00.000Z")}),
        json!({"object": "organization", "id": org_id(0x20), "name": "Tie, smaller id",
               "created_at": "2026-01-02T00:00:00Z"}),
        // No created_at: the time of import.
        json!({"object": "organization", "id": org_id(5), "name": "Undated"}),
        json!({"object": "user", "id": "u-multi", "email": "multi@example.com",
               "name": "Multi \"Person\" 🚀",
               "roles": {org_id(0x30): "editor", org_id(1): "admin", org_id(2): "member"},
               "created_at": plus_two("2026-01-05T00:00:00.000Z")}),
        json!({"object": "user", "id": "u-single", "email": "ünï@exämple.com",
               "organizations": [org_id(2)], "created_at": "2026-01-04T00:00:00.999Z"}),
        json!({"object": "user", "id": "u-b", "email": "b@example.com",
               "roles": {org_id(0x20).to_uppercase(): "member"},
               "created_at": plus_two("2026-01-06T00:00:00.000Z")}),
        json!({"object": "user", "id": "u-a", "email": "a@example.com",
               "organizations": [org_id(0x20), org_id(5)], "created_at": "2026-01-06T00:00:00Z"}),
        json!({"object": "user", "id": "u-undated", "email": "undated@example.com",
               "organizations": [org_id(5)]}),
    ];
    let organizations = [org_id(1), org_id(2), org_id(0x30), org_id(0x20)];
    let mut projects = Vec::new();
    for i in 0..40 {
        let id = format!("proj-{i:02}");
        // Creation order is a permutation of file order.
        let created = project_time(((i * 17) % 40) as i64);
        lines.push(rich_project(&id, &organizations[i % 4], &created, i));
        projects.push(id);
    }
    // A tie written in two offsets; the larger id first in the file.
    let tie = project_time(100);
    lines.push(rich_project("tie-b", &org_id(1), &tie, 41));
    let mut tie_a = rich_project("tie-a", &org_id(2), &tie, 42);
    tie_a["created_at"] = json!(tie);
    lines.push(tie_a);
    lines.push(rich_project("doomed", &org_id(1), &project_time(5), 43));
    projects.extend(["tie-b".to_owned(), "tie-a".to_owned(), "doomed".to_owned()]);
    // Revisions out of order, after every project; 10 sorts after 9 as a
    // number, before it as text.
    for (project, revision, active) in [
        ("proj-39", 1, true),
        ("proj-03", 2, false),
        ("proj-03", 10, true),
        ("proj-03", 1, false),
        ("proj-03", 9, false),
        ("doomed", 1, true),
        ("tie-a", 1, false),
        ("tie-b", 2, true),
        ("tie-b", 1, false),
        ("doomed", 2, false),
        ("proj-00", 3, false),
        ("proj-00", 1, false),
        ("proj-00", 2, true),
    ] {
        lines.push(rich_settings(project, revision, active));
    }
    // Domains (docs/domains.md): a verified one with its certificate, a
    // pending wildcard without a token (a new one is made), one that goes
    // with its deleted project. Exported last, in creation order.
    lines.extend([
        json!({"object": "domain", "project_id": "proj-01", "name": "Shop.Example.COM",
               "verification_token": "0123456789abcdef0123456789abcdef",
               "dns_status": true, "ssl_status": true,
               "created_at": plus_two("2026-02-01T00:00:00.000Z"),
               "updated_at": "2026-02-02T00:00:00Z"}),
        json!({"object": "domain", "project_id": "proj-02", "name": "*.wild.example",
               "created_at": "2026-01-31T00:00:00Z"}),
        json!({"object": "domain", "project_id": "doomed", "name": "doomed.example"}),
    ]);
    RichData {
        lines,
        projects,
        doomed: "doomed",
    }
}

/// The lines of an export, each checked to be one JSON object.
#[track_caller]
fn parse_export(text: &str) -> Vec<Value> {
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "the export does not end with a line break"
    );
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("line {} is not JSON ({e}): {line}", i + 1));
            assert!(value.is_object(), "line {}: {line}", i + 1);
            value
        })
        .collect()
}

fn of_kind<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["object"] == json!(kind))
        .collect()
}

fn created_key(item: &Value) -> (Timestamp, String) {
    let created = Timestamp::parse(item["created_at"].as_str().expect("created_at")).unwrap();
    (created, item["id"].as_str().expect("an id").to_owned())
}

/// docs/cli.md's order: organizations, users, projects, proxy settings; each in
/// creation order (created_at, then id), proxy settings by their project's
/// creation order, then revision.
#[track_caller]
fn assert_export_order(lines: &[Value]) {
    let rank = |kind: &str| match kind {
        "organization" => 0,
        "user" => 1,
        "project" => 2,
        "proxy_settings" => 3,
        "domain" => 4,
        other => panic!("unexpected kind {other}"),
    };
    let kinds: Vec<u8> = lines
        .iter()
        .map(|l| rank(l["object"].as_str().expect("object")))
        .collect();
    assert!(
        kinds.windows(2).all(|w| w[0] <= w[1]),
        "kinds out of order: {kinds:?}"
    );
    for kind in ["organization", "user", "project"] {
        let keys: Vec<_> = of_kind(lines, kind).into_iter().map(created_key).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "{kind}s are not in creation order");
        let unique: HashSet<_> = keys.iter().map(|k| &k.1).collect();
        assert_eq!(unique.len(), keys.len(), "a {kind} is exported twice");
    }
    let project_position: Vec<&str> = of_kind(lines, "project")
        .into_iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    let keys: Vec<(usize, u64)> = of_kind(lines, "proxy_settings")
        .into_iter()
        .map(|s| {
            let project = s["project_id"].as_str().expect("project_id");
            let position = project_position
                .iter()
                .position(|p| *p == project)
                .unwrap_or_else(|| panic!("settings of a project not exported: {s}"));
            (position, s["revision"].as_u64().expect("revision"))
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        keys, sorted,
        "proxy settings are not in project, then revision order"
    );
}

/// The export of `sandbox`'s store to `file`, asserting success; answers
/// the counts printed with `--json`.
#[track_caller]
fn export_to(sandbox: &Sandbox, file: &Path) -> Value {
    let out = sandbox.run(&["admin", "export", &file.display().to_string(), "--json"]);
    assert!(out.stderr.is_empty(), "{out:#?}");
    out.json()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The names in a folder, sorted.
/// The files in `folder`, but SQLite's own `-wal` and `-shm` files, which
/// come and go with connections.
fn listing(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("the folder is readable")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with("-wal") && !name.ends_with("-shm"))
        .collect();
    names.sort();
    names
}

/// `n` minimal projects of organization 1, one line each, after the
/// organization.
fn many_projects(n: usize) -> Vec<String> {
    let mut lines = vec![org(1).to_string()];
    lines.extend((0..n).map(|i| {
        json!({"object": "project", "id": format!("bulk-{i:05}"), "organization_id": org_id(1),
               "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"})
        .to_string()
    }));
    lines
}
