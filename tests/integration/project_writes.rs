//! The management API's project operations (createProject, getProject,
//! updateProject, deleteProject) and the machinery every write shares:
//! bodies, errors, ETag / If-Match, Idempotency-Key, roles, the audit.

use reqwest::header::{CONTENT_TYPE, IF_MATCH};
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;
use proxydeck::store::engine::deadline::ANSWER_MARGIN;
use proxydeck::store::operator::audit::AuditQuery;
use std::time::Duration;

const ORG1: u32 = 1;

/// Organizations 1 and 2; u1 is in both (admin), u2 in 1, u3 in 3 only.
async fn fixture() -> (TestApp, String) {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        org(1),
        org(2),
        org(3),
        user("u1", &[1, 2]),
        user("u2", &[1]),
        user("u3", &[3]),
    ])
    .await;
    let token = app.token("u1").await;
    (app, token)
}

async fn create(app: &TestApp, token: &str, body: Value) -> (u16, Value, Option<String>) {
    send(
        app,
        reqwest::Method::POST,
        "/v1/projects",
        token,
        &[],
        Some(&body),
    )
    .await
}

async fn update(
    app: &TestApp,
    token: &str,
    id: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, Value, Option<String>) {
    let path = format!("/v1/projects/{id}");
    send(
        app,
        reqwest::Method::POST,
        &path,
        token,
        headers,
        Some(&body),
    )
    .await
}

async fn get(app: &TestApp, token: &str, id: &str) -> (u16, Value, Option<String>) {
    let path = format!("/v1/projects/{id}");
    send(app, reqwest::Method::GET, &path, token, &[], None).await
}

fn new_project(slug: &str) -> Value {
    json!({"organization_id": org_id(ORG1), "slug": slug})
}

#[tokio::test]
async fn create_answers_the_project_as_listings_and_get_show_it() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (status, created, tag) = create(&app, &token, new_project("shop")).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["object"], "project");
    assert_eq!(created["slug"], "shop");
    assert_eq!(created["type"], "proxy");
    assert_eq!(created["force_https"], true);
    assert_eq!(created["organization_id"], org_id(ORG1));
    let tag = tag.expect("an ETag");
    assert!(tag.starts_with('"'), "strong: {tag}");
    let id = created["id"].as_str().unwrap();
    let (status, got, got_tag) = get(&app, &token, id).await;
    assert_eq!((status, &got), (200, &created));
    assert_eq!(got_tag.as_deref(), Some(tag.as_str()));
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(listing["data"][0], created);
    // getProject's organization_id must be the project's.
    let path = format!("/v1/projects/{id}?organization_id={}", org_id(2));
    let (status, _) = app.get_json(&path, &token).await;
    assert_eq!(status, 404);
    let path = format!("/v1/projects/{id}?organization_id={}", org_id(ORG1));
    assert_eq!(app.get_json(&path, &token).await.0, 200);
    // Another user outside the organization: 404.
    let stranger = app.token("u3").await;
    assert_eq!(get(&app, &stranger, id).await.0, 404);
}

#[tokio::test]
async fn bodies_are_json_of_at_most_a_mebibyte_with_api_version_1() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let post = |content_type: &'static str, body: String, version: Option<&'static str>| {
        let mut request = app
            .client
            .post(app.url("/v1/projects"))
            .bearer_auth(&token)
            .header(CONTENT_TYPE, content_type)
            .body(body);
        if let Some(version) = version {
            request = request.header("api-version", version);
        }
        async move {
            let (status, body) = json_of(request.send().await.unwrap()).await;
            assert_error_shape(&body);
            (status.as_u16(), body)
        }
    };
    let good = new_project("a").to_string();
    assert_eq!(post("text/plain", good.clone(), None).await.0, 415);
    assert_eq!(
        post("application/x-www-form-urlencoded", good.clone(), None)
            .await
            .0,
        415
    );
    let (status, body) = post("application/json", good.clone(), Some("2")).await;
    assert_eq!((status, error_param(&body)), (400, "api-version"));
    let big = json!({"organization_id": org_id(ORG1), "slug": "big",
                     "description": "x".repeat(1024 * 1024)});
    assert_eq!(post("application/json", big.to_string(), None).await.0, 413);
    let (status, body) = post("application/json", "{\"slug\": ".into(), None).await;
    assert_eq!((status, error_param(&body)), (400, "body"));
    let (status, _) = post("application/json", "[1]".into(), None).await;
    assert_eq!(status, 400);
    // Nothing above was created.
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(listing["data"], json!([]));
    // charset=utf-8 and api-version 1 are fine.
    let response = app
        .client
        .post(app.url("/v1/projects"))
        .bearer_auth(&token)
        .header(CONTENT_TYPE, "application/json; charset=utf-8")
        .header("api-version", "1")
        .body(good)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

