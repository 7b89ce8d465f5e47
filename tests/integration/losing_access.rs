//! Losing access takes effect (docs/teams.md, "Losing access"), across
//! two instances on one store: a member removed, demoted, or whose
//! organization is deleted through one instance has their writes refused
//! at once on the other (each write reads the role in its transaction),
//! and their reads and change-feed stream stop within the token cache's
//! delay.

use std::time::{Duration, Instant};

use proxydeck::app::ServiceOptions;
use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

/// The token cache's delay of both instances: short, so that the bound
/// checked below is one a person would notice.
const TTL: Duration = Duration::from_secs(1);

/// What "within the delay" allows on a loaded machine: the delay, the
/// stream's check a quarter of it later, and the scheduling of a shared
/// test machine.
const BOUND: Duration = Duration::from_secs(4);

fn options() -> ServiceOptions {
    let mut options = test_options();
    options.auth.cache_ttl = TTL;
    options
}

/// Two instances on one store; `admin` is admin of organizations 1 and 5,
/// `u2` editor in 1 and 5 and admin of 3; p1 (revision 1 active) is in 1,
/// p3 in 3, 5 has no project. Answers (first, second, admin's token, u2's token).
async fn fixture() -> (TestApp, TestApp, String, String) {
    let first = TestApp::spawn_with(BACKEND, options(), suite_store_options()).await;
    first
        .seed(vec![
            org(1),
            org(3),
            org(5),
            json!({"object": "user", "id": "admin", "email": "admin@example.com",
                   "roles": {org_id(1): "admin", org_id(5): "admin"}}),
            json!({"object": "user", "id": "u2", "email": "u2@example.com",
                   "roles": {org_id(1): "editor", org_id(3): "admin", org_id(5): "editor"}}),
            project("p1", 1, 0),
            project("p3", 3, 0),
            settings("p1", 1, true),
        ])
        .await;
    let second = first.another_instance_with(options()).await;
    let (admin, u2) = (first.token("admin").await, first.token("u2").await);
    (first, second, admin, u2)
}

async fn status(
    app: &TestApp,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> u16 {
    send(app, method, path, token, &[], body.as_ref()).await.0
}

fn describe_body(text: &str) -> Option<Value> {
    Some(json!({"description": text}))
}

fn report_body() -> Option<Value> {
    Some(json!({"name": "edge-1", "revision": 1, "status": "applied"}))
}

/// Waits until `read` answers `want` on `app`, and answers how long it took.
async fn until_status(app: &TestApp, token: &str, path: &str, want: u16) -> Duration {
    let started = Instant::now();
    loop {
        if app.get(path, token).await.status() == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < BOUND * 2,
            "{path} never answered {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_removed_on_one_instance_is_refused_writes_at_once_and_reads_soon_on_the_other() {
    require!(BACKEND);
    let (first, second, admin, u2) = fixture().await;
    // u2 is known to both instances' token caches, and follows.
    assert_eq!(first.get("/v1/projects/p1", &u2).await.status(), 200);
    assert_eq!(second.get("/v1/projects/p1", &u2).await.status(), 200);
    let start = head(&second, &u2).await;
    let mut stream = EventStream::open(&second, &format!("?after={start}"), &u2, None).await;

    let removal = format!("/v1/organizations/{}/users/u2", org_id(1));
    assert_eq!(
        status(&first, &admin, Method::DELETE, &removal, None).await,
        200
    );

    // Reads through the instance that removed it: at once (it forgot
    // u2's cached tokens).
    assert_eq!(first.get("/v1/projects/p1", &u2).await.status(), 404);
    // Writes: at once, whatever the second instance's cache holds.
    assert_eq!(
        status(
            &second,
            &u2,
            Method::POST,
            "/v1/projects/p1",
            describe_body("late")
        )
        .await,
        404
    );
    assert_eq!(
        status(
            &second,
            &u2,
            Method::POST,
            "/v1/projects/p1/edges",
            report_body()
        )
        .await,
        404
    );
    // Reads: within the delay.
    let took = until_status(&second, &u2, "/v1/projects/p1", 404).await;
    assert!(took <= BOUND, "reads stopped after {took:?}");
    let (_, listed) = second.get_json("/v1/projects", &u2).await;
    assert_eq!(ids(&listed), ["p3"]);

    // The stream: a change of organization 1 followed by one of 3 (which
    // u2 still belongs to), until the stream has its organizations anew
    // and delivers the second alone; then never the first again.
    let started = Instant::now();
    let mut rounds_without = 0;
    for round in 0.. {
        describe(&first, &admin, "p1", &format!("round {round}")).await;
        describe(&first, &u2, "p3", &format!("round {round}")).await;
        let mut seen = Vec::new();
        loop {
            let change = stream.next_change().await.json();
            let project = change["project_id"].as_str().unwrap().to_owned();
            seen.push(project.clone());
            if project == "p3" {
                break;
            }
        }
        if seen == ["p3"] {
            rounds_without += 1;
            if rounds_without == 3 {
                break;
            }
        } else {
            assert_eq!(
                rounds_without, 0,
                "p1's change came again after it had stopped"
            );
            assert!(
                started.elapsed() <= BOUND,
                "the stream still delivered organization 1 after {:?}",
                started.elapsed()
            );
        }
    }
    first.stop().await;
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_demoted_on_one_instance_is_refused_writes_at_once_on_the_other() {
    require!(BACKEND);
    let (first, second, admin, u2) = fixture().await;
    assert_eq!(
        status(
            &second,
            &u2,
            Method::POST,
            "/v1/projects/p1",
            describe_body("editor")
        )
        .await,
        200
    );
    let membership = format!("/v1/organizations/{}/users/u2", org_id(1));
    let demote = Some(json!({"role": "member"}));
    assert_eq!(
        status(&first, &admin, Method::POST, &membership, demote).await,
        200
    );

    let (code, body, _) = send(
        &second,
        Method::POST,
        "/v1/projects/p1",
        &u2,
        &[],
        describe_body("member").as_ref(),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["error"]["type"], "forbidden_error");
    // A member still reads, and so still reports what its edge applied:
    // reporting needs the right to read the project (docs/feed.md).
    assert_eq!(
        status(
            &second,
            &u2,
            Method::POST,
            "/v1/projects/p1/edges",
            report_body()
        )
        .await,
        200
    );
    assert_eq!(second.get("/v1/projects/p1", &u2).await.status(), 200);
    first.stop().await;
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_deleted_on_one_instance_is_gone_for_its_members_on_the_other() {
    require!(BACKEND);
    let (first, second, admin, u2) = fixture().await;
    let organization = format!("/v1/organizations/{}", org_id(5));
    assert_eq!(second.get(&organization, &u2).await.status(), 200);
    let listing = format!("/v1/projects?organization_id={}", org_id(5));
    assert_eq!(second.get(&listing, &u2).await.status(), 200);

    assert_eq!(
        status(&first, &admin, Method::DELETE, &organization, None).await,
        200
    );

    let create = Some(json!({"organization_id": org_id(5), "slug": "late"}));
    assert_eq!(
        status(&second, &u2, Method::POST, "/v1/projects", create).await,
        404
    );
    // The organization's reads read the memberships now.
    assert_eq!(second.get(&organization, &u2).await.status(), 404);
    let took = until_status(&second, &u2, &listing, 404).await;
    assert!(took <= BOUND, "the listing stopped after {took:?}");
    let (_, me) = second.get_json("/v1/users/me", &u2).await;
    assert!(me["roles"].get(org_id(5)).is_none(), "{me}");
    first.stop().await;
    second.stop().await;
}
