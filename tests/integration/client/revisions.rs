//! `proxy-settings diff`, `proxy-settings get` and `proxy-settings create
//! --dry-run`: the real binary against a served store (both backends)
//! holding revisions that differ in every way; the text, the JSON, the
//! errors, colour only on a terminal; the cases of the rule the console
//! shares (tests/integration/fixtures/revision-diff-cases.json).

use super::*;

fn backend(name: &str, address: &str) -> Value {
    json!({"name": name, "address": address})
}

fn route(path: &str, backend: &str, rank: &str) -> Value {
    json!({"path": path, "backend_name": backend, "rank": rank})
}

fn revision(number: u32, active: bool, backends: Vec<Value>, routes: Vec<Value>) -> Value {
    json!({"object": "proxy_settings", "project_id": "site", "revision": number,
           "description": format!("r{number}"), "is_active": active,
           "backends": backends, "routes": routes})
}

/// `site` (u1's): revisions 1 and 2 differ in every way, 3 only reorders
/// 2's routes, then a gap (only an import leaves one) before 7 and 10.
/// `hidden` belongs to an organization u1 is not in.
async fn served(store: Backend) -> (TestApp, String, TempDir) {
    let app = TestApp::spawn(store).await;
    let r1_backends = vec![
        json!({"name": "a", "address": "a1.example:443", "enable_ssl": true, "default": true}),
        backend("b", "b.example:80"),
        json!({"name": "c", "address": "c.example:80", "override_host": "c.example"}),
    ];
    let r1_routes = vec![
        route("/a/", "a", "1"),
        route("/b/", "b", "2"),
        route("/c/", "c", "3"),
        json!({"path": "^/x/", "regex": true, "backend_name": "a", "rank": "4", "country": ["FR"]}),
    ];
    let r2_backends = vec![
        json!({"name": "a", "address": "a2.example:443", "enable_ssl": true, "default": true,
               "sni_hostname": "a.example"}),
        backend("c", "c.example:80"),
        json!({"name": "d", "address": "d.example:443", "enable_ssl": true}),
    ];
    let r2_routes = vec![
        route("/d/", "d", "1"),
        route("/a/", "a", "1"),
        route("/c/", "a", "3"),
        json!({"path": "^/x/", "regex": true, "backend_name": "a", "rank": "4", "country": ["FR"]}),
    ];
    let mut r3_routes = r2_routes.clone();
    r3_routes.swap(0, 1);
    let mut lines = vec![
        org(1),
        org(2),
        user("u1", &[1]),
        project("site", 1, 1),
        project("hidden", 2, 2),
        // No revision yet: a dry run compares with the empty one.
        project("fresh", 1, 3),
        revision(1, false, r1_backends, r1_routes),
        revision(2, true, r2_backends.clone(), r2_routes),
        revision(3, false, r2_backends.clone(), r3_routes.clone()),
        revision(7, false, r2_backends.clone(), r3_routes.clone()),
        revision(10, false, r2_backends, r3_routes),
    ];
    lines.push(settings("hidden", 1, true));
    lines.push(settings("hidden", 2, false));
    app.seed(lines).await;
    let token = app.token("u1").await;
    (app, token, tempfile::tempdir().expect("a temporary folder"))
}

const DIFF_1_2: &str = r#"proxy settings of project site: revision 1 -> revision 2
description: "r1" -> "r2"
active: revision 2 (not revision 1)

backends: 1 added, 1 removed, 2 changed
~ a
    address: "a1.example:443" -> "a2.example:443"
    sni_hostname: unset -> "a.example"
- b
    address: "b.example:80"
    default: false
    enable_ssl: false
    name: "b"
~ c
    override_host: "c.example" -> unset
+ d
    address: "d.example:443"
    default: false
    enable_ssl: true
    name: "d"

routes: 1 added, 1 removed, 1 changed, 2 unchanged
- route 2: /b/ -> b
    backend_name: "b"
    continent: []
    country: []
    path: "/b/"
    rank: "2"
    regex: false
    region: []
