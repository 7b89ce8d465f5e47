//! Invitations (docs/teams.md, "Invitations" and "Accepting one"):
//! createInvitation, listInvitations, getInvitation, deleteInvitation and
//! acceptInvitation, over real HTTP.

use reqwest::Method;
use serde_json::{Value, json};

use super::super::BACKEND;
use crate::helpers::*;

/// u1 admin of 1, u2 member of 1, u3 admin of 2.
async fn fixture_with(options: proxydeck::app::ServiceOptions) -> (TestApp, String) {
    let app = TestApp::spawn_with(BACKEND, options, suite_store_options()).await;
    app.seed(vec![
        org(1),
        org(2),
        user("u1", &[1]),
        user("u2", &[1]),
        user("u3", &[2]),
    ])
    .await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let token = app.token("u1").await;
    (app, token)
}

async fn fixture() -> (TestApp, String) {
    fixture_with(test_options()).await
}

async fn invite(app: &TestApp, token: &str, email: &str, role: &str) -> (u16, Value) {
    let body = json!({"organization_id": org_id(1), "email": email, "role": role});
    let (status, body, _) = send(
        app,
        Method::POST,
        "/v1/invitations",
        token,
        &[],
        Some(&body),
    )
    .await;
    (status, body)
}

/// POST /v1/invitations/accept, with a token or without.
async fn accept(app: &TestApp, token: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = app
        .client
        .post(app.url("/v1/invitations/accept"))
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("answered");
    let (status, body) = json_of(response).await;
    if !status.is_success() {
        assert_error_shape(&body);
    }
    (status.as_u16(), body)
}

const NOT_ACCEPTABLE: &str = "this invitation cannot be accepted: it may have been revoked, used \
    or expired, or it was sent to another email address; ask for a new one";

#[tokio::test]
async fn an_admin_invites_and_a_new_user_accepts_with_the_link() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (status, created) = invite(&app, &token, "New.Person@Example.com", "editor").await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["object"], "invitation");
    assert_eq!(created["organization_id"], org_id(1));
    assert_eq!(created["email"], "New.Person@Example.com");
    assert_eq!(created["role"], "editor");
    assert_eq!(created["status"], "pending");
    assert_eq!(created["delivery"], "link");
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("pxi_") && secret.len() == 42, "{secret}");
    let url = created["accept_url"].as_str().unwrap();
    assert_eq!(
        url,
        format!(
            "http://{}/console/#/accept?invitation={secret}",
            app.address
        )
    );
    let id = created["id"].as_str().unwrap().to_owned();
    // Listed and read back: never the secret.
    let (status, listed) = app.get_json("/v1/invitations", &token).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(ids(&listed), [id.as_str()]);
    assert!(!listed.to_string().contains(&secret));
    let (status, got, tag) = send(
        &app,
        Method::GET,
        &format!("/v1/invitations/{id}"),
        &token,
        &[],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(tag.is_some());
    assert!(
        got.get("secret").is_none() && got.get("accept_url").is_none(),
        "{got}"
    );
    assert_eq!(got["expires_at"], created["expires_at"]);

    // Accepted without Authorization, the email in another case: a new
    // user, its first token, its role.
    let (status, accepted) = accept(
        &app,
        None,
        json!({"secret": secret, "email": "new.person@example.com", "name": "New Person"}),
    )
    .await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["object"], "invitation_acceptance");
    assert_eq!(accepted["organization_id"], org_id(1));
    assert_eq!(accepted["role"], "editor");
    assert_eq!(accepted["user"]["name"], "New Person");
    assert_eq!(accepted["user"]["roles"][org_id(1)], "editor");
    assert_eq!(accepted["api_token"]["name"], "console");
    let new_token = accepted["api_token"]["token"].as_str().unwrap();
    assert!(new_token.starts_with("pxd_") && !new_token.contains('*'));
    // The token signs in at once, and the organization is the user's.
    let (status, me) = app.get_json("/v1/users/me", new_token).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["roles"][org_id(1)], "editor");
    let (status, projects) = app
        .get_json(
            &format!("/v1/projects?organization_id={}", org_id(1)),
            new_token,
        )
        .await;
    assert_eq!(status, 200, "{projects}");
    // Used: it leaves the list, and a second acceptance is the one 404.
    let (_, listed) = app.get_json("/v1/invitations", &token).await;
    assert!(ids(&listed).is_empty(), "{listed}");
    let (status, again) = accept(
        &app,
        None,
        json!({"secret": secret, "email": "new.person@example.com"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(again["error"]["message"], NOT_ACCEPTABLE);
}

#[tokio::test]
async fn an_existing_user_accepts_signed_in_and_not_without() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    // u3 (admin of 2) is invited to 1 as a member.
    let (_, created) = invite(&app, &token, "U3@example.com", "member").await;
    let secret = created["secret"].as_str().unwrap().to_owned();
    let body = json!({"secret": secret, "email": "u3@example.com"});
    let (status, refused) = accept(&app, None, body.clone()).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "an account with this email exists: sign in and accept the invitation again"
    );
    // Another signed-in user with the right secret: the one 404.
    let u2 = app.token("u2").await;
    let (status, other) = accept(&app, Some(&u2), body.clone()).await;
    assert_eq!(status, 404, "{other}");
    assert_eq!(other["error"]["message"], NOT_ACCEPTABLE);
    // u3 itself: the membership, no token.
    let u3 = app.token("u3").await;
    let (status, accepted) = accept(&app, Some(&u3), body.clone()).await;
    assert_eq!(status, 200, "{accepted}");
    assert!(accepted.get("api_token").is_none());
    assert_eq!(accepted["user"]["id"], "u3");
    assert_eq!(accepted["user"]["roles"][org_id(1)], "member");
    assert_eq!(accepted["user"]["roles"][org_id(2)], "admin");
    // Its token reads organization 1 at once (its cache was forgotten).
    let (status, _) = app
        .get_json(&format!("/v1/organizations/{}", org_id(1)), &u3)
        .await;
    assert_eq!(status, 200);
    // The summary authentication reads holds it: a fresh token too.
    let fresh = app.token("u3").await;
    let (status, _) = app
        .get_json(
            &format!("/v1/projects?organization_id={}", org_id(1)),
            &fresh,
        )
        .await;
    assert_eq!(status, 200);
    // Invited again as what it is already: accepted, nothing changes.
    let (_, again) = invite(&app, &token, "u3@example.com", "member").await;
    let body = json!({"secret": again["secret"], "email": "u3@example.com"});
    let (status, accepted) = accept(&app, Some(&u3), body).await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["user"]["roles"][org_id(1)], "member");
}

