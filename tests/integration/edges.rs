//! Who runs which revision (docs/feed.md): reportEdge, listEdges and
//! deleteEdge. An edge reports under a name it chooses, on a revision the
//! project has; a project's edges list by name, or those that need
//! attention first, with their last report and whether they are stale;
//! only a caller that may read the project may report on it or list its
//! edges, only one that may change it removes a report; a project keeps
//! a bounded number of reports, and they go with it (issue 44).

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

async fn fixture() -> (TestApp, String, String) {
    fixture_with(test_options()).await
}

async fn fixture_with(options: proxydeck::app::ServiceOptions) -> (TestApp, String, String) {
    let (app, u1, u3) = two_organizations_with(BACKEND, options).await;
    // Reports name revisions the projects have.
    let mut revisions: Vec<Value> = (1..=4).map(|r| settings("p1", r, r == 4)).collect();
    revisions.push(settings("p3", 1, true));
    app.seed(revisions).await;
    // A member (the least role) reports: reading is enough.
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u1'");
    (app, u1, u3)
}

async fn report(app: &TestApp, token: &str, project: &str, body: Value) -> (u16, Value) {
    let path = format!("/v1/projects/{project}/edges");
    let (status, answer, _) = send(app, Method::POST, &path, token, &[], Some(&body)).await;
    (status, answer)
}

#[tokio::test]
async fn edges_report_and_list_by_name_with_their_last_report() {
    require!(BACKEND);
    let (app, u1, _) = fixture().await;
    for (name, revision) in [("edge-b", 3), ("edge-a", 4), ("edge-c", 4)] {
        let body = json!({"name": name, "revision": revision, "status": "applied"});
        let (status, edge) = report(&app, &u1, "p1", body).await;
        assert_eq!(status, 200, "{edge}");
        assert_eq!(edge["object"], "edge");
        assert_eq!(edge["stale"], false);
        assert!(edge.get("error").is_none(), "{edge}");
    }
    // The same name again replaces its report.
    let failed = json!({"name": "edge-b", "revision": 4, "status": "failed",
                        "error": "haproxy: backend 'origin' has no server available"});
    assert_eq!(report(&app, &u1, "p1", failed).await.0, 200);
    let (status, page) = app.get_json("/v1/projects/p1/edges", &u1).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["object"], "list");
    assert_eq!(page["url"], "/v1/projects/p1/edges");
    assert_eq!(page["has_more"], false);
    assert_eq!(page["last_key"], "edge-c");
    let rows: Vec<(String, u64, String)> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["revision"].as_u64().unwrap(),
                e["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("edge-a".into(), 4, "applied".into()),
            ("edge-b".into(), 4, "failed".into()),
            ("edge-c".into(), 4, "applied".into()),
        ]
    );
    assert_eq!(
        page["data"][1]["error"],
        "haproxy: backend 'origin' has no server available"
    );
    // Pages by name.
    let (_, first) = app.get_json("/v1/projects/p1/edges?limit=2", &u1).await;
    assert_eq!(
        (first["has_more"].clone(), first["last_key"].clone()),
        (json!(true), json!("edge-b"))
    );
    let (_, rest) = app
        .get_json("/v1/projects/p1/edges?limit=2&start_key=edge-b", &u1)
        .await;
    assert_eq!(rest["data"][0]["name"], "edge-c");
    assert_eq!(rest["has_more"], false);
    // An edge silent for over 3 minutes is stale.
    app.data.execute(
        "UPDATE edge_reports SET reported_at = reported_at - 181000 WHERE name = 'edge-a'",
    );
    let (_, page) = app.get_json("/v1/projects/p1/edges", &u1).await;
    let stale: Vec<bool> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["stale"].as_bool().unwrap())
        .collect();
    assert_eq!(stale, [true, false, false]);
}

