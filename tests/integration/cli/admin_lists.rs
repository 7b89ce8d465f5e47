//! `admin org list`, `admin user list` and `admin token list`: what export
//! shows, token hints and revocations, never a secret.

use super::*;
use crate::client::{column, ids_of, table, text_of};

#[test]
fn admin_org_and_user_list_show_what_export_shows() {
    let sandbox = Sandbox::new();
    sandbox.json(&["migrate"]);

    // An empty store: an empty array, a table of headers.
    assert_eq!(sandbox.json(&["admin", "org", "list"]), json!([]));
    assert_eq!(sandbox.json(&["admin", "user", "list"]), json!([]));
    let out = sandbox.run(&["admin", "org", "list"]);
    assert!(out.status.success(), "{out:#?}");
    assert!(table(&out.stdout, &["ID", "NAME", "CREATED"]).is_empty());

    sandbox.import(&[
        json!({"object": "organization", "id": org_id(1), "name": "Acme Corp",
               "created_at": "2026-01-02T00:00:00+02:00"}),
        json!({"object": "organization", "id": org_id(2), "name": "Ünïcødé, \"quoted\"",
               "created_at": "2026-01-01T00:00:00Z"}),
        json!({"object": "organization", "id": org_id(3), "name": "Undated"}),
        json!({"object": "user", "id": "u-late", "email": "late@example.com",
               "organizations": [org_id(3), org_id(1)], "created_at": "2026-03-01T00:00:00Z"}),
        json!({"object": "user", "id": "u-early", "email": "early@example.com",
               "organizations": [org_id(2)], "created_at": "2026-02-01T00:00:00Z"}),
    ]);
    // And through the command line.
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "cli@example.com",
        "--org",
        &format!("{}:member", org_id(2)),
        "--org",
        &org_id(1),
        "--id",
        "u-cli",
    ]);

    let out = sandbox.run(&["admin", "export", "--quiet"]);
    assert!(out.status.success(), "{out:#?}");
    let exported: Vec<Value> = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<Value> {
        exported
            .iter()
            .filter(|line| line["object"] == json!(kind))
            .cloned()
            .collect()
    };

    // --json: one array, the objects exactly as exported, oldest first.
    let organizations = sandbox.json(&["admin", "org", "list"]);
    assert_eq!(organizations, Value::Array(of("organization")));
    assert_eq!(
        ids_of(organizations.as_array().unwrap()),
        [org_id(2), org_id(1), org_id(3)]
    );
    let users = sandbox.json(&["admin", "user", "list"]);
    assert_eq!(users, Value::Array(of("user")));
    assert_eq!(
        ids_of(users.as_array().unwrap()),
        ["u-early", "u-late", "u-cli"]
    );
    // The --json flag may come first.
    let out = finish(
        {
            let mut command = proxydeck(sandbox.path());
            command
                .arg("--json")
                .args(sandbox.database_args())
                .args(["admin", "user", "list"]);
            command
        },
        None,
    );
    assert_eq!(out.json(), users);

    // Without --json: an aligned table, one row per object, same order.
    let out = sandbox.run(&["admin", "org", "list"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    let rows = table(&out.stdout, &["ID", "NAME", "CREATED"]);
    let expected: Vec<Vec<String>> = organizations
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            vec![
                text_of(&o["id"]),
                text_of(&o["name"]),
                text_of(&o["created_at"]),
            ]
        })
        .collect();
    assert_eq!(rows, expected);

    let out = sandbox.run(&["admin", "user", "list"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    let rows = table(&out.stdout, &["ID", "EMAIL", "NAME", "ROLES", "CREATED"]);
    assert_eq!(column(&rows, 0), ["u-early", "u-late", "u-cli"]);
    for (row, user) in rows.iter().zip(users.as_array().unwrap()) {
        assert_eq!(row[1], text_of(&user["email"]));
        assert_eq!(row[2], text_of(&user["name"]));
        let listed: Vec<String> = user["roles"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(org, role)| format!("{org}:{}", text_of(role)))
            .collect();
        assert_eq!(row[3], listed.join(","), "{row:?}");
        assert_eq!(row[4], text_of(&user["created_at"]));
    }
    assert_eq!(
        rows[2][3],
        format!("{}:admin,{}:member", org_id(1), org_id(2))
    );
}

#[tokio::test]
async fn admin_token_list_shows_hints_and_revocations_never_secrets() {
    let sandbox = Sandbox::new();
    let first_secret = sandbox.directory(1, "u1");
    sandbox.directory(2, "u2");
    let create = |name: &str, extra: &[&str]| -> Value {
        let mut args = vec!["admin", "token", "create", "--user", "u1", "--name", name];
        args.extend_from_slice(extra);
        sandbox.json(&args)
    };
    // Expires in a second: expired by the time the table is drawn.
    let brief = create("brief", &["--expires-in", "1s"]);
    let ci = create("ci", &["--expires-in", "90d"]);
    let doomed = create("doomed", &[]);
    let doomed_id = doomed["id"].as_str().unwrap();
    let before_revoke = Timestamp::now();
    sandbox.json(&["admin", "token", "revoke", doomed_id]);
    let after_revoke = Timestamp::now();
    let secrets = [
        first_secret.clone(),
        text_of(&brief["token"]),
        text_of(&ci["token"]),
        text_of(&doomed["token"]),
    ];

    let listed = sandbox.json(&["admin", "token", "list", "--user", "u1"]);
    let listed = listed.as_array().expect("an array").clone();
    assert_eq!(listed.len(), 4, "{listed:#?}");
    let listed_text = serde_json::to_string(&listed).unwrap();
    for secret in &secrets {
        assert!(!listed_text.contains(secret.as_str()), "a secret is listed");
    }
    // Oldest first; the token made by `directory` is named "cli".
    assert_eq!(listed[0]["name"], json!("cli"));
    for (entry, (created, secret)) in listed[1..].iter().zip([
        (&brief, &secrets[1]),
        (&ci, &secrets[2]),
        (&doomed, &secrets[3]),
    ]) {
        let hint = format!("pxd_****{}", &secret[secret.len() - 4..]);
        assert_eq!(entry["token"], json!(hint), "{entry}");
        let mut expected = created.clone();
        expected["token"] = json!(hint);
        if entry["id"] == json!(doomed_id) {
            let revoked_at = Timestamp::parse(entry["revoked_at"].as_str().expect("revoked_at"))
                .expect("a timestamp");
            assert!(
                before_revoke <= revoked_at && revoked_at <= after_revoke,
                "{entry}"
            );
            expected["revoked_at"] = entry["revoked_at"].clone();
            // Revoking is an update.
            expected["updated_at"] = entry["updated_at"].clone();
        }
        assert_eq!(entry, &expected);
    }
    assert!(
        listed
            .iter()
            .filter(|t| t["id"] != json!(doomed_id))
            .all(|t| t.get("revoked_at").is_none()),
        "{listed:#?}"
    );
    for entry in &listed {
        let token = entry["token"].as_str().unwrap();
        assert!(
            token.starts_with("pxd_****") && token.len() == 12,
            "{entry}"
        );
        assert_eq!(entry["object"], json!("api_token"));
        assert_eq!(entry["user_id"], json!("u1"));
        assert!(entry.as_object().unwrap().values().all(|v| !v.is_null()));
    }

    // The API lists the same objects for the tokens not revoked (newest
    // first, without revoked_at).
    let server = sandbox.serve(&["--last-used-flush-interval", "1h"]);
    let api = server.tokens(&secrets[2]).await;
    let mut expected: Vec<Value> = listed
        .iter()
        .filter(|t| t["id"] != json!(doomed_id))
        .cloned()
        .collect();
    expected.reverse();
    assert_eq!(api, expected);
    drop(server);

    // A table: one row per token, with its status.
    let expires = Timestamp::parse(brief["expires_at"].as_str().unwrap()).unwrap();
    // The command reads the system's clock.
    until("the brief token's expiry passes", || {
        Timestamp::now() >= expires
    })
    .await;
    let out = sandbox.run(&["admin", "token", "list", "--user", "u1"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    for secret in &secrets {
        assert!(!out.stdout.contains(secret.as_str()), "a secret is shown");
    }
    let rows = table(
        &out.stdout,
        &[
            "ID",
            "NAME",
            "TOKEN",
            "STATUS",
            "LAST USED",
            "EXPIRES",
            "CREATED",
        ],
    );
    assert_eq!(column(&rows, 0), ids_of(&listed));
    assert_eq!(column(&rows, 1), ["cli", "brief", "ci", "doomed"]);
    assert_eq!(column(&rows, 3), ["active", "expired", "active", "revoked"]);
    for (row, entry) in rows.iter().zip(&listed) {
        assert_eq!(row[2], text_of(&entry["token"]));
        assert_eq!(
            row[5],
            text_of(entry.get("expires_at").unwrap_or(&Value::Null))
        );
        assert_eq!(row[6], text_of(&entry["created_at"]));
    }

    // Another user's tokens only; a user without tokens; an unknown user.
    let other = sandbox.json(&["admin", "token", "list", "--user", "u2"]);
    assert_eq!(other.as_array().unwrap().len(), 1, "{other}");
    assert_eq!(other[0]["user_id"], json!("u2"));
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "x@example.com",
        "--org",
        &org_id(1),
        "--id",
        "tokenless",
    ]);
    assert_eq!(
        sandbox.json(&["admin", "token", "list", "--user", "tokenless"]),
        json!([])
    );
    sandbox
        .run(&["admin", "token", "list", "--user", "nobody", "--json"])
        .error(&["nobody"]);
    sandbox
        .run(&["admin", "token", "list", "--user", "nobody"])
        .error(&["nobody"]);
}