#[tokio::test]
async fn only_admins_manage_invitations_and_strangers_learn_nothing() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created) = invite(&app, &token, "a@example.com", "member").await;
    let id = created["id"].as_str().unwrap().to_owned();
    let member = app.token("u2").await;
    let stranger = app.token("u3").await;
    // A member: 403 on every operation.
    let (status, _) = invite(&app, &member, "b@example.com", "member").await;
    assert_eq!(status, 403);
    let path = format!("/v1/invitations/{id}");
    for method in [Method::GET, Method::DELETE] {
        let (status, _, _) = send(&app, method.clone(), &path, &member, &[], None).await;
        assert_eq!(status, 403, "{method}");
        let (status, body, _) = send(&app, method.clone(), &path, &stranger, &[], None).await;
        assert_eq!(status, 404, "{method}: {body}");
        let (status, unknown, _) = send(
            &app,
            method.clone(),
            "/v1/invitations/nope",
            &stranger,
            &[],
            None,
        )
        .await;
        assert_eq!(status, 404);
        assert_eq!(unknown["error"]["message"], body["error"]["message"]);
    }
    let (status, _) = app
        .get_json(
            &format!("/v1/invitations?organization_id={}", org_id(1)),
            &member,
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = app
        .get_json(
            &format!("/v1/invitations?organization_id={}", org_id(1)),
            &stranger,
        )
        .await;
    assert_eq!(status, 404);
    // Without organization_id: only where the caller is admin.
    let (_, listed) = app.get_json("/v1/invitations", &member).await;
    assert!(ids(&listed).is_empty());
    let (_, listed) = app.get_json("/v1/invitations", &stranger).await;
    assert!(ids(&listed).is_empty());
    // A stranger's invitation to someone else's organization: 404.
    let body = json!({"organization_id": org_id(1), "email": "c@example.com", "role": "admin"});
    let (status, _, _) = send(
        &app,
        Method::POST,
        "/v1/invitations",
        &stranger,
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(status, 404);
    // Deleted: gone from the list, cannot be accepted.
    let (status, deleted, _) = send(&app, Method::DELETE, &path, &token, &[], None).await;
    assert_eq!(status, 200);
    assert_eq!(
        deleted,
        json!({"object": "invitation", "id": id, "deleted": true})
    );
    let (status, _, _) = send(&app, Method::GET, &path, &token, &[], None).await;
    assert_eq!(status, 404);
    let (status, gone) = accept(
        &app,
        None,
        json!({"secret": created["secret"], "email": "a@example.com"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(gone["error"]["message"], NOT_ACCEPTABLE);
}

#[tokio::test]
async fn an_organization_invites_at_most_its_hourly_bound_deleted_and_accepted_ones_counted() {
    require!(BACKEND);
    let mut options = test_options();
    options.invitations.per_organization_per_hour = 2;
    let (app, token) = fixture_with(options).await;
    let (status, first) = invite(&app, &token, "a@example.com", "member").await;
    assert_eq!(status, 200);
    let (status, _) = invite(&app, &token, "b@example.com", "member").await;
    assert_eq!(status, 200);
    // Deleting one frees no slot.
    let path = format!("/v1/invitations/{}", first["id"].as_str().unwrap());
    assert_eq!(
        send(&app, Method::DELETE, &path, &token, &[], None).await.0,
        200
    );
    let body = json!({"organization_id": org_id(1), "email": "c@example.com", "role": "member"});
    let response = app
        .client
        .post(app.url("/v1/invitations"))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((3500..=3600).contains(&retry), "{retry}");
    let (_, refused) = json_of(response).await;
    assert_eq!(refused["error"]["code"], "rate_limit");
    // Another organization has its own bound.
    let other = app.token("u3").await;
    let body = json!({"organization_id": org_id(2), "email": "c@example.com", "role": "member"});
    let (status, _, _) = send(
        &app,
        Method::POST,
        "/v1/invitations",
        &other,
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(status, 200);
    // Once the oldest of the hour leaves it, one more.
    app.data
        .execute("UPDATE invitations SET created_at = created_at - 3600000");
    let (status, _) = invite(&app, &token, "d@example.com", "member").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_replay_answers_the_invitation_without_its_secret() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let body = json!({"organization_id": org_id(1), "email": "a@example.com", "role": "member"});
    let key = [("Idempotency-Key", "invite-a")];
    let (status, first, _) = send(
        &app,
        Method::POST,
        "/v1/invitations",
        &token,
        &key,
        Some(&body),
    )
    .await;
    assert_eq!(status, 200);
    assert!(first.get("secret").is_some());
    let (status, again, _) = send(
        &app,
        Method::POST,
        "/v1/invitations",
        &token,
        &key,
        Some(&body),
    )
    .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["id"], first["id"]);
    for member in ["secret", "accept_url", "delivery"] {
        assert!(again.get(member).is_none(), "{member}: {again}");
    }
    let (_, listed) = app.get_json("/v1/invitations", &token).await;
    assert_eq!(ids(&listed).len(), 1);
    // The kept answer holds no secret.
    let secret = first["secret"].as_str().unwrap();
    let kept = app.data.count(&format!(
        "SELECT COUNT(*) FROM idempotency_keys WHERE answer LIKE '%{}%'",
        &secret[4..]
    ));
    assert_eq!(kept, 0);
    // A key holding an invitation's secret is refused, never kept.
    let leaked = [("Idempotency-Key", secret)];
    let (status, refused, _) = send(
        &app,
        Method::POST,
        "/v1/invitations",
        &token,
        &leaked,
        Some(&body),
    )
    .await;
    assert_eq!(status, 400);
    assert!(!refused.to_string().contains(&secret[4..]), "{refused}");
}

#[tokio::test]
async fn an_expired_invitation_is_listed_as_expired_and_cannot_be_accepted() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created) = invite(&app, &token, "late@example.com", "member").await;
    let id = created["id"].as_str().unwrap();
    app.data.execute(&format!(
        "UPDATE invitations SET expires_at = created_at WHERE id = '{id}'"
    ));
    let (_, got, _) = send(
        &app,
        Method::GET,
        &format!("/v1/invitations/{id}"),
        &token,
        &[],
        None,
    )
    .await;
    assert_eq!(got["status"], "expired");
    let (_, listed) = app.get_json("/v1/invitations", &token).await;
    assert_eq!(listed["data"][0]["status"], "expired");
    let (status, refused) = accept(
        &app,
        None,
        json!({"secret": created["secret"], "email": "late@example.com"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(refused["error"]["message"], NOT_ACCEPTABLE);
    // A mistyped secret and an unknown one: the same answer.
    let secret = created["secret"].as_str().unwrap();
    let typo = format!("{}x", &secret[..secret.len() - 1]);
    for wrong in [typo, proxydeck::domain::teams::new_secret()] {
        let (status, body) = accept(
            &app,
            None,
            json!({"secret": wrong, "email": "late@example.com"}),
        )
        .await;
        assert_eq!(status, 404);
        assert_eq!(body["error"]["message"], NOT_ACCEPTABLE);
    }
}

#[tokio::test]
async fn the_audit_holds_neither_the_email_nor_the_secret() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, created) = invite(&app, &token, "audited@example.com", "member").await;
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, accepted) = accept(
        &app,
        None,
        json!({"secret": created["secret"], "email": "audited@example.com"}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, second) = invite(&app, &token, "gone@example.com", "member").await;
    let second_id = second["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/invitations/{second_id}");
    assert_eq!(
        send(&app, Method::DELETE, &path, &token, &[], None).await.0,
        200
    );
    let records = audit_of(&app, Some(&id)).await;
    let operations: Vec<&str> = records.iter().map(|r| r.operation.as_str()).collect();
    assert_eq!(
        operations,
        ["acceptInvitation", "createInvitation"],
        "{records:?}"
    );
    assert_eq!(records[0].user_id, accepted["user"]["id"].as_str().unwrap());
    let deleted = audit_of(&app, Some(&second_id)).await;
    assert_eq!(deleted[0].operation, "deleteInvitation");
    let everything = format!("{records:?}{deleted:?}");
    let secret = created["secret"].as_str().unwrap();
    for leak in ["audited@", "gone@", &secret[4..]] {
        assert!(!everything.contains(leak), "{leak} in {everything}");
    }
    assert!(records.iter().all(|r| r.object == "invitation"));
}

#[tokio::test]
async fn two_acceptances_of_one_secret_at_once_make_one_member() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    for round in 0..5 {
        let email = format!("racer{round}@example.com");
        let (_, created) = invite(&app, &token, &email, "editor").await;
        let body = json!({"secret": created["secret"], "email": email});
        let (a, b) = tokio::join!(accept(&app, None, body.clone()), accept(&app, None, body));
        let mut statuses = [a.0, b.0];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 404], "{a:?} {b:?}");
        let users = app.data.count(&format!(
            "SELECT COUNT(*) FROM users WHERE email = '{email}'"
        ));
        assert_eq!(users, 1);
        let members = app.data.count(&format!(
            "SELECT COUNT(*) FROM memberships m JOIN users u ON u.id = m.user_id
              WHERE u.email = '{email}'"
        ));
        assert_eq!(members, 1);
    }
}