~ route 3: /c/ -> a
    backend_name: "c" -> "a"
+ route 1: /d/ -> d
    backend_name: "d"
    continent: []
    country: []
    path: "/d/"
    rank: "1"
    regex: false
    region: []
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_shows_every_kind_of_change_on_both_stores() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        require!(backend);
        let (app, token, cwd) = served(backend).await;
        let run = |args: &[&str]| client(&app, &token, cwd.path(), args);

        // Piped: the text, no colour.
        let out = run(&["proxy-settings", "diff", "site", "1", "2"]);
        assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
        assert_eq!(out.stdout, DIFF_1_2, "{backend:?}");

        // --json: the structured diff (before or after the command).
        let expected = json!({
            "project_id": "site",
            "from": {"revision": 1, "description": "r1", "is_active": false},
            "to": {"revision": 2, "description": "r2", "is_active": true},
            "differs": true,
            "backends": [
                {"change": "changed", "name": "a", "members": [
                    {"member": "address", "from": "a1.example:443", "to": "a2.example:443"},
                    {"member": "sni_hostname", "to": "a.example"}]},
                {"change": "removed", "name": "b",
                 "from": {"name": "b", "address": "b.example:80", "enable_ssl": false, "default": false}},
                {"change": "changed", "name": "c", "members": [
                    {"member": "override_host", "from": "c.example"}]},
                {"change": "added", "name": "d",
                 "to": {"name": "d", "address": "d.example:443", "enable_ssl": true, "default": false}},
            ],
            "routes": [
                {"change": "removed", "from_position": 2,
                 "from": {"path": "/b/", "regex": false, "backend_name": "b", "rank": "2",
                          "continent": [], "region": [], "country": []}},
                {"change": "changed", "from_position": 3, "to_position": 3,
                 "to": {"path": "/c/", "regex": false, "backend_name": "a", "rank": "3",
                        "continent": [], "region": [], "country": []},
                 "members": [{"member": "backend_name", "from": "c", "to": "a"}]},
                {"change": "added", "to_position": 1,
                 "to": {"path": "/d/", "regex": false, "backend_name": "d", "rank": "1",
                        "continent": [], "region": [], "country": []}},
            ],
            "reordered": [],
            "unchanged": {"backends": 0, "routes": 2},
        });
        for args in [
            &["proxy-settings", "diff", "site", "1", "2", "--json"][..],
            &["--json", "proxy-settings", "diff", "site", "1", "2"],
        ] {
            let out = run(args);
            assert!(out.stderr.is_empty(), "{out:#?}");
            assert_eq!(out.stdout.lines().count(), 1, "one line piped: {out:#?}");
            assert_eq!(out.json(), expected, "{backend:?} {args:?}");
        }
        let out = run(&[
            "proxy-settings",
            "diff",
            "site",
            "1",
            "2",
            "--jq",
            ".backends[] | select(.change == \"changed\") | .name",
        ]);
        assert_eq!(out.stdout, "a\nc\n", "{out:#?}");

        // A reorder alone changes no route: each pairs with its own; but
        // two routes of one rank swapped are evaluated the other way.
        let out = run(&["proxy-settings", "diff", "site", "2", "3"]);
        assert_eq!(
            out.stdout,
            "proxy settings of project site: revision 2 -> revision 3\n\
             description: \"r2\" -> \"r3\"\n\
             active: revision 2 (not revision 3)\n\n\
             backends: 3 unchanged\n\n\
             routes: 4 unchanged\n\
             ~ routes of rank 1, evaluated in the order of the list: /d/, /a/ -> /a/, /d/\n",
            "{out:#?}"
        );
        // The same revision twice; revisions past a gap (7's neighbours
        // are no revisions: found by walking down from the newest).
        let same = run(&["proxy-settings", "diff", "site", "3", "7", "--json"]).json();
        assert_eq!(same["differs"], json!(true), "descriptions differ");
        assert_eq!(same["backends"], json!([]));
        assert_eq!(same["routes"], json!([]));
        assert_eq!(same["unchanged"], json!({"backends": 3, "routes": 4}));
        let out = run(&["proxy-settings", "diff", "site", "10", "10"]);
        assert!(
            out.stdout
                .contains("description: \"r10\" (the same)\nactive: neither\n"),
            "{out:#?}"
        );
        assert!(
            out.stdout
                .ends_with("backends: 3 unchanged\n\nroutes: 4 unchanged\n"),
            "{out:#?}"
        );
        let itself = run(&["proxy-settings", "diff", "site", "2", "2", "--json"]).json();
        assert_eq!(itself["differs"], json!(false));

        // get: the revision as the listing has it.
        let (_, page) = app
            .get_json(
                "/v1/projects/site/proxy-settings?order_direction=ASC",
                &token,
            )
            .await;
        let listed = page["data"].as_array().unwrap().clone();
        for (n, item) in [(1, &listed[0]), (7, &listed[3]), (10, &listed[4])] {
            let out = run(&["proxy-settings", "get", "site", &n.to_string()]);
            assert_eq!(&out.json(), item, "{backend:?} get {n}");
        }
        let out = run(&[
            "proxy-settings",
            "get",
            "site",
            "2",
            "--jq",
            ".backends[].name",
        ]);
        assert_eq!(out.stdout, "a\nc\nd\n", "{out:#?}");

        // Unknown revisions (after the newest, in the gap, far off), an
        // unknown project and one the token cannot see: one sentence, exit 1.
        for (args, said) in [
            (
                &["proxy-settings", "diff", "site", "1", "11"][..],
                "project \"site\" has no proxy settings revision 11",
            ),
            (
                &["proxy-settings", "diff", "site", "5", "1"],
                "project \"site\" has no proxy settings revision 5",
            ),
            (
                &["proxy-settings", "diff", "site", "1", "4000000000"],
                "project \"site\" has no proxy settings revision 4000000000",
            ),
            (
                &["proxy-settings", "get", "site", "8"],
                "project \"site\" has no proxy settings revision 8",
            ),
            (
                &["proxy-settings", "diff", "nosuch", "1", "2"],
                "no project \"nosuch\" (or this token cannot see it)",
            ),
            (
                &["proxy-settings", "diff", "hidden", "1", "2"],
                "no project \"hidden\" (or this token cannot see it)",
            ),
            (
                &["proxy-settings", "get", "hidden", "1"],
                "no project \"hidden\" (or this token cannot see it)",
            ),
        ] {
            let out = run(args);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {out:#?}");
            assert_eq!(
                out.error(&[]),
                format!("error: {said}"),
                "{backend:?} {args:?}"
            );
        }
        let out = run(&["proxy-settings", "diff", "site", "0", "1"]);
        assert_eq!(out.status.code(), Some(2), "{out:#?}");
    }
}