#[tokio::test]
async fn only_a_reader_of_the_project_reports_and_bad_reports_name_their_members() {
    require!(BACKEND);
    let (app, u1, u3) = fixture().await;
    let good = json!({"name": "edge-1", "revision": 1, "status": "applied"});
    // Another organization's project, and one that does not exist: alike.
    let (status, invisible) = report(&app, &u1, "p3", good.clone()).await;
    let (unknown_status, unknown) = report(&app, &u1, "nope", good.clone()).await;
    assert_eq!((status, unknown_status), (404, 404));
    assert_eq!(invisible["error"]["type"], unknown["error"]["type"]);
    assert_eq!(app.get_json("/v1/projects/p3/edges", &u1).await.0, 404);
    assert_eq!(report(&app, &u3, "p3", good).await.0, 200);
    let (_, page) = app.get_json("/v1/projects/p1/edges", &u1).await;
    assert_eq!(page["data"], json!([]));
    assert!(page.get("last_key").is_none());

    let (status, body) = report(
        &app,
        &u1,
        "p1",
        json!({"name": "has space", "revision": 0, "status": "applied"}),
    )
    .await;
    assert_eq!(status, 400);
    let mut named = params(&body);
    named.sort();
    assert_eq!(named, ["name", "revision"], "{body}");
    for (body, param) in [
        (
            json!({"name": "e", "revision": 1, "status": "failed"}),
            "error",
        ),
        (
            json!({"name": "e", "revision": 1, "status": "applied", "error": "x"}),
            "error",
        ),
        (
            json!({"name": "e", "revision": 1, "status": "maybe"}),
            "status",
        ),
        (
            json!({"name": "e", "revision": 1, "status": "applied", "extra": 1}),
            "extra",
        ),
    ] {
        let (status, answer) = report(&app, &u1, "p1", body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(
            params(&answer).contains(&param.to_owned()),
            "{body}: {answer}"
        );
    }
    for query in [
        "?limit=0",
        "?limit=101",
        "?start_key=a%20b",
        "?order_direction=ASC",
    ] {
        let (status, body) = app
            .get_json(&format!("/v1/projects/p1/edges{query}"), &u1)
            .await;
        assert_eq!(status, 400, "{query}: {body}");
    }
}

/// Names of a page's edges, in its order.
fn names(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `edge-1` applied on p1 (by u1) and on p3 (by u3).
async fn an_edge_on_each(app: &TestApp, u1: &str, u3: &str) {
    assert_eq!(report(app, u1, "p1", applied("edge-1")).await.0, 200);
    let on_p3 = json!({"name": "edge-1", "revision": 1, "status": "applied"});
    assert_eq!(report(app, u3, "p3", on_p3).await.0, 200);
}

fn applied(name: &str) -> Value {
    json!({"name": name, "revision": 4, "status": "applied"})
}

#[tokio::test]
async fn a_report_names_a_revision_the_project_has() {
    require!(BACKEND);
    let (app, u1, _) = fixture().await;
    for revision in [5u64, 4_000_000_000] {
        let body = json!({"name": "edge-1", "revision": revision, "status": "applied"});
        let (status, answer) = report(&app, &u1, "p1", body).await;
        assert_eq!(status, 400, "{revision}: {answer}");
        assert_eq!(params(&answer), ["revision"], "{answer}");
    }
    assert_eq!(app.data.count("SELECT COUNT(*) FROM edge_reports"), 0);
    assert_eq!(report(&app, &u1, "p1", applied("edge-1")).await.0, 200);
}

#[tokio::test]
async fn a_project_keeps_its_most_reports_and_the_oldest_stale_go_first() {
    require!(BACKEND);
    let mut options = test_options();
    options.quotas.edge_reports_per_project = 3;
    let (app, u1, u3) = fixture_with(options).await;
    for name in ["e1", "e2", "e3"] {
        assert_eq!(report(&app, &u1, "p1", applied(name)).await.0, 200);
    }
    // Full, none stale: a new name is refused, the live edges stay.
    let (status, refused) = report(&app, &u1, "p1", applied("e4")).await;
    assert_eq!(status, 409, "{refused}");
    assert_error_shape(&refused);
    // A name it keeps reports again.
    assert_eq!(report(&app, &u1, "p1", applied("e3")).await.0, 200);
    // Another project's reports are its own.
    assert_eq!(
        report(
            &app,
            &u3,
            "p3",
            json!({"name": "e4", "revision": 1, "status": "applied"})
        )
        .await
        .0,
        200
    );
    // e2 and e1 go stale, e1 longer ago: a new name replaces e1.
    app.data
        .execute("UPDATE edge_reports SET reported_at = reported_at - 200000 WHERE name = 'e1'");
    app.data
        .execute("UPDATE edge_reports SET reported_at = reported_at - 190000 WHERE name = 'e2'");
    assert_eq!(report(&app, &u1, "p1", applied("e4")).await.0, 200);
    let (_, page) = app.get_json("/v1/projects/p1/edges", &u1).await;
    assert_eq!(names(&page), ["e2", "e3", "e4"]);
    assert_eq!(report(&app, &u1, "p1", applied("e5")).await.0, 200);
    let (_, page) = app.get_json("/v1/projects/p1/edges", &u1).await;
    assert_eq!(names(&page), ["e3", "e4", "e5"]);
    assert_eq!(report(&app, &u1, "p1", applied("e6")).await.0, 409);
}

#[tokio::test]
async fn whoever_may_change_the_project_removes_a_report() {
    require!(BACKEND);
    let (app, u1, u3) = fixture().await;
    an_edge_on_each(&app, &u1, &u3).await;
    let remove = |token: String, path: &'static str| {
        let app = &app;
        async move { send(app, Method::DELETE, path, &token, &[], None).await }
    };
    // A member reads and reports, but may not remove.
    let (status, body, _) = remove(u1.clone(), "/v1/projects/p1/edges/edge-1").await;
    assert_eq!(status, 403, "{body}");
    app.data
        .execute("UPDATE memberships SET role = 'editor' WHERE user_id = 'u1'");
    // Another organization's project and an unknown one: alike.
    let (invisible, body, _) = remove(u1.clone(), "/v1/projects/p3/edges/edge-1").await;
    let (unknown, other, _) = remove(u1.clone(), "/v1/projects/nope/edges/edge-1").await;
    assert_eq!((invisible, unknown), (404, 404));
    assert_eq!(body, other);
    let audited = app.data.count("SELECT COUNT(*) FROM audit_log");
    let (status, body, _) = remove(u1.clone(), "/v1/projects/p1/edges/edge-1").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"object": "edge", "name": "edge-1", "deleted": true})
    );
    assert_eq!(
        app.data.count("SELECT COUNT(*) FROM audit_log WHERE operation = 'deleteEdge' AND object = 'edge' AND object_id = 'p1/edge-1'"),
        1
    );
    assert_eq!(
        app.data.count("SELECT COUNT(*) FROM audit_log"),
        audited + 1
    );
    let (_, page) = app.get_json("/v1/projects/p1/edges", &u1).await;
    assert_eq!(page["data"], json!([]));
    let (status, body, _) = remove(u1.clone(), "/v1/projects/p1/edges/edge-1").await;
    assert_eq!(status, 404, "{body}");
    let (status, _, _) = remove(u1.clone(), "/v1/projects/p1/edges/bad%20name").await;
    assert_eq!(status, 400);
    // The other organization's report stays.
    let (_, page) = app.get_json("/v1/projects/p3/edges", &u3).await;
    assert_eq!(names(&page), ["edge-1"]);
}

