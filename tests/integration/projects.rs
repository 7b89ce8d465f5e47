//! `GET /v1/projects`: envelope, defaults, order, filters, keyset walks.

use std::time::Duration;

use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

/// Two organizations the caller is in (1, 2) and one it is not (3).
/// Projects of org 1 come in threes sharing a `created_at`, with ids that do
/// not sort like their insertion, so ties are broken by id.
async fn fixture(count: usize) -> (TestApp, String, Vec<(String, String)>) {
    let app = TestApp::spawn(BACKEND).await;
    let mut lines = vec![
        org(1),
        org(2),
        org(3),
        user("u1", &[1, 2]),
        user("u3", &[3]),
    ];
    let (projects, expected) = projects_of_org_1(count);
    lines.extend(projects);
    app.seed(lines).await;
    let token = app.token("u1").await;
    (app, token, expected)
}

/// `count` projects of organization 1, three to a creation time, their
/// ids in an order of their own; and their (created_at, id).
fn projects_of_org_1(count: usize) -> (Vec<Value>, Vec<(String, String)>) {
    (0..count)
        .map(|i| {
            let id = format!("p{:03}", (i * 37) % 1000);
            let created = (i / 3) as i64;
            (project(&id, 1, created), (at(created), id))
        })
        .unzip()
}

fn newest_first(mut items: Vec<(String, String)>) -> Vec<String> {
    items.sort();
    items.reverse();
    items.into_iter().map(|(_, id)| id).collect()
}

#[tokio::test]
async fn envelope_has_every_field_and_project_every_member() {
    require!(BACKEND);
    let (app, token, _) = fixture(3).await;
    let (status, body) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "list");
    assert_eq!(body["url"], "/v1/projects");
    assert_eq!(body["has_more"], false);
    assert!(body["last_key"].is_string());
    let project = &body["data"][0];
    let members = [
        ("object", "string"),
        ("id", "string"),
        ("organization_id", "string"),
        ("slug", "string"),
        ("description", "string"),
        ("type", "string"),
        ("avatar_url", "string"),
        ("created_at", "string"),
        ("updated_at", "string"),
        ("external_project_url", "string"),
        ("log_severity", "string"),
        ("edgee_behind_proxy_cache", "bool"),
        ("force_https", "bool"),
        ("cache", "bool"),
        ("override_cache", "array"),
        ("override_cache_enabled", "bool"),
        ("cookie_name", "string"),
        ("cookie_domain", "string"),
        ("proxy_only", "bool"),
        ("proxy_only_path_regex", "string"),
        ("inject_sdk", "bool"),
        ("inject_sdk_position", "string"),
        ("cookieless", "bool"),
        ("autocapture", "object"),
        ("enforce_no_store_policy", "bool"),
        ("trusted_ips", "array"),
        ("password_protection", "bool"),
        ("blocked_ips", "array"),
        ("cookie_whitelist", "array"),
        ("forwarded_headers", "array"),
        ("rate_limiting", "array"),
        ("rate_limiting_enabled", "bool"),
    ];
    assert_eq!(
        project.as_object().unwrap().len(),
        members.len(),
        "{project}"
    );
    for (name, kind) in members {
        let value = &project[name];
        let ok = match kind {
            "string" => value.is_string(),
            "bool" => value.is_boolean(),
            "array" => value.is_array(),
            _ => value.is_object(),
        };
        assert!(ok, "{name} should be a {kind}: {project}");
    }
    assert_eq!(project["object"], "project");
    assert_eq!(project["type"], "proxy");
    assert_eq!(project["log_severity"], "INFO");
    assert_eq!(project["inject_sdk_position"], "append");
    assert_eq!(project["force_https"], true);
    for flag in [
        "pageview",
        "spa_pageview",
        "engagement",
        "click",
        "form",
        "scroll",
    ] {
        assert_eq!(project["autocapture"][flag], false);
    }
    let timestamp = project["created_at"].as_str().unwrap();
    assert_eq!(timestamp.len(), "2026-03-01T00:00:00.000Z".len());
    assert!(timestamp.ends_with('Z'));
}

