//! Teams (docs/teams.md): organizations made, renamed and deleted over the
//! API (`organizations.rs`), their members listed, changed and removed
//! (`members.rs`), users read and changed (`users.rs`), invitations made, listed, revoked
//! and accepted (`invitations.rs`), on both stores,
//! over real HTTP.

mod invitation_delivery;
mod invitations;
mod members;
mod organizations;
mod users;

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

/// Organization 1 with an admin `a1`, an editor `e1` and a member `m1`;
/// organization 2 with `s2`, a stranger to organization 1.
async fn team() -> TestApp {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        org(1),
        org(2),
        json!({"object": "user", "id": "a1", "email": "a1@example.com", "name": "Ada Admin",
               "roles": {org_id(1): "admin"}}),
        json!({"object": "user", "id": "e1", "email": "e1@example.com",
               "roles": {org_id(1): "editor"}}),
        json!({"object": "user", "id": "m1", "email": "m1@example.com",
               "roles": {org_id(1): "member"}}),
        json!({"object": "user", "id": "s2", "email": "s2@example.com",
               "roles": {org_id(2): "admin"}}),
    ])
    .await;
    app
}

async fn post(app: &TestApp, path: &str, token: &str, body: Value) -> (u16, Value, Option<String>) {
    send(app, Method::POST, path, token, &[], Some(&body)).await
}

async fn delete(app: &TestApp, path: &str, token: &str) -> (u16, Value, Option<String>) {
    send(app, Method::DELETE, path, token, &[], None).await
}

fn members_path(org: &str) -> String {
    format!("/v1/organizations/{org}/users")
}

fn member_path(org: &str, user: &str) -> String {
    format!("/v1/organizations/{org}/users/{user}")
}

/// Creates an organization as `token`'s user; answers it.
async fn create_org(app: &TestApp, token: &str, name: &str, slug: &str) -> Value {
    let (status, body, _) = post(
        app,
        "/v1/organizations",
        token,
        json!({"name": name, "slug": slug}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}