/// The text is coloured on a terminal only, never with NO_COLOR; the
/// words are the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_colours_only_a_terminal_and_never_with_no_color() {
    let (app, token, cwd) = served(Backend::Sqlite).await;
    let url = format!("http://{}", app.address);
    let args = [
        "proxy-settings",
        "diff",
        "site",
        "1",
        "2",
        "--url",
        &url,
        "--token",
        &token,
    ];
    let coloured = on_terminal(cwd.path(), &args, &[], 100);
    assert!(coloured.status.success(), "{coloured:#?}");
    assert!(
        coloured.stdout.contains("\x1b[32m+ d\x1b[0m"),
        "{coloured:#?}"
    );
    assert!(
        coloured.stdout.contains("\x1b[31m- b\x1b[0m"),
        "{coloured:#?}"
    );
    assert!(
        coloured.stdout.contains("\x1b[33m~ a\x1b[0m"),
        "{coloured:#?}"
    );
    assert_eq!(without_escapes(&coloured.stdout), DIFF_1_2);
    for no_color in [&[("NO_COLOR", "1")][..], &[("NO_COLOR", "no")]] {
        let out = on_terminal(cwd.path(), &args, no_color, 100);
        assert_eq!(out.stdout, DIFF_1_2, "{no_color:?}");
    }
    // --json on a terminal: indented, coloured as jq colours it.
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = on_terminal(cwd.path(), &json_args, &[], 100);
    assert!(
        out.stdout.contains("\x1b[1;34m\"project_id\"\x1b[0m"),
        "{out:#?}"
    );
    assert!(
        without_escapes(&out.stdout).starts_with("{\n  \"project_id\": \"site\",\n"),
        "{out:#?}"
    );
}