#[tokio::test]
async fn every_optional_field_comes_back_as_imported() {
    require!(BACKEND);
    let app = TestApp::spawn(BACKEND).await;
    let full = json!({
        "object": "project", "id": "full", "organization_id": org_id(1), "slug": "full-site",
        "description": "All fields", "type": "ai_analytics", "avatar_url": "https://a.example/x.png",
        "created_at": at(5), "updated_at": at(9), "external_project_url": "https://full.example",
        "log_severity": "WARNING", "edgee_behind_proxy_cache": true, "force_https": false,
        "cache": true, "override_cache_enabled": true,
        "override_cache": [{"path": "^/img/", "regex": true, "ttl": 600, "swr": 30, "pass": false, "rank": 2,
            "conditions": {
                "request_cookies": {"present": ["a"], "absent": ["b"], "values": {"c": "d"}},
                "request_headers": {"present": [], "absent": [], "values": {"x-n": 5}},
                "request_query_params": {"present": ["q"], "absent": [], "values": {}},
                "response_headers": {"present": [], "absent": ["set-cookie"], "values": {}},
                "request_methods": ["GET"], "response_status": [200, 404]}}],
        "cookie_name": "_c", "cookie_domain": ".full.example", "proxy_only": true,
        "proxy_only_path_regex": "^/api/", "inject_sdk": true, "inject_sdk_position": "prepend",
        "cookieless": true,
        "autocapture": {"pageview": true, "spa_pageview": true, "engagement": true, "click": true, "form": true, "scroll": true},
        "enforce_no_store_policy": true, "trusted_ips": ["10.0.0.0/8", "::1"], "password_protection": true,
        "blocked_ips": ["203.0.113.9"], "cookie_whitelist": ["session"],
        "forwarded_headers": [{"name": "X-Env", "value": "prod"}],
        "rate_limiting": [{"rank": 1, "limit": 20, "window": "60s", "block_duration": 300, "key": ["ip", "ua"],
            "conditions": {"path": "/login", "regex": false, "method": ["POST"], "continent": ["EU"], "country": ["FR"]}}],
        "rate_limiting_enabled": true
    });
    app.seed(vec![org(1), user("u1", &[1]), full.clone()]).await;
    let token = app.token("u1").await;
    let (_, body) = app.get_json("/v1/projects", &token).await;
    assert_eq!(body["data"][0], full);
}

#[tokio::test]
async fn default_limit_is_20_and_order_newest_first() {
    require!(BACKEND);
    let (app, token, expected) = fixture(25).await;
    let (_, body) = app.get_json("/v1/projects", &token).await;
    let expected = newest_first(expected);
    assert_eq!(ids(&body), expected[..20]);
    assert_eq!(body["has_more"], true);
    assert_eq!(body["last_key"], expected[19]);
}

#[tokio::test]
async fn limit_bounds() {
    require!(BACKEND);
    let (app, token, _) = fixture(105).await;
    for (limit, count) in [("1", 1), ("100", 100), ("7", 7)] {
        let (status, body) = app
            .get_json(&format!("/v1/projects?limit={limit}"), &token)
            .await;
        assert_eq!(status, 200);
        assert_eq!(ids(&body).len(), count);
    }
    for bad in ["0", "101", "-1", "abc", "2.5", "1e2", "%20"] {
        let (status, body) = app
            .get_json(&format!("/v1/projects?limit={bad}"), &token)
            .await;
        assert_eq!(status, 400, "limit={bad}: {body}");
        assert_eq!(assert_error_shape(&body), "invalid_request_error");
        assert_eq!(error_param(&body), "limit");
        assert_eq!(
            body["error"]["message"],
            "limit must be an integer between 1 and 100"
        );
    }
}

#[tokio::test]
async fn walks_every_page_in_both_directions_with_ties() {
    require!(BACKEND);
    let (app, token, expected) = fixture(47).await;
    let newest = newest_first(expected);
    for limit in [1, 4, 10, 47, 100] {
        let desc = walk(&app, &format!("/v1/projects?limit={limit}"), &token).await;
        assert_eq!(desc, newest, "DESC limit {limit}");
        let asc = walk(
            &app,
            &format!("/v1/projects?limit={limit}&order_direction=ASC"),
            &token,
        )
        .await;
        let oldest: Vec<String> = newest.iter().rev().cloned().collect();
        assert_eq!(asc, oldest, "ASC limit {limit}");
    }
    let explicit = walk(&app, "/v1/projects?limit=5&order_direction=DESC", &token).await;
    assert_eq!(explicit, newest);
}