/// A body announced beyond the 1 MiB limit is a 413 at once, without
/// waiting for bytes the client may never send: by `Content-Length`, by
/// one chunk's size line (2^64 - 1 bytes, 2 MiB, the limit and one byte),
/// or by chunks adding up past it. On a kept-alive connection too, after
/// a chunked request (with a trailer) within the limit. Before, a chunked
/// announcement was held until the 30 s request timeout.
#[tokio::test]
async fn bodies_announced_beyond_the_limit_are_refused_at_once() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    require!(BACKEND);
    let (app, token) = fixture().await;
    let head = |framing: &str| {
        format!(
            "POST /v1/projects HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\n{framing}\r\n\r\n"
        )
    };
    let chunked = head("Transfer-Encoding: chunked");
    let start = r#"{"organization_id": "#;
    let half = " ".repeat(0x80000);
    let announcements = [
        (head("Content-Length: 2097152"), start.to_owned()),
        (chunked.clone(), format!("FFFFFFFFFFFFFFFF\r\n{start}")),
        (chunked.clone(), format!("200000\r\n{start}")),
        (chunked.clone(), format!("100001;name=value\r\n{start}")),
        // 512 KiB, then 512 KiB and one byte more.
        (
            chunked.clone(),
            format!("80000\r\n{half}\r\n80001\r\n{start}"),
        ),
    ];
    for (head, body) in announcements {
        let mut stream = tokio::net::TcpStream::connect(app.address).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
        let (status, answer) = answer_within(&mut stream, &head).await;
        assert_eq!(status, 413, "{head}{}: {answer}", &body[..20]);
        assert!(answer.contains("invalid_request_error"), "{answer}");
        assert!(answer.contains("connection: close"), "{answer}");
    }

    // Within the limit, chunked, a trailer after the last chunk: served,
    // and the same connection's next request is followed as well.
    let mut stream = tokio::net::TcpStream::connect(app.address).await.unwrap();
    let project = json!({"organization_id": org_id(ORG1), "slug": "chunked"}).to_string();
    let (first, rest) = project.split_at(10);
    let body = format!(
        "{:x}\r\n{first}\r\n{:X}\r\n{rest}\r\n0\r\nX-Checked: yes\r\n\r\n",
        first.len(),
        rest.len()
    );
    stream.write_all(chunked.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let (status, answer) = answer_within(&mut stream, &chunked).await;
    assert_eq!(status, 200, "{answer}");
    let exactly = format!("100000\r\n{{}}{}\r\n0\r\n\r\n", " ".repeat(0x100000 - 2));
    stream.write_all(chunked.as_bytes()).await.unwrap();
    stream.write_all(exactly.as_bytes()).await.unwrap();
    let (status, answer) = answer_within(&mut stream, "a body of exactly the limit").await;
    assert_eq!(
        status, 400,
        "read whole, then refused for its members: {answer}"
    );
    stream.write_all(chunked.as_bytes()).await.unwrap();
    stream
        .write_all(format!("100001\r\n{start}").as_bytes())
        .await
        .unwrap();
    let (status, answer) = answer_within(&mut stream, "the third request").await;
    assert_eq!(status, 413, "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    // Nothing more than the one project was made.
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(ids(&listing).len(), 1, "{listing}");

    /// The status and text of the next answer on `stream`, which must come
    /// well before the request timeout (30 s).
    async fn answer_within(stream: &mut tokio::net::TcpStream, what: &str) -> (u16, String) {
        let read = async {
            let mut answer = Vec::new();
            let mut buffer = [0u8; 4096];
            loop {
                if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&answer[..end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|line| line.strip_prefix("content-length: "))
                        .map_or(0, |n| n.trim().parse().unwrap());
                    if answer.len() >= end + 4 + length {
                        answer.truncate(end + 4 + length);
                        break;
                    }
                }
                let n = stream.read(&mut buffer).await.expect("the answer is read");
                assert!(n > 0, "the connection closed without an answer to {what}");
                answer.extend_from_slice(&buffer[..n]);
            }
            answer
        };
        let answer = tokio::time::timeout(std::time::Duration::from_secs(5), read)
            .await
            .unwrap_or_else(|_| panic!("no answer within 5 s to {what}"));
        let answer = String::from_utf8(answer).unwrap();
        let status = answer[9..12].parse().unwrap();
        (status, answer)
    }
}

