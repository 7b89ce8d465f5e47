//! `proxydeck org|members|invite|invitations` (`docs/teams.md`, "Terminal
//! client"): the real binary against an in-process service, compared with
//! what the API answers to raw requests. Organizations are named by slug,
//! members by email; the destructive commands refuse to go on without
//! `--yes` when no one can be asked; `invitations accept` without a token
//! keeps the new user's token in the profile, which the next command uses.

use std::os::unix::fs::PermissionsExt;

use super::*;

/// `ada` (admin of org-1, "Org 1", which has the project `site`), `bob`
/// (member of org-1), `cy` (admin of org-2); a token of `ada`'s, and an
/// empty folder to run the client in.
async fn team() -> (TestApp, String, TempDir) {
    let app = TestApp::spawn_with(Backend::Sqlite, test_options(), StoreOptions::default()).await;
    app.seed(vec![
        org(1),
        org(2),
        json!({"object": "user", "id": "ada", "email": "Ada@Example.com", "name": "Ada",
               "roles": {org_id(1): "admin"}}),
        json!({"object": "user", "id": "bob", "email": "bob@example.com", "name": "Bob",
               "roles": {org_id(1): "member"}}),
        json!({"object": "user", "id": "cy", "email": "cy@example.com", "name": "Cy",
               "roles": {org_id(2): "admin"}}),
        project("site", 1, 1),
    ])
    .await;
    let token = app.token("ada").await;
    (app, token, tempfile::tempdir().expect("a temporary folder"))
}

