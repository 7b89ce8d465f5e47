//! Export, import, export: identical bytes, with every optional field set.

use super::*;

#[tokio::test]
async fn export_import_export_gives_identical_bytes_with_every_optional_field() {
    let data = rich_data();
    let a = Sandbox::new();

    let before_import = Timestamp::now();
    let imported = a.import(&data.lines);
    let after_import = Timestamp::now();
    assert_eq!(
        imported,
        json!({"organizations": 5, "users": 5, "projects": 43, "proxy_settings": 13, "domains": 3})
    );

    // Tokens exist in the store, one of them revoked; none is exported.
    let token_name = "token-name-that-must-not-be-exported";
    let created = a.json(&[
        "admin", "token", "create", "--user", "u-multi", "--name", token_name,
    ]);
    let secret = created["token"].as_str().unwrap().to_owned();
    let token_id = created["id"].as_str().unwrap().to_owned();
    let revoked = a.json(&[
        "admin",
        "token",
        "create",
        "--user",
        "u-a",
        "--name",
        token_name,
        "--expires-in",
        "30d",
    ]);
    let revoked_id = revoked["id"].as_str().unwrap().to_owned();
    a.json(&["admin", "token", "revoke", &revoked_id]);
    // A deleted project leaves the export, with its revisions.
    a.json(&["admin", "project", "delete", data.doomed]);

    let file1 = a.path().join("file1.ndjson");
    let counts = export_to(&a, &file1);
    assert_eq!(
        counts,
        json!({"organizations": 5, "users": 5, "projects": 42, "proxy_settings": 11, "domains": 2})
    );
    let text1 = read(&file1);
    let lines = parse_export(&text1);
    assert_eq!(lines.len(), 5 + 5 + 42 + 11 + 2);
    assert_export_order(&lines);

    // Nothing of the tokens, nothing of the deleted project.
    for needle in [
        "api_token",
        "pxd_",
        token_name,
        &token_id,
        &revoked_id,
        &secret,
        data.doomed,
    ] {
        assert!(!text1.contains(needle), "the export holds {needle:?}");
    }
    for line in &lines {
        // A domain's `verification_token` is its TXT record's value, not
        // a secret: it is exported (docs/cli.md).
        for field in ["token", "hint", "digest", "revoked_at", "deleted_at"] {
            assert!(line.get(field).is_none(), "{field} in {line}");
        }
    }

    // Organizations: as given, times in UTC; ties by id; the undated one
    // took the time of import.
    let organizations = of_kind(&lines, "organization");
    let ids: Vec<&str> = organizations
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [org_id(2), org_id(1), org_id(0x20), org_id(0x30), org_id(5)]
    );
    for (exported, given) in organizations.iter().zip([
        &data.lines[1],
        &data.lines[0],
        &data.lines[3],
        &data.lines[2],
    ]) {
        let mut expected = given.clone();
        expected["created_at"] = json!(wire(given["created_at"].as_str().unwrap()));
        // A slug made from the name when none was given; `pro` by default.
        if given.get("slug").is_none() {
            expected["slug"] = exported["slug"].clone();
        }
        if given.get("type").is_none() {
            expected["type"] = json!("pro");
        }
        assert_eq!(*exported, &expected);
    }
    let slugs: Vec<&str> = organizations
        .iter()
        .map(|o| o["slug"].as_str().unwrap())
        .collect();
    assert_eq!(
        slugs,
        [
            "n-c-d-quotes-back-slash",
            "acme",
            "tie-smaller-id",
            "tie-larger-id",
            "undated"
        ]
    );
    assert_eq!(organizations[1]["type"], "perso");
    let undated = Timestamp::parse(organizations[4]["created_at"].as_str().unwrap()).unwrap();
    assert!(before_import <= undated && undated <= after_import);
    assert_eq!(organizations[4]["name"], json!("Undated"));

    // Users: their organizations sorted by id.
    let users = of_kind(&lines, "user");
    let ids: Vec<&str> = users.iter().map(|u| u["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["u-single", "u-multi", "u-a", "u-b", "u-undated"]);
    assert_eq!(
        users[1],
        &json!({"object": "user", "id": "u-multi", "email": "multi@example.com",
                "name": "Multi \"Person\" 🚀",
                "roles": {org_id(1): "admin", org_id(2): "member", org_id(0x30): "editor"},
                "created_at": "2026-01-05T00:00:00.000Z"})
    );
    // `organizations` (the older form): admin in each; the name from the
    // email.
    assert_eq!(
        users[0],
        &json!({"object": "user", "id": "u-single", "email": "ünï@exämple.com", "name": "ünï",
                "roles": {org_id(2): "admin"}, "created_at": "2026-01-04T00:00:00.999Z"})
    );
    // Given as [0x20, 5]: roles by id.
    assert_eq!(
        users[2]["roles"],
        json!({org_id(5): "admin", org_id(0x20): "admin"})
    );
    assert_eq!(
        serde_json::to_string(&users[2]["roles"]).unwrap(),
        format!(r#"{{"{}":"admin","{}":"admin"}}"#, org_id(5), org_id(0x20))
    );
    // Given in capitals: normalised.
    assert_eq!(users[3]["roles"], json!({org_id(0x20): "member"}));

    // Projects: exactly as given, but for the times, now in UTC.
    let projects = of_kind(&lines, "project");
    let given: Vec<&Value> = data
        .lines
        .iter()
        .filter(|l| l["object"] == json!("project") && l["id"] != json!(data.doomed))
        .collect();
    assert_eq!(projects.len(), given.len());
    for exported in &projects {
        let id = exported["id"].as_str().unwrap();
        let source = given
            .iter()
            .find(|g| g["id"] == json!(id))
            .unwrap_or_else(|| panic!("{id} was not imported"));
        let mut expected = (*source).clone();
        for field in ["created_at", "updated_at"] {
            expected[field] = json!(wire(source[field].as_str().unwrap()));
        }
        assert_eq!(*exported, &expected, "{id}");
        assert_eq!(exported.as_object().unwrap().len(), 32, "{id}");
    }
    let position = |id: &str| projects.iter().position(|p| p["id"] == json!(id)).unwrap();
    assert!(position("tie-a") + 1 == position("tie-b"), "ties go by id");
    assert!(
        data.projects
            .iter()
            .all(|id| id == data.doomed || text1.contains(id.as_str()))
    );

    // Proxy settings: exactly as given.
    let settings = of_kind(&lines, "proxy_settings");
    for exported in &settings {
        let source = data
            .lines
            .iter()
            .find(|l| {
                l["object"] == json!("proxy_settings")
                    && l["project_id"] == exported["project_id"]
                    && l["revision"] == exported["revision"]
            })
            .unwrap_or_else(|| panic!("not imported: {exported}"));
        assert_eq!(*exported, source);
    }
    let proj_03: Vec<u64> = settings
        .iter()
        .filter(|s| s["project_id"] == json!("proj-03"))
        .map(|s| s["revision"].as_u64().unwrap())
        .collect();
    assert_eq!(proj_03, [1, 2, 9, 10]);

    // Domains: in their one form, in creation order, times in UTC; the
    // token kept, or made for the line without one; the deleted
    // project's gone with it.
    let domains = of_kind(&lines, "domain");
    assert_eq!(
        domains[1],
        &json!({"object": "domain", "project_id": "proj-01", "name": "shop.example.com",
                "verification_token": "0123456789abcdef0123456789abcdef",
                "dns_status": true, "ssl_status": true,
                "created_at": "2026-02-01T00:00:00.000Z",
                "updated_at": "2026-02-02T00:00:00.000Z"})
    );
    assert_eq!(domains[0]["name"], "*.wild.example");
    assert_eq!(domains[0]["dns_status"], false);
    let made = domains[0]["verification_token"].as_str().unwrap();
    assert_eq!(made.len(), 32, "{made}");

    // Export to stdout: the same bytes.
    let out = a.run(&["admin", "export", "--quiet"]);
    assert!(out.status.success(), "{out:#?}");
    assert!(
        out.stdout == text1,
        "export to stdout differs from the file"
    );

    // Into an empty store B, and out again: the same bytes.
    let b = Sandbox::new();
    let imported = b.json(&["admin", "import", &file1.display().to_string()]);
    assert_eq!(imported, counts);
    let file2 = b.path().join("file2.ndjson");
    assert_eq!(export_to(&b, &file2), counts);
    let text2 = read(&file2);
    assert!(text1 == text2, "export, import, export changed the bytes");

    // Importing the export again into A changes nothing.
    a.json(&["admin", "import", &file1.display().to_string()]);
    let file3 = a.path().join("file3.ndjson");
    export_to(&a, &file3);
    assert!(read(&file3) == text1, "re-importing the export changed A");

    // B's API lists what the export holds.
    let member = b.token("u-multi", "reader");
    let server = b.serve(&[]);
    let listed = server.projects(&member).await;
    let visible: Vec<&Value> = projects
        .iter()
        .copied()
        .filter(|p| {
            [org_id(1), org_id(2), org_id(0x30)]
                .contains(&p["organization_id"].as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(listed.iter().collect::<Vec<_>>(), visible);
    for project in ["proj-00", "tie-b", "tie-a"] {
        let revisions = server.revisions(project, &member).await;
        let expected: Vec<Value> = settings
            .iter()
            .filter(|s| s["project_id"] == json!(project))
            .map(|s| {
                let mut listed = (*s).clone();
                listed.as_object_mut().unwrap().remove("project_id");
                listed
            })
            .collect();
        assert_eq!(revisions, expected, "{project}");
    }
}