#[tokio::test]
async fn has_more_is_exact_and_last_key_absent_on_empty_pages() {
    require!(BACKEND);
    let (app, token, expected) = fixture(10).await;
    let (_, body) = app.get_json("/v1/projects?limit=10", &token).await;
    assert_eq!(body["has_more"], false, "exactly a full page: nothing more");
    let (_, body) = app.get_json("/v1/projects?limit=9", &token).await;
    assert_eq!(body["has_more"], true);
    let oldest = newest_first(expected).pop().unwrap();
    let (status, body) = app
        .get_json(&format!("/v1/projects?start_key={oldest}"), &token)
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"], json!([]));
    assert_eq!(body["has_more"], false);
    assert!(body.get("last_key").is_none(), "{body}");
}

#[tokio::test]
async fn a_caller_sees_its_organizations_and_nothing_else() {
    require!(BACKEND);
    let app = TestApp::spawn(BACKEND).await;
    let mut lines = vec![
        org(1),
        org(2),
        org(3),
        user("u1", &[1, 2]),
        user("u3", &[3]),
    ];
    for i in 0..12 {
        lines.push(project(&format!("one-{i:02}"), 1, i * 2));
        lines.push(project(&format!("two-{i:02}"), 2, i * 2 + 1));
        lines.push(project(&format!("three-{i:02}"), 3, i));
    }
    app.seed(lines).await;
    let (u1, u3) = (app.token("u1").await, app.token("u3").await);

    // Merged across both organizations, in creation order.
    let all = walk(&app, "/v1/projects?limit=5&order_direction=ASC", &u1).await;
    let expected: Vec<String> = (0..12)
        .flat_map(|i| [format!("one-{i:02}"), format!("two-{i:02}")])
        .collect();
    assert_eq!(all, expected);

    let only_two = walk(
        &app,
        &format!("/v1/projects?organization_id={}&limit=5", org_id(2)),
        &u1,
    )
    .await;
    assert_eq!(only_two.len(), 12);
    assert!(only_two.iter().all(|id| id.starts_with("two-")));

    let theirs = walk(&app, "/v1/projects", &u3).await;
    assert_eq!(theirs.len(), 12);
    assert!(theirs.iter().all(|id| id.starts_with("three-")));

    // Another's organization and a non-existent one: the same 404.
    let (status, invisible) = app
        .get_json(&format!("/v1/projects?organization_id={}", org_id(3)), &u1)
        .await;
    assert_eq!(status, 404);
    assert_eq!(assert_error_shape(&invisible), "not_found_error");
    let (status, missing) = app
        .get_json(&format!("/v1/projects?organization_id={}", org_id(99)), &u1)
        .await;
    assert_eq!(status, 404);
    let without_id = |v: &Value| {
        v["error"]["message"]
            .as_str()
            .unwrap()
            .replace(&org_id(3), "")
            .replace(&org_id(99), "")
    };
    assert_eq!(without_id(&invisible), without_id(&missing));

    // Upper-case spelling of a visible organization is the same organization.
    let (status, _) = app
        .get_json(
            &format!("/v1/projects?organization_id={}", org_id(2).to_uppercase()),
            &u1,
        )
        .await;
    assert_eq!(status, 200);

    for bad in ["not-a-uuid", "0000000000007000800000000001"] {
        let (status, body) = app
            .get_json(&format!("/v1/projects?organization_id={bad}"), &u1)
            .await;
        assert_eq!(status, 400);
        assert_eq!(error_param(&body), "organization_id");
    }

    // Another organization's project as a start_key: never an item of this list.
    let (status, body) = app.get_json("/v1/projects?start_key=three-01", &u1).await;
    assert_eq!(status, 400);
    assert_eq!(error_param(&body), "start_key");
}

