//! `admin org create`, `admin user create` and `admin project delete`.

use super::*;

#[test]
fn org_create_prints_the_organization() {
    let sandbox = Sandbox::new();
    let before = Timestamp::now();
    let given = "0190B7A4-9A6E-7C3E-8F00-1A2B3C4D5E6F";
    let organization = sandbox.json(&[
        "admin",
        "org",
        "create",
        "--name",
        "Acme Corp",
        "--id",
        given,
    ]);
    let after = Timestamp::now();
    assert_eq!(organization["id"], json!(given.to_lowercase()));
    assert_eq!(organization["name"], json!("Acme Corp"));
    let created = wire_time(&organization["created_at"]);
    assert!(before <= created && created <= after, "{organization}");
    assert_no_null(&organization);

    // Without --id: a new UUIDv7.
    let generated = sandbox.json(&["admin", "org", "create", "--name", "Globex"]);
    assert_uuid_v7(&generated["id"]);
    assert_eq!(generated["name"], json!("Globex"));
    wire_time(&generated["created_at"]);
    assert_ne!(generated["id"], organization["id"]);

    // Without --json: human text, still success.
    let human = sandbox.run(&["admin", "org", "create", "--name", "Initech"]);
    assert!(human.status.success(), "{human:#?}");
    assert!(!human.stdout.trim().is_empty());
}

#[test]
fn org_create_refuses_bad_ids_empty_names_and_duplicates() {
    let sandbox = Sandbox::new();
    let id = "0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f";
    for bad in [
        "nope",
        "0190b7a49a6e7c3e8f001a2b3c4d5e6f",
        "{0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f}",
        "0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6",
    ] {
        sandbox
            .run(&["admin", "org", "create", "--name", "Acme", "--id", bad])
            .error(&["id"]);
    }
    sandbox
        .run(&["admin", "org", "create", "--name", "", "--id", id])
        .error(&["name"]);
    sandbox
        .run(&["admin", "org", "create", "--name", "", "--json"])
        .error(&["name"]);

    sandbox.json(&["admin", "org", "create", "--name", "Acme", "--id", id]);
    sandbox
        .run(&[
            "admin", "org", "create", "--name", "Again", "--id", id, "--json",
        ])
        .error(&[id]);
    // The same id in capitals is the same organization.
    sandbox
        .run(&[
            "admin",
            "org",
            "create",
            "--name",
            "Again",
            "--id",
            &id.to_uppercase(),
        ])
        .error(&[id]);
}

#[tokio::test]
async fn user_create_prints_the_user_with_its_roles() {
    let sandbox = Sandbox::new();
    let (first, second) = (org_id(1), org_id(0xabc));
    sandbox.json(&["admin", "org", "create", "--name", "One", "--id", &first]);
    sandbox.json(&["admin", "org", "create", "--name", "Two", "--id", &second]);

    let user = sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "ops@example.com",
        "--org",
        &first,
        "--org",
        &format!("{}:member", second.to_uppercase()),
        "--id",
        "ops-user_1",
        "--name",
        "Ops Team",
    ]);
    assert_eq!(user["id"], json!("ops-user_1"));
    assert_eq!(user["email"], json!("ops@example.com"));
    assert_eq!(user["name"], json!("Ops Team"));
    assert_eq!(
        user["roles"],
        json!({first.clone(): "admin", second.clone(): "member"})
    );
    assert_no_null(&user);

    // Without --id: a new UUIDv7.
    let generated = sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "dev@example.com",
        "--org",
        &first,
    ]);
    assert_uuid_v7(&generated["id"]);
    assert_eq!(generated["roles"], json!({first.clone(): "admin"}));
    assert_eq!(generated["name"], json!("dev"), "the email's part before @");

    // The user sees the projects of both organizations.
    sandbox.import(&[project("in-first", 1, 0), project("in-second", 0xabc, 1)]);
    let secret = sandbox.token("ops-user_1", "ci");
    let server = sandbox.serve(&[]);
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["in-first", "in-second"]);
}

