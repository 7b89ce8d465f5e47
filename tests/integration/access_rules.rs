//! One rule for who may do what (`domain::access::decide`), checked over
//! real HTTP against every role and every action: each answer here is the
//! one the rule gives, computed from the rule itself, and each listing
//! holds exactly the items the rule lets the caller read (the listings
//! filter in SQL: this is what ties their filters to the rule).

use proxydeck::domain::access::{self, Action, Facts, Refusal, Standing};
use proxydeck::domain::directory::Role;
use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

/// The callers, by where they stand toward organization 1: an admin, an
/// editor and a member of it, and an admin of organization 2 only.
const CALLERS: [(&str, Option<Role>); 4] = [
    ("admin", Some(Role::Admin)),
    ("editor", Some(Role::Editor)),
    ("member", Some(Role::Member)),
    ("stranger", None),
];

/// What the rule answers, as an HTTP status.
fn expected(action: Action, standing: Standing) -> u16 {
    match access::decide(action, Facts::live(standing)) {
        Ok(()) => 200,
        Err(Refusal::NotFound) => 404,
        Err(Refusal::Forbidden { .. }) => 403,
        Err(Refusal::Token(_)) => 401,
    }
}

fn standing_in_org_1(role: Option<Role>) -> Standing {
    role.map_or(Standing::Stranger, |role| Standing::Member(Some(role)))
}

/// A request of an action on a target, and the body it sends.
struct Request {
    action: Action,
    method: Method,
    path: String,
    body: Option<Value>,
}

fn request(action: Action, method: Method, path: &str, body: Option<Value>) -> Request {
    Request {
        action,
        method,
        path: path.to_owned(),
        body,
    }
}

/// Organizations 1 and 2, the four callers, projects in both (one to
/// delete per caller), revisions.
async fn fixture() -> TestApp {
    let app = TestApp::spawn(BACKEND).await;
    let mut lines = vec![
        org(1),
        org(2),
        user("admin", &[1]),
        user("editor", &[1]),
        user("member", &[1]),
        user("stranger", &[2]),
        // Removed by the admin, and a second admin, so that the first
        // may leave (docs/teams.md: an organization keeps an admin).
        user("spare", &[1]),
        user("admin2", &[1]),
        project("p1", 1, 0),
        project("p2", 2, 1),
        settings("p1", 1, true),
        settings("p2", 1, true),
    ];
    for (i, (caller, _)) in CALLERS.iter().enumerate() {
        lines.push(project(&format!("gone-{caller}"), 1, 10 + i as i64));
    }
    app.seed(lines).await;
    for (caller, role) in CALLERS {
        if let Some(role) = role {
            app.data.execute(&format!(
                "UPDATE memberships SET role = '{}' WHERE user_id = '{caller}'",
                role.as_str()
            ));
        }
    }
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'spare'");
    app
}

