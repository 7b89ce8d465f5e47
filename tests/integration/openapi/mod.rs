//! The OpenAPI document (`GET /openapi.json`) is true to the service: it is
//! valid OpenAPI 3.1, every real response validates against it, every
//! error the service answers is documented for its operation, and its
//! objects have exactly the members the Rust types write.
//!
//! One file a topic: `document` (its served form, its validity, its
//! parameters), `types` (its objects and enums against the Rust types),
//! `listings` (real listing answers), `conditional` (ETag and 304),
//! `errors` (every error answer) and `writes` (token and proxy-settings
//! writes). The fixtures and checks they share are here.

use std::collections::BTreeSet;

use proxydeck::http::openapi::DOCUMENT;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::openapi_contract::{Contract, Shapes};

mod conditional;
mod document;
mod errors;
mod listings;
mod types;
mod writes;

const PROJECTS: &str = "/v1/projects";
const API_TOKENS: &str = "/v1/api_tokens";
const PROXY_SETTINGS: &str = "/v1/projects/{id}/proxy-settings";
const ME: &str = "/v1/users/me";
const ORGANIZATIONS: &str = "/v1/organizations";
const ORGANIZATION: &str = "/v1/organizations/{id}";
const MY_ORGANIZATION: &str = "/v1/organizations/me";
const CHANGES: &str = "/v1/changes";
const EDGES: &str = "/v1/projects/{id}/edges";
const DOMAINS: &str = "/v1/projects/{id}/domains";
const INVITATIONS: &str = "/v1/invitations";

fn contract() -> Contract {
    Contract::parse(DOCUMENT)
}

// ===== Fixtures and checks the topics share =====

/// Projects that together set and leave unset every optional member, and
/// hold every value of every enum.
fn rich_projects() -> Vec<Value> {
    let mut full = project("p-full", 1, 100);
    let every_name_condition =
        json!({"present": ["a"], "absent": ["b"], "values": {"c": [1, {"d": null}]}});
    full.as_object_mut().unwrap().extend(
        json!({
            "description": "every member set", "type": "mcp",
            "avatar_url": "https://avatars.example/p.png",
            "external_project_url": "https://shop.example", "log_severity": "DEBUG",
            "edgee_behind_proxy_cache": true, "force_https": false, "cache": true,
            "override_cache": [{"path": "/static", "regex": true, "ttl": 60, "swr": 5,
                "pass": true, "rank": 1, "conditions": {
                    "request_cookies": every_name_condition,
                    "request_headers": every_name_condition,
                    "request_query_params": every_name_condition,
                    "response_headers": every_name_condition,
                    "request_methods": ["GET"], "response_status": [200]}},
                {"path": "/"}],
            "override_cache_enabled": true, "cookie_name": "_pd", "cookie_domain": ".shop.example",
            "proxy_only": true, "proxy_only_path_regex": "^/api", "inject_sdk": true,
            "inject_sdk_position": "prepend", "cookieless": true,
            "autocapture": {"pageview": true, "spa_pageview": true, "engagement": true,
                "click": true, "form": true, "scroll": true},
            "enforce_no_store_policy": true, "trusted_ips": ["10.0.0.0/8"],
            "password_protection": true, "blocked_ips": ["2001:db8::1"],
            "cookie_whitelist": ["session"],
            "forwarded_headers": [{"name": "X-Env", "value": "production"}],
            "rate_limiting_enabled": true,
            "rate_limiting": [
                {"rank": 1, "limit": 10, "window": "1s", "block_duration": 30, "key": ["ip", "ua"],
                 "conditions": {"path": "/login", "regex": false,
                    "method": ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE"],
                    "continent": ["AF", "AN", "AS", "EU", "NA", "OC", "SA"], "country": ["FR"]}},
                {"rank": 2, "limit": 100, "window": "60s"},
            ],
        })
        .as_object()
        .unwrap()
        .clone(),
    );
    let mut ai = project("p-ai", 1, 200);
    ai.as_object_mut().unwrap().extend(
        json!({"type": "ai_analytics", "log_severity": "WARNING",
               "rate_limiting": [{"rank": 1, "limit": 5}]})
        .as_object()
        .unwrap()
        .clone(),
    );
    let mut error = project("p-error", 2, 300);
    error["log_severity"] = json!("ERROR");
    vec![full, project("p-plain", 1, 0), ai, error]
}

/// Two revisions: one backend with every optional string set, one with
/// none.
fn rich_settings(project_id: &str) -> Vec<Value> {
    let mut first = settings(project_id, 1, false);
    first["backends"] = json!([
        {"name": "origin", "address": "origin.example:443", "enable_ssl": true,
         "check_certificate": "origin.example", "ca_certificate": "-----BEGIN CERTIFICATE-----",
         "sni_hostname": "origin.example", "default": true, "override_host": "shop.example"},
        {"name": "static", "address": "static.example:80"}
    ]);
    first["routes"] = json!([
        {"path": "^/eu/", "regex": true, "backend_name": "origin", "rank": "-1",
         "continent": ["EU"], "region": ["IDF"], "country": ["FR"]},
    ]);
    vec![first, settings(project_id, 2, true)]
}

/// The headers `response` (a response's pointer) documents are valid in
/// `headers`, and the required ones are there.
fn assert_documented_headers(
    contract: &Contract,
    response: &str,
    headers: &reqwest::header::HeaderMap,
    what: &str,
) {
    let Some(documented) = contract.at(response).get("headers") else {
        return;
    };
    for name in documented.as_object().unwrap().keys() {
        let pointer = format!("{response}/headers/{name}");
        let required = contract.at(&contract.resolve_pointer(&pointer))["required"] == true;
        match headers.get(name.as_str()) {
            Some(value) => contract.assert_header_valid(
                &pointer,
                value.to_str().unwrap(),
                &format!("{what}: {name}"),
            ),
            None => assert!(!required, "{what}: no {name} header"),
        }
    }
}

/// `last_used_at` is written, as the flusher does shortly after use.
async fn wait_for_last_used_at(app: &TestApp, token: &str) {
    app.flush_token_uses().await;
    let (_, body) = app.get_json("/v1/api_tokens?name=caller", token).await;
    assert!(body["data"][0].get("last_used_at").is_some(), "{body}");
}
