//! Who runs which revision (docs/feed.md): reportEdge and listEdges. An
//! edge reports under a name it chooses; a project's edges list by name,
//! with their last report and whether they are stale; only a caller that
//! may read the project may report on it or list its edges.

use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

async fn fixture() -> (TestApp, String, String) {
    let (app, u1, u3) = two_organizations(BACKEND).await;
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