#[tokio::test]
async fn every_bad_member_is_named_in_one_error() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let body = json!({
        "organization_id": org_id(ORG1), "slug": "Not A Slug", "colour": "red", "shade": 1,
        "force_https": "yes", "log_severity": "LOUD",
        "override_cache": [{"path": "/"}, {"path": "/a", "ttl": 1}, {"path": "/b", "ttl": 1.5}, {"ttl": -1}],
        "trusted_ips": ["10.0.0.1", "not an ip"],
        "rate_limiting": [{"rank": 0, "limit": 1}],
        "autocapture": {"click": 1}
    });
    let (status, error, _) = create(&app, &token, body).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let mut named = params(&error);
    named.sort();
    let mut expected = vec![
        "slug",
        "colour",
        "shade",
        "force_https",
        "log_severity",
        "override_cache[2].ttl",
        "override_cache[3].ttl",
        "override_cache[3].path",
        "rate_limiting[0].rank",
        "autocapture.click",
    ];
    expected.sort();
    // Domain rules (addresses) come once the shapes are right.
    assert_eq!(named, expected, "{error}");
    let (status, error, _) = create(
        &app,
        &token,
        json!({"organization_id": org_id(ORG1), "slug": "-bad", "trusted_ips": ["x"],
               "blocked_ips": ["1.2.3.4", "y"], "external_project_url": "nope"}),
    )
    .await;
    assert_eq!(status, 400);
    let mut named = params(&error);
    named.sort();
    assert_eq!(
        named,
        [
            "blocked_ips[1]",
            "external_project_url",
            "slug",
            "trusted_ips[0]"
        ]
    );
    // Required members.
    let (status, error, _) = create(&app, &token, json!({})).await;
    assert_eq!(status, 400);
    let mut named = params(&error);
    named.sort();
    assert_eq!(named, ["organization_id", "slug"]);
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(listing["data"], json!([]));
}

/// URL members are `http` or `https` only: another scheme is a 400 naming
/// the member on createProject and updateProject, and the import refuses
/// it too (one rule, the domain's). A row stored before the rule still
/// lists, reads and takes updates of its other members. Before, any
/// absolute URL passed, `javascript:` and `data:` included.
#[tokio::test]
async fn url_members_are_http_or_https_and_older_rows_still_read() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let bad = [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "ftp://files.example",
        "http:no-slashes.example",
    ];
    let (status, made, _) = create(&app, &token, new_project("shop")).await;
    assert_eq!(status, 200, "{made}");
    let id = made["id"].as_str().unwrap();
    for url in bad {
        let mut body = new_project("other");
        body["external_project_url"] = json!(url);
        let (status, error, _) = create(&app, &token, body).await;
        assert_eq!(
            (status, params(&error)),
            (400, vec!["external_project_url".to_owned()]),
            "{url}: {error}"
        );
        let (status, error, _) =
            update(&app, &token, id, &[], json!({"external_project_url": url})).await;
        assert_eq!(
            (status, params(&error)),
            (400, vec!["external_project_url".to_owned()]),
            "{url}: {error}"
        );
    }
    assert_eq!(get(&app, &token, id).await.1, made, "nothing changed");
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(
        listing["data"].as_array().unwrap().len(),
        1,
        "nothing created"
    );
    for url in ["https://shop.example/a?b=c", "HTTP://Shop.Example", ""] {
        let (status, changed, _) =
            update(&app, &token, id, &[], json!({"external_project_url": url})).await;
        assert_eq!(
            (status, &changed["external_project_url"]),
            (200, &json!(url))
        );
    }
    for member in ["avatar_url", "external_project_url"] {
        let mut line = project("imported", ORG1, 0);
        line[member] = json!("javascript:alert(1)");
        let refused = seed(app.store.as_ref(), vec![line]).await.unwrap_err();
        assert_eq!(refused.field.as_deref(), Some(member), "{refused:?}");
    }

    // A project stored before the rule, with such URLs.
    let mut old = project("old", ORG1, 1);
    old["avatar_url"] = json!("https://avatar.example/x.png");
    old["external_project_url"] = json!("https://site.example");
    app.seed(vec![old]).await;
    app.data.execute(
        "UPDATE projects SET body = replace(replace(body,
            'https://avatar.example/x.png', 'data:image/svg+xml,<svg onload=alert(1)>'),
            'https://site.example', 'javascript:alert(1)') WHERE id = 'old'",
    );
    let (status, listing) = app.get_json("/v1/projects?limit=100", &token).await;
    assert_eq!(status, 200, "{listing}");
    let listed = listing["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "old")
        .unwrap_or_else(|| panic!("the old row lists: {listing}"))
        .clone();
    assert_eq!(listed["external_project_url"], "javascript:alert(1)");
    assert_eq!(
        listed["avatar_url"],
        "data:image/svg+xml,<svg onload=alert(1)>"
    );
    let (status, read, _) = get(&app, &token, "old").await;
    assert_eq!((status, &read), (200, &listed));
    // Its other members still change; its URLs stay until a write sets them.
    let update_old = |members: Value| update(&app, &token, "old", &[], members);
    let (status, changed, _) = update_old(json!({"description": "still here"})).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["external_project_url"], "javascript:alert(1)");
    let (status, error, _) =
        update_old(json!({"external_project_url": "javascript:alert(1)"})).await;
    assert_eq!(
        (status, params(&error)),
        (400, vec!["external_project_url".to_owned()])
    );
    let (status, fixed, _) =
        update_old(json!({"external_project_url": "https://site.example"})).await;
    assert_eq!(
        (status, &fixed["external_project_url"]),
        (200, &json!("https://site.example"))
    );
}

