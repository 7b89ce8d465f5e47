//! Who may write, decided afresh by every write: an `Idempotency-Key` is
//! kept per target and replays only to a caller who may still make the
//! request; a revoked token writes nothing, on any instance, whatever the
//! token cache holds; a write on a project the caller cannot see costs
//! what one on an unknown id costs (issue 33, `docs/security.md`).

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::binary::Sandbox;
use crate::helpers::*;

/// u1 is an admin of organizations 1 and 2 (projects a1, a2 in 1, b1 in
/// 2); u3 is in organization 3 only, with project c1.
async fn fixture() -> (TestApp, String) {
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        org(1),
        org(2),
        org(3),
        user("u1", &[1, 2]),
        user("u3", &[3]),
        project("a1", 1, 0),
        project("a2", 1, 1),
        project("b1", 2, 2),
        project("c1", 3, 3),
        settings("a1", 1, true),
        settings("a2", 1, true),
        settings("b1", 1, true),
    ])
    .await;
    let token = app.token("u1").await;
    (app, token)
}

fn revision(description: &str) -> Value {
    json!({"description": description,
           "backends": [{"name": "origin", "address": "origin.example:443", "default": true}],
           "routes": [{"path": "/", "backend_name": "origin", "rank": 1}]})
}

async fn create_revision(
    app: &TestApp,
    token: &str,
    project: &str,
    key: &str,
    body: &Value,
) -> (u16, Value, Option<String>) {
    let path = format!("/v1/projects/{project}/proxy-settings");
    let headers = [("idempotency-key", key)];
    send(app, Method::POST, &path, token, &headers, Some(body)).await
}

/// The revisions of a project as its admin sees them, newest first.
async fn revisions(app: &TestApp, token: &str, project: &str) -> Vec<(u64, String)> {
    let (status, listing) = app
        .get_json(&format!("/v1/projects/{project}/proxy-settings"), token)
        .await;
    assert_eq!(status, 200, "{listing}");
    listing["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let description = r["description"].as_str().unwrap_or_default().to_owned();
            (r["revision"].as_u64().unwrap(), description)
        })
        .collect()
}

fn set_role(app: &TestApp, user: &str, org: u32, role: &str) {
    app.data.execute(&format!(
        "UPDATE memberships SET role = '{role}'
          WHERE user_id = '{user}' AND organization_id = '{}'",
        org_id(org)
    ));
}

/// The docs' own example: one key for a deploy of the same revision to
/// every project. Each project gets its revision; a retry on each replays
/// that project's; the same key on a project of another organization is
/// a request of its own there too.
#[tokio::test]
async fn one_idempotency_key_makes_a_revision_on_each_project() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let body = revision("deploy");
    let key = "deploy-2026-05-01";
    let mut first = Vec::new();
    for project in ["a1", "a2", "b1"] {
        let (status, created, _) = create_revision(&app, &token, project, key, &body).await;
        assert_eq!((status, created["revision"].as_u64()), (200, Some(2)));
        first.push(created);
    }
    for (project, created) in ["a1", "a2", "b1"].iter().zip(&first) {
        let (status, again, tag) = create_revision(&app, &token, project, key, &body).await;
        assert_eq!(
            (status, &again, tag.as_deref()),
            (200, created, Some("\"v1\""))
        );
        assert_eq!(
            revisions(&app, &token, project).await,
            [(2, "deploy".to_owned()), (1, "r1".to_owned())],
            "{project}"
        );
    }
    // Another body under the key is still refused, on the project it was
    // used on.
    let (status, error, _) = create_revision(&app, &token, "a1", key, &revision("x")).await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (409, Some("idempotency_key_reused"))
    );
}

/// A user moved to another organization gets nothing of the old one's
/// back from a key: on its new organization's project the key creates.
#[tokio::test]
async fn a_key_used_in_an_old_organization_creates_in_the_new_one() {
    require!(BACKEND);
    let (app, _) = fixture().await;
    let token = app.token("u3").await;
    set_role(&app, "u3", 3, "admin");
    let body = revision("moved");
    let (status, old, _) = create_revision(&app, &token, "c1", "k-1", &body).await;
    assert_eq!(status, 200, "{old}");
    // u3 leaves organization 3 for organization 1.
    app.data.execute(&format!(
        "UPDATE memberships SET organization_id = '{}' WHERE user_id = 'u3'",
        org_id(1)
    ));
    let (status, new, _) = create_revision(&app, &token, "a1", "k-1", &body).await;
    assert_eq!(status, 200, "{new}");
    assert_eq!(new["revision"], 2);
    let admin = app.token("u1").await;
    assert_eq!(revisions(&app, &admin, "a1").await[0], (2, "moved".into()));
    // The old organization's project is no longer its to replay.
    let (status, refused, _) = create_revision(&app, &token, "c1", "k-1", &body).await;
    assert_eq!(status, 404, "{refused}");
}