#[test]
fn user_create_refuses_unknown_organizations_bad_emails_and_bad_ids() {
    let sandbox = Sandbox::new();
    let known = org_id(1);
    let unknown = org_id(99);
    sandbox.json(&["admin", "org", "create", "--name", "One", "--id", &known]);

    sandbox
        .run(&[
            "admin",
            "user",
            "create",
            "--email",
            "a@example.com",
            "--org",
            &known,
            "--org",
            &unknown,
            "--json",
        ])
        .error(&[&unknown]);
    for bad in [
        "not-an-email",
        "two@at@example.com",
        "with space@example.com",
        "@example.com",
    ] {
        sandbox
            .run(&["admin", "user", "create", "--email", bad, "--org", &known])
            .error(&["email"]);
    }
    sandbox
        .run(&[
            "admin",
            "user",
            "create",
            "--email",
            "a@example.com",
            "--org",
            &known,
            "--id",
            "has space",
        ])
        .error(&["id"]);
    sandbox
        .run(&[
            "admin",
            "user",
            "create",
            "--email",
            "a@example.com",
            "--org",
            "not-a-uuid",
        ])
        .error(&["--org not-a-uuid", "UUID"]);
    for bad in [
        format!("{known}:owner"),
        format!("{known}:"),
        format!("{known}:Admin"),
    ] {
        sandbox
            .run(&[
                "admin",
                "user",
                "create",
                "--email",
                "a@example.com",
                "--org",
                &bad,
            ])
            .error(&["admin, editor or member"]);
    }
    sandbox
        .run(&[
            "admin",
            "user",
            "create",
            "--email",
            "a@example.com",
            "--org",
            &known,
            "--org",
            &format!("{known}:member"),
        ])
        .error(&["given twice"]);

    // Nothing of the refused users was written: the ids are still free.
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "a@example.com",
        "--org",
        &known,
        "--id",
        "u1",
    ]);
    sandbox
        .run(&[
            "admin",
            "user",
            "create",
            "--email",
            "b@example.com",
            "--org",
            &known,
            "--id",
            "u1",
        ])
        .error(&["u1"]);
}

#[tokio::test]
async fn project_delete_removes_it_from_the_listings() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    sandbox.import(&[
        project("p1", 1, 0),
        project("p2", 1, 1),
        project("p3", 1, 2),
        settings("p2", 1, true),
    ]);
    let server = sandbox.serve(&[]);
    assert_eq!(
        listed_ids(&server.projects(&secret).await),
        ["p1", "p2", "p3"]
    );
    assert_eq!(server.revisions("p2", &secret).await.len(), 1);

    let deleted = sandbox.json(&["admin", "project", "delete", "p2"]);
    assert!(deleted.is_object(), "{deleted}");
    assert_eq!(listed_ids(&server.projects(&secret).await), ["p1", "p3"]);
    let (status, body) = server.get("/v1/projects/p2/proxy-settings", &secret).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(assert_error_shape(&body), "not_found_error");

    sandbox
        .run(&["admin", "project", "delete", "no-such-project", "--json"])
        .error(&["no-such-project"]);
    assert_eq!(listed_ids(&server.projects(&secret).await), ["p1", "p3"]);
}

#[tokio::test]
async fn admin_audit_lists_the_writes_newest_first() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    let server = sandbox.serve(&[]);
    let client = client_builder().build().unwrap();
    let created: Value = client
        .post(server.url("/v1/projects"))
        .bearer_auth(&secret)
        .header("content-type", "application/json")
        .header("x-request-id", "audit-req-1")
        .body(json!({"organization_id": org_id(1), "slug": "audited"}).to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().expect("created").to_owned();
    let changed = client
        .post(server.url(&format!("/v1/projects/{id}")))
        .bearer_auth(&secret)
        .header("content-type", "application/json")
        .body(json!({"cache": true}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);

    let records = sandbox.json(&["admin", "audit"]);
    let records = records.as_array().expect("an array");
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[0]["operation"], "updateProject");
    assert_eq!(records[1]["operation"], "createProject");
    assert_eq!(records[1]["request_id"], "audit-req-1");
    for record in records {
        let mut members: Vec<&str> = record
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        members.sort();
        assert_eq!(
            members,
            [
                "at",
                "object",
                "object_id",
                "operation",
                "request_id",
                "token_id",
                "user_id",
                "version_after",
                "version_before"
            ]
        );
        assert_eq!(record["object_id"], json!(id));
        assert_eq!(record["user_id"], "u1");
        assert!(!secret.contains(record["token_id"].as_str().unwrap()));
    }
    assert_eq!(
        (&records[0]["version_before"], &records[0]["version_after"]),
        (&json!(1), &json!(2))
    );
    let limited = sandbox.json(&["admin", "audit", "--limit", "1", "--since", "1h"]);
    assert_eq!(limited.as_array().unwrap().len(), 1);
    let nobody = sandbox.json(&["admin", "audit", "--user", "u9"]);
    assert_eq!(nobody, json!([]));
    let later = sandbox.json(&["admin", "audit", "--since", "2999-01-01T00:00:00Z"]);
    assert_eq!(later, json!([]));
    let table = sandbox.run(&["admin", "audit", "--object", &id]);
    assert!(table.stdout.contains("createProject"), "{}", table.stdout);
    sandbox
        .run(&["admin", "audit", "--since", "yesterday"])
        .error(&["--since"]);
}
