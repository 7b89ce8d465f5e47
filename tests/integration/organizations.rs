//! The directory's operations: getMe, listOrganizations, getOrganization,
//! getMyOrganization; over plain HTTP and through edgee-api-client's
//! generated client.

use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

/// Organizations 1 (created first), 2, 3 (perso) and 4 (the caller is not
/// in it); u1 is admin of 2, then also member of 1 and editor of 3. An
/// imported membership is as old as the later of its user and
/// organization, so 1's (5 s) is u1's oldest, before 2's (10 s).
async fn fixture() -> (TestApp, String) {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        json!({"object": "organization", "id": org_id(1), "name": "Acme Corp", "created_at": at(0)}),
        json!({"object": "organization", "id": org_id(2), "name": "Globex", "slug": "globex-inc",
               "created_at": at(10)}),
        json!({"object": "organization", "id": org_id(3), "name": "Home", "type": "perso",
               "created_at": at(20)}),
        json!({"object": "organization", "id": org_id(4), "name": "Initech", "created_at": at(30)}),
        json!({"object": "user", "id": "u1", "email": "jane.doe@example.com",
               "roles": {org_id(2): "admin"}, "created_at": at(5)}),
        json!({"object": "user", "id": "u4", "email": "x@example.com", "name": "Xavier",
               "roles": {org_id(4): "member"}}),
    ])
    .await;
    // Later memberships: re-importing the user keeps the first one's age.
    app.seed(vec![json!({"object": "user", "id": "u1", "email": "jane.doe@example.com",
        "roles": {org_id(2): "admin", org_id(1): "member", org_id(3): "editor"}, "created_at": at(5)})])
        .await;
    let token = app.token("u1").await;
    (app, token)
}

#[tokio::test]
async fn get_me_answers_the_caller_with_its_roles() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (status, me) = app.get_json("/v1/users/me", &token).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["object"], "user");
    assert_eq!(me["id"], "u1");
    assert_eq!(me["email"], "jane.doe@example.com");
    assert_eq!(me["name"], "jane.doe");
    assert_eq!(
        me["roles"],
        json!({org_id(1): "member", org_id(2): "admin", org_id(3): "editor"})
    );
    assert_eq!(me["created_at"], at(5));
    assert!(me["updated_at"].as_str().unwrap() >= me["created_at"].as_str().unwrap());
    assert_eq!(me["role"], "member", "the role in organization 1");
    let (_, other) = app.get_json("/v1/users/me", &app.token("u4").await).await;
    assert_eq!(other["name"], "Xavier");
    assert_eq!(other["role"], "member");
}

#[tokio::test]
async fn organizations_answer_only_to_their_members() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (status, org) = app
        .get_json(&format!("/v1/organizations/{}", org_id(2)), &token)
        .await;
    assert_eq!(status, 200, "{org}");
    assert_eq!(
        org,
        json!({"object": "organization", "id": org_id(2), "name": "Globex", "slug": "globex-inc",
               "type": "pro", "created_at": at(10), "updated_at": at(10)})
    );
    let (_, acme) = app
        .get_json(
            &format!("/v1/organizations/{}", org_id(1).to_uppercase()),
            &token,
        )
        .await;
    assert_eq!(acme["slug"], "acme-corp");
    assert_eq!(acme["id"], org_id(1));
    let (_, home) = app
        .get_json(&format!("/v1/organizations/{}", org_id(3)), &token)
        .await;
    assert_eq!(home["type"], "perso");
    // Not a member, unknown, or not an id at all: the same 404.
    for id in [
        org_id(4),
        org_id(99),
        "nope".into(),
        "u1".into(),
        "%20".into(),
    ] {
        let (status, body) = app
            .get_json(&format!("/v1/organizations/{id}"), &token)
            .await;
        assert_eq!(status, 404, "{id}: {body}");
        assert_eq!(assert_error_shape(&body), "not_found_error");
        assert_eq!(body["error"]["message"], "no such organization");
    }
    let (status, mine) = app.get_json("/v1/organizations/me", &token).await;
    assert_eq!(status, 200);
    assert_eq!(mine["id"], org_id(1));
}

#[tokio::test]
async fn the_oldest_membership_ties_break_on_the_organizations_creation_then_id() {
    require!(BACKEND);
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        json!({"object": "organization", "id": org_id(9), "name": "Nine", "created_at": at(0)}),
        json!({"object": "organization", "id": org_id(8), "name": "Eight", "created_at": at(0)}),
        json!({"object": "organization", "id": org_id(7), "name": "Seven", "created_at": at(-5)}),
        // All three memberships are as old as the user.
        json!({"object": "user", "id": "u", "email": "u@example.com", "created_at": at(100),
               "roles": {org_id(9): "admin", org_id(8): "editor"}}),
    ])
    .await;
    let token = app.token("u").await;
    let (_, mine) = app.get_json("/v1/organizations/me", &token).await;
    assert_eq!(mine["id"], org_id(8), "same creation: the smaller id");
    let (_, me) = app.get_json("/v1/users/me", &token).await;
    assert_eq!(me["role"], "editor");
    app.seed(vec![json!({"object": "user", "id": "u", "email": "u@example.com",
        "created_at": at(100), "roles": {org_id(9): "admin", org_id(8): "editor", org_id(7): "member"}})])
        .await;
    let (_, mine) = app.get_json("/v1/organizations/me", &token).await;
    assert_eq!(
        mine["id"],
        org_id(7),
        "same membership age: the older organization"
    );
}