/// A replay asks for the caller's rights first: made a member, the
/// creator of a project or a revision gets 403; out of the organization,
/// 404; never the kept answer.
#[tokio::test]
async fn a_replay_answers_the_refusal_a_new_request_would_get() {
    require!(BACKEND);
    let (app, token) = fixture().await;
    let project = json!({"organization_id": org_id(1), "slug": "kept"});
    let create_project = async || {
        let headers = [("idempotency-key", "p-1")];
        send(
            &app,
            Method::POST,
            "/v1/projects",
            &token,
            &headers,
            Some(&project),
        )
        .await
    };
    let (status, created, _) = create_project().await;
    assert_eq!(status, 200, "{created}");
    let body = revision("kept");
    let (status, _, _) = create_revision(&app, &token, "a1", "r-1", &body).await;
    assert_eq!(status, 200);
    // Both replay while the caller may still make them.
    assert_eq!(create_project().await.1, created);
    assert_eq!(
        create_revision(&app, &token, "a1", "r-1", &body).await.0,
        200
    );
    set_role(&app, "u1", 1, "member");
    let (status, refused, _) = create_project().await;
    assert_eq!(
        (status, refused["error"]["type"].as_str()),
        (403, Some("forbidden_error")),
        "{refused}"
    );
    let (status, refused, _) = create_revision(&app, &token, "a1", "r-1", &body).await;
    assert_eq!(status, 403, "{refused}");
    app.data.execute(&format!(
        "DELETE FROM memberships WHERE user_id = 'u1' AND organization_id = '{}'",
        org_id(1)
    ));
    let (status, refused, _) = create_project().await;
    assert_eq!(status, 404, "{refused}");
    let (status, refused, _) = create_revision(&app, &token, "a1", "r-1", &body).await;
    assert_eq!(status, 404, "{refused}");
}

/// Every write of a token revoked a moment ago is refused at once, on the
/// instance whose cache still trusts it and on another: no write, no heir,
/// no audit record. Reads keep the documented cache delay.
#[tokio::test]
async fn a_revoked_token_writes_nothing_on_any_instance() {
    require!(BACKEND);
    let (first, token) = fixture().await;
    let second = first.another_instance().await;
    for app in [&first, &second] {
        // Each instance has authenticated the token: its cache trusts it.
        assert_eq!(app.get_json("/v1/api_tokens", &token).await.0, 200);
    }
    let (_, me) = first.get_json("/v1/users/me", &token).await;
    let tokens = first
        .store
        .run(UserTokens(String::from("u1")))
        .await
        .unwrap();
    let token_id = tokens.last().expect("a token of u1").token.id.clone();
    // An edge's report, for the removal below.
    let applied = json!({"name": "edge-1", "revision": 1, "status": "applied"});
    let (status, _, _) = send(
        &first,
        Method::POST,
        "/v1/projects/a1/edges",
        &token,
        &[],
        Some(&applied),
    )
    .await;
    assert_eq!(status, 200);
    let audited = audit_of(&first, None).await.len();
    // As `admin token revoke` does it: in the store, behind both caches.
    first
        .store
        .run(RevokeToken(String::from(&token_id)))
        .await
        .unwrap();
    let project = json!({"organization_id": org_id(1), "slug": "heir"});
    let failed = json!({"name": "edge-1", "revision": 1, "status": "failed", "error": "x"});
    let writes: [(Method, String, Option<Value>); 9] = [
        (
            Method::POST,
            "/v1/api_tokens".into(),
            Some(json!({"name": "heir"})),
        ),
        (Method::DELETE, format!("/v1/api_tokens/{token_id}"), None),
        (Method::POST, "/v1/projects".into(), Some(project)),
        (
            Method::POST,
            "/v1/projects/a1".into(),
            Some(json!({"description": "changed"})),
        ),
        (
            Method::POST,
            "/v1/projects/a1/proxy-settings".into(),
            Some(revision("heir")),
        ),
        (
            Method::POST,
            "/v1/projects/a1/proxy-settings/1".into(),
            Some(json!({"description": "changed"})),
        ),
        (Method::DELETE, "/v1/projects/a2".into(), None),
        // An edge's report too (issue 44: it was written for the token
        // cache's lifetime), and its removal.
        (Method::POST, "/v1/projects/a1/edges".into(), Some(failed)),
        (Method::DELETE, "/v1/projects/a1/edges/edge-1".into(), None),
    ];
    for app in [&first, &second] {
        for (method, path, body) in &writes {
            let (status, refused, _) =
                send(app, method.clone(), path, &token, &[], body.as_ref()).await;
            assert_eq!(
                (status, refused["error"]["message"].as_str()),
                (401, Some("the API token has been revoked")),
                "{method} {path}: {refused}"
            );
        }
        // A read is still served from the cache, as documented (when the
        // suite runs with it).
        let expected = if suite_caches().token {
            (reqwest::StatusCode::OK, me.clone())
        } else {
            let refused = app.get_json("/v1/users/me", &token).await;
            assert_eq!(refused.0, 401);
            refused
        };
        assert_eq!(app.get_json("/v1/users/me", &token).await, expected);
    }
    assert_eq!(
        audit_of(&first, None).await.len(),
        audited,
        "nothing recorded"
    );
    let tokens_now = first
        .store
        .run(UserTokens(String::from("u1")))
        .await
        .unwrap();
    assert_eq!(tokens_now.len(), tokens.len(), "no heir was made");
    let admin = first.token("u1").await;
    assert_eq!(revisions(&first, &admin, "a1").await, [(1, "r1".into())]);
    assert_eq!(first.get_json("/v1/projects/a2", &admin).await.0, 200);
    let (_, edges) = first.get_json("/v1/projects/a1/edges", &admin).await;
    assert_eq!(edges["data"][0]["status"], "applied", "{edges}");
}

