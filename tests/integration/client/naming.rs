//! Naming a project as a person does: `ORG/SLUG`, a slug alone when it is
//! unique among the caller's projects, or its id (first). Every command
//! that takes a project, against a served store (both backends); a slug
//! named twice is refused naming both; `ORG/SLUG` reads only that
//! organization's projects, whatever the caller's other ones.

use reqwest::Method;

use super::*;

/// The listing requests of the in-process service so far, by route
/// (this test's process only: nextest runs each test in its own).
fn listed(route: &str) -> f64 {
    metric(&format!(
        r#"proxydeck_http_requests_total{{route="{route}",method="GET",status="200"}}"#
    ))
}

/// u1 is in organizations 1 (`org-1`) and 2 (`org-2`), not 3 (`org-3`).
/// `other` has `edge-x` as its id, `p-edge-x` has it as its slug.
async fn served(store: Backend) -> (TestApp, String, TempDir) {
    let app = TestApp::spawn(store).await;
    let mut other = project("other", 1, 1);
    other["slug"] = json!("other");
    let mut named = project("p-edge-x", 1, 2);
    named["slug"] = json!("edge-x");
    let mut id_is_edge_x = project("edge-x", 2, 3);
    id_is_edge_x["slug"] = json!("something-else");
    app.seed(vec![
        org(1),
        org(2),
        org(3),
        user("u1", &[1, 2]),
        other,
        named,
        id_is_edge_x,
        project("hidden", 3, 4),
    ])
    .await;
    let token = app.token("u1").await;
    (app, token, tempfile::tempdir().expect("a temporary folder"))
}

const REVISION: &str = r#"{"description": "first", "backends": [{"name": "origin", "address": "origin.example:443", "enable_ssl": true, "default": true}], "routes": [{"path": "/", "backend_name": "origin", "rank": "1"}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_made_through_the_api_is_named_by_its_slug_on_both_stores() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        require!(backend);
        let (app, token, cwd) = served(backend).await;
        let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
        let fed =
            |args: &[&str], stdin: &str| client_fed(&app, &token, cwd.path(), args, Some(stdin));

        // The organization by its slug; the project gets a UUID for id.
        let created = run(&["projects", "create", "--org", "org-1", "--slug", "edge-lab"]).json();
        assert_eq!(created["organization_id"], json!(org_id(1)));
        let id = created["id"].as_str().unwrap().to_owned();
        assert_ne!(id, "edge-lab");

        // Every command that takes a project takes ORG/SLUG and the slug.
        for name in ["org-1/edge-lab", "edge-lab", id.as_str()] {
            let out = run(&["projects", "get", name, "--jq", ".id"]);
            assert_eq!(out.stdout, format!("{id}\n"), "{name}: {out:#?}");
        }
        let made = fed(
            &["proxy-settings", "create", "org-1/edge-lab", "--file", "-"],
            REVISION,
        )
        .json();
        assert_eq!(made["revision"], json!(1));
        fed(
            &["proxy-settings", "create", "edge-lab", "--file", "-"],
            REVISION,
        )
        .json();
        let listed = run(&["proxy-settings", "list", "org-1/edge-lab"]).json();
        assert_eq!(listed.as_array().map(Vec::len), Some(2), "{listed}");
        assert_eq!(run(&["proxy-settings", "list", "edge-lab"]).json(), listed);
        let out = run(&[
            "proxy-settings",
            "get",
            "edge-lab",
            "2",
            "--jq",
            ".revision",
        ]);
        assert_eq!(out.stdout, "2\n", "{out:#?}");
        let diff = run(&[
            "proxy-settings",
            "diff",
            "org-1/edge-lab",
            "1",
            "2",
            "--json",
        ])
        .json();
        assert_eq!(diff["project_id"], json!(id));
        let out = run(&["proxy-settings", "diff", "org-1/edge-lab", "1", "2"]);
        assert!(
            out.stdout.starts_with(
                "proxy settings of project org-1/edge-lab: revision 1 -> revision 2\n"
            ),
            "{out:#?}"
        );
        let active = run(&["proxy-settings", "activate", "edge-lab", "2"]).json();
        assert_eq!(active["is_active"], json!(true));
        let report = json!({"name": "edge-1", "revision": 2, "status": "applied"});
        let path = format!("/v1/projects/{id}/edges");
        let (status, edge, _) = send(&app, Method::POST, &path, &token, &[], Some(&report)).await;
        assert_eq!(status, 200, "{edge}");
        let out = run(&[
            "proxy-settings",
            "edges",
            "org-1/edge-lab",
            "--jq",
            ".[].name",
        ]);
        assert_eq!(out.stdout, "edge-1\n", "{out:#?}");
        // follow too, by ORG/SLUG and by the organization's slug: the
        // files go in the folder of the project's id.
        for (followed, dir) in [("--project", "by-project"), ("--organization", "by-org")] {
            let name = match followed {
                "--project" => "org-1/edge-lab",
                _ => "org-1",
            };
            let out = run(&[
                "follow",
                followed,
                name,
                "--dir",
                dir,
                "--once",
                "--no-report",
            ]);
            assert!(out.status.success(), "{followed} {name}: {out:#?}");
            let held =
                std::fs::read_to_string(cwd.path().join(dir).join(&id).join("proxy-settings.json"))
                    .unwrap_or_else(|e| panic!("{followed} {name}: {e}: {out:#?}"));
            let held: Value = serde_json::from_str(&held).unwrap();
            assert_eq!(held["revision"], json!(2), "{followed} {name}");
        }
        let updated = run(&[
            "projects",
            "update",
            "org-1/edge-lab",
            "--description",
            "lab",
        ])
        .json();
        assert_eq!(updated["description"], json!("lab"));

        // An id first: `edge-x` is one project's id and another's slug.
        let out = run(&["projects", "get", "edge-x", "--jq", ".id"]);
        assert_eq!(out.stdout, "edge-x\n", "{out:#?}");
        let out = run(&["projects", "get", "org-1/edge-x", "--jq", ".id"]);
        assert_eq!(out.stdout, "p-edge-x\n", "{out:#?}");
        // An organization by its id too, in any letter case.
        let upper = format!("{}/edge-x", org_id(1).to_uppercase());
        let out = run(&["projects", "get", &upper, "--jq", ".id"]);
        assert_eq!(out.stdout, "p-edge-x\n", "{out:#?}");

        // A slug two of the caller's projects have: both named, as ORG/SLUG.
        run(&["projects", "create", "--org", "org-2", "--slug", "edge-lab"]).json();
        let out = run(&["proxy-settings", "list", "edge-lab"]);
        out.error(&[
            "2 of your projects have the slug \"edge-lab\": org-1/edge-lab, org-2/edge-lab; name one as ORG/SLUG",
        ]);
        assert_eq!(out.status.code(), Some(1));
        let out = run(&[
            "projects",
            "get",
            "org-2/edge-lab",
            "--jq",
            ".organization_id",
        ]);
        assert_eq!(out.stdout, format!("{}\n", org_id(2)), "{out:#?}");

        // What names nothing, or nothing this token sees.
        for (args, said) in [
            (
                &["projects", "get", "nosuch"][..],
                "error: no project \"nosuch\" (or this token cannot see it)",
            ),
            (
                &["proxy-settings", "list", "hidden"],
                "error: no project \"hidden\" (or this token cannot see it)",
            ),
            (
                &["proxy-settings", "list", "org-3/hidden"],
                "error: no organization \"org-3\" among yours (in \"org-3/hidden\")",
            ),
            (
                &["follow", "--project", "edge-lab", "--dir", "f", "--once"],
                "error: 2 of your projects have the slug \"edge-lab\": org-1/edge-lab, org-2/edge-lab; name one as ORG/SLUG",
            ),
            (
                &["follow", "--organization", "org-3", "--dir", "f", "--once"],
                "error: no organization \"org-3\" among yours (give its slug or id)",
            ),
            (
                &["proxy-settings", "edges", "org-1/nosuch"],
                "error: no project \"org-1/nosuch\" (or this token cannot see it)",
            ),
            (
                &["proxy-settings", "get", "org-1/a/b", "1"],
                "error: \"org-1/a/b\": name a project as ORG/SLUG (such as acme-corp/acme-shop), by its id, or by its slug",
            ),
            (
                &["projects", "create", "--org", "org-3", "--slug", "x"],
                "error: no organization \"org-3\" among yours (give its slug or id)",
            ),
        ] {
            let out = run(args);
            assert_eq!(out.error(&[]), said, "{backend:?} {args:?}");
        }

        // delete takes the name too.
        let deleted = run(&["projects", "delete", "org-1/edge-lab", "--yes"]).json();
        assert_eq!(deleted["id"], json!(id));
    }
}

