//! The management API's project operations (createProject, getProject,
//! updateProject, deleteProject) and the machinery every write shares:
//! bodies, errors, ETag / If-Match, Idempotency-Key, roles, the audit.
//! Here the operations and who may run them; what a body may hold in
//! `bodies.rs`; concurrent writes, the audit and deadlines in
//! `concurrency.rs`.

mod bodies;
mod concurrency;

use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

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
