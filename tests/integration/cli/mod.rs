//! The `proxydeck` command line of `docs/cli.md` that `src/cli/` runs: serving
//! (`serve`, `demo`, `migrate`), the configuration (`config`), the
//! completions and manual pages, and the operator's commands (`admin`,
//! with its imports and exports in `transfer`); the real binary, run as a
//! child process on SQLite files in temporary folders. Where a command's
//! effect must show in the API, a real `proxydeck serve` (or `demo`) child
//! process answers over loopback HTTP. The terminal client's tests are in
//! `client`, the `follow` agent's in `follow`.

use std::net::TcpListener;

use proxydeck::domain::time::Timestamp;
use serde_json::{Value, json};

use crate::binary::*;
use crate::helpers::*;

mod admin_directory;
mod admin_import;
mod admin_lists;
mod admin_tokens;
mod commands;
mod completions;
mod config;
mod readme;
mod serve_and_demo;
pub(crate) mod transfer;

/// A timestamp in the wire format `2026-05-01T12:00:00.000Z`.
#[track_caller]
fn wire_time(value: &Value) -> Timestamp {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a timestamp: {value}"));
    let shape = "dddd-dd-ddTdd:dd:dd.dddZ";
    assert_eq!(text.len(), shape.len(), "{text}");
    for (got, want) in text.chars().zip(shape.chars()) {
        if want == 'd' {
            assert!(got.is_ascii_digit(), "{text}");
        } else {
            assert_eq!(got, want, "{text}");
        }
    }
    Timestamp::parse(text).expect("a valid timestamp")
}

/// A lower-case hyphenated UUIDv7, as generated ids are.
#[track_caller]
fn assert_uuid_v7(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not an id: {value}"));
    assert_eq!(text, text.to_lowercase(), "{text}");
    assert_eq!(text.len(), 36, "{text}");
    let uuid = uuid::Uuid::parse_str(text).expect("a UUID");
    assert_eq!(uuid.get_version_num(), 7, "{text}");
}

/// No member of `value`, however deep, is `null`.
#[track_caller]
fn assert_no_null(value: &Value) {
    match value {
        Value::Null => panic!("a null"),
        Value::Array(items) => items.iter().for_each(assert_no_null),
        Value::Object(members) => members.values().for_each(assert_no_null),
        _ => {}
    }
}

fn by_id<'a>(items: &'a [Value], id: &str) -> &'a Value {
    items
        .iter()
        .find(|item| item["id"] == json!(id))
        .unwrap_or_else(|| panic!("no {id} in {items:#?}"))
}

fn listed_ids(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect()
}

/// A project with every field set, none to its default.
fn full_project() -> Value {
    json!({
        "object": "project",
        "id": "full-project",
        "organization_id": org_id(1),
        "slug": "full",
        "description": "Every field set",
        "type": "ai_analytics",
        "avatar_url": "https://avatars.example/full.png",
        "created_at": "2026-02-01T10:00:00.123Z",
        "updated_at": "2026-02-03T11:30:00.456Z",
        "external_project_url": "https://full.example",
        "log_severity": "WARNING",
        "edgee_behind_proxy_cache": true,
        "force_https": false,
        "cache": true,
        "override_cache": [{
            "path": "^/static/.*", "regex": true, "ttl": 3600, "swr": 60, "pass": true, "rank": 2,
            "conditions": {
                "request_cookies": {"present": ["session"], "absent": ["debug"], "values": {"lang": "fr"}},
                "request_headers": {"present": ["accept"], "absent": [], "values": {"x-n": 3}},
                "request_query_params": {"present": [], "absent": ["nocache"], "values": {"v": [1, "a"]}},
                "response_headers": {"present": ["etag"], "absent": [], "values": {}},
                "request_methods": ["GET", "HEAD"],
                "response_status": [200, 304]
            }
        }],
        "override_cache_enabled": true,
        "cookie_name": "_full",
        "cookie_domain": ".full.example",
        "proxy_only": true,
        "proxy_only_path_regex": "^/api/",
        "inject_sdk": true,
        "inject_sdk_position": "prepend",
        "cookieless": true,
        "autocapture": {"pageview": true, "spa_pageview": true, "engagement": false,
                        "click": true, "form": false, "scroll": true},
        "enforce_no_store_policy": true,
        "trusted_ips": ["10.0.0.0/8", "2001:db8::/32"],
        "password_protection": true,
        "blocked_ips": ["203.0.113.7"],
        "cookie_whitelist": ["session", "csrftoken"],
        "forwarded_headers": [{"name": "X-Env", "value": "production"}],
        "rate_limiting": [{
            "rank": 1, "limit": 50, "window": "60s", "block_duration": 120, "key": ["ip", "ua"],
            "conditions": {"path": "/login", "regex": false, "method": ["POST", "PUT"],
                           "continent": ["EU", "NA"], "country": ["FR", "US"]}
        }],
        "rate_limiting_enabled": true
    })
}

/// What a project with only `id`, `organization_id` and the timestamps
/// lists as: every other field at its default.
fn default_project(id: &str, organization: &str, created_at: &Value, updated_at: &Value) -> Value {
    json!({
        "object": "project", "id": id, "organization_id": organization,
        "slug": "", "description": "", "type": "proxy", "avatar_url": "",
        "created_at": created_at, "updated_at": updated_at,
        "external_project_url": "", "log_severity": "INFO",
        "edgee_behind_proxy_cache": false, "force_https": true, "cache": false,
        "override_cache": [], "override_cache_enabled": false,
        "cookie_name": "", "cookie_domain": "", "proxy_only": false, "proxy_only_path_regex": "",
        "inject_sdk": false, "inject_sdk_position": "append", "cookieless": false,
        "autocapture": {"pageview": false, "spa_pageview": false, "engagement": false,
                        "click": false, "form": false, "scroll": false},
        "enforce_no_store_policy": false, "trusted_ips": [], "password_protection": false,
        "blocked_ips": [], "cookie_whitelist": [], "forwarded_headers": [],
        "rate_limiting": [], "rate_limiting_enabled": false
    })
}

/// A revision with every backend and route field set.
fn full_settings(project_id: &str, revision: u32, active: bool) -> Value {
    json!({
        "object": "proxy_settings", "project_id": project_id, "revision": revision,
        "description": format!("revision {revision}"), "is_active": active,
        "backends": [
            {"name": "origin", "address": "origin.example:443", "enable_ssl": true,
             "check_certificate": "origin.example", "ca_certificate": "-----BEGIN CERTIFICATE-----",
             "sni_hostname": "sni.origin.example", "default": true, "override_host": "www.example"},
            {"name": "static", "address": "static.example:80", "enable_ssl": false, "default": false}
        ],
        "routes": [
            {"path": "/assets/", "regex": false, "backend_name": "static", "rank": "1",
             "continent": [], "region": [], "country": []},
            {"path": "^/eu/.*", "regex": true, "backend_name": "origin", "rank": "2",
             "continent": ["EU"], "region": ["IDF"], "country": ["FR", "DE"]}
        ]
    })
}

/// The listing form of an imported revision: the same, without `project_id`.
fn as_listed(settings: &Value) -> Value {
    let mut listed = settings.clone();
    listed.as_object_mut().unwrap().remove("project_id");
    listed
}
