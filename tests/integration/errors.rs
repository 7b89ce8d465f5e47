//! Every error of `docs/decisions.md` section 3: status, body shape, headers.

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

const LISTINGS: [&str; 3] = [
    "/v1/projects",
    "/v1/api_tokens",
    "/v1/projects/p1/proxy-settings",
];

async fn fixture() -> (TestApp, String) {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        org(1),
        user("u1", &[1]),
        project("p1", 1, 0),
        settings("p1", 1, true),
    ])
    .await;
    let token = app.token("u1").await;
    (app, token)
}

#[tokio::test]
async fn unknown_routes_are_404_in_json() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for path in [
        "/",
        "/v1",
        "/v1/projects/",
        "/v2/projects",
        "/v1/project",
        "/v1/projects/p1/x",
        "/v1/projects/p1/proxy-settings/1/x",
        "/v1/projects/p1/proxy_settings",
        "/v1/api_tokens/x/y",
        "/V1/PROJECTS",
    ] {
        for token in [Some(token.as_str()), None] {
            let mut request = app.client.get(app.url(path));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let (status, body) = json_of(request.send().await.unwrap()).await;
            assert_eq!(status, 404, "{path}");
            assert_eq!(assert_error_shape(&body), "not_found_error");
        }
    }
}

/// The 404 of an unknown path names every path of the API's document,
/// the document's own and the console's: the list is the router's.
#[tokio::test]
async fn the_404_names_every_route() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (status, body) = app.get_json("/v1/nowhere", &token).await;
    assert_eq!(status, 404, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    let document: Value = serde_json::from_str(proxydeck::http::openapi::DOCUMENT).unwrap();
    let paths = document["paths"].as_object().unwrap().keys();
    for path in paths
        .map(String::as_str)
        .chain(["/openapi.json", "/console"])
    {
        assert!(message.contains(path), "{path} is not named: {message}");
    }
}

/// A project id in a path that is no id (1 to 64 characters of
/// `[A-Za-z0-9_-]`) is the same 400 naming `id` on every operation that
/// takes one, before any store look-up; a well-formed id of no project is
/// the same 404 on each. Before, the listing of proxy settings answered
/// 400 and getProject, updateProject, deleteProject and the
/// proxy-settings writes 404 (or axum's plain-text 400 for bytes that are
/// not UTF-8).
#[tokio::test]
async fn a_malformed_project_id_is_a_400_naming_id_on_every_operation() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let revision = json!({"description": "r",
        "backends": [{"name": "origin", "address": "origin.example:443", "default": true}]});
    let operations = [
        (Method::GET, "/v1/projects/{id}/proxy-settings", None),
        (
            Method::POST,
            "/v1/projects/{id}/proxy-settings",
            Some(revision),
        ),
        (
            Method::POST,
            "/v1/projects/{id}/proxy-settings/1",
            Some(json!({"description": "x"})),
        ),
        (Method::GET, "/v1/projects/{id}", None),
        (
            Method::POST,
            "/v1/projects/{id}",
            Some(json!({"description": "x"})),
        ),
        (Method::DELETE, "/v1/projects/{id}", None),
    ];
    let too_long = "x".repeat(65);
    let malformed = [
        "a%20b", "dot.dot", &too_long, "%C3%A9", "%FF", "a%2Fb", "q%22", "%00", "p1%27",
    ];
    for (method, template, body) in &operations {
        for id in malformed {
            let path = template.replace("{id}", id);
            let (status, error, _) =
                send(&app, method.clone(), &path, &token, &[], body.as_ref()).await;
            assert_eq!(
                (status, error_param(&error)),
                (400, "id"),
                "{method} {path}: {error}"
            );
            assert_eq!(error["error"]["type"], "invalid_request_error");
        }
        let path = template.replace("{id}", "nowhere");
        let (status, error, _) =
            send(&app, method.clone(), &path, &token, &[], body.as_ref()).await;
        assert_eq!(status, 404, "{method} {path}: {error}");
    }
    // Nothing was changed.
    let (status, project) = app.get_json("/v1/projects/p1", &token).await;
    assert_eq!(
        (status.as_u16(), &project["description"]),
        (200, &json!(""))
    );
    let (_, revisions) = app.get_json("/v1/projects/p1/proxy-settings", &token).await;
    assert_eq!(revisions["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(revisions["data"][0]["description"], "r1", "{revisions}");
}

#[tokio::test]
async fn other_methods_are_405_with_allow() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    // POST creates on every listing's path (docs/management.md).
    let methods = ["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PURGE", "FOO"];
    let listings = LISTINGS.map(|path| (path, &methods[..], &["GET", "HEAD", "POST"][..]));
    let single = [
        (
            "/v1/api_tokens/x",
            &["POST", "PUT", "PATCH"][..],
            &["GET", "DELETE"][..],
        ),
        (
            "/v1/projects/p1/proxy-settings/1",
            &["GET", "PUT", "DELETE"][..],
            &["POST"][..],
        ),
    ];
    for (path, methods, allowed) in listings.into_iter().chain(single) {
        for &method in methods {
            let response = app
                .client
                .request(
                    Method::from_bytes(method.as_bytes()).unwrap(),
                    app.url(path),
                )
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            let allow = response
                .headers()
                .get("allow")
                .map(|v| v.to_str().unwrap().to_owned());
            let (status, body) = json_of(response).await;
            assert_eq!(status, 405, "{method} {path}");
            assert_eq!(assert_error_shape(&body), "invalid_request_error");
            let allow = allow.expect("an Allow header");
            assert!(allowed.iter().all(|m| allow.contains(m)), "{allow}");
        }
    }
}

