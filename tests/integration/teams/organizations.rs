//! createOrganization, updateOrganization, deleteOrganization.

use proxydeck::quotas::OrganizationCreation;
use proxydeck::store::StoreOptions;

use super::*;

#[tokio::test]
async fn any_user_creates_an_organization_and_is_its_admin() {
    require!(BACKEND);
    let app = team().await;
    let m1 = app.token("m1").await;
    let (status, created, tag) = post(
        &app,
        "/v1/organizations",
        &m1,
        json!({"name": "Acme", "slug": "acme", "type": "perso", "id": "ignored",
               "object": "x", "avatar_url": "y", "created_at": "z", "updated_at": "w"}),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["object"], "organization");
    assert_eq!(created["name"], "Acme");
    assert_eq!(created["slug"], "acme");
    assert_eq!(created["type"], "pro", "type is read-only");
    assert_ne!(id, "ignored");
    assert_eq!(tag.as_deref(), Some("\"v1\""));
    // The caller is its admin, at once: reads and writes see it.
    let (_, me) = app.get_json("/v1/users/me", &m1).await;
    assert_eq!(me["roles"][&id], "admin", "{me}");
    let (status, got) = app.get_json(&format!("/v1/organizations/{id}"), &m1).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got, created);
    let (_, members) = app.get_json(&members_path(&id), &m1).await;
    assert_eq!(ids(&members), ["m1"]);
    assert_eq!(members["data"][0]["role"], "admin");
    let (status, project, _) = post(
        &app,
        "/v1/projects",
        &m1,
        json!({"organization_id": id, "slug": "site"}),
    )
    .await;
    assert_eq!(status, 200, "{project}");
    // The projects listing, which reads the token's cached organizations,
    // has the new one at once on this instance: the write forgot them.
    let (status, listed) = app
        .get_json(&format!("/v1/projects?organization_id={id}"), &m1)
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["data"][0]["slug"], "site");
    // Audited, without the body.
    let audit = audit_of(&app, Some(&id)).await;
    assert_eq!(audit[0].operation, "createOrganization");
    assert_eq!(audit[0].user_id, "m1");
}

#[tokio::test]
async fn names_and_slugs_follow_their_rules_and_slugs_are_unique() {
    require!(BACKEND);
    let app = team().await;
    let a1 = app.token("a1").await;
    let e1 = app.token("e1").await;
    create_org(&app, &a1, "Acme", "acme").await;
    for (body, param) in [
        (json!({"slug": "x"}), "name"),
        (json!({"name": "X"}), "slug"),
        (json!({"name": "", "slug": "x"}), "name"),
        (json!({"name": "n".repeat(101), "slug": "x"}), "name"),
        (json!({"name": "X", "slug": "Bad Slug"}), "slug"),
        (json!({"name": "X", "slug": "-x"}), "slug"),
        (json!({"name": "X", "slug": org_id(7)}), "slug"),
        (json!({"name": "X", "slug": "x", "extra": 1}), "extra"),
    ] {
        let (status, answer, _) = post(&app, "/v1/organizations", &e1, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(
            params(&answer).contains(&param.to_owned()),
            "{body}: {answer}"
        );
    }
    // Taken: by any organization of the service, the caller's or not.
    let (status, answer, _) = post(
        &app,
        "/v1/organizations",
        &e1,
        json!({"name": "Other", "slug": "acme"}),
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["error"]["type"], "conflict_error");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("acme")
    );
    let created = create_org(&app, &e1, "Second", "second").await;
    let (status, answer, _) = post(
        &app,
        &format!("/v1/organizations/{}", created["id"].as_str().unwrap()),
        &e1,
        json!({"id": created["id"], "slug": "acme"}),
    )
    .await;
    assert_eq!(status, 409, "{answer}");
}

#[tokio::test]
async fn idempotency_keys_answer_the_first_creation_again() {
    require!(BACKEND);
    let app = team().await;
    let m1 = app.token("m1").await;
    let body = json!({"name": "Once", "slug": "once"});
    let key = [("Idempotency-Key", "create-once")];
    let (status, first, _) = send(
        &app,
        Method::POST,
        "/v1/organizations",
        &m1,
        &key,
        Some(&body),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let (status, again, _) = send(
        &app,
        Method::POST,
        "/v1/organizations",
        &m1,
        &key,
        Some(&body),
    )
    .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again, first);
    let (_, me) = app.get_json("/v1/users/me", &m1).await;
    assert_eq!(me["roles"].as_object().unwrap().len(), 2, "{me}");
    let other = json!({"name": "Twice", "slug": "twice"});
    let (status, reused, _) = send(
        &app,
        Method::POST,
        "/v1/organizations",
        &m1,
        &key,
        Some(&other),
    )
    .await;
    assert_eq!(status, 409, "{reused}");
    assert_eq!(reused["error"]["code"], "idempotency_key_reused");
}

