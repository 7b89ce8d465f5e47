//! What a project write's body may hold: JSON of at most a mebibyte
//! (refused at once when announced beyond it), every bad member named in
//! one error, URL members, integral floats, and the lists' limits.

use super::*;
use reqwest::header::CONTENT_TYPE;

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

/// docs/management.md's limits: 1,000 cache rules, 1,000 rate-limiting rules
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
