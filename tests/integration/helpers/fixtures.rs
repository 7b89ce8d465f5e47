//! Import lines, the shapes of answers, and pages read through the store.

use super::*;

pub async fn json_of(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.bytes().await.expect("a body");
    let value: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&body)));
    assert_eq!(content_type.as_deref(), Some("application/json"), "{value}");
    (status, value)
}

/// Checks the error body shape of docs/decisions.md section 3 and answers its
/// `type`.
pub fn assert_error_shape(body: &Value) -> String {
    let error = body["error"]
        .as_object()
        .unwrap_or_else(|| panic!("no error object: {body}"));
    let kind = error["type"].as_str().expect("a type").to_owned();
    assert!(
        [
            "invalid_request_error",
            "authentication_error",
            "forbidden_error",
            "not_found_error",
            "conflict_error",
            "api_error"
        ]
        .contains(&kind.as_str()),
        "type off the list: {body}"
    );
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    for (key, value) in error {
        assert!(!value.is_null(), "{key} is null in {body}");
        assert!(
            ["type", "message", "params", "code"].contains(&key.as_str()),
            "unexpected {key}: {body}"
        );
    }
    if let Some(params) = error.get("params") {
        let params = params.as_array().expect("params is an array");
        assert!(!params.is_empty());
        for param in params {
            assert!(
                param["param"].is_string() && param["message"].is_string(),
                "{body}"
            );
        }
    }
    kind
}

/// The parameter a 400 names.
pub fn error_param(body: &Value) -> &str {
    body["error"]["params"][0]["param"]
        .as_str()
        .unwrap_or_else(|| panic!("no param: {body}"))
}

/// A deterministic organization id.
pub fn org_id(n: u32) -> String {
    format!("00000000-0000-7000-8000-{n:012x}")
}

/// A timestamp `seconds` after a fixed instant, as the wire shows it.
pub fn at(seconds: i64) -> String {
    Timestamp::parse("2026-03-01T00:00:00Z")
        .unwrap()
        .plus_seconds(seconds)
        .unwrap()
        .to_string()
}

pub fn org(n: u32) -> Value {
    json!({"object": "organization", "id": org_id(n), "name": format!("Org {n}")})
}

pub fn user(id: &str, orgs: &[u32]) -> Value {
    json!({"object": "user", "id": id, "email": format!("{id}@example.com"),
           "organizations": orgs.iter().map(|n| org_id(*n)).collect::<Vec<_>>()})
}

pub fn project(id: &str, org: u32, created_seconds: i64) -> Value {
    json!({"object": "project", "id": id, "organization_id": org_id(org),
           "slug": id, "created_at": at(created_seconds), "updated_at": at(created_seconds)})
}

pub fn settings(project_id: &str, revision: u32, active: bool) -> Value {
    let mut line = revision_body(&format!("r{revision}"), "origin.example:443");
    let members = json!({"object": "proxy_settings", "project_id": project_id,
                         "revision": revision, "is_active": active});
    for (name, value) in members.as_object().expect("an object") {
        line[name] = value.clone();
    }
    line
}

/// The body of createProjectProxySettings: one backend at `address`, the
/// default, and one route to it.
pub fn revision_body(description: &str, address: &str) -> Value {
    json!({"description": description,
           "backends": [{"name": "origin", "address": address, "default": true}],
           "routes": [{"path": "/", "backend_name": "origin", "rank": "1"}]})
}

/// The ids of a listing's `data`.
pub fn ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {body}"))
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Follows `last_key` from `first` (a path with its query) to the end,
/// checking `has_more`, and answers every id in order.
pub async fn walk(app: &TestApp, path: &str, token: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut next = path.to_owned();
    for _ in 0..10_000 {
        let (status, body) = app.get_json(&next, token).await;
        assert_eq!(status, 200, "{body}");
        let page = ids(&body);
        seen.extend(page.iter().cloned());
        if !body["has_more"].as_bool().unwrap() {
            return seen;
        }
        assert_eq!(body["last_key"].as_str(), page.last().map(String::as_str));
        let separator = if path.contains('?') { '&' } else { '?' };
        next = format!(
            "{path}{separator}start_key={}",
            body["last_key"].as_str().unwrap()
        );
    }
    panic!("the walk did not end");
}

/// Organizations `numbers` (made with [`org`]), those of them that exist,
/// as a caller in them sees them, with the numbers the store gave them: a
/// user in them is made through the import path (a write), and its token's
/// grant names them.
pub async fn organizations(store: &Store, numbers: &[u32]) -> OrganizationSet {
    let existing = store
        .run(AllOrganizations)
        .await
        .expect("the store answers");
    let orgs: Vec<String> = numbers
        .iter()
        .map(|n| org_id(*n))
        .filter(|id| existing.iter().any(|o| o.id == *id))
        .collect();
    if orgs.is_empty() {
        return OrganizationSet::new(Vec::new());
    }
    let user = format!("member-{}", uuid::Uuid::new_v4().simple());
    let line =
        json!({"object": "user", "id": user, "email": "member@example.com", "organizations": orgs});
    seed(store, vec![line]).await.expect("the member imports");
    let (_, secret) = mint(store, &user, "member", None).await;
    let grant = store
        .run(FindToken(proxydeck::domain::token::digest(&secret)))
        .await
        .expect("the store answers")
        .expect("the token was just made");
    assert_eq!(grant.organizations.len(), orgs.len());
    grant.organizations
}

/// The items of the first page of projects of `organizations` (newest
/// first, `limit` of them), as the JSON text the store joined.
pub async fn first_page_of(
    store: &Store,
    organizations: &OrganizationSet,
    limit: u32,
) -> Result<String, store::StoreError> {
    let page = store
        .list(store::Listing::Projects(store::ProjectsQuery {
            organizations: organizations.clone(),
            page: proxydeck::domain::pagination::PageRequest {
                start_key: None,
                direction: proxydeck::domain::pagination::Direction::Desc,
                limit,
            },
        }))
        .await?;
    Ok(String::from_utf8(page.joined.to_vec()).expect("stored JSON is UTF-8"))
}

/// The median of each list of per-round ratios (the timing tests': a
/// round's requests share whatever load the machine has then, and the
/// ratio cancels it).
pub fn medians(mut ratios: Vec<Vec<f64>>) -> Vec<f64> {
    ratios
        .iter_mut()
        .map(|ratio| {
            ratio.sort_by(f64::total_cmp);
            ratio[ratio.len() / 2]
        })
        .collect()
}
