//! getUser and updateUser, and the generated client running the teams'
//! operations of the public document.

use edgee_api_client::types;

use super::*;

#[tokio::test]
async fn users_are_read_by_themselves_and_those_sharing_an_organization() {
    require!(BACKEND);
    let app = team().await;
    // s2 also joins organization 3 with m1: s2 sees m1's role there only.
    app.seed(vec![
        org(3),
        json!({"object": "user", "id": "m1", "email": "m1@example.com",
               "roles": {org_id(1): "member", org_id(3): "editor"}}),
        json!({"object": "user", "id": "s2", "email": "s2@example.com",
               "roles": {org_id(2): "admin", org_id(3): "admin"}}),
    ])
    .await;
    let m1 = app.token("m1").await;
    let (status, itself, tag) = send(&app, Method::GET, "/v1/users/m1", &m1, &[], None).await;
    assert_eq!(status, 200, "{itself}");
    assert_eq!(itself, app.get_json("/v1/users/me", &m1).await.1);
    assert_eq!(tag.as_deref(), Some("\"v1\""));
    let (status, seen) = app.get_json("/v1/users/m1", &app.token("s2").await).await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!(seen["roles"], json!({org_id(3): "editor"}));
    assert_eq!(seen["role"], "editor");
    let (status, seen) = app.get_json("/v1/users/m1", &app.token("a1").await).await;
    assert_eq!(status, 200);
    assert_eq!(seen["roles"], json!({org_id(1): "member"}));
    // Shares nothing, or no such user: the same 404.
    let e1 = app.token("e1").await;
    for other in ["s2", "nobody", "bad.id"] {
        let (status, body) = app.get_json(&format!("/v1/users/{other}"), &e1).await;
        assert_eq!(status, 404, "{other}: {body}");
        assert_eq!(body["error"]["message"], "no such user");
    }
}

#[tokio::test]
async fn a_user_changes_itself_only() {
    require!(BACKEND);
    let app = team().await;
    let m1 = app.token("m1").await;
    let (status, answer, _) = post(&app, "/v1/users/a1", &m1, json!({"terms_version": "2"})).await;
    assert_eq!(status, 403, "shares organization 1: {answer}");
    let (status, _, _) = post(&app, "/v1/users/s2", &m1, json!({"terms_version": "2"})).await;
    assert_eq!(status, 404);
    for (body, param) in [
        (
            json!({"avatar_url": "http://example.com/a.png"}),
            "avatar_url",
        ),
        (json!({"avatar_url": "javascript:alert(1)"}), "avatar_url"),
        (
            json!({"avatar_url": format!("https://example.com/{}", "a".repeat(2048))}),
            "avatar_url",
        ),
        (json!({"terms_version": "v".repeat(101)}), "terms_version"),
        (json!({"privacy_version": 3}), "privacy_version"),
        (json!({"email": "x@example.com"}), "email"),
    ] {
        let (status, answer, _) = post(&app, "/v1/users/m1", &m1, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(params(&answer), [param], "{answer}");
    }
    let avatar = "https://cdn.example.com/m1.png";
    let if_match = [("If-Match", "\"v1\"")];
    let body = json!({"avatar_url": avatar, "terms_version": "2024-01", "privacy_version": "3"});
    let (status, changed, tag) = send(
        &app,
        Method::POST,
        "/v1/users/m1",
        &m1,
        &if_match,
        Some(&body),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["avatar_url"], avatar);
    assert_eq!(tag.as_deref(), Some("\"v2\""));
    assert_eq!(
        app.get_json("/v1/users/me", &m1).await.1["avatar_url"],
        avatar
    );
    let (_, members) = app.get_json(&members_path(&org_id(1)), &m1).await;
    let listed = members["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "m1")
        .unwrap()
        .clone();
    assert_eq!(listed["avatar_url"], avatar);
    let (status, _, _) = send(
        &app,
        Method::POST,
        "/v1/users/m1",
        &m1,
        &if_match,
        Some(&body),
    )
    .await;
    assert_eq!(status, 412);
    let (status, cleared, _) = post(&app, "/v1/users/m1", &m1, json!({"avatar_url": null})).await;
    assert_eq!(status, 200);
    assert!(cleared.get("avatar_url").is_none(), "{cleared}");
    assert_eq!(
        app.data
            .count("SELECT COUNT(*) FROM users WHERE id = 'm1' AND terms_version = '2024-01'"),
        1
    );
    assert_eq!(audit_of(&app, Some("m1")).await[0].operation, "updateUser");
}

/// The public document's generated client runs every operation of the
/// teams this branch serves, and reads each answer as its type.
#[tokio::test]
async fn the_generated_client_runs_the_teams_operations() {
    require!(BACKEND);
    let app = team().await;
    let a1 = app.token("a1").await;
    let client = generated_client(&app, &a1);
    // The document's input is its Organization, read-only members and
    // all: they are sent, and ignored.
    let organization = |id: &str, name: &str, slug: &str| -> types::Organization {
        serde_json::from_value(json!({"object": "organization", "id": id, "name": name,
            "slug": slug, "created_at": at(0), "updated_at": at(0)}))
        .expect("an organization")
    };
    let created = client
        .create_organization()
        .body(types::OrganizationCreateInput(organization(
            "ignored",
            "Client Org",
            "client-org",
        )))
        .send()
        .await
        .expect("createOrganization")
        .into_inner();
    let id = created.id.clone();
    assert_eq!(created.slug, "client-org");
    let updated = client
        .update_organization()
        .id(&id)
        .body(types::OrganizationUpdateInput(organization(
            &id,
            "Renamed",
            "client-org",
        )))
        .send()
        .await
        .expect("updateOrganization")
        .into_inner();
    assert_eq!(updated.name, "Renamed");
    // e1 joins it (the operator's way: invitations are another branch's).
    app.seed(vec![
        json!({"object": "user", "id": "e1", "email": "e1@example.com",
        "roles": {org_id(1): "editor", id.clone(): "member"}}),
    ])
    .await;
    let listed = client
        .list_organizations_users()
        .id(&id)
        .role("member")
        .send()
        .await
        .expect("listOrganizationsUsers")
        .into_inner();
    assert_eq!(listed.data.len(), 1);
    let changed = client
        .update_organization_user()
        .id(&id)
        .user_id("e1")
        .body(
            serde_json::from_value::<types::OrganizationUserUpdateInput>(json!({
                "object": "user", "id": "e1", "email": "e1@example.com", "name": "e1",
                "slug": "e1", "role": "editor", "created_at": at(0), "updated_at": at(0)}))
            .expect("a member"),
        )
        .send()
        .await
        .expect("updateOrganizationUser")
        .into_inner();
    assert_eq!(changed.id, "e1");
    let removed = client
        .delete_organization_user()
        .id(&id)
        .user_id("e1")
        .send()
        .await
        .expect("deleteOrganizationUser")
        .into_inner();
    assert_eq!(removed.deleted, Some(true));
    let user = client
        .get_user()
        .id("a1")
        .send()
        .await
        .expect("getUser")
        .into_inner();
    assert_eq!(user.id, "a1");
    let user = client
        .update_user()
        .id("a1")
        .body_map(|b| b.terms_version("1".to_owned()))
        .send()
        .await
        .expect("updateUser")
        .into_inner();
    assert_eq!(user.id, "a1");
    let deleted = client
        .delete_organization()
        .id(&id)
        .send()
        .await
        .expect("deleteOrganization")
        .into_inner();
    assert_eq!(deleted.deleted, Some(true));
}