#[tokio::test]
async fn every_role_and_action_gets_what_the_rule_says() {
    require!(BACKEND);
    let app = fixture().await;
    let org1 = org_id(1);
    // Invitations of organization 1: one to read, one per caller to delete.
    let invited = invitations(&app, "admin", 1, 1 + CALLERS.len()).await;
    for (i, (caller, role)) in CALLERS.into_iter().enumerate() {
        let token = app.token(caller).await;
        let (own, _) = app.token_with(caller, "spare", None).await;
        // Another user's token: the admin's for everyone else, the
        // editor's for the admin.
        let other_user = if caller == "admin" { "editor" } else { "admin" };
        let (others, _) = app.token_with(other_user, "not yours", None).await;
        let in_org_1 = standing_in_org_1(role);
        // Another user of organization 1 (still in it: the admin leaves
        // it at the end of its turn), as the caller stands toward it:
        // sharing organization 1, or not at all.
        let other_member = if caller == "admin" {
            "editor"
        } else {
            "admin2"
        };
        let toward_other = in_org_1;
        let cases: Vec<(Request, Standing)> = vec![
            (
                request(
                    Action::ReadProjects,
                    Method::GET,
                    &format!("/v1/projects?organization_id={org1}"),
                    None,
                ),
                in_org_1,
            ),
            (
                request(Action::ReadProjects, Method::GET, "/v1/projects/p1", None),
                in_org_1,
            ),
            (
                request(
                    Action::ReadProjects,
                    Method::GET,
                    "/v1/projects/p1/proxy-settings",
                    None,
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ChangeProjects,
                    Method::POST,
                    "/v1/projects",
                    Some(json!({"organization_id": org1, "slug": format!("new-{caller}")})),
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ChangeProjects,
                    Method::POST,
                    "/v1/projects/p1",
                    Some(json!({"description": format!("by {caller}")})),
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ChangeProjects,
                    Method::DELETE,
                    &format!("/v1/projects/gone-{caller}"),
                    None,
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ChangeProjects,
                    Method::POST,
                    "/v1/projects/p1/proxy-settings",
                    Some(json!({"description": caller,
                        "backends": [{"name": "o", "address": "o.example:443", "default": true}],
                        "routes": [{"path": "/", "backend_name": "o", "rank": 1}]})),
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ChangeProjects,
                    Method::POST,
                    "/v1/projects/p1/proxy-settings/1",
                    Some(json!({"description": caller})),
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ActivateRevision,
                    Method::POST,
                    "/v1/projects/p1/proxy-settings/1",
                    Some(json!({"is_active": true})),
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ReadOrganization,
                    Method::GET,
                    &format!("/v1/organizations/{org1}"),
                    None,
                ),
                in_org_1,
            ),
            (
                request(Action::ReadOwn, Method::GET, "/v1/users/me", None),
                Standing::Owner,
            ),
            (
                request(
                    Action::ReadOwn,
                    Method::GET,
                    &format!("/v1/api_tokens/{}", own.id),
                    None,
                ),
                Standing::Owner,
            ),
            (
                request(
                    Action::ReadOwn,
                    Method::GET,
                    &format!("/v1/api_tokens/{}", others.id),
                    None,
                ),
                Standing::Stranger,
            ),
            (
                request(
                    Action::ChangeOwnTokens,
                    Method::POST,
                    "/v1/api_tokens",
                    Some(json!({"name": "made"})),
                ),
                Standing::Owner,
            ),
            (
                request(
                    Action::ChangeOwnTokens,
                    Method::DELETE,
                    &format!("/v1/api_tokens/{}", others.id),
                    None,
                ),
                Standing::Stranger,
            ),
            (
                request(
                    Action::ChangeOwnTokens,
                    Method::DELETE,
                    &format!("/v1/api_tokens/{}", own.id),
                    None,
                ),
                Standing::Owner,
            ),
            (
                request(
                    Action::ManageOrganization,
                    Method::POST,
                    "/v1/invitations",
                    Some(
                        json!({"organization_id": org1, "email": "x@example.com", "role": "member"}),
                    ),
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ManageOrganization,
                    Method::GET,
                    &format!("/v1/invitations?organization_id={org1}"),
                    None,
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ManageOrganization,
                    Method::GET,
                    &format!("/v1/invitations/{}", invited[0]),
                    None,
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ManageOrganization,
                    Method::DELETE,
                    &format!("/v1/invitations/{}", invited[1 + i]),
                    None,
                ),
                in_org_1,
            ),
            (
                request(
                    Action::CreateOrganization,
                    Method::POST,
                    "/v1/organizations",
                    Some(json!({"name": caller, "slug": format!("org-of-{caller}")})),
                ),
                Standing::Owner,
            ),
            (
                request(
                    Action::ReadMembers,
                    Method::GET,
                    &format!("/v1/organizations/{org1}/users"),
                    None,
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ManageOrganization,
                    Method::POST,
                    &format!("/v1/organizations/{org1}"),
                    Some(json!({"id": org1, "name": format!("by {caller}")})),
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ManageOrganization,
                    Method::POST,
                    &format!("/v1/organizations/{org1}/users/member"),
                    Some(json!({"role": "member"})),
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ManageOrganization,
                    Method::DELETE,
                    &format!("/v1/organizations/{org1}/users/spare"),
                    None,
                ),
                in_org_1,
            ),
            (
                request(
                    Action::ReadUser,
                    Method::GET,
                    &format!("/v1/users/{caller}"),
                    None,
                ),
                Standing::Owner,
            ),
            (
                request(
                    Action::ReadUser,
                    Method::GET,
                    &format!("/v1/users/{other_member}"),
                    None,
                ),
                toward_other,
            ),
            (
                request(
                    Action::ChangeOwnUser,
                    Method::POST,
                    &format!("/v1/users/{caller}"),
                    Some(json!({"terms_version": "1"})),
                ),
                Standing::Owner,
            ),
            (
                request(
                    Action::ChangeOwnUser,
                    Method::POST,
                    &format!("/v1/users/{other_member}"),
                    Some(json!({"terms_version": "1"})),
                ),
                toward_other,
            ),
            // Last: the caller is no member of organization 1 after it.
            (
                request(
                    Action::LeaveOrganization,
                    Method::DELETE,
                    &format!("/v1/organizations/{org1}/users/{caller}"),
                    None,
                ),
                in_org_1,
            ),
        ];
        for (request, standing) in cases {
            let want = expected(request.action, standing);
            let (status, body, _) = send(
                &app,
                request.method.clone(),
                &request.path,
                &token,
                &[],
                request.body.as_ref(),
            )
            .await;
            assert_eq!(
                status, want,
                "{caller} ({standing:?}) {:?}: {} {}: {body}",
                request.action, request.method, request.path
            );
        }
    }
}