#[tokio::test]
async fn integral_floats_are_integers_and_read_only_members_are_ignored() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let body = json!({
        "organization_id": org_id(ORG1), "slug": "floats", "id": "mine", "object": "x",
        "created_at": "1999-01-01T00:00:00Z", "avatar_url": "https://ignored.example",
        "override_cache": [{"path": "/", "ttl": 60.0, "swr": 5.0, "rank": 1.0,
                            "conditions": {"response_status": [200.0]}}],
        "rate_limiting": [{"rank": 1.0, "limit": 10.0, "block_duration": 60.0}]
    });
    let (status, created, _) = create(&app, &token, body).await;
    assert_eq!(status, 200, "{created}");
    assert_ne!(created["id"], "mine");
    assert_eq!(created["avatar_url"], "");
    assert_ne!(created["created_at"], "1999-01-01T00:00:00.000Z");
    let text = created.to_string();
    assert!(!text.contains("60.0") && !text.contains("200.0"), "{text}");
    assert_eq!(created["override_cache"][0]["ttl"], json!(60));
    assert_eq!(created["rate_limiting"][0]["limit"], json!(10));
}

#[tokio::test]
async fn slugs_are_unique_in_their_organization() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    assert_eq!(create(&app, &token, new_project("shop")).await.0, 200);
    let (status, error, _) = create(&app, &token, new_project("shop")).await;
    assert_eq!(status, 409);
    assert_eq!(error["error"]["type"], "conflict_error");
    let other = json!({"organization_id": org_id(2), "slug": "shop"});
    assert_eq!(create(&app, &token, other).await.0, 200);
    let (_, second, _) = create(&app, &token, new_project("shop-2")).await;
    let id = second["id"].as_str().unwrap();
    let (status, _, _) = update(&app, &token, id, &[], json!({"slug": "shop"})).await;
    assert_eq!(status, 409);
    // Keeping its own slug is no conflict.
    let (status, _, _) = update(&app, &token, id, &[], json!({"slug": "shop-2"})).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn roles_and_membership_decide_who_writes() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, project, _) = create(&app, &token, new_project("shop")).await;
    let id = project["id"].as_str().unwrap();
    let outsider = app.token("u3").await;
    assert_eq!(create(&app, &outsider, new_project("x")).await.0, 404);
    assert_eq!(update(&app, &outsider, id, &[], json!({})).await.0, 404);
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let member = app.token("u2").await;
    let (status, error, _) = create(&app, &member, new_project("x")).await;
    assert_eq!(
        (status, error["error"]["type"].as_str()),
        (403, Some("forbidden_error"))
    );
    assert_eq!(
        update(&app, &member, id, &[], json!({"description": "d"}))
            .await
            .0,
        403
    );
    let path = format!("/v1/projects/{id}");
    assert_eq!(
        send(&app, reqwest::Method::DELETE, &path, &member, &[], None)
            .await
            .0,
        403
    );
    // A member reads.
    assert_eq!(get(&app, &member, id).await.0, 200);
    app.data
        .execute("UPDATE memberships SET role = 'editor' WHERE user_id = 'u2'");
    assert_eq!(
        update(&app, &member, id, &[], json!({"description": "d"}))
            .await
            .0,
        200
    );
    assert_eq!(get(&app, &token, "no-such-project").await.0, 404);
    assert_eq!(
        update(&app, &token, "no-such-project", &[], json!({}))
            .await
            .0,
        404
    );
}