/// `ORG/SLUG` reads the caller's organizations and that organization's
/// projects up to the one named: never the caller's other projects. A
/// slug alone reads them all (it must be unique among them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn org_slash_slug_reads_only_that_organization() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let mut lines = vec![org(1), org(2), user("u1", &[1, 2]), project("lab", 1, 0)];
    // Five pages of another organization's projects, all newer.
    lines.extend((0..450).map(|i| project(&format!("x{i:03}"), 2, 10 + i)));
    lines.push(settings("lab", 1, true));
    app.seed(lines).await;
    let token = app.token("u1").await;
    let cwd = tempfile::tempdir().unwrap();

    let (organizations, projects, one) = (
        listed("/v1/organizations"),
        listed("/v1/projects"),
        listed("/v1/projects/{id}"),
    );
    let out = client(
        &app,
        &token,
        cwd.path(),
        &["proxy-settings", "list", "org-1/lab"],
    );
    assert_eq!(out.json().as_array().map(Vec::len), Some(1), "{out:#?}");
    assert_eq!(listed("/v1/organizations") - organizations, 1.0);
    assert_eq!(
        listed("/v1/projects") - projects,
        1.0,
        "one page of org-1's"
    );
    assert_eq!(listed("/v1/projects/{id}") - one, 0.0);

    // An id: one request for it, no listing.
    let projects = listed("/v1/projects");
    let out = client(&app, &token, cwd.path(), &["projects", "get", "x001"]);
    assert_eq!(out.json()["id"], json!("x001"));
    assert_eq!(listed("/v1/projects") - projects, 0.0);
    // A slug that is no id: every page of the caller's projects.
    let mut renamed = project("y", 2, 5);
    renamed["slug"] = json!("renamed");
    app.seed(vec![renamed]).await;
    let out = client(
        &app,
        &token,
        cwd.path(),
        &["projects", "get", "renamed", "--jq", ".id"],
    );
    assert_eq!(out.stdout, "y\n", "{out:#?}");
    assert_eq!(
        listed("/v1/projects") - projects,
        5.0,
        "452 projects, 100 a page"
    );
}