/// `count` invitations to organization `org` made by `admin`: their ids.
async fn invitations(app: &TestApp, admin: &str, org: u32, count: usize) -> Vec<String> {
    let token = app.token(admin).await;
    let mut ids = Vec::new();
    for n in 0..count {
        let body = json!({"organization_id": org_id(org), "email": format!("i{n}@example.com"), "role": "member"});
        let (status, made, _) = send(
            app,
            Method::POST,
            "/v1/invitations",
            &token,
            &[],
            Some(&body),
        )
        .await;
        assert_eq!(status, 200, "{made}");
        ids.push(made["id"].as_str().unwrap().to_owned());
    }
    ids
}

/// The ids of a listing's one page (the fixture's lists fit in one).
async fn ids_of(app: &TestApp, path: &str, token: &str) -> Vec<String> {
    let (status, body) = app.get_json(path, token).await;
    assert_eq!(status, 200, "{path}: {body}");
    ids(&body)
}

/// The listings filter in SQL: each holds exactly what the rule lets its
/// caller read, of everything the store has.
#[tokio::test]
async fn every_listing_holds_what_the_rule_lets_its_caller_read() {
    require!(BACKEND);
    let app = fixture().await;
    let projects = [("p1", 1), ("p2", 2), ("gone-admin", 1)];
    let organizations = [org_id(1), org_id(2)];
    let invited = [
        (invitations(&app, "admin", 1, 1).await.remove(0), 1),
        (invitations(&app, "stranger", 2, 1).await.remove(0), 2),
    ];
    let mut tokens = Vec::new();
    for (caller, _) in CALLERS {
        tokens.push((caller, app.token_with(caller, "listed", None).await.0.id));
    }
    for (caller, role) in CALLERS {
        let token = app.token(caller).await;
        let stands_in = |org: u32| match org {
            1 => standing_in_org_1(role),
            _ if caller == "stranger" => Standing::Member(Some(Role::Admin)),
            _ => Standing::Stranger,
        };
        let listed = ids_of(&app, "/v1/projects?limit=100", &token).await;
        for (id, org) in projects {
            let readable = expected(Action::ReadProjects, stands_in(org)) == 200;
            assert_eq!(listed.contains(&id.to_owned()), readable, "{caller}: {id}");
        }
        let listed = ids_of(&app, "/v1/organizations?limit=100", &token).await;
        for (n, id) in organizations.iter().enumerate() {
            let readable = expected(Action::ReadOrganization, stands_in(n as u32 + 1)) == 200;
            assert_eq!(listed.contains(id), readable, "{caller}: {id}");
        }
        let members = format!("/v1/organizations/{}/users?limit=100", org_id(1));
        if expected(Action::ReadMembers, stands_in(1)) == 200 {
            let listed = ids_of(&app, &members, &token).await;
            for (member, _) in CALLERS.iter().filter(|(_, role)| role.is_some()) {
                assert!(listed.contains(&member.to_string()), "{caller}: {member}");
            }
            assert!(!listed.contains(&"stranger".to_owned()), "{caller}");
        } else {
            assert_eq!(app.get_json(&members, &token).await.0, 404, "{caller}");
        }
        let listed = ids_of(&app, "/v1/invitations?limit=100", &token).await;
        for (id, org) in &invited {
            let readable = expected(Action::ManageOrganization, stands_in(*org)) == 200;
            assert_eq!(
                listed.contains(id),
                readable,
                "{caller}: invitation of {org}"
            );
        }
        let listed = ids_of(&app, "/v1/api_tokens?limit=100", &token).await;
        for (owner, id) in &tokens {
            let standing = if *owner == caller {
                Standing::Owner
            } else {
                Standing::Stranger
            };
            let readable = expected(Action::ReadOwn, standing) == 200;
            assert_eq!(listed.contains(id), readable, "{caller}: token of {owner}");
        }
    }
}