#[tokio::test]
async fn updates_set_what_they_name_and_null_resets() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let body = json!({"organization_id": org_id(ORG1), "slug": "shop", "description": "d",
                      "log_severity": "DEBUG", "force_https": false, "trusted_ips": ["10.0.0.1"]});
    let (_, created, _) = create(&app, &token, body).await;
    let id = created["id"].as_str().unwrap();
    let (status, changed, _) = update(
        &app,
        &token,
        id,
        &[],
        json!({"id": id, "cache": true, "log_severity": null, "force_https": null}),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["cache"], true);
    assert_eq!(changed["log_severity"], "INFO");
    assert_eq!(changed["force_https"], true);
    assert_eq!(changed["description"], "d");
    assert_eq!(changed["trusted_ips"], json!(["10.0.0.1"]));
    assert_eq!(changed["created_at"], created["created_at"]);
    assert!(
        changed["updated_at"].as_str().unwrap() > created["updated_at"].as_str().unwrap(),
        "updated_at moves forward"
    );
    let (status, error, _) = update(&app, &token, id, &[], json!({"id": "other"})).await;
    assert_eq!((status, params(&error)), (400, vec!["id".to_owned()]));
    let (status, error, _) =
        update(&app, &token, id, &[], json!({"organization_id": org_id(2)})).await;
    assert_eq!(
        (status, params(&error)),
        (400, vec!["organization_id".to_owned()])
    );
    let (status, error, _) = update(
        &app,
        &token,
        id,
        &[],
        json!({"blocked_ips": ["nope"], "cache": "no"}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(params(&error), ["cache"]);
    let (status, error, _) = update(&app, &token, id, &[], json!({"blocked_ips": ["nope"]})).await;
    assert_eq!(
        (status, params(&error)),
        (400, vec!["blocked_ips[0]".to_owned()])
    );
    assert_eq!(
        get(&app, &token, id).await.1,
        changed,
        "refusals change nothing"
    );
}

#[tokio::test]
async fn if_match_guards_updates_and_deletes() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created, tag) = create(&app, &token, new_project("shop")).await;
    let (id, tag) = (created["id"].as_str().unwrap(), tag.unwrap());
    let (status, changed, new_tag) = update(
        &app,
        &token,
        id,
        &[("If-Match", &tag)],
        json!({"cache": true}),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    let new_tag = new_tag.unwrap();
    assert_ne!(new_tag, tag);
    let (status, error, _) = update(
        &app,
        &token,
        id,
        &[("If-Match", &tag)],
        json!({"cache": false}),
    )
    .await;
    assert_eq!(status, 412);
    assert_eq!(error["error"]["type"], "conflict_error");
    assert_eq!(error["error"]["code"], "precondition_failed");
    assert_eq!(get(&app, &token, id).await.1, changed, "nothing changed");
    let weak = format!("W/{new_tag}");
    assert_eq!(
        update(&app, &token, id, &[("If-Match", &weak)], json!({}))
            .await
            .0,
        412
    );
    let path = format!("/v1/projects/{id}");
    let (status, _, _) = send(
        &app,
        reqwest::Method::DELETE,
        &path,
        &token,
        &[("If-Match", &tag)],
        None,
    )
    .await;
    assert_eq!(status, 412);
    assert_eq!(get(&app, &token, id).await.0, 200);
    let (status, deleted, _) = send(
        &app,
        reqwest::Method::DELETE,
        &path,
        &token,
        &[(IF_MATCH.as_str(), &new_tag)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        deleted,
        json!({"object": "project", "id": id, "deleted": true})
    );
}

/// `*` matches any version only alone (RFC 9110: `If-Match = "*" /
/// #entity-tag`). Beside a tag, or twice, in one header or across
/// several, it is a 400 naming `If-Match` and nothing changes; before,
/// `"v0", *` matched any version.
#[tokio::test]
async fn a_star_beside_other_if_match_members_is_a_400() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created, tag) = create(&app, &token, new_project("shop")).await;
    let (id, tag) = (created["id"].as_str().unwrap(), tag.unwrap());
    let path = format!("/v1/projects/{id}");
    let lists: [&[&str]; 6] = [
        &["\"v0\", *"],
        &["*, \"v0\""],
        &[&format!("{tag}, *")],
        &["*, *"],
        &["\"v0\"", "*"],
        &["*", "*"],
    ];
    for values in lists {
        let headers: Vec<(&str, &str)> = values.iter().map(|v| ("If-Match", *v)).collect();
        let (status, error, _) =
            update(&app, &token, id, &headers, json!({"description": "x"})).await;
        assert_eq!(
            (status, error_param(&error)),
            (400, "If-Match"),
            "{values:?}: {error}"
        );
        let (status, error, _) =
            send(&app, reqwest::Method::DELETE, &path, &token, &headers, None).await;
        assert_eq!(
            (status, error_param(&error)),
            (400, "If-Match"),
            "{values:?}: {error}"
        );
        assert_eq!(
            get(&app, &token, id).await.1,
            created,
            "{values:?}: nothing changed"
        );
    }
    // Alone, it matches any version.
    let (status, changed, _) = update(
        &app,
        &token,
        id,
        &[("If-Match", "*")],
        json!({"description": "x"}),
    )
    .await;
    assert_eq!(
        (status, &changed["description"]),
        (200, &json!("x")),
        "{changed}"
    );
    let (status, _, _) = send(
        &app,
        reqwest::Method::DELETE,
        &path,
        &token,
        &[("If-Match", "*")],
        None,
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn deleted_projects_leave_listings_and_their_ids_still_page() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let mut ids = Vec::new();
    for slug in ["a", "b", "c"] {
        let (_, created, _) = create(&app, &token, new_project(slug)).await;
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    let path = format!("/v1/projects/{}", ids[1]);
    let (status, _, _) = send(&app, reqwest::Method::DELETE, &path, &token, &[], None).await;
    assert_eq!(status, 200);
    assert_eq!(get(&app, &token, &ids[1]).await.0, 404);
    let (status, _, _) = send(&app, reqwest::Method::DELETE, &path, &token, &[], None).await;
    assert_eq!(status, 404);
    let (_, listing) = app
        .get_json("/v1/projects?order_direction=ASC", &token)
        .await;
    assert_eq!(
        crate::helpers::ids(&listing),
        [ids[0].clone(), ids[2].clone()]
    );
    let after = format!("/v1/projects?order_direction=ASC&start_key={}", ids[1]);
    let (status, page) = app.get_json(&after, &token).await;
    assert_eq!(status, 200);
    assert_eq!(crate::helpers::ids(&page), [ids[2].clone()]);
    // Its slug is free again.
    assert_eq!(create(&app, &token, new_project("b")).await.0, 200);
}

#[tokio::test]
async fn idempotency_keys_replay_the_first_answer() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let key = [("Idempotency-Key", "order-42")];
    let post = |token: String, body: Value, headers: &'static [(&'static str, &'static str)]| {
        let app = &app;
        async move {
            send(
                app,
                reqwest::Method::POST,
                "/v1/projects",
                &token,
                headers,
                Some(&body),
            )
            .await
        }
    };
    const KEY: &[(&str, &str)] = &[("Idempotency-Key", "order-42")];
    let (status, first, tag) = post(token.clone(), new_project("shop"), KEY).await;
    assert_eq!(status, 200);
    let (status, again, again_tag) = post(token.clone(), new_project("shop"), KEY).await;
    assert_eq!((status, &again, &again_tag), (200, &first, &tag));
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(listing["data"].as_array().unwrap().len(), 1, "created once");
    let (status, error, _) = post(token.clone(), new_project("other"), KEY).await;
    assert_eq!(status, 409);
    assert_eq!(error["error"]["code"], "idempotency_key_reused");
    // Another user's key is another key.
    let u2 = app.token("u2").await;
    assert_eq!(post(u2, new_project("shop-u2"), KEY).await.0, 200);
    // A refused request does not use a key up.
    const FRESH: &[(&str, &str)] = &[("Idempotency-Key", "fresh")];
    assert_eq!(
        post(token.clone(), new_project("Bad Slug"), FRESH).await.0,
        400
    );
    assert_eq!(
        post(token.clone(), new_project("fresh"), FRESH).await.0,
        200
    );
    const BAD: &[(&str, &str)] = &[("Idempotency-Key", "")];
    let (status, error, _) = post(token.clone(), new_project("x"), BAD).await;
    assert_eq!((status, error_param(&error)), (400, "Idempotency-Key"));
    let _ = key;
}