/// Every case of the rule the terminal and the console share
/// (docs/management.md, "Comparing revisions"), through the binary: each
/// case's A and B are revisions 1 and 2 of a project of their own, and
/// `diff 1 2 --json` says what the case expects. The console runs the
/// same file in Chromium (tests/integration/console/).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_follows_the_cases_shared_with_the_console_on_both_stores() {
    let cases: Value =
        serde_json::from_str(include_str!("../fixtures/revision-diff-cases.json")).unwrap();
    let cases = cases["cases"].as_array().unwrap();
    for backend in [Backend::Sqlite, Backend::Postgres] {
        require!(backend);
        let app = TestApp::spawn(backend).await;
        let mut lines = vec![org(1), user("u1", &[1])];
        for (n, case) in cases.iter().enumerate() {
            let project_id = format!("case-{n}");
            lines.push(project(&project_id, 1, n as i64));
            for (revision, side) in [(1, "from"), (2, "to")] {
                lines.push(json!({"object": "proxy_settings", "project_id": project_id,
                    "revision": revision, "description": side, "is_active": revision == 1,
                    "backends": case[side]["backends"], "routes": case[side]["routes"]}));
            }
        }
        app.seed(lines).await;
        let token = app.token("u1").await;
        let cwd = tempfile::tempdir().unwrap();
        for (n, case) in cases.iter().enumerate() {
            let project_id = format!("case-{n}");
            let name = &case["name"];
            // The case's revisions are as the listing gives them.
            let path = format!("/v1/projects/{project_id}/proxy-settings?order_direction=ASC");
            let (_, page) = app.get_json(&path, &token).await;
            for (listed, side) in page["data"].as_array().unwrap().iter().zip(["from", "to"]) {
                for list in ["backends", "routes"] {
                    assert_eq!(listed[list], case[side][list], "{name} {side} {list}");
                }
            }
            let args = ["proxy-settings", "diff", &project_id, "1", "2", "--json"];
            let diff = client(&app, &token, cwd.path(), &args).json();
            let said = json!({
                "backends": diff["backends"],
                "routes": diff["routes"],
                "reordered": diff["reordered"],
                "unchanged": diff["unchanged"],
            });
            assert_eq!(said, case["expected"], "{backend:?}: {name}");
        }
    }
}

