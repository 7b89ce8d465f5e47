//! `projects create|get|update|delete`: the real binary against a served
//! store (both backends), each answer compared with what the API itself
//! answers; errors in one line from the API's error body; `--if-match`;
//! deletion asked for on a terminal and refused without one.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::*;

/// u1 is admin of organization 1; u2 only a member of it.
async fn served(store: Backend) -> (TestApp, String, TempDir) {
    let app = TestApp::spawn(store).await;
    app.seed(vec![org(1), org(2), user("u1", &[1]), user("u2", &[1])])
        .await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let token = app.token("u1").await;
    (app, token, tempfile::tempdir().expect("a temporary folder"))
}

/// GET `path` as the API answers it: status, body, ETag.
async fn fetched(app: &TestApp, token: &str, path: &str) -> (u16, Value, Option<String>) {
    let response = app.get(path, token).await;
    let etag = response
        .headers()
        .get("etag")
        .map(|value| value.to_str().expect("an ASCII ETag").to_owned());
    let status = response.status().as_u16();
    let body = response.json().await.expect("a JSON body");
    (status, body, etag)
}

/// The one line the command wrote on stderr, after it failed.
#[track_caller]
fn failure(out: &Out) -> String {
    assert_eq!(out.status.code(), Some(1), "{out:#?}");
    assert!(out.stdout.is_empty(), "{out:#?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{out:#?}");
    lines[0].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projects_are_created_shown_changed_and_deleted_on_both_stores() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        require!(backend);
        let (app, token, cwd) = served(backend).await;
        let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
        let org1 = org_id(1);

        // Piped: the object as the API wrote it, which getProject answers too.
        let out = run(&[
            "projects",
            "create",
            "--org",
            &org1,
            "--slug",
            "shop",
            "--description",
            "My shop",
        ]);
        let created = out.json();
        assert!(out.stderr.is_empty(), "{out:#?}");
        let id = created["id"].as_str().expect("an id").to_owned();
        let path = format!("/v1/projects/{id}");
        let (status, stored, etag) = fetched(&app, &token, &path).await;
        assert_eq!(status, 200);
        assert_eq!(created, stored);
        assert_eq!(
            (created["slug"].as_str(), created["description"].as_str()),
            (Some("shop"), Some("My shop"))
        );

        // --file gives members; the flags beside it win.
        let file = cwd.path().join("project.json");
        std::fs::write(
            &file,
            json!({"organization_id": org1, "slug": "from-file", "type": "mcp",
                   "description": "file"})
            .to_string(),
        )
        .unwrap();
        let file = file.display().to_string();
        let other = run(&[
            "projects",
            "create",
            "--file",
            &file,
            "--slug",
            "flag",
            "--json",
            "slug,type,description",
        ])
        .json();
        assert_eq!(
            other,
            json!({"slug": "flag", "type": "mcp", "description": "file"})
        );

        // Errors: the API's message, with every member its params name.
        let said = failure(&run(&[
            "projects", "create", "--org", &org1, "--slug", "shop",
        ]));
        assert_eq!(
            said,
            "error: the organization already has a project with the slug shop"
        );
        let std_in = json!({"slug": "Bad-", "type": "nope"}).to_string();
        let args = ["projects", "create", "--org", &org1, "--file", "-"];
        let said = failure(&client_fed(&app, &token, cwd.path(), &args, Some(&std_in)));
        assert!(
            said.starts_with("error: 2 members of the request body are wrong: "),
            "{said}"
        );
        assert!(
            said.contains("slug must be") && said.contains("type must be one of"),
            "{said}"
        );
        let member = app.token("u2").await;
        let out = client(
            &app,
            &member,
            cwd.path(),
            &["projects", "create", "--org", &org1, "--slug", "nope"],
        );
        assert!(failure(&out).starts_with("error: "), "{out:#?}");
        let (_, forbidden) = {
            let response = app
                .client
                .post(app.url("/v1/projects"))
                .bearer_auth(&member)
                .json(&json!({"organization_id": org1, "slug": "nope"}))
                .send()
                .await
                .unwrap();
            json_of(response).await
        };
        assert_eq!(
            failure(&out),
            format!("error: {}", forbidden["error"]["message"].as_str().unwrap())
        );

        // get: --json FIELDS, --jq, --show-etag (the ETag alone on stderr).
        let out = run(&["projects", "get", &id, "--json", "id,slug", "--show-etag"]);
        assert_eq!(out.json(), json!({"id": id, "slug": "shop"}));
        assert_eq!(Some(out.stderr.trim_end()), etag.as_deref());
        assert_eq!(
            run(&["projects", "get", &id, "--jq", ".slug"]).stdout,
            "shop\n"
        );
        assert_eq!(
            failure(&run(&["projects", "get", "nothing"])),
            "error: no project \"nothing\" (or this token cannot see it)"
        );

        // update: a stale --if-match changes nothing; the right one does.
        let update = |etag: &str| {
            run(&[
                "projects",
                "update",
                &id,
                "--description",
                "changed",
                "--if-match",
                etag,
            ])
        };
        let out = update("\"stale\"");
        assert!(
            failure(&out).contains("If-Match does not match"),
            "{out:#?}"
        );
        assert_eq!(fetched(&app, &token, &path).await.1, stored);
        let etag = etag.expect("an ETag");
        let updated = update(&etag).json();
        let (_, now, new_etag) = fetched(&app, &token, &path).await;
        assert_eq!(updated, now);
        assert_eq!(updated["description"], "changed");
        assert_ne!(new_etag.as_deref(), Some(etag.as_str()));
        assert_eq!(
            failure(&run(&["projects", "update", &id])),
            "error: nothing to change: give --slug, --description or --file"
        );

        // delete: refused without --yes when stdin is not a terminal.
        let said = failure(&run(&["projects", "delete", &id]));
        assert_eq!(
            said,
            format!(
                "error: stdin is not a terminal, so there is no one to confirm: pass --yes to delete project {id}"
            )
        );
        assert_eq!(fetched(&app, &token, &path).await.0, 200);
        // delete --if-match: a stale ETag deletes nothing; the current one does.
        let out = run(&["projects", "delete", &id, "--yes", "--if-match", &etag]);
        assert!(
            failure(&out).contains("If-Match does not match"),
            "{out:#?}"
        );
        assert_eq!(fetched(&app, &token, &path).await.0, 200);
        let new_etag = new_etag.expect("an ETag");
        let deleted = run(&["projects", "delete", &id, "--yes", "--if-match", &new_etag]).json();
        assert_eq!(
            deleted,
            json!({"object": "project", "id": id, "deleted": true})
        );
        assert_eq!(fetched(&app, &token, &path).await.0, 404);
        assert_eq!(
            failure(&run(&["projects", "delete", &id, "--yes"])),
            format!("error: no project {id:?} (or this token cannot see it)")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_shows_text_and_is_asked_before_a_delete() {
    let (app, token, cwd) = served(Backend::Sqlite).await;
    let url = app.url("");
    let env = [
        ("PROXYDECK_URL", url.as_str()),
        ("PROXYDECK_TOKEN", token.as_str()),
    ];
    let org1 = org_id(1);
    let out = on_terminal(
        cwd.path(),
        &["projects", "create", "--org", &org1, "--slug", "shop"],
        &env,
        100,
    );
    assert!(out.status.success(), "{out:#?}");
    let first = out.stdout.lines().next().unwrap_or_default();
    let id = first
        .strip_prefix("created project ")
        .unwrap_or_else(|| panic!("{out:#?}"))
        .to_owned();
    let path = format!("/v1/projects/{id}");
    let (_, _, etag) = fetched(&app, &token, &path).await;
    let lines: Vec<Vec<&str>> = out
        .stdout
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["id", id.as_str()], "{out:#?}");
    assert!(lines.contains(&vec!["slug", "shop"]), "{out:#?}");
    assert_eq!(
        lines.last().unwrap(),
        &vec!["etag", etag.as_deref().unwrap()],
        "{out:#?}"
    );

    // Asked; anything but y keeps it.
    let ask = format!("delete project {id}? It cannot be undone. [y/N]");
    let out = on_terminal_with_input(cwd.path(), &["projects", "delete", &id], &env, 100, "n\n");
    assert_eq!(out.status.code(), Some(1), "{out:#?}");
    assert!(out.stdout.contains(&ask), "{out:#?}");
    assert!(
        out.stdout
            .contains("error: not confirmed: nothing was deleted"),
        "{out:#?}"
    );
    assert_eq!(fetched(&app, &token, &path).await.0, 200);
    let out = on_terminal_with_input(cwd.path(), &["projects", "delete", &id], &env, 100, "y\n");
    assert!(out.status.success(), "{out:#?}");
    assert!(
        out.stdout.contains(&format!("deleted project {id}")),
        "{out:#?}"
    );
    assert_eq!(fetched(&app, &token, &path).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_created_once_shown_and_deleted_on_both_stores() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        require!(backend);
        let (app, token, cwd) = served(backend).await;
        let run = |args: &[&str]| client(&app, &token, cwd.path(), args);

        let before = OffsetDateTime::now_utc();
        let out = run(&["tokens", "create", "--name", "ci", "--expires-in", "1d"]);
        let created = out.json();
        assert_eq!(
            out.stderr,
            "The secret (`token`) is shown this once and never again: store it now.\n"
        );
        let secret = created["token"].as_str().expect("the secret").to_owned();
        assert!(secret.starts_with("pxd_"), "{created}");
        let id = created["id"].as_str().expect("an id").to_owned();
        let expires = OffsetDateTime::parse(created["expires_at"].as_str().unwrap(), &Rfc3339)
            .expect("a timestamp");
        let day = time::Duration::days(1);
        assert!(
            expires >= before + day - time::Duration::seconds(1)
                && expires <= OffsetDateTime::now_utc() + day,
            "{created}"
        );
        // The secret works; read back, it is a hint only.
        let path = format!("/v1/api_tokens/{id}");
        let (status, read, _) = fetched(&app, &secret, &path).await;
        assert_eq!(status, 200);
        assert_ne!(read["token"], created["token"]);
        assert_eq!(read["name"], "ci");

        let said = failure(&run(&[
            "tokens",
            "create",
            "--name",
            "old",
            "--expires-at",
            "2020-01-01T00:00:00Z",
        ]));
        assert_eq!(said, "error: expires_at must be in the future");

        let said = failure(&run(&["tokens", "delete", &id]));
        assert!(said.contains("pass --yes to delete API token"), "{said}");
        assert_eq!(fetched(&app, &token, &path).await.0, 200);
        let deleted = run(&["tokens", "delete", &id, "--yes"]).json();
        assert_eq!(
            deleted,
            json!({"object": "api_token", "id": id, "deleted": true})
        );
        assert_eq!(fetched(&app, &token, &path).await.0, 404);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_are_created_and_activated_and_rolled_back_on_both_stores() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        require!(backend);
        let (app, token, cwd) = served(backend).await;
        app.seed(vec![project("site", 1, 1), settings("site", 1, true)])
            .await;
        let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
        let listing = || async {
            let (status, body, _) = fetched(&app, &token, "/v1/projects/site/proxy-settings").await;
            assert_eq!(status, 200);
            body["data"].as_array().expect("data").clone()
        };
        let active = || async {
            listing()
                .await
                .iter()
                .filter(|item| item["is_active"] == json!(true))
                .map(|item| item["revision"].as_u64().unwrap())
                .collect::<Vec<_>>()
        };

        // From stdin: the new revision, inactive, as the listing has it.
        let revision = json!({"description": "two",
            "backends": [{"name": "origin", "address": "o.example:443"}],
            "routes": [{"path": "/", "backend_name": "origin"}]});
        let args = ["proxy-settings", "create", "site", "--file", "-"];
        let created =
            client_fed(&app, &token, cwd.path(), &args, Some(&revision.to_string())).json();
        assert_eq!(
            (&created["revision"], &created["is_active"]),
            (&json!(2), &json!(false))
        );
        assert_eq!(listing().await[0], created);
        assert_eq!(active().await, [1]);

        // A file with bad members: one line naming each.
        let file = cwd.path().join("bad.json");
        std::fs::write(
            &file,
            json!({"description": "x", "revision": 3,
                   "backends": [{"name": "o", "address": "o:1", "default": 7}]})
            .to_string(),
        )
        .unwrap();
        let said = failure(&run(&[
            "proxy-settings",
            "create",
            "site",
            "--file",
            &file.display().to_string(),
        ]));
        assert!(
            said.contains("backends[0].default") && said.contains("revision"),
            "{said}"
        );

        // Activate 2, then roll back to 1; a stale --if-match changes nothing.
        let activated = run(&["proxy-settings", "activate", "site", "2"]).json();
        assert_eq!(activated["is_active"], true);
        assert_eq!(active().await, [2]);
        let out = run(&[
            "proxy-settings",
            "activate",
            "site",
            "1",
            "--if-match",
            "\"stale\"",
        ]);
        assert!(failure(&out).contains("If-Match"), "{out:#?}");
        assert_eq!(active().await, [2]);
        let out = run(&[
            "proxy-settings",
            "activate",
            "site",
            "1",
            "--jq",
            ".is_active",
        ]);
        assert_eq!(out.stdout, "true\n", "{out:#?}");
        assert_eq!(active().await, [1]);
        assert_eq!(
            failure(&run(&["proxy-settings", "activate", "site", "9"])),
            "error: no such proxy settings revision"
        );
    }
}
