//! Concurrent project writes: `If-Match`, `Idempotency-Key`, racing
//! writers, the audit of every accepted write, and a write past its
//! deadline.

use super::*;
use proxydeck::store::engine::deadline::ANSWER_MARGIN;
use proxydeck::store::operator::audit::AuditQuery;
use reqwest::header::IF_MATCH;
use std::time::Duration;

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