#[tokio::test]
async fn concurrent_idempotent_creates_create_once() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let body = json!({"organization_id": org_id(ORG1), "slug": "once"});
    let tries = (0..6).map(|_| {
        send(
            &app,
            reqwest::Method::POST,
            "/v1/projects",
            &token,
            &[("Idempotency-Key", "same")],
            Some(&body),
        )
    });
    let answers = futures_util::future::join_all(tries).await;
    let first = &answers[0].1;
    for (status, body, _) in &answers {
        assert_eq!((*status, body), (200, first));
    }
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(listing["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn racing_writers_with_one_tag_one_wins() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created, tag) = create(&app, &token, new_project("race")).await;
    let (id, tag) = (created["id"].as_str().unwrap().to_owned(), tag.unwrap());
    let other = app.another_instance().await;
    for round in 0..5 {
        let (_, _, tag) = get(&app, &token, &id).await;
        let tag = tag.unwrap();
        let body_a = json!({"description": format!("a{round}")});
        let body_b = json!({"description": format!("b{round}")});
        let condition = [("If-Match", tag.as_str())];
        let (a, b) = tokio::join!(
            update(&app, &token, &id, &condition, body_a),
            update(&other, &token, &id, &condition, body_b),
        );
        let mut statuses = [a.0, b.0];
        statuses.sort();
        assert_eq!(statuses, [200, 412], "round {round}: {a:?} {b:?}");
        let winner = if a.0 == 200 { a.1 } else { b.1 };
        assert_eq!(get(&app, &token, &id).await.1, winner);
    }
    let _ = tag;
}

#[tokio::test]
async fn every_accepted_write_is_audited() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created, _) = create(&app, &token, new_project("audited")).await;
    let id = created["id"].as_str().unwrap();
    update(&app, &token, id, &[], json!({"cache": true})).await;
    assert_eq!(create(&app, &token, new_project("audited")).await.0, 409);
    let path = format!("/v1/projects/{id}");
    let response = app
        .client
        .delete(app.url(&path))
        .bearer_auth(&token)
        .header("x-request-id", "req-delete-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let records = app
        .store
        .run(AuditQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let seen: Vec<(&str, Option<i64>, Option<i64>)> = records
        .iter()
        .map(|r| (r.operation.as_str(), r.version_before, r.version_after))
        .collect();
    assert_eq!(
        seen,
        [
            ("deleteProject", Some(2), Some(3)),
            ("updateProject", Some(1), Some(2)),
            ("createProject", None, Some(1)),
        ]
    );
    for record in &records {
        assert_eq!(
            (record.user_id.as_str(), record.object.as_str()),
            ("u1", "project")
        );
        assert_eq!(record.object_id, id);
        assert!(!record.token_id.is_empty() && !record.request_id.is_empty());
        assert!(!token.contains(&record.token_id));
    }
    assert_eq!(records[0].request_id, "req-delete-1");
    let by_object = app
        .store
        .run(AuditQuery {
            object_id: Some("other".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(by_object.is_empty());
}

#[tokio::test]
async fn the_generated_client_creates_reads_updates_and_deletes() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let client = generated_client(&app, &token);
    let created = client
        .create_project()
        .body_map(|b| {
            b.organization_id(org_id(ORG1))
                .slug("generated".to_owned())
                .type_(edgee_api_client::types::ProjectCreateInputType::Proxy)
        })
        .send()
        .await
        .expect("createProject")
        .into_inner();
    let id = created.id.clone().expect("an id");
    let got = client
        .get_project()
        .id(id.clone())
        .send()
        .await
        .expect("getProject")
        .into_inner();
    assert_eq!(got.slug.as_deref(), Some("generated"));
    let updated = client
        .update_project()
        .id(id.clone())
        .body_map(|b| b.id(id.clone()).description("by the client".to_owned()))
        .send()
        .await
        .expect("updateProject")
        .into_inner();
    assert_eq!(updated.description.as_deref(), Some("by the client"));
    let deleted = client
        .delete_project()
        .id(id.clone())
        .send()
        .await
        .expect("deleteProject")
        .into_inner();
    assert_eq!(deleted.deleted, Some(true));
    assert_eq!(get(&app, &token, &id).await.0, 404);
}

/// management.md's limits: 1,000 cache rules, 1,000 rate-limiting rules
/// and 1,000 entries in each IP or cookie list are kept whole, on create
/// and on update; one more is a 400 naming each list over its limit, and
/// nothing changes.
#[tokio::test]
async fn lists_hold_a_thousand_entries_and_refuse_one_more() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    const LISTS: [&str; 5] = [
        "override_cache",
        "rate_limiting",
        "trusted_ips",
        "blocked_ips",
        "cookie_whitelist",
    ];
    let lists = |n: usize, octet: usize| {
        let address = move |i: usize| format!("10.{octet}.{}.{}", i / 256, i % 256);
        json!({
            "override_cache": (0..n)
                .map(|i| json!({"path": format!("/assets/{i}"), "ttl": 60, "rank": i}))
                .collect::<Vec<_>>(),
            "rate_limiting": (0..n).map(|i| json!({"rank": i + 1, "limit": 10})).collect::<Vec<_>>(),
            "trusted_ips": (0..n).map(address).collect::<Vec<_>>(),
            "blocked_ips": (0..n).map(|i| address(i + 1_000)).collect::<Vec<_>>(),
            "cookie_whitelist": (0..n).map(|i| format!("cookie_{i}")).collect::<Vec<_>>(),
        })
    };
    let with = |mut body: Value, more: Value| {
        body.as_object_mut()
            .unwrap()
            .extend(more.as_object().unwrap().clone());
        body
    };
    // Rules come back with their defaults filled in: the members sent
    // are compared.
    let kept = |answer: &Value, sent: &Value| {
        for list in LISTS {
            let (answered, sent) = (
                answer[list].as_array().unwrap(),
                sent[list].as_array().unwrap(),
            );
            assert_eq!(answered.len(), sent.len(), "{list}");
            for (answered, sent) in answered.iter().zip(sent) {
                match sent.as_object() {
                    Some(members) => members
                        .iter()
                        .for_each(|(name, value)| assert_eq!(&answered[name], value, "{list}")),
                    None => assert_eq!(answered, sent, "{list}"),
                }
            }
        }
    };
    let (status, created, _) =
        create(&app, &token, with(new_project("full"), lists(1_000, 1))).await;
    assert_eq!(status, 200, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    kept(&created, &lists(1_000, 1));
    let (status, error, _) = create(&app, &token, with(new_project("over"), lists(1_001, 2))).await;
    assert_eq!(status, 400);
    let mut named = params(&error);
    named.sort();
    let mut expected = LISTS.to_vec();
    expected.sort();
    assert_eq!(named, expected, "{error}");
    // Updates: 1,000 others replace the lists; 1,001 change nothing.
    let (status, updated, _) = update(&app, &token, &id, &[], lists(1_000, 3)).await;
    assert_eq!(status, 200, "{updated}");
    let (status, error, _) = update(&app, &token, &id, &[], lists(1_001, 4)).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(params(&error).len(), LISTS.len(), "{error}");
    let (_, stored) = app.get_json(&format!("/v1/projects/{id}"), &token).await;
    kept(&stored, &lists(1_000, 3));
    let (_, listing) = app.get_json("/v1/projects", &token).await;
    assert_eq!(listing["data"].as_array().unwrap().len(), 1);
}

/// No answer lies: writes whose deadline passes inside their transaction
/// (a request timeout a few milliseconds longer than the margin kept for
/// the answer, `store::engine::deadline`) roll back. Every answer is checked
/// against what the store holds: a write answered 503 committed nothing, a
/// write that committed answers its success, and sent again with its
/// `Idempotency-Key` each tells which it was.
#[tokio::test]
async fn a_write_past_its_deadline_commits_nothing_and_says_so() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let mut answers = Vec::new();
    let past = || metric("proxydeck_db_writes_past_deadline_total");
    // Tighter deadlines first; looser ones until both outcomes were seen.
    for millis in [1, 2, 4, 8, 16, 32, 64, 128] {
        let mut options = test_options();
        options.limits.timeout = ANSWER_MARGIN + Duration::from_millis(millis);
        let slow = app.another_instance_with(options).await;
        for _ in 0..30 {
            let n = answers.len();
            let (slug, key) = (format!("deadline-{n}"), format!("key-{n}"));
            let body = json!({"organization_id": org_id(ORG1), "slug": slug});
            let (status, answer, _) = send(
                &slow,
                reqwest::Method::POST,
                "/v1/projects",
                &token,
                &[("Idempotency-Key", key.as_str())],
                Some(&body),
            )
            .await;
            assert!(matches!(status, 200 | 503), "{status}: {answer}");
            answers.push((slug, key, status, answer));
        }
        slow.stop().await;
        let count = |status| answers.iter().filter(|a| a.2 == status).count();
        if count(200) >= 3 && count(503) >= 3 {
            break;
        }
    }
    let stored = slugs_of_org1(&app, &token).await;
    let audited = app
        .store
        .run(AuditQuery {
            limit: 10_000,
            ..Default::default()
        })
        .await
        .expect("the audit reads");
    for (slug, _, status, answer) in &answers {
        let records = |id: &str| audited.iter().filter(|r| r.object_id == id).count();
        match (*status, stored.iter().find(|(s, _)| s == slug)) {
            (200, Some((_, id))) => {
                assert_eq!(answer["id"], *id, "{slug}");
                assert_eq!(records(id), 1, "{slug}: one audit record");
            }
            (200, None) => panic!("{slug} was answered 200 and is not stored"),
            (_, Some(_)) => panic!("{slug} was answered {status} and is stored"),
            (_, None) => {}
        }
    }
    let count = |status| answers.iter().filter(|a| a.2 == status).count();
    assert!(count(200) >= 3, "writes should have committed");
    assert!(count(503) >= 3, "writes should have passed their deadline");
    assert!(past() >= 3.0, "writes rolled back at their deadline");
    // Sent again with its key, a committed write replays its answer and
    // one answered 503 is made now, once.
    for (slug, key, status, answer) in answers.iter().rev().take(40) {
        let body = json!({"organization_id": org_id(ORG1), "slug": slug});
        let (again, replay, _) = send(
            &app,
            reqwest::Method::POST,
            "/v1/projects",
            &token,
            &[("Idempotency-Key", key)],
            Some(&body),
        )
        .await;
        assert_eq!(again, 200, "{slug}: {replay}");
        if *status == 200 {
            assert_eq!(&replay, answer, "{slug}: the first answer again");
        }
    }
}

/// The slug and id of every project of organization 1, through the pages.
async fn slugs_of_org1(app: &TestApp, token: &str) -> Vec<(String, String)> {
    let first = format!("/v1/projects?organization_id={}&limit=100", org_id(ORG1));
    let mut path = first.clone();
    let mut all = Vec::new();
    loop {
        let (status, page) = app.get_json(&path, token).await;
        assert_eq!(status, 200, "{page}");
        for project in page["data"].as_array().unwrap() {
            let field = |name: &str| project[name].as_str().unwrap().to_owned();
            all.push((field("slug"), field("id")));
        }
        if page["has_more"] != true {
            return all;
        }
        path = format!("{first}&start_key={}", page["last_key"].as_str().unwrap());
    }
}