#[tokio::test]
async fn reports_go_with_their_project() {
    require!(BACKEND);
    let (app, u1, u3) = fixture().await;
    an_edge_on_each(&app, &u1, &u3).await;
    app.data
        .execute("UPDATE memberships SET role = 'admin' WHERE user_id = 'u1'");
    let (status, body, _) = send(&app, Method::DELETE, "/v1/projects/p1", &u1, &[], None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        app.data
            .count("SELECT COUNT(*) FROM edge_reports WHERE project_id = 'p1'"),
        0
    );
    assert_eq!(
        app.data
            .count("SELECT COUNT(*) FROM edge_reports WHERE project_id = 'p3'"),
        1
    );
}

#[tokio::test]
async fn those_that_need_attention_come_first_whatever_their_names() {
    require!(BACKEND);
    let (app, u1, _) = fixture().await;
    for name in ["a-fine", "b-fine", "m-stale"] {
        assert_eq!(report(&app, &u1, "p1", applied(name)).await.0, 200);
    }
    let failed = json!({"name": "z-failed", "revision": 4, "status": "failed", "error": "no"});
    assert_eq!(report(&app, &u1, "p1", failed).await.0, 200);
    app.data.execute(
        "UPDATE edge_reports SET reported_at = reported_at - 181000 WHERE name = 'm-stale'",
    );
    let (status, page) = app
        .get_json("/v1/projects/p1/edges?order=attention&limit=3", &u1)
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(names(&page), ["z-failed", "m-stale", "a-fine"]);
    assert_eq!(page["has_more"], true);
    assert!(page.get("last_key").is_none(), "{page}");
    let (_, page) = app.get_json("/v1/projects/p1/edges?order=name", &u1).await;
    assert_eq!(names(&page), ["a-fine", "b-fine", "m-stale", "z-failed"]);
    for query in ["?order=attention&start_key=a-fine", "?order=newest"] {
        let (status, body) = app
            .get_json(&format!("/v1/projects/p1/edges{query}"), &u1)
            .await;
        assert_eq!(status, 400, "{query}: {body}");
    }
}

