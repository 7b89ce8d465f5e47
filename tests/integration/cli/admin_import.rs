//! `admin import`: every kind of line, standard input, importing twice,
//! all or nothing with the bad line and field named.

use super::*;

#[tokio::test]
async fn import_loads_every_kind_and_the_api_shows_it_exactly() {
    let sandbox = Sandbox::new();
    let full = full_project();
    // Some fields given, the others absent; no timestamps.
    let partial = json!({
        "object": "project", "id": "partial-project", "organization_id": org_id(2).to_uppercase(),
        "slug": "partial", "cache": true, "inject_sdk": true, "trusted_ips": ["192.0.2.1"],
        "rate_limiting_enabled": true, "rate_limiting": [{"rank": 3, "limit": 10}],
        "autocapture": {"click": true}
    });
    let minimal =
        json!({"object": "project", "id": "minimal-project", "organization_id": org_id(2)});
    let revision_one = full_settings("full-project", 1, false);
    let revision_two = full_settings("full-project", 2, true);
    let bare_revision =
        json!({"object": "proxy_settings", "project_id": "minimal-project", "revision": 1});
    let lines = vec![
        json!({"object": "organization", "id": org_id(1), "name": "One",
               "created_at": "2026-01-01T00:00:00.000Z"}),
        json!({"object": "organization", "id": org_id(2), "name": "Two"}),
        json!({"object": "user", "id": "u1", "email": "u1@example.com",
               "organizations": [org_id(1), org_id(2)]}),
        full.clone(),
        partial,
        minimal,
        revision_one.clone(),
        revision_two.clone(),
        bare_revision,
    ];
    let before = Timestamp::now();
    let counts = sandbox.import(&lines);
    let after = Timestamp::now();
    assert_eq!(
        counts,
        json!({"organizations": 2, "users": 1, "projects": 3, "proxy_settings": 3})
    );

    let secret = sandbox.token("u1", "reader");
    let server = sandbox.serve(&[]);
    let projects = server.projects(&secret).await;
    // The two without created_at share the time of import: ties go by id.
    assert_eq!(
        listed_ids(&projects),
        ["full-project", "minimal-project", "partial-project"]
    );

    assert_eq!(by_id(&projects, "full-project"), &full);

    let listed = by_id(&projects, "minimal-project");
    let created = wire_time(&listed["created_at"]);
    assert!(before <= created && created <= after, "{listed}");
    assert_eq!(listed["updated_at"], listed["created_at"]);
    assert_eq!(
        listed,
        &default_project(
            "minimal-project",
            &org_id(2),
            &listed["created_at"],
            &listed["updated_at"]
        )
    );

    let listed = by_id(&projects, "partial-project");
    let created = wire_time(&listed["created_at"]);
    assert!(before <= created && created <= after, "{listed}");
    let mut expected = default_project(
        "partial-project",
        &org_id(2),
        &listed["created_at"],
        &listed["updated_at"],
    );
    for (field, value) in [
        ("slug", json!("partial")),
        ("cache", json!(true)),
        ("inject_sdk", json!(true)),
        ("trusted_ips", json!(["192.0.2.1"])),
        ("rate_limiting_enabled", json!(true)),
        (
            "rate_limiting",
            json!([{"rank": 3, "limit": 10, "window": "10s", "block_duration": 60,
                    "key": ["ip"], "conditions": {}}]),
        ),
        (
            "autocapture",
            json!({"pageview": false, "spa_pageview": false, "engagement": false,
                   "click": true, "form": false, "scroll": false}),
        ),
    ] {
        expected[field] = value;
    }
    assert_eq!(listed, &expected);

    assert_eq!(
        server.revisions("full-project", &secret).await,
        [as_listed(&revision_one), as_listed(&revision_two)]
    );
    assert_eq!(
        server.revisions("minimal-project", &secret).await,
        [
            json!({"object": "proxy_settings", "revision": 1, "description": "",
                "is_active": false, "backends": [], "routes": []})
        ]
    );
    assert_eq!(
        server.revisions("partial-project", &secret).await,
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn import_reads_standard_input() {
    let sandbox = Sandbox::new();
    let lines = [
        org(1),
        user("u1", &[1]),
        project("from-stdin", 1, 5),
        settings("from-stdin", 1, true),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let counts = sandbox
        .run_with_stdin(&["admin", "import", "-", "--json"], &text)
        .json();
    assert_eq!(
        counts,
        json!({"organizations": 1, "users": 1, "projects": 1, "proxy_settings": 1})
    );

    let secret = sandbox.token("u1", "reader");
    let server = sandbox.serve(&[]);
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["from-stdin"]);
    assert_eq!(projects[0]["created_at"], json!(at(5)));
    assert_eq!(server.revisions("from-stdin", &secret).await.len(), 1);

    // CRLF line ends and blank lines are fine.
    let crlf = format!(
        "{}\r\n\r\n{}\r\n",
        project("crlf-1", 1, 6),
        settings("crlf-1", 1, true)
    );
    let counts = sandbox
        .run_with_stdin(&["admin", "import", "-", "--json"], &crlf)
        .json();
    assert_eq!(
        counts,
        json!({"organizations": 0, "users": 0, "projects": 1, "proxy_settings": 1})
    );
    assert_eq!(
        listed_ids(&server.projects(&secret).await),
        ["from-stdin", "crlf-1"]
    );

    // An empty input imports nothing, successfully.
    let counts = sandbox
        .run_with_stdin(&["admin", "import", "-", "--json"], "")
        .json();
    assert_eq!(
        counts,
        json!({"organizations": 0, "users": 0, "projects": 0, "proxy_settings": 0})
    );
    // A file that does not exist: one line naming it.
    let missing = sandbox.path().join("missing.ndjson").display().to_string();
    sandbox
        .run(&["admin", "import", &missing, "--json"])
        .error(&["missing.ndjson"]);
}

#[tokio::test]
async fn reimporting_the_same_file_changes_nothing() {
    let sandbox = Sandbox::new();
    let lines: Vec<String> = [
        json!({"object": "organization", "id": org_id(1), "name": "One"}),
        json!({"object": "organization", "id": org_id(2), "name": "Two",
               "created_at": "2026-01-02T00:00:00.000Z"}),
        json!({"object": "user", "id": "u1", "email": "u1@example.com",
               "organizations": [org_id(1), org_id(2)]}),
        // With timestamps.
        full_project(),
        project("dated", 2, 30),
        // Without any: they take the time of the first import.
        json!({"object": "project", "id": "undated", "organization_id": org_id(1),
               "description": "no timestamps"}),
        json!({"object": "project", "id": "undated-2", "organization_id": org_id(2)}),
        // Only created_at.
        json!({"object": "project", "id": "half-dated", "organization_id": org_id(1),
               "created_at": at(60)}),
        full_settings("full-project", 1, false),
        full_settings("full-project", 2, true),
        settings("undated", 1, true),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let file = sandbox.ndjson("data.ndjson", &lines);

    let first_counts = sandbox.json(&["admin", "import", &file]);
    let secret = sandbox.token("u1", "reader");
    let before = dump(&sandbox.db_path());

    let server = sandbox.serve(&["--last-used-flush-interval", "1h"]);
    let project_ids = [
        "full-project",
        "dated",
        "undated",
        "undated-2",
        "half-dated",
    ];
    let mut paths = vec![
        "/v1/projects?limit=100".to_owned(),
        "/v1/projects?limit=100&order_direction=ASC".to_owned(),
        "/v1/projects?limit=2".to_owned(),
    ];
    for id in project_ids {
        paths.push(format!("/v1/projects/{id}/proxy-settings"));
    }
    let mut listings = Vec::new();
    for path in &paths {
        listings.push(server.text(path, &secret).await);
    }
    assert_eq!(
        listed_ids(&server.projects(&secret).await).len(),
        project_ids.len()
    );

    // A timestamp rewritten now would differ.
    a_millisecond_passes().await;
    let second_counts = sandbox.json(&["admin", "import", &file]);
    assert_eq!(second_counts, first_counts);

    for (path, first) in paths.iter().zip(&listings) {
        let again = server.text(path, &secret).await;
        assert_eq!(&again, first, "{path} changed on the second import");
    }
    drop(server);
    assert_eq!(dump(&sandbox.db_path()), before, "the second import wrote");
}

/// `docs/cli.md`: "importing the same file twice leaves the store as after the
/// first time" — also when the file upserts one project twice.
#[tokio::test]
async fn reimporting_a_file_that_upserts_a_project_twice_changes_nothing() {
    let sandbox = Sandbox::new();
    let lines: Vec<String> = [
        org(1),
        user("u1", &[1]),
        json!({"object": "project", "id": "twice", "organization_id": org_id(1),
               "description": "first version"}),
        json!({"object": "project", "id": "twice", "organization_id": org_id(1),
               "description": "second version"}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let file = sandbox.ndjson("twice.ndjson", &lines);
    sandbox.json(&["admin", "import", &file]);
    let secret = sandbox.token("u1", "reader");
    let server = sandbox.serve(&[]);
    let first = server.text("/v1/projects", &secret).await;
    assert!(first.contains("second version"), "{first}");

    a_millisecond_passes().await;
    sandbox.json(&["admin", "import", &file]);
    let second = server.text("/v1/projects", &secret).await;
    assert_eq!(second, first);
}

/// One bad line of an eight-line file.
struct BadLine {
    what: &'static str,
    /// Lines (1-based) replaced in the template.
    lines: Vec<(usize, String)>,
    /// What the one-line error must hold besides `line 5`.
    field: Option<&'static str>,
}

#[tokio::test]
async fn import_is_all_or_nothing_and_names_the_bad_line_and_field() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    let keep = project("keep", 1, 0);
    sandbox.import(&[keep.clone(), settings("keep", 1, true)]);
    // The server writes nothing by itself: token use waits for the flush.
    let server = sandbox.serve(&["--last-used-flush-interval", "1h"]);
    let paths = ["/v1/projects?limit=100", "/v1/projects/keep/proxy-settings"];
    let mut listings = Vec::new();
    for path in paths {
        listings.push(server.text(path, &secret).await);
    }
    assert_eq!(listed_ids(&server.projects(&secret).await), ["keep"]);
    let before = dump(&sandbox.db_path());

    let p5 = |extra: Value| {
        let mut line = json!({"object": "project", "id": "p5", "organization_id": org_id(1)});
        for (key, value) in extra.as_object().unwrap() {
            line[key] = value.clone();
        }
        line.to_string()
    };
    let mut changed_keep = keep.clone();
    changed_keep["description"] = json!("changed");
    changed_keep["updated_at"] = json!(at(100));
    let template: Vec<String> = [
        json!({"object": "organization", "id": org_id(2), "name": "Two"}),
        json!({"object": "user", "id": "u2", "email": "u2@example.com",
               "organizations": [org_id(1), org_id(2)]}),
        changed_keep,
        project("p-new", 1, 10),
        project("p5", 1, 11), // replaced by each case
        settings("p-new", 1, true),
        json!({"object": "organization", "id": org_id(3), "name": "Three"}),
        project("p-late", 1, 20),
    ]
    .iter()
    .map(Value::to_string)
    .collect();

    let line5 = |what, text: String, field| BadLine {
        what,
        lines: vec![(5, text)],
        field,
    };
    let cases = vec![
        line5(
            "bad JSON",
            r#"{"object": "project", "id": "p5","#.into(),
            None,
        ),
        line5("not an object", "[1, 2]".into(), None),
        line5(
            "unknown kind",
            r#"{"object": "widget", "id": "w"}"#.into(),
            Some("object"),
        ),
        line5(
            "unknown field",
            p5(json!({"colour": "red"})),
            Some("colour"),
        ),
        line5("wrong type", p5(json!({"cache": "yes"})), Some("cache")),
        line5("null", p5(json!({"slug": null})), Some("slug")),
        line5(
            "nested wrong type",
            p5(json!({"override_cache": [{"path": "/", "ttl": "long"}]})),
            Some("override_cache[0].ttl"),
        ),
        line5(
            "enum off the list",
            p5(json!({"log_severity": "LOUD"})),
            Some("log_severity"),
        ),
        line5(
            "type off the list",
            p5(json!({"type": "website"})),
            Some("type"),
        ),
        line5(
            "rate window off the list",
            p5(json!({"rate_limiting": [{"rank": 1, "limit": 1, "window": "5s"}]})),
            Some("rate_limiting[0].window"),
        ),
        line5(
            "bad IP",
            p5(json!({"blocked_ips": ["300.1.1.1"]})),
            Some("blocked_ips[0]"),
        ),
        line5(
            "missing required field",
            json!({"object": "project", "id": "p5"}).to_string(),
            Some("organization_id"),
        ),
        line5(
            "route naming a missing backend",
            json!({"object": "proxy_settings", "project_id": "p-new", "revision": 2,
                   "backends": [{"name": "origin", "address": "o.example:443"}],
                   "routes": [{"path": "/", "backend_name": "missing", "rank": "1"}]})
            .to_string(),
            Some("routes[0].backend_name"),
        ),
        line5(
            "a second active revision (one in the store)",
            settings("keep", 2, true).to_string(),
            Some("is_active"),
        ),
        BadLine {
            what: "a second active revision (both in the file)",
            lines: vec![
                (3, project("p-new", 1, 10).to_string()),
                (4, settings("p-new", 1, true).to_string()),
                (5, settings("p-new", 2, true).to_string()),
            ],
            field: Some("is_active"),
        },
        line5(
            "settings of a project that does not exist",
            settings("nowhere", 1, false).to_string(),
            Some("project_id"),
        ),
        line5(
            "a project of an organization defined only later",
            json!({"object": "project", "id": "p5", "organization_id": org_id(3)}).to_string(),
            Some("organization_id"),
        ),
        line5(
            "a project of an organization defined nowhere",
            json!({"object": "project", "id": "p5", "organization_id": org_id(77)}).to_string(),
            Some("organization_id"),
        ),
        line5(
            "a user of an unknown organization",
            json!({"object": "user", "id": "u5", "email": "u5@example.com",
                   "organizations": [org_id(1), org_id(77)]})
            .to_string(),
            Some("organizations[1]"),
        ),
        BadLine {
            what: "blank lines still count",
            lines: vec![(2, String::new()), (5, p5(json!({"colour": "red"})))],
            field: Some("colour"),
        },
    ];

    for case in &cases {
        let mut lines = template.clone();
        for (number, text) in &case.lines {
            lines[number - 1] = text.clone();
        }
        assert_eq!(lines.len(), 8);
        let file = sandbox.ndjson("bad.ndjson", &lines);
        let out = sandbox.run(&["admin", "import", &file, "--json"]);
        let mut needles = vec!["line 5"];
        needles.extend(case.field);
        let message = std::panic::catch_unwind(|| out.error(&needles))
            .unwrap_or_else(|_| panic!("case {:?}: {out:#?}", case.what));
        assert!(!message.contains("line 1:"), "{}: {message}", case.what);
        assert_eq!(
            dump(&sandbox.db_path()),
            before,
            "case {:?} wrote to the store",
            case.what
        );
    }

    // Through the API: exactly what was there before.
    for (path, first) in paths.iter().zip(&listings) {
        let again = server.text(path, &secret).await;
        assert_eq!(&again, first, "{path} changed");
    }
    drop(server);

    // The template itself is valid: the failures were line 5's alone.
    let file = sandbox.ndjson("good.ndjson", &template);
    let counts = sandbox.json(&["admin", "import", &file]);
    assert_eq!(
        counts,
        json!({"organizations": 2, "users": 1, "projects": 4, "proxy_settings": 1})
    );
    let server = sandbox.serve(&[]);
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["keep", "p-new", "p5", "p-late"]);
    assert_eq!(by_id(&projects, "keep")["description"], json!("changed"));
}
