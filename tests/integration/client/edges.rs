//! `proxy-settings edges`: a listing like the others. Piped, the JSON
//! array of every edge (every page of listEdges); a table (with the
//! summary line above it) on a terminal or with `-o table`, ending with a
//! newline; `-o ndjson`, `--json FIELDS`, `--jq`.

use reqwest::Method;

use super::*;

/// `site` (u1's) with 150 edges (two pages of listEdges): 149 on
/// revision 2, one failed on 1.
async fn served() -> (TestApp, String, TempDir) {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![
        org(1),
        user("u1", &[1]),
        project("site", 1, 1),
        settings("site", 1, false),
        settings("site", 2, true),
    ])
    .await;
    let token = app.token("u1").await;
    for n in 0..150 {
        let report = if n == 0 {
            json!({"name": "edge-000", "revision": 1, "status": "failed", "error": "no backend"})
        } else {
            json!({"name": format!("edge-{n:03}"), "revision": 2, "status": "applied"})
        };
        let path = "/v1/projects/site/edges";
        let (status, edge, _) = send(&app, Method::POST, path, &token, &[], Some(&report)).await;
        assert_eq!(status, 200, "{edge}");
    }
    (app, token, tempfile::tempdir().expect("a temporary folder"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edges_print_as_the_other_listings_do() {
    let (app, token, cwd) = served().await;
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
    let mut every = Vec::new();
    let mut page = "/v1/projects/site/edges?limit=100".to_owned();
    loop {
        let (status, body) = app.get_json(&page, &token).await;
        assert_eq!(status, 200, "{body}");
        every.extend(body["data"].as_array().unwrap().iter().cloned());
        if body["has_more"] != json!(true) {
            break;
        }
        page = format!(
            "/v1/projects/site/edges?limit=100&start_key={}",
            text_of(&body["last_key"])
        );
    }
    assert_eq!(every.len(), 150);

    // Piped: the JSON array, one edge a line, as every listing prints it.
    let out = run(&["proxy-settings", "edges", "site"]);
    assert!(out.stderr.is_empty(), "{out:#?}");
    assert_eq!(out.json(), Value::Array(every.clone()));
    assert_eq!(out.stdout.lines().count(), 152, "{}", out.stdout);
    let fields = run(&["proxy-settings", "edges", "site", "--json", "name,status"]).json();
    assert_eq!(fields[0], json!({"name": "edge-000", "status": "failed"}));
    let out = run(&["proxy-settings", "edges", "site", "-o", "ndjson"]);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines, every);

    // A table where asked: the summary, then the edges, and a newline.
    let out = run(&["proxy-settings", "edges", "site", "-o", "table"]);
    assert!(out.status.success(), "{out:#?}");
    assert!(out.stdout.ends_with('\n'), "{:?}", out.stdout);
    let (summary, rest) = out.stdout.split_once('\n').unwrap();
    assert_eq!(
        summary,
        "149 edges on revision 2, 1 failed on 1: no backend"
    );
    let rows = table(
        rest,
        &["EDGE", "REVISION", "STATUS", "REPORTED (UTC)", "STALE"],
    );
    assert_eq!(rows.len(), 150);
    assert_eq!(rows[0][..3], ["edge-000", "1", "failed"]);
    assert_eq!(rows[149][4], "no");

    // On a terminal, the same without asking.
    let url = app.url("");
    let env = [
        ("PROXYDECK_URL", url.as_str()),
        ("PROXYDECK_TOKEN", token.as_str()),
    ];
    let out = on_terminal(cwd.path(), &["proxy-settings", "edges", "site"], &env, 120);
    assert!(out.status.success(), "{out:#?}");
    assert_eq!(out.stdout, format!("{summary}\n{rest}"));
}

/// `proxy-settings delete-edge PROJECT EDGE --yes` removes a report
/// (deleteEdge); without `--yes` and no terminal it asks no one and
/// removes nothing; a name with no report is the service's 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_edge_removes_a_report() {
    let (app, token, cwd) = served().await;
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
    let out = run(&["proxy-settings", "delete-edge", "site", "edge-007"]);
    assert!(!out.status.success(), "{out:#?}");
    assert!(out.stderr.contains("--yes"), "{out:#?}");
    let out = run(&["proxy-settings", "delete-edge", "site", "edge-007", "--yes"]);
    assert!(out.status.success(), "{out:#?}");
    assert_eq!(
        out.json(),
        json!({"object": "edge", "name": "edge-007", "deleted": true})
    );
    let names: Vec<Value> = run(&["proxy-settings", "edges", "site", "--json", "name"])
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|edge| edge["name"].clone())
        .collect();
    assert_eq!(names.len(), 149);
    assert!(!names.contains(&json!("edge-007")));
    let out = run(&["proxy-settings", "delete-edge", "site", "edge-007", "--yes"]);
    assert!(!out.status.success(), "{out:#?}");
    assert!(out.stderr.contains("no such edge"), "{out:#?}");
}