#[tokio::test]
async fn bad_query_parameters_name_themselves_on_every_listing() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for path in LISTINGS {
        for (query, param) in [
            ("unknown=1", "unknown"),
            ("limit=1&limit=1", "limit"),
            ("limit=", "limit"),
            ("start_key=", "start_key"),
            ("order_direction=", "order_direction"),
            ("limit=1.0", "limit"),
            ("limit=1000", "limit"),
            ("order_direction=sideways", "order_direction"),
        ] {
            let (status, body) = app.get_json(&format!("{path}?{query}"), &token).await;
            assert_eq!(status, 400, "{path}?{query}: {body}");
            assert_eq!(assert_error_shape(&body), "invalid_request_error");
            assert_eq!(error_param(&body), param, "{path}?{query}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.starts_with(param), "{message}");
        }
    }
}

/// SQL, NUL, LIKE wildcards, header breaks, template and path tricks.
const INJECTIONS: [&str; 16] = [
    "' OR 1=1--",
    "p1'; DROP TABLE projects;--",
    "1; SELECT pg_sleep(5)",
    "\0",
    "'",
    "\"}",
    "%",
    "_",
    "p%",
    "$1",
    "\\",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "x\r\nX-Injected: 1",
    "${jndi:ldap://example/x}",
    "{{7*7}}",
];