/// New names reported at once pass the bound no further (PostgreSQL runs
/// them side by side: they are counted under the organization's lock).
#[tokio::test]
async fn new_names_at_once_pass_the_bound_no_further() {
    require!(BACKEND);
    let mut options = test_options();
    options.quotas.edge_reports_per_project = 3;
    let (app, u1, _) = fixture_with(options).await;
    let reports = (0..12).map(|i| {
        let (app, u1) = (&app, &u1);
        async move { report(app, u1, "p1", applied(&format!("e{i}"))).await.0 }
    });
    let mut statuses = futures_util::future::join_all(reports).await;
    statuses.sort();
    assert_eq!(statuses, [[200; 3].as_slice(), &[409; 9]].concat());
    assert_eq!(
        app.data
            .count("SELECT COUNT(*) FROM edge_reports WHERE project_id = 'p1'"),
        3
    );
}

/// A token an edge's tool printed in its error is not kept: whole, cut
/// short, upper-cased (`PXD_...`) or percent-encoded as a URL carries it
/// (`pxd%5F...`).
#[tokio::test]
async fn a_token_in_a_failed_reports_error_is_not_kept_in_any_spelling() {
    require!(BACKEND);
    let (app, u1, _) = fixture().await;
    let secret = &u1["pxd_".len()..];
    let error = format!(
        "curl -H 'Authorization: Bearer {u1}' failed; GET /x?token=pxd%5F{secret} \
         and ?t=PXD%5f{secret}; echo PXD_{secret} | cut -c1-9: PXD_{short}",
        short = &secret[..5]
    );
    let body = json!({"name": "edge-a", "revision": 1, "status": "failed", "error": error});
    let (status, edge) = report(&app, &u1, "p1", body).await;
    assert_eq!(status, 200, "{edge}");
    let (_, page) = app.get_json("/v1/projects/p1/edges", &u1).await;
    for kept in [&edge["error"], &page["data"][0]["error"]] {
        let kept = kept.as_str().expect("the error is kept");
        assert!(!kept.contains(&secret[..5]), "{kept}");
        assert_eq!(kept.matches("pxd_…(redacted)").count(), 5, "{kept}");
        assert!(
            kept.starts_with("curl -H 'Authorization: Bearer "),
            "{kept}"
        );
    }
}