#[tokio::test]
async fn a_user_creates_a_bounded_number_an_hour_and_operators_may_keep_it() {
    require!(BACKEND);
    let mut options = test_options();
    options.quotas.organizations_per_user_per_hour = 2;
    let app = TestApp::spawn_with(BACKEND, options, StoreOptions::default()).await;
    app.seed(vec![org(1), user("u1", &[1]), user("u2", &[1])])
        .await;
    let u1 = app.token("u1").await;
    let first = create_org(&app, &u1, "One", "one").await;
    create_org(&app, &u1, "Two", "two").await;
    // Deleted ones count too.
    let (status, _, _) = delete(
        &app,
        &format!("/v1/organizations/{}", first["id"].as_str().unwrap()),
        &u1,
    )
    .await;
    assert_eq!(status, 200);
    let response = app
        .client
        .post(app.url("/v1/organizations"))
        .bearer_auth(&u1)
        .json(&json!({"name": "Three", "slug": "three"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((3000..=3600).contains(&retry), "{retry}");
    // Another user has its own count.
    create_org(&app, &app.token("u2").await, "Three", "three").await;

    let mut options = test_options();
    options.quotas.organization_creation = OrganizationCreation::Operators;
    let closed = TestApp::spawn_with(BACKEND, options, StoreOptions::default()).await;
    closed.seed(vec![org(1), user("u1", &[1])]).await;
    let (status, answer, _) = post(
        &closed,
        "/v1/organizations",
        &closed.token("u1").await,
        json!({"name": "Nope", "slug": "nope"}),
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    assert_eq!(answer["error"]["type"], "forbidden_error");
}

#[tokio::test]
async fn admins_rename_with_if_match_and_others_are_refused() {
    require!(BACKEND);
    let app = team().await;
    let org1 = org_id(1);
    let path = format!("/v1/organizations/{org1}");
    let a1 = app.token("a1").await;
    let (status, got, tag) = send(&app, Method::GET, &path, &a1, &[], None).await;
    assert_eq!(status, 200, "{got}");
    let tag = tag.unwrap();
    for (caller, want) in [("e1", 403), ("m1", 403), ("s2", 404)] {
        let token = app.token(caller).await;
        let (status, answer, _) =
            post(&app, &path, &token, json!({"id": org1, "name": "Mine"})).await;
        assert_eq!(status, want, "{caller}: {answer}");
    }
    // The path's id, and no other.
    let (status, answer, _) = post(&app, &path, &a1, json!({"id": org_id(2), "name": "X"})).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(params(&answer), ["id"]);
    let (status, answer, _) = post(&app, &path, &a1, json!({"name": "X"})).await;
    assert_eq!(status, 400, "{answer}");
    let if_match = [("If-Match", tag.as_str())];
    let body = json!({"id": org1.to_uppercase(), "name": "Renamed", "slug": "renamed"});
    let (status, renamed, new_tag) =
        send(&app, Method::POST, &path, &a1, &if_match, Some(&body)).await;
    assert_eq!(status, 200, "{renamed}");
    assert_eq!(renamed["name"], "Renamed");
    assert_eq!(renamed["slug"], "renamed");
    assert_ne!(new_tag.as_deref(), Some(tag.as_str()));
    assert_eq!(app.get_json(&path, &a1).await.1, renamed);
    // The old tag no longer matches.
    let (status, answer, _) = send(&app, Method::POST, &path, &a1, &if_match, Some(&body)).await;
    assert_eq!(status, 412, "{answer}");
    assert_eq!(
        audit_of(&app, Some(&org1)).await[0].operation,
        "updateOrganization"
    );
}

#[tokio::test]
async fn deletion_waits_for_the_projects_then_hides_the_organization_for_good() {
    require!(BACKEND);
    let app = team().await;
    app.seed(vec![project("p1", 1, 0), project("p2", 1, 1)])
        .await;
    let org1 = org_id(1);
    let path = format!("/v1/organizations/{org1}");
    let a1 = app.token("a1").await;
    let m1 = app.token("m1").await;
    let s2 = app.token("s2").await;
    assert_eq!(delete(&app, &path, &app.token("e1").await).await.0, 403);
    assert_eq!(delete(&app, &path, &m1).await.0, 403);
    assert_eq!(delete(&app, &path, &s2).await.0, 404);
    let (status, answer, _) = delete(&app, &path, &a1).await;
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2 projects"),
        "{answer}"
    );
    assert_eq!(delete(&app, "/v1/projects/p1", &a1).await.0, 200);
    let (_, answer, _) = delete(&app, &path, &a1).await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1 project:"),
        "{answer}"
    );
    assert_eq!(delete(&app, "/v1/projects/p2", &a1).await.0, 200);
    // A pending invitation of it ends with it.
    app.data.execute(&format!(
        "INSERT INTO invitations (id, organization_id, email, role, digest, created_by,
                                  created_at, expires_at)
         VALUES ('i1', '{org1}', 'x@example.com', 'member', {}, 'a1', 1, 9999999999999)",
        if BACKEND == Backend::Sqlite {
            "x'01'"
        } else {
            "'\\x01'::bytea"
        }
    ));
    let (status, deleted, _) = delete(&app, &path, &a1).await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(
        deleted,
        json!({"object": "organization", "id": org1, "deleted": true})
    );
    assert_eq!(
        app.data
            .count("SELECT COUNT(*) FROM invitations WHERE deleted_at IS NOT NULL"),
        1
    );
    // No read shows it, to any former member, and writes refuse it.
    for token in [&a1, &m1] {
        assert_eq!(app.get_json(&path, token).await.0, 404);
        let (_, listed) = app.get_json("/v1/organizations", token).await;
        assert!(!ids(&listed).contains(&org1), "{listed}");
        let (_, me) = app.get_json("/v1/users/me", token).await;
        assert_eq!(me["roles"], json!({}), "{me}");
        assert_eq!(me["role"], "member", "no membership left: {me}");
        let (status, _) = app.get_json(&members_path(&org1), token).await;
        assert!([404, 200].contains(&status.as_u16()));
    }
    assert_eq!(delete(&app, &path, &a1).await.0, 404);
    let (status, _, _) = post(&app, &path, &a1, json!({"id": org1, "name": "Back"})).await;
    assert_eq!(status, 404);
    let (status, _, _) = post(
        &app,
        "/v1/projects",
        &a1,
        json!({"organization_id": org1, "slug": "again"}),
    )
    .await;
    assert_eq!(status, 404);
    // Its slug is free again.
    let again = create_org(&app, &s2, "Org 1 again", "org-1").await;
    assert_ne!(again["id"], json!(org1));
    assert_eq!(
        app.data.count(&format!(
            "SELECT COUNT(*) FROM organizations WHERE id = '{org1}' AND deleted_at IS NOT NULL"
        )),
        1,
        "the row stays"
    );
}

/// The operator's side ignores a deleted organization: `admin org list`
/// and the export leave it out, `admin user create --org` and the import
/// refuse it (its id is never reused), and the import puts no project
/// in it.
#[tokio::test]
async fn the_operator_no_longer_sees_a_deleted_organization() {
    require!(BACKEND);
    let app = team().await;
    let org1 = org_id(1);
    let (status, _, _) = delete(
        &app,
        &format!("/v1/organizations/{org1}"),
        &app.token("a1").await,
    )
    .await;
    assert_eq!(status, 200);
    let listed = app
        .store
        .run(proxydeck::store::operator::export::AllOrganizations)
        .await
        .unwrap();
    assert_eq!(
        listed.iter().map(|o| o.id.clone()).collect::<Vec<_>>(),
        [org_id(2)]
    );
    for line in [
        json!({"object": "organization", "id": org1, "name": "Back"}),
        json!({"object": "user", "id": "n1", "email": "n1@example.com",
               "roles": {org1.clone(): "admin"}}),
        project("p-in-deleted", 1, 0),
    ] {
        let refused = seed(app.store.as_ref(), vec![line.clone()]).await;
        assert!(refused.is_err(), "{line}: {refused:?}");
    }
    assert_eq!(
        app.data.count(&format!(
            "SELECT COUNT(*) FROM organizations WHERE id = '{org1}' AND slug = id"
        )),
        1,
        "still deleted, its slug still given back"
    );
}