/// A write on a project of another organization costs what one on an id
/// that does not exist costs: the time of a 404 does not tell which.
/// Measured as the read side's test measures (`proxy_settings.rs`): the
/// real binary, interleaved requests, medians of per-round ratios. Before
/// the fix a write on an invisible project took its organization's lock
/// and read the caller's role first: 1.3-1.5x on PostgreSQL.
#[tokio::test]
async fn writes_on_invisible_and_unknown_projects_take_the_same_time() {
    require!(BACKEND);
    let sandbox = Sandbox::on(BACKEND);
    let token = sandbox.directory(1, "u1");
    let mut lines = vec![org(2), project("mine", 1, 0), project("hidden", 2, 0)];
    lines.extend((1..=3).map(|revision| settings("hidden", revision, revision == 3)));
    sandbox.import(&lines);
    let server = sandbox.serve(&["--rate-limit", "off"]);
    let writes: [(Method, &str, Option<&str>); 3] = [
        (Method::DELETE, "/v1/projects/{}", None),
        (
            Method::POST,
            "/v1/projects/{}",
            Some(r#"{"description": "changed"}"#),
        ),
        (
            Method::POST,
            "/v1/projects/{}/proxy-settings/1",
            Some(r#"{"is_active": true}"#),
        ),
    ];
    let kinds = ["hidden", "nothing-here"];
    const ROUNDS: usize = 300;
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); writes.len()];
    for round in 0..ROUNDS + 50 {
        for (write, (method, template, body)) in writes.iter().enumerate() {
            let mut took = [0f64; 2];
            for turn in 0..kinds.len() {
                let kind = (round + turn) % kinds.len();
                let path = template.replace("{}", kinds[kind]);
                let mut request = server
                    .client
                    .request(method.clone(), server.url(&path))
                    .bearer_auth(&token);
                if let Some(body) = body {
                    request = request
                        .header("content-type", "application/json")
                        .body(*body);
                }
                let started = std::time::Instant::now();
                let response = request.send().await.expect("answered");
                let status = response.status();
                let _ = response.bytes().await;
                took[kind] = started.elapsed().as_secs_f64();
                assert_eq!(status, 404, "{method} {path}");
            }
            if round >= 50 {
                // The first 50 rounds warm up.
                ratios[write].push(took[0] / took[1]);
            }
        }
    }
    let medians = medians(ratios);
    assert!(
        medians.iter().all(|m| (1.0 / 1.10..=1.10).contains(m)),
        "median time of a write on an invisible project against an unknown id \
         (delete, update, activate): {medians:?}"
    );
}