/// The client in `cwd` with only `--url`: no token, no profile but the
/// one it may find in `cwd`.
fn bare(app: &TestApp, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Out {
    let mut command = proxydeck(cwd);
    command.args(args).args(["--url", &app.url("")]);
    finish(command, stdin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organizations_are_listed_created_renamed_and_deleted_by_slug() {
    let (app, token, cwd) = team().await;
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);

    // Listed, piped: the API's page as it wrote it.
    let (_, page) = app.get_json("/v1/organizations", &token).await;
    assert_eq!(run(&["org", "list"]).json(), page["data"]);

    // Created: the organization, its creator its admin.
    let created = run(&["org", "create", "Team Two", "--slug", "team-two"]).json();
    assert_eq!(created["slug"], json!("team-two"), "{created}");
    assert_eq!(created["name"], json!("Team Two"), "{created}");
    let id = created["id"].as_str().expect("an id").to_owned();
    let (_, read) = app
        .get_json(&format!("/v1/organizations/{id}"), &token)
        .await;
    assert_eq!(read, created);
    // The token's cached organizations learn of the new one within the
    // cache's delay (docs/teams.md, "Losing access", the other way).
    app.clock.advance(CACHE_TTL);
    let admins = run(&[
        "members",
        "list",
        "team-two",
        "--jq",
        ".[] | .email + \" \" + .role",
    ]);
    assert_eq!(admins.stdout, "Ada@Example.com admin\n", "{admins:#?}");

    // As a table: id, slug, name, when it was created.
    let out = run(&["org", "list", "-o", "table"]);
    assert!(out.status.success(), "{out:#?}");
    let rows = table(&out.stdout, &["ID", "SLUG", "NAME", "CREATED (UTC)"]);
    let created_at = minute_of(&created["created_at"], "-");
    assert!(
        rows.contains(&vec![
            id.clone(),
            "team-two".into(),
            "Team Two".into(),
            created_at
        ]),
        "{}",
        out.stdout
    );
    assert_eq!(rows.len(), 2, "{}", out.stdout);

    // Renamed by its slug, and given another; the old slug names nothing.
    let renamed = run(&["org", "rename", "team-two", "Team 2", "--slug", "team-2"]).json();
    assert_eq!(
        (&renamed["id"], &renamed["name"], &renamed["slug"]),
        (&json!(id), &json!("Team 2"), &json!("team-2")),
        "{renamed}"
    );
    run(&["org", "rename", "team-two", "X"]).error(&["no organization \"team-two\""]);
    let env = [
        ("PROXYDECK_URL", app.url("")),
        ("PROXYDECK_TOKEN", token.clone()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = on_terminal(cwd.path(), &["org", "rename", &id, "Team Deux"], &env, 200);
    assert!(out.status.success(), "{out:#?}");
    assert!(
        out.stdout
            .starts_with("renamed organization team-2\n  id  "),
        "{out:#?}"
    );

    // Deleted: never without --yes when no one can be asked; refused
    // while it has projects; then gone from the listing.
    run(&["org", "delete", "team-2"]).error(&["--yes", "delete organization team-2"]);
    let slugs = run(&["org", "list", "--jq", ".[].slug"]);
    assert!(slugs.stdout.contains("team-2\n"), "{slugs:#?}");
    let out = run(&["org", "delete", "org-1", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{out:#?}");
    out.error(&["project"]);
    assert_eq!(
        run(&["org", "delete", "team-2", "--yes"]).json(),
        json!({"object": "organization", "id": id, "deleted": true})
    );
    assert_eq!(run(&["org", "list", "--jq", ".[].slug"]).stdout, "org-1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_are_listed_given_roles_and_removed_by_email() {
    let (app, token, cwd) = team().await;
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);

    // Listed by the organization's slug, piped: the API's page.
    let (_, page) = app
        .get_json(&format!("/v1/organizations/{}/users", org_id(1)), &token)
        .await;
    assert_eq!(run(&["members", "list", "org-1"]).json(), page["data"]);
    let only = run(&[
        "members",
        "list",
        "org-1",
        "--role",
        "member",
        "--jq",
        ".[].email",
    ]);
    assert_eq!(only.stdout, "bob@example.com\n", "{only:#?}");
    let out = run(&["members", "list", "org-1", "-o", "table"]);
    assert!(out.status.success(), "{out:#?}");
    let rows = table(
        &out.stdout,
        &["ID", "EMAIL", "ROLE", "NAME", "CREATED (UTC)"],
    );
    let mut seen: Vec<Vec<String>> = rows.iter().map(|row| row[..4].to_vec()).collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ["ada", "Ada@Example.com", "admin", "Ada"],
            ["bob", "bob@example.com", "member", "Bob"]
        ]
    );

    // A role changed, the member named by their email in any case.
    let member = run(&["members", "role", "org-1", "BOB@example.com", "editor"]).json();
    assert_eq!(
        (&member["id"], &member["role"]),
        (&json!("bob"), &json!("editor"))
    );
    // The last admin cannot be demoted: the API's 409 in one line.
    let out = run(&["members", "role", "org-1", "ada@example.com", "member"]);
    assert_eq!(out.status.code(), Some(1), "{out:#?}");
    out.error(&["last admin"]);
    // On a terminal: what changed, in words.
    let url = app.url("");
    let env = [
        ("PROXYDECK_URL", url.as_str()),
        ("PROXYDECK_TOKEN", token.as_str()),
    ];
    let out = on_terminal(
        cwd.path(),
        &["members", "role", "org-1", "bob", "admin"],
        &env,
        200,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_eq!(out.stdout, "bob@example.com is now admin of org-1.\n");
    // An email that is no member's: said so, nothing sent.
    run(&["members", "role", "org-1", "eve@example.com", "admin"])
        .error(&["no member with the email \"eve@example.com\""]);

    // Removed: never without --yes when no one can be asked.
    run(&["members", "remove", "org-1", "bob@example.com"])
        .error(&["--yes", "remove bob@example.com from organization org-1"]);
    let emails = run(&["members", "list", "org-1", "--jq", ".[].email"]);
    assert!(emails.stdout.contains("bob@example.com"), "{emails:#?}");
    assert_eq!(
        run(&["members", "remove", "org-1", "bob@example.com", "--yes"]).json(),
        json!({"object": "user", "id": "bob", "deleted": true})
    );
    let emails = run(&["members", "list", "org-1", "--jq", ".[].email"]);
    assert_eq!(emails.stdout, "Ada@Example.com\n");
    // Leaving as the last admin: refused.
    run(&["members", "remove", "org-1", "ada@example.com", "--yes"]).error(&["last admin"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invitation_is_sent_listed_revoked_and_accepted_into_the_profile() {
    let (app, token, cwd) = team().await;
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);

    // Invited, piped (no mail server): the invitation with its link and
    // secret, and a note on stderr that they are shown once.
    let out = run(&[
        "invite",
        "newt@example.com",
        "--org",
        "org-1",
        "--role",
        "editor",
    ]);
    assert!(out.status.success(), "{out:#?}");
    let invitation = one_json_document(&out.stdout);
    assert_eq!(invitation["delivery"], json!("link"), "{invitation}");
    assert_eq!(invitation["organization_id"], json!(org_id(1)));
    assert_eq!(invitation["role"], json!("editor"));
    let secret = invitation["secret"].as_str().expect("a secret").to_owned();
    let accept_url = invitation["accept_url"]
        .as_str()
        .expect("a link")
        .to_owned();
    assert!(secret.starts_with("pxi_"), "{secret}");
    assert!(out.stderr.contains("shown this once"), "{out:#?}");

    // On a terminal: the link and the secret, said to be shown once.
    let url = app.url("");
    let env = [
        ("PROXYDECK_URL", url.as_str()),
        ("PROXYDECK_TOKEN", token.as_str()),
    ];
    let out = on_terminal(
        cwd.path(),
        &[
            "invite",
            "gone@example.com",
            "--org",
            "org-1",
            "--role",
            "member",
        ],
        &env,
        200,
    );
    assert!(out.status.success(), "{out:#?}");
    assert!(
        out.stdout.starts_with(
            "Invited gone@example.com to org-1 as member.\nPass this link on to gone@example.com; it is shown this once and never again:\n  http"
        ),
        "{out:#?}"
    );
    assert!(out.stdout.contains("\n  pxi_"), "{out:#?}");

    // Listed: piped, the API's page; as a table, the organization by name.
    let (_, page) = app.get_json("/v1/invitations", &token).await;
    assert_eq!(run(&["invitations", "list"]).json(), page["data"]);
    assert!(!run(&["invitations", "list"]).stdout.contains("pxi_"));
    let by_org = run(&["invitations", "list", "--org", "org-1", "--jq", ".[].email"]);
    assert_eq!(
        by_org.stdout, "gone@example.com\nnewt@example.com\n",
        "{by_org:#?}"
    );
    let out = run(&["invitations", "list", "-o", "table"]);
    assert!(out.status.success(), "{out:#?}");
    let rows = table(
        &out.stdout,
        &[
            "ID",
            "EMAIL",
            "ROLE",
            "ORGANIZATION",
            "STATUS",
            "EXPIRES (UTC)",
            "CREATED (UTC)",
        ],
    );
    assert_eq!(rows.len(), 2, "{}", out.stdout);
    assert_eq!(
        rows[1][1..5],
        ["newt@example.com", "editor", "Org 1", "pending"]
    );

    // Revoked by its id.
    let gone = page["data"][0]["id"].as_str().expect("an id").to_owned();
    assert_eq!(
        run(&["invitations", "revoke", &gone]).json(),
        json!({"object": "invitation", "id": gone, "deleted": true})
    );
    let left = run(&["invitations", "list", "--jq", ".[].email"]);
    assert_eq!(left.stdout, "newt@example.com\n");

    // Accepted with no token and no profile: a new user, whose first
    // token is kept in the profile (never shown), and who is signed in.
    let newcomer = tempfile::tempdir().expect("a temporary folder");
    let out = bare(
        &app,
        newcomer.path(),
        &[
            "invitations",
            "accept",
            "-",
            "--email",
            "Newt@example.com",
            "--name",
            "Newt",
        ],
        Some(&format!("{secret}\n")),
    );
    assert!(out.status.success(), "{out:#?}");
    let file = newcomer
        .path()
        .join(".config/proxydeck/profiles/default.toml");
    assert!(
        out.stdout.starts_with(&format!(
            "Joined organization {} as editor.\nSigned in to {url} as Newt <Newt@example.com> (id ",
            org_id(1)
        )),
        "{out:#?}"
    );
    assert!(
        out.stdout.ends_with(&format!(
            "): the new API token is kept in {} (profile \"default\").\n",
            file.display()
        )),
        "{out:#?}"
    );
    let saved = std::fs::read_to_string(&file).expect("the profile");
    assert!(saved.contains("pxd_"), "no token kept");
    assert!(!out.stdout.contains(&secret) && !out.stderr.contains(&secret));
    let kept_token = saved
        .lines()
        .find_map(|line| line.strip_prefix("token = "))
        .expect("a token line")
        .trim_matches('"')
        .to_owned();
    assert!(!out.stdout.contains(&kept_token), "the new token is shown");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // The next command works with it: the newcomer is an editor of org-1.
    let out = bare(
        &app,
        newcomer.path(),
        &[
            "members",
            "list",
            "org-1",
            "--role",
            "editor",
            "--jq",
            ".[].email",
        ],
        None,
    );
    assert_eq!(out.stdout, "Newt@example.com\n", "{out:#?}");
    // The secret works once: the API's one 404, in one line.
    let again = tempfile::tempdir().expect("a temporary folder");
    bare(
        &app,
        again.path(),
        &[
            "invitations",
            "accept",
            &secret,
            "--email",
            "newt@example.com",
        ],
        None,
    )
    .error(&["cannot be accepted"]);
    assert!(
        !again.path().join(".config").exists(),
        "a profile was written"
    );
    // The link is the console's, with the secret.
    assert!(accept_url.ends_with(&format!("/console/#/accept?invitation={secret}")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_in_user_accepts_with_their_token_and_json_keeps_no_secret() {
    let (app, token, cwd) = team().await;
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
    let invite = |email: &str| {
        let invitation = run(&["invite", email, "--org", "org-1", "--role", "member"]).json();
        invitation["secret"].as_str().expect("a secret").to_owned()
    };

    // cy, signed in (a token in the environment), joins org-1: no profile.
    let secret = invite("CY@example.com");
    let cy = app.token("cy").await;
    let cy_folder = tempfile::tempdir().expect("a temporary folder");
    let out = client(
        &app,
        &cy,
        cy_folder.path(),
        &[
            "invitations",
            "accept",
            &secret,
            "--email",
            "cy@example.com",
            "--json",
        ],
    );
    let accepted = out.json();
    assert_eq!(
        accepted["object"],
        json!("invitation_acceptance"),
        "{accepted}"
    );
    assert_eq!(accepted["user"]["id"], json!("cy"));
    assert!(
        accepted.get("api_token").is_none_or(Value::is_null),
        "{accepted}"
    );
    assert!(
        !cy_folder.path().join(".config").exists(),
        "a profile was written"
    );
    let members = run(&[
        "members",
        "list",
        "org-1",
        "--jq",
        ".[] | .id + \" \" + .role",
    ]);
    assert!(members.stdout.contains("cy member\n"), "{members:#?}");

    // Without a token but for an email that has an account: the API's 409.
    let secret = invite("bob@example.com");
    let fresh = tempfile::tempdir().expect("a temporary folder");
    bare(
        &app,
        fresh.path(),
        &[
            "invitations",
            "accept",
            &secret,
            "--email",
            "bob@example.com",
        ],
        None,
    )
    .error(&["sign in"]);

    // A new user with --json: the answer, its token's secret a hint, and
    // where it is kept.
    let secret = invite("dee@example.com");
    let out = bare(
        &app,
        fresh.path(),
        &[
            "invitations",
            "accept",
            &secret,
            "--email",
            "dee@example.com",
            "--json",
        ],
        None,
    );
    let accepted = out.json();
    let shown = accepted["api_token"]["token"].as_str().expect("a hint");
    assert!(shown.starts_with("pxd_****"), "{accepted}");
    let file = fresh.path().join(".config/proxydeck/profiles/default.toml");
    assert_eq!(
        accepted["profile"]["file"],
        json!(file.display().to_string())
    );
    assert_eq!(accepted["user"]["email"], json!("dee@example.com"));
    let status = bare(&app, fresh.path(), &["auth", "status", "--json"], None).json();
    assert_eq!(status["email"], json!("dee@example.com"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hourly_quota_fails_at_once_saying_when_to_retry() {
    // One invitation an hour: the second is refused with a Retry-After of
    // most of an hour, which the client does not wait out.
    let options = ServiceOptions {
        invitations: proxydeck::mail::InvitationOptions {
            per_organization_per_hour: 1,
            ..Default::default()
        },
        ..test_options()
    };
    let app = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    app.seed(vec![org(1), user("u1", &[1])]).await;
    let token = app.token("u1").await;
    let cwd = tempfile::tempdir().expect("a temporary folder");
    let run = |args: &[&str]| client(&app, &token, cwd.path(), args);
    run(&[
        "invite",
        "a@example.com",
        "--org",
        "org-1",
        "--role",
        "member",
    ])
    .json();
    let started = std::time::Instant::now();
    let out = run(&[
        "invite",
        "b@example.com",
        "--org",
        "org-1",
        "--role",
        "member",
    ]);
    assert!(started.elapsed() < Duration::from_secs(20), "it waited");
    assert_eq!(out.status.code(), Some(1), "{out:#?}");
    let line = out.error(&["invitations in an hour", "retry in "]);
    assert_eq!(line.matches("retry in").count(), 1, "{line}");
}