#[tokio::test]
async fn organizations_are_listed_and_paginated_like_projects() {
    require!(BACKEND);
    let app = TestApp::spawn(BACKEND).await;
    // A caller in 150 organizations (every third perso), among 160.
    let count = 160u32;
    let mut lines: Vec<Value> = (0..count)
        .map(|n| {
            json!({"object": "organization", "id": org_id(n), "name": format!("Org {n}"),
                   "type": if n % 3 == 0 { "perso" } else { "pro" },
                   // Pairs share a creation time: ties broken by id.
                   "created_at": at((n / 2) as i64)})
        })
        .collect();
    let member_of: Vec<u32> = (0..150).collect();
    lines.push(user("many", &member_of));
    lines.push(user("other", &[155]));
    app.seed(lines).await;
    let token = app.token("many").await;
    let newest_first: Vec<String> = member_of.iter().rev().map(|n| org_id(*n)).collect();
    let walked = walk(&app, "/v1/organizations?limit=7", &token).await;
    assert_eq!(walked, newest_first);
    let mut oldest_first = newest_first.clone();
    oldest_first.reverse();
    assert_eq!(
        walk(
            &app,
            "/v1/organizations?limit=100&order_direction=ASC",
            &token
        )
        .await,
        oldest_first
    );
    let perso: Vec<String> = newest_first
        .iter()
        .filter(|id| u32::from_str_radix(&id[24..], 16).unwrap() % 3 == 0)
        .cloned()
        .collect();
    assert_eq!(
        walk(&app, "/v1/organizations?type=perso&limit=9", &token).await,
        perso
    );
    let pro = walk(&app, "/v1/organizations?type=pro", &token).await;
    assert_eq!(pro.len() + perso.len(), 150);
    let (status, page) = app.get_json("/v1/organizations", &token).await;
    assert_eq!(status, 200);
    assert_eq!(page["object"], "list");
    assert_eq!(page["url"], "/v1/organizations");
    assert_eq!(page["data"].as_array().unwrap().len(), 20);
    assert_eq!(page["has_more"], true);
    assert_eq!(page["data"][0]["object"], "organization");
}

#[tokio::test]
async fn bad_parameters_get_the_listings_errors() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for (query, param) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("order_direction=asc", "order_direction"),
        ("type=team", "type"),
        ("type=", "type"),
        ("organization_id=x", "organization_id"),
        // Not an organization of the caller's, not one of this type.
        (&format!("start_key={}", org_id(4)), "start_key"),
        ("start_key=nope", "start_key"),
        (&format!("type=pro&start_key={}", org_id(3)), "start_key"),
    ] {
        let (status, body) = app
            .get_json(&format!("/v1/organizations?{query}"), &token)
            .await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(assert_error_shape(&body), "invalid_request_error");
        assert_eq!(error_param(&body), param, "{query}");
    }
    // The last item as start key: an empty last page, not an error.
    let (status, body) = app
        .get_json(
            &format!(
                "/v1/organizations?order_direction=ASC&start_key={}",
                org_id(3)
            ),
            &token,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!([]));
}

#[tokio::test]
async fn the_operations_need_a_token_and_answer_get_only() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let client = client_builder().build().unwrap();
    for path in [
        "/v1/users/me",
        "/v1/organizations",
        "/v1/organizations/me",
        &format!("/v1/organizations/{}", org_id(1)),
    ] {
        let anonymous = client.get(app.url(path)).send().await.unwrap();
        assert_eq!(anonymous.status(), 401, "{path}");
        let put = client
            .put(app.url(path))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(put.status(), 405, "{path}");
        assert!(
            put.headers()["allow"].to_str().unwrap().contains("GET"),
            "{path}"
        );
        // Conditional: the tag comes back as 304; single objects' are strong.
        let first = app.get(path, &token).await;
        assert_eq!(first.status(), 200, "{path}");
        let tag = first.headers()["etag"].to_str().unwrap().to_owned();
        if !path.ends_with("/organizations") {
            assert!(!tag.starts_with("W/"), "{path}: {tag}");
        }
        let again = client
            .get(app.url(path))
            .bearer_auth(&token)
            .header("if-none-match", &tag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path}");
    }
}

#[tokio::test]
async fn a_change_of_the_organization_changes_its_tag_and_dates() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let path = format!("/v1/organizations/{}", org_id(1));
    let before = app.get(&path, &token).await;
    let tag = before.headers()["etag"].clone();
    app.seed(vec![
        json!({"object": "organization", "id": org_id(1), "name": "Acme Inc"}),
    ])
    .await;
    let after = app.get(&path, &token).await;
    assert_ne!(after.headers()["etag"], tag);
    let (_, body) = json_of(after).await;
    assert_eq!(body["name"], "Acme Inc");
    assert_eq!(body["slug"], "acme-corp", "a slug stays what it was made");
    assert_eq!(body["created_at"], at(0));
    assert!(body["updated_at"].as_str().unwrap() > at(0).as_str());
}

#[tokio::test]
async fn the_generated_client_reads_the_directory() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let client = edgee_api_client::new()
        .baseurl(app.url(""))
        .api_token(token)
        .connect();
    let me = client.get_me().send().await.unwrap().into_inner();
    assert_eq!(me.id, "u1");
    assert_eq!(me.roles.len(), 3);
    let list = client
        .list_organizations()
        .limit(2)
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.data.len(), 2);
    assert_eq!(list.data[0].id, org_id(3));
    let rest = client
        .list_organizations()
        .start_key(list.last_key.clone().unwrap())
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(rest.data.len(), 1);
    let perso = client
        .list_organizations()
        .type_(edgee_api_client::types::ListOrganizationsType::Perso)
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(perso.data.len(), 1);
    let org = client
        .get_organization()
        .id(org_id(2))
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(org.slug, "globex-inc");
    let mine = client
        .get_my_organization()
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(mine.id, org_id(1));
    let missing = client.get_organization().id(org_id(4)).send().await;
    assert_eq!(missing.unwrap_err().status().unwrap(), 404);
}