/// What an injection attempt must get.
#[derive(Debug)]
enum Answer {
    /// A 400 naming this parameter (`None`: an unknown parameter's name,
    /// repeated only when plain).
    Refused(Option<&'static str>),
    /// A 200 with no items.
    Nothing,
    /// A 404.
    NotFound,
}

/// The answer to `value` in query parameter `param`: refused naming the
/// parameter, except the name filter, which is free text: no token has
/// that name, so nothing (no LIKE), unless it holds a control character,
/// which no name can.
fn injection_answer(param: &'static str, value: &str) -> Answer {
    if param == "name" && !value.chars().any(char::is_control) {
        Answer::Nothing
    } else {
        Answer::Refused(Some(param))
    }
}

/// Every parameter of every listing, the path id and parameter names,
/// with injection attempts: each is refused naming what was wrong, or
/// harmless; none is echoed, none takes long (no `pg_sleep` ran), no header
/// is injected, and the data is intact afterwards.
#[tokio::test]
async fn injection_attempts_are_refused_or_harmless() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    // Ids and revisions: `last_used_at` may move meanwhile.
    let keys = |body: &Value| -> Vec<String> {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item.get("id").unwrap_or(&item["revision"]).to_string())
            .collect()
    };
    let mut before = Vec::new();
    for path in LISTINGS {
        before.push(keys(&app.get_json(path, &token).await.1));
    }
    let listing_params: [(&str, &[&'static str]); 3] = [
        (
            LISTINGS[0],
            &["organization_id", "limit", "start_key", "order_direction"],
        ),
        (
            LISTINGS[1],
            &["name", "limit", "start_key", "order_direction"],
        ),
        (LISTINGS[2], &["limit", "start_key", "order_direction"]),
    ];
    for value in INJECTIONS {
        let mut requests: Vec<(String, Answer)> = Vec::new();
        for (path, params) in listing_params {
            for param in params {
                requests.push((
                    with_query(path, &[(param, value)]),
                    injection_answer(param, value),
                ));
            }
            requests.push((with_query(path, &[(value, "1")]), Answer::Refused(None)));
        }
        let id: String = form_urlencoded::byte_serialize(value.as_bytes()).collect();
        let id_answer = if proxydeck::domain::ids::is_valid_id(value) {
            Answer::NotFound
        } else {
            Answer::Refused(Some("id"))
        };
        requests.push((
            format!("/v1/projects/{}/proxy-settings", id.replace('+', "%20")),
            id_answer,
        ));

        for (request, expected) in requests {
            let started = std::time::Instant::now();
            let response = app.get(&request, &token).await;
            assert!(
                response.headers().get("x-injected").is_none(),
                "{request}: a header was injected"
            );
            let (status, body) = json_of(response).await;
            assert!(
                started.elapsed() < std::time::Duration::from_secs(2),
                "{request} took long"
            );
            match expected {
                Answer::Nothing => {
                    assert_eq!(status, 200, "{request}: {body}");
                    assert_eq!(body["data"], serde_json::json!([]), "{request}");
                }
                Answer::NotFound => {
                    assert_eq!(status, 404, "{request}: {body}");
                    assert_eq!(assert_error_shape(&body), "not_found_error");
                }
                Answer::Refused(param) => {
                    assert_eq!(status, 400, "{request}: {body}");
                    assert_eq!(assert_error_shape(&body), "invalid_request_error");
                    if let Some(param) = param {
                        assert_eq!(error_param(&body), param, "{request}");
                    }
                }
            }
            if value.len() >= 4 {
                assert!(
                    !body.to_string().contains(value),
                    "{request} is echoed: {body}"
                );
            }
        }
    }
    for (path, before) in LISTINGS.iter().zip(before) {
        let (status, after) = app.get_json(path, &token).await;
        assert_eq!(status, 200, "{path}: {after}");
        assert_eq!(keys(&after), before, "{path}: the data changed");
    }
}

/// An unexpected fault (here a stored revision number out of its range)
/// is a 500 `api_error` that says nothing of its cause; other requests go
/// on. (Stored JSON itself is trusted, not re-parsed: it was checked when
/// it was written.)
#[tokio::test]
async fn an_unexpected_fault_is_500_without_its_cause() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    app.data
        .execute("UPDATE proxy_settings SET revision = 5000000000 WHERE project_id = 'p1'");
    let (status, body) = app.get_json("/v1/projects/p1/proxy-settings", &token).await;
    assert_eq!(status, 500);
    assert_eq!(assert_error_shape(&body), "api_error");
    let text = body.to_string();
    for leak in [
        "5000000000",
        "revision",
        "SQLite",
        "PostgreSQL",
        "column",
        "p1",
    ] {
        assert!(!text.contains(leak), "{leak} in {text}");
    }
    let (status, _) = app.get_json("/v1/projects", &token).await;
    assert_eq!(status, 200);
}