#[tokio::test]
async fn start_key_rules() {
    require!(BACKEND);
    let (app, token, expected) = fixture(6).await;
    let newest = newest_first(expected);
    for bad in ["nope", "x%2Fy", &"z".repeat(65)] {
        let (status, body) = app
            .get_json(&format!("/v1/projects?start_key={bad}"), &token)
            .await;
        assert_eq!(status, 400, "{bad}");
        assert_eq!(error_param(&body), "start_key");
    }
    // A key from outside the organization filter is not an item of that list.
    app.seed(vec![project("in-two", 2, 100)]).await;
    let (status, _) = app
        .get_json(
            &format!(
                "/v1/projects?organization_id={}&start_key=in-two",
                org_id(1)
            ),
            &token,
        )
        .await;
    assert_eq!(status, 400);
    // Removed after it was returned: the walk goes on from where it stood.
    let (_, first) = app.get_json("/v1/projects?limit=2", &token).await;
    assert_eq!(ids(&first), ["in-two", newest[0].as_str()]);
    app.store
        .run(RemoveProject(String::from(&newest[0])))
        .await
        .unwrap();
    let (status, second) = app
        .get_json(
            &format!("/v1/projects?limit=2&start_key={}", newest[0]),
            &token,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(ids(&second), newest[1..3]);
}

/// Items inserted and deleted during a walk: every item that existed for
/// the whole walk is seen exactly once.
#[tokio::test]
async fn concurrent_changes_never_skip_or_repeat_stable_items() {
    require!(BACKEND);
    for direction in ["DESC", "ASC"] {
        let (app, token, expected) = fixture(60).await;
        let stable: Vec<String> = newest_first(expected.clone());
        let mut doomed: Vec<String> = stable.iter().step_by(7).cloned().collect();
        let mut seen = Vec::new();
        let mut next = format!("/v1/projects?limit=6&order_direction={direction}");
        let mut round = 0;
        loop {
            let (status, body) = app.get_json(&next, &token).await;
            assert_eq!(status, 200, "{body}");
            seen.extend(ids(&body));
            // Between pages: new projects before, inside and after the walk's
            // position, and deletions of seen and unseen ones, the page's
            // last item (the next start_key) among them.
            round += 1;
            app.seed(vec![
                project(&format!("new-early-{round}"), 1, -100 - round),
                project(&format!("new-mid-{round}"), 1, 9),
                project(&format!("new-late-{round}"), 1, 1000 + round),
            ])
            .await;
            if let Some(victim) = doomed.pop() {
                app.store
                    .run(RemoveProject(String::from(&victim)))
                    .await
                    .unwrap();
            }
            if !body["has_more"].as_bool().unwrap() {
                break;
            }
            let last = body["last_key"].as_str().unwrap().to_owned();
            if round % 3 == 0 {
                // It may be gone already, as one of the doomed.
                let _ = app.store.run(RemoveProject(String::from(&last))).await;
            }
            next = format!("/v1/projects?limit=6&order_direction={direction}&start_key={last}");
        }
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            seen.len(),
            "{direction}: an item was repeated: {seen:?}"
        );
        let deleted: Vec<String> = stable.iter().step_by(7).cloned().collect();
        for id in stable.iter().filter(|id| !deleted.contains(id)) {
            assert!(seen.contains(id), "{direction}: {id} was skipped");
        }
        app.stop().await;
    }
}

/// A page after a start key reads from the key on: the page after the
/// 270th project costs what the page after the 10th does (an OFFSET would
/// read the 270 before it). SQLite: the steps its statements ran; PostgreSQL:
/// the plan of the statement that read the page.
#[tokio::test]
async fn a_deep_page_is_a_keyset_range_read() {
    require!(BACKEND);
    let mut options = test_options();
    // No token-use write may run between the pages.
    options.auth.usage_flush_interval = Duration::from_secs(3600);
    let app = TestApp::spawn_with(BACKEND, options, suite_store_options()).await;
    let (projects, expected) = projects_of_org_1(300);
    let mut lines = vec![org(1), user("u1", &[1])];
    lines.extend(projects);
    app.seed(lines).await;
    let token = app.token("u1").await;
    let newest = newest_first(expected);
    // Authenticates (and caches) the token: what follows reads pages only.
    assert_eq!(app.get("/v1/projects?limit=1", &token).await.status(), 200);
    let mut costs = Vec::new();
    for (after, expected) in [(9, &newest[10..30]), (269, &newest[270..290])] {
        let path = format!("/v1/projects?limit=20&start_key={}", newest[after]);
        let steps_before = metric("proxydeck_sqlite_vm_steps_total");
        let (_, body) = app.get_json(&path, &token).await;
        costs.push(metric("proxydeck_sqlite_vm_steps_total") - steps_before);
        assert_eq!(ids(&body), expected);
        assert_eq!(body["has_more"], true);
    }
    match BACKEND {
        Backend::Sqlite => {
            let [shallow, deep] = costs[..] else {
                unreachable!()
            };
            assert!(shallow > 0.0, "no step counted");
            assert!(
                deep <= shallow * 1.2,
                "steps of the page after the 10th and after the 270th: {costs:?}"
            );
        }
        Backend::Postgres => {
            let plan = app.data.postgres_plan_of_last("FROM projects");
            let from_the_key = plan
                .lines()
                .any(|line| line.contains("Index Cond") && line.contains("created_at"));
            assert!(
                from_the_key && !plan.contains("Seq Scan"),
                "not a range read of the index from the start key:\n{plan}"
            );
        }
    }
}