/// `create --dry-run` asks the API (`dry_run=true`), stores nothing, and
/// prints the would-be revision against the active one exactly as `diff`
/// prints two stored revisions: here revision 1's backends and routes
/// sent again, against the active revision 2, read as `diff 2 1` reads
/// them (the would-be revision is 11, the newest being 10).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_dry_run_prints_the_diff_as_diff_does_and_stores_nothing_on_both_stores() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        require!(backend);
        let (app, token, cwd) = served(backend).await;
        let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
        let (_, page) = app
            .get_json(
                "/v1/projects/site/proxy-settings?order_direction=ASC",
                &token,
            )
            .await;
        let first = &page["data"][0];
        let file = cwd.path().join("revision.json");
        let body =
            json!({"description": "r1", "backends": first["backends"], "routes": first["routes"]});
        std::fs::write(&file, body.to_string()).unwrap();
        let file = file.to_str().unwrap();
        let dry_run = |project: &str, file: &str, more: &[&str]| {
            let mut args = vec![
                "proxy-settings",
                "create",
                project,
                "--file",
                file,
                "--dry-run",
            ];
            args.extend(more);
            run(&args)
        };
        let stored = || async {
            let (_, page) = app
                .get_json("/v1/projects/site/proxy-settings?limit=100", &token)
                .await;
            page["data"].as_array().unwrap().len()
        };
        assert_eq!(stored().await, 5);

        // The text: diff 2 1's, but for the would-be number.
        let out = dry_run("site", file, &[]);
        assert!(out.status.success(), "{out:#?}");
        let stored_diff = run(&["proxy-settings", "diff", "site", "2", "1"]);
        let expected = stored_diff
            .stdout
            .replacen(
                "revision 2 -> revision 1\n",
                "revision 2 -> revision 11\n",
                1,
            )
            .replacen("(not revision 1)\n", "(not revision 11)\n", 1);
        assert_ne!(expected, stored_diff.stdout);
        assert_eq!(out.stdout, expected, "{backend:?}");
        assert_eq!(
            out.stderr.trim_end(),
            "dry run: nothing was stored; the API takes it, and it would be revision 11 (inactive until activated)"
        );
        // The JSON, and --jq over it, as diff's.
        let mut expected = run(&["proxy-settings", "diff", "site", "2", "1", "--json"]).json();
        expected["to"]["revision"] = json!(11);
        let out = dry_run("site", file, &["--json"]);
        assert_eq!(out.json(), expected, "{backend:?}");
        let added = ".backends[] | select(.change == \"added\") | .name";
        let out = dry_run("site", file, &["--jq", added]);
        assert_eq!(out.stdout, "b\n", "{out:#?}");
        assert_eq!(stored().await, 5, "a dry run stores nothing");

        // A refusal is the write's own, one line naming the member.
        let bad = cwd.path().join("bad.json");
        let mut body = body.clone();
        body["routes"][3]["path"] = json!("^/x/(");
        std::fs::write(&bad, body.to_string()).unwrap();
        let out = dry_run("site", bad.to_str().unwrap(), &[]);
        assert_eq!(out.status.code(), Some(1), "{out:#?}");
        assert!(
            out.error(&["routes[3].path"]).starts_with("error: "),
            "{out:#?}"
        );
        assert_eq!(stored().await, 5);
        // What belongs to a stored object does not go with a dry run.
        for (flag, said) in [
            (
                &["--json", "description"][..],
                "--json FIELDS does not go with --dry-run",
            ),
            (&["--show-etag"], "--show-etag does not go with --dry-run"),
        ] {
            let out = dry_run("site", file, flag);
            assert_eq!(out.status.code(), Some(1), "{out:#?}");
            out.error(&[said]);
        }

        // No active revision: compared with the empty one, as the API does.
        let out = dry_run("fresh", file, &[]);
        assert!(out.status.success(), "{out:#?}");
        assert!(
            out.stdout.starts_with(
                "proxy settings of project fresh: no revision -> revision 1\n\
                 description: \"\" -> \"r1\"\n\
                 active: revision 1\n\n\
                 backends: 3 added\n"
            ),
            "{out:#?}"
        );
        assert!(
            out.stderr
                .contains("revision 1 (active: the project's first)"),
            "{out:#?}"
        );
        let json = dry_run("fresh", file, &["--json"]).json();
        assert_eq!(
            json["from"],
            json!({"revision": null, "description": "", "is_active": false})
        );
        let (_, page) = app
            .get_json("/v1/projects/fresh/proxy-settings", &token)
            .await;
        assert_eq!(page["data"], json!([]), "{backend:?}");

        // Without --dry-run the same file makes revision 11.
        let out = run(&[
            "proxy-settings",
            "create",
            "site",
            "--file",
            file,
            "--jq",
            ".revision",
        ]);
        assert_eq!(out.stdout, "11\n", "{out:#?}");
    }
}