/// Two invitations of one new address (to two organizations), accepted
/// at once without a token: one user, the other acceptance told that
/// the account exists now.
#[tokio::test]
async fn two_invitations_of_one_new_address_accepted_at_once_make_one_user() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let u3 = app.token("u3").await;
    for round in 0..5 {
        let email = format!("twice{round}@example.com");
        let (_, first) = invite(&app, &token, &email, "editor").await;
        let other = json!({"organization_id": org_id(2), "email": email, "role": "member"});
        let (status, second, _) = send(
            &app,
            Method::POST,
            "/v1/invitations",
            &u3,
            &[],
            Some(&other),
        )
        .await;
        assert_eq!(status, 200, "{second}");
        let (a, b) = tokio::join!(
            accept(
                &app,
                None,
                json!({"secret": first["secret"], "email": email})
            ),
            accept(
                &app,
                None,
                json!({"secret": second["secret"], "email": email})
            )
        );
        let mut statuses = [a.0, b.0];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 409], "{a:?} {b:?}");
        let users = app.data.count(&format!(
            "SELECT COUNT(*) FROM users WHERE email = '{email}'"
        ));
        assert_eq!(users, 1);
    }
}

#[tokio::test]
async fn the_generated_client_creates_lists_reads_and_deletes_invitations() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let client = generated_client(&app, &token);
    let created = client
        .create_invitation()
        .body_map(|b| {
            b.organization_id(org_id(1))
                .email("client@example.com".to_owned())
                .role(edgee_api_client::types::InvitationCreateInputRole::Editor)
        })
        .send()
        .await
        .expect("createInvitation")
        .into_inner();
    let id = created.id.clone().expect("an id");
    assert_eq!(created.email.as_deref(), Some("client@example.com"));
    let listed = client
        .list_invitations()
        .organization_id(org_id(1))
        .send()
        .await
        .expect("listInvitations")
        .into_inner();
    assert_eq!(listed.data.len(), 1);
    let got = client
        .get_invitation()
        .id(id.clone())
        .send()
        .await
        .expect("getInvitation")
        .into_inner();
    assert_eq!(got.id.as_deref(), Some(id.as_str()));
    let deleted = client
        .delete_invitation()
        .id(id.clone())
        .send()
        .await
        .expect("deleteInvitation")
        .into_inner();
    assert_eq!(deleted.deleted, Some(true));
}

/// docs/security.md's callers on the teams' writes: a revoked token is
/// refused (401) on each, before anything about the target is told; an
/// invitation's secret sent by mistake (a body member named with it, an
/// `Idempotency-Key`, a path id) is neither repeated nor kept.
#[tokio::test]
async fn a_revoked_token_and_a_secret_sent_by_mistake_are_refused_as_security_says() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let (_, made) = invite(&app, &token, "someone@example.com", "member").await;
    let secret = made["secret"].as_str().unwrap().to_owned();
    let random = &secret["pxi_".len()..];

    // Sent by mistake: a member named with it, refused with its name redacted.
    let body = json!({"name": "Acme", "slug": "acme", secret.as_str(): 1});
    let (status, error, _) = send(
        &app,
        Method::POST,
        "/v1/organizations",
        &token,
        &[],
        Some(&body),
    )
    .await;
    assert_eq!(status, 400, "{error}");
    assert!(error.to_string().contains("pxi_…(redacted)"), "{error}");
    let mut answers = vec![error];
    // As an Idempotency-Key on both creates: refused by name, not kept.
    let key = [("Idempotency-Key", secret.as_str())];
    for (path, body) in [
        ("/v1/organizations", json!({"name": "Acme", "slug": "acme"})),
        (
            "/v1/invitations",
            json!({"organization_id": org_id(1), "email": "x@example.com", "role": "member"}),
        ),
    ] {
        let (status, error, _) = send(&app, Method::POST, path, &token, &key, Some(&body)).await;
        assert_eq!(status, 400, "{path}: {error}");
        assert_eq!(error_param(&error), "Idempotency-Key", "{error}");
        answers.push(error);
    }
    // In a path id: the one 404.
    for method in [Method::GET, Method::DELETE] {
        let (status, error, _) = send(
            &app,
            method,
            &format!("/v1/invitations/{secret}"),
            &token,
            &[],
            None,
        )
        .await;
        assert_eq!(status, 404, "{error}");
        answers.push(error);
    }
    for answer in &answers {
        assert!(!answer.to_string().contains(random), "{answer}");
    }
    assert_eq!(
        app.data.count("SELECT COUNT(*) FROM idempotency_keys"),
        0,
        "no key kept"
    );

    // A revoked token: 401 on every teams write, whatever the target.
    let (revoked, revoked_secret) = app.token_with("u1", "leaked", None).await;
    let path = format!("/v1/api_tokens/{}", revoked.id);
    let (status, _, _) = send(&app, Method::DELETE, &path, &token, &[], None).await;
    assert_eq!(status, 200);
    let organization = format!("/v1/organizations/{}", org_id(1));
    for (method, path, body) in [
        (
            Method::POST,
            "/v1/organizations".to_owned(),
            Some(json!({"name": "B", "slug": "b"})),
        ),
        (
            Method::POST,
            organization.clone(),
            Some(json!({"id": org_id(1), "name": "B"})),
        ),
        (Method::DELETE, format!("{organization}/users/u2"), None),
        (
            Method::POST,
            format!("{organization}/users/u2"),
            Some(json!({"role": "editor"})),
        ),
        (
            Method::POST,
            "/v1/invitations".to_owned(),
            Some(json!({"organization_id": org_id(1), "email": "y@example.com", "role": "member"})),
        ),
        (
            Method::DELETE,
            format!("/v1/invitations/{}", made["id"].as_str().unwrap()),
            None,
        ),
        (
            Method::POST,
            "/v1/users/u1".to_owned(),
            Some(json!({"terms_version": "2"})),
        ),
        (
            Method::POST,
            "/v1/invitations/accept".to_owned(),
            Some(json!({"secret": secret, "email": "someone@example.com"})),
        ),
    ] {
        let (status, error, _) = send(
            &app,
            method.clone(),
            &path,
            &revoked_secret,
            &[],
            body.as_ref(),
        )
        .await;
        assert_eq!(status, 401, "{method} {path}: {error}");
        assert_eq!(error["error"]["type"], "authentication_error", "{error}");
    }
    // Nothing changed: u2 is still a member, the invitation still pending.
    let (_, members) = app
        .get_json(&format!("{organization}/users?limit=100"), &token)
        .await;
    assert!(ids(&members).contains(&"u2".to_owned()), "{members}");
    let (status, _) = app
        .get_json(
            &format!("/v1/invitations/{}", made["id"].as_str().unwrap()),
            &token,
        )
        .await;
    assert_eq!(status, 200);
}
