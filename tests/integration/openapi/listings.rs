//! Real answers of every listing against the documented 200 schemas.

use proxydeck::domain::time::Timestamp;

use super::*;

/// Every listing, on data that sets and leaves unset every optional
/// member and holds every enum value, answers bodies that validate against
/// the documented 200 schema, and together they show every documented
/// member and enum value: the document promises nothing the service does
/// not write.
#[tokio::test]
async fn every_listing_answer_validates_and_covers_the_document() {
    let contract = contract();
    let app = TestApp::spawn(Backend::Sqlite).await;
    let mut lines = vec![
        org(1),
        org(2),
        json!({"object": "organization", "id": org_id(3), "name": "Home", "type": "perso"}),
        json!({"object": "user", "id": "u1", "email": "u1@example.com",
               "roles": {org_id(1): "admin", org_id(2): "editor", org_id(3): "member"}}),
        json!({"object": "user", "id": "u2", "email": "u2@example.com",
               "roles": {org_id(1): "editor"}}),
        json!({"object": "user", "id": "u3", "email": "u3@example.com",
               "roles": {org_id(1): "member"}}),
    ];
    lines.extend(rich_projects());
    lines.push(project("p-empty", 2, 500));
    lines.extend(rich_settings("p-full"));
    app.seed(lines).await;
    let (_, token) = app.token_with("u1", "caller", None).await;
    let later = Timestamp::now().plus_seconds(86_400);
    let (expiring, _) = app.token_with("u1", "expiring", later).await;
    assert_eq!(app.get(API_TOKENS, &token).await.status(), 200);
    wait_for_last_used_at(&app, &token).await;
    changes_of_every_type(&app).await;
    edges_of_every_kind(&app, &token).await;
    domains_of_every_kind(&app, &token).await;
    let invitation = invitations_of_every_status(&app, &token).await;
    // An avatar shown by getMe, getUser and the members listing.
    let (status, user, _) = send(
        &app,
        Method::POST,
        "/v1/users/u1",
        &token,
        &[],
        Some(&json!({"avatar_url": "https://cdn.example.com/u1.png"})),
    )
    .await;
    assert_eq!(status, 200, "{user}");

    let org2 = org_id(2);
    let expiring_id = expiring.id;
    let requests = [
        (PROJECTS, "/v1/projects".to_owned()),
        (
            PROJECTS,
            "/v1/projects?order_direction=ASC&limit=2&start_key=p-plain".into(),
        ),
        (
            PROJECTS,
            format!("/v1/projects?organization_id={org2}&order_direction=DESC&limit=100"),
        ),
        (
            PROJECTS,
            format!("/v1/projects?organization_id={org2}&order_direction=ASC&start_key=p-empty"),
        ),
        (API_TOKENS, "/v1/api_tokens".into()),
        (
            API_TOKENS,
            format!(
                "/v1/api_tokens?name=expiring&limit=1&order_direction=ASC&start_key={expiring_id}"
            ),
        ),
        (API_TOKENS, "/v1/api_tokens?name=expiring&limit=1".into()),
        (PROXY_SETTINGS, "/v1/projects/p-full/proxy-settings".into()),
        (
            PROXY_SETTINGS,
            "/v1/projects/p-full/proxy-settings?limit=1&order_direction=ASC&start_key=1".into(),
        ),
        (PROXY_SETTINGS, "/v1/projects/p-empty/proxy-settings".into()),
        (ME, ME.into()),
        (ORGANIZATIONS, ORGANIZATIONS.into()),
        (
            ORGANIZATIONS,
            format!(
                "/v1/organizations?type=pro&limit=1&order_direction=ASC&start_key={}",
                org_id(1)
            ),
        ),
        (ORGANIZATIONS, "/v1/organizations?type=perso".into()),
        (
            ORGANIZATIONS,
            format!("/v1/organizations?type=perso&start_key={}", org_id(3)),
        ),
        (ORGANIZATION, format!("/v1/organizations/{}", org_id(2))),
        (MEMBERS, format!("/v1/organizations/{}/users", org_id(1))),
        (
            MEMBERS,
            format!(
                "/v1/organizations/{}/users?role=member&limit=1&order_direction=ASC&start_key=u3",
                org_id(1)
            ),
        ),
        (USER, "/v1/users/u1".into()),
        (USER, "/v1/users/u2".into()),
        (MY_ORGANIZATION, MY_ORGANIZATION.into()),
        (EDGES, "/v1/projects/p-moved/edges".into()),
        (EDGES, "/v1/projects/p-empty/edges".into()),
        (
            EDGES,
            "/v1/projects/p-moved/edges?limit=1&start_key=edge-a".into(),
        ),
        (
            EDGES,
            "/v1/projects/p-moved/edges?order=attention&limit=2".into(),
        ),
        (DOMAINS, "/v1/projects/p-full/domains".into()),
        (DOMAINS, "/v1/projects/p-empty/domains".into()),
        (
            DOMAINS,
            "/v1/projects/p-full/domains?limit=2&start_key=b.example.com".into(),
        ),
        (INVITATIONS, INVITATIONS.into()),
        // After the oldest, newest first: an empty page.
        (
            INVITATIONS,
            format!("/v1/invitations?start_key={invitation}"),
        ),
        (
            INVITATIONS,
            format!(
                "/v1/invitations?organization_id={}&limit=1&order_direction=ASC&start_key={invitation}",
                org_id(1)
            ),
        ),
        (CHANGES, "/v1/changes".into()),
        (CHANGES, "/v1/changes?after=0&limit=1000&wait=0s".into()),
        (CHANGES, "/v1/changes?after=99999999".into()),
        (
            CHANGES,
            format!(
                "/v1/changes?after=0&organization_id={}&project_id=p-moved",
                org_id(3)
            ),
        ),
    ];
    // Every documented query parameter is used (and so accepted) above.
    for path in [
        PROJECTS,
        API_TOKENS,
        PROXY_SETTINGS,
        ORGANIZATIONS,
        CHANGES,
        EDGES,
        DOMAINS,
        INVITATIONS,
        MEMBERS,
    ] {
        let used: BTreeSet<String> = requests
            .iter()
            .filter(|(operation, _)| *operation == path)
            .filter_map(|(_, request)| request.split_once('?'))
            .flat_map(|(_, query)| form_urlencoded_names(query))
            .collect();
        assert_eq!(
            used,
            contract.query_parameters(&contract.operation(path)),
            "{path}"
        );
    }
    let mut shapes = Shapes::default();
    for (path, request) in requests {
        let (status, body) = app.get_json(&request, &token).await;
        assert_eq!(status, 200, "{request}: {body}");
        let operation = contract.operation(path);
        let schema = contract.json_schema_of(&contract.response(&operation, 200).unwrap());
        contract.assert_valid(&schema, &body, &request);
        shapes.record(&contract, &schema, &body);
    }

    // getMe's `role` is one role, organization 1's: admin (the types'
    // check above covers every value).
    let differences = shapes.differences(
        &contract,
        &[
            "/components/schemas/UserWithRoles/properties/role = member",
            "/components/schemas/UserWithRoles/properties/role = editor",
        ],
    );
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    let every_resource: BTreeSet<String> = contract.doc["components"]["schemas"]
        .as_object()
        .unwrap()
        .iter()
        // Request bodies are no answer; the write operations' own answers
        // are checked by `writes::token_and_proxy_settings_answers_validate`
        // and the project write tests.
        .filter(|(name, schema)| {
            schema.get("properties").is_some()
                && !name.contains("Error")
                && !name.ends_with("Input")
                && ![
                    "DeletedProject",
                    "DeletedEdge",
                    "DeletedDomain",
                    "DeletedOrganization",
                    "DeletedOrganizationUser",
                    "CreatedApiToken",
                    "DeletedApiToken",
                    // createInvitation's, deleteInvitation's and
                    // acceptInvitation's answers: checked by
                    // `writes::invitation_answers_validate`.
                    "CreatedInvitation",
                    "DeletedInvitation",
                    "InvitationAcceptance",
                    "ProxySettingsDryRun",
                    "JsonPatchOperation",
                    // The rollouts' answers: checked, each member and
                    // value, by `writes::rollout_answers_validate`.
                    "EdgeTarget",
                    "Rollout",
                    "RolloutEdge",
                    "RolloutList",
                    "RolloutPlan",
                    "RolloutStage",
                    "RolloutStageState",
                ]
                .contains(&name.as_str())
        })
        .map(|(name, _)| format!("/components/schemas/{name}"))
        .collect();
    let reached: BTreeSet<String> = shapes.objects().into_iter().map(str::to_owned).collect();
    assert_eq!(
        every_resource.difference(&reached).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "object schemas no answer reached"
    );
}

fn form_urlencoded_names(query: &str) -> impl Iterator<Item = String> + '_ {
    query
        .split('&')
        .filter_map(|pair| pair.split('=').next())
        .map(str::to_owned)
}

/// Changes of every type in organization 3, through the import and the
/// operator's removal (the feed's own tests make them through the API).
async fn changes_of_every_type(app: &TestApp) {
    let mut described = settings("p-moved", 2, true);
    described["description"] = json!("described again");
    for lines in [
        vec![
            project("p-gone", 3, 0),
            project("p-moved", 3, 0),
            settings("p-moved", 1, true),
            settings("p-moved", 2, false),
        ],
        vec![
            project("p-moved", 3, 5),
            settings("p-moved", 1, false),
            settings("p-moved", 2, true),
        ],
        vec![described],
    ] {
        app.seed(lines).await;
    }
    app.store
        .run(RemoveProject("p-gone".into()))
        .await
        .expect("the project goes");
}

/// Invitations of organization 1 of every role, pending and expired (and
/// one deleted, which leaves the list); answers the oldest's id.
async fn invitations_of_every_status(app: &TestApp, token: &str) -> String {
    let mut made = Vec::new();
    for (email, role) in [
        ("a@example.com", "admin"),
        ("b@example.com", "editor"),
        ("c@example.com", "member"),
        ("d@example.com", "member"),
    ] {
        let body = json!({"organization_id": org_id(1), "email": email, "role": role});
        let (status, created, _) = send(
            app,
            Method::POST,
            "/v1/invitations",
            token,
            &[],
            Some(&body),
        )
        .await;
        assert_eq!(status, 200, "{created}");
        made.push(created["id"].as_str().unwrap().to_owned());
    }
    app.data.execute(&format!(
        "UPDATE invitations SET expires_at = created_at WHERE id = '{}'",
        made[0]
    ));
    let gone = format!("/v1/invitations/{}", made[3]);
    let (status, _, _) = send(app, Method::DELETE, &gone, token, &[], None).await;
    assert_eq!(status, 200);
    made.swap_remove(0)
}

/// Edges of project p-moved: one applied, one failed, one stale.
async fn edges_of_every_kind(app: &TestApp, token: &str) {
    for report in [
        json!({"name": "edge-a", "revision": 2, "status": "applied"}),
        json!({"name": "edge-b", "revision": 2, "status": "failed", "error": "it broke"}),
        json!({"name": "edge-c", "revision": 1, "status": "applied"}),
    ] {
        let path = "/v1/projects/p-moved/edges";
        let (status, body, _) = send(app, Method::POST, path, token, &[], Some(&report)).await;
        assert_eq!(status, 200, "{body}");
    }
    app.data.execute(
        "UPDATE edge_reports SET reported_at = reported_at - 600000 WHERE name = 'edge-c'",
    );
    // A rollout begun and aborted (in organization 1, where the caller
    // may activate, of a revision that passes the checks): the feed's
    // rollout.* changes.
    let path = "/v1/projects/p-full/proxy-settings";
    let body = revision_body("rolled out", "origin.example:443");
    let (status, body, _) = send(app, Method::POST, path, token, &[], Some(&body)).await;
    assert_eq!(status, 200, "{body}");
    let path = "/v1/projects/p-full/rollouts";
    let body = json!({"revision": body["revision"], "bake_seconds": 3600});
    let (status, body, _) = send(app, Method::POST, path, token, &[], Some(&body)).await;
    assert_eq!(status, 201, "{body}");
    let abort = "/v1/projects/p-full/rollouts/1/abort";
    let (status, body, _) = send(app, Method::POST, abort, token, &[], None).await;
    assert_eq!(status, 200, "{body}");
}

/// Domains of project p-full in every state, each check's result among
/// them (made in the store: no DNS server is needed to show the shapes),
/// and a domain added, reported on and removed through the API, for the
/// feed's `domain.*` changes.
async fn domains_of_every_kind(app: &TestApp, token: &str) {
    let path = "/v1/projects/p-full/domains";
    let body = json!({"name": "made.example.com"});
    let (status, made, _) = send(app, Method::POST, path, token, &[], Some(&body)).await;
    assert_eq!(status, 200, "{made}");
    app.data
        .execute("UPDATE domains SET verified = 1 WHERE name = 'made.example.com'");
    let one = format!("{path}/made.example.com");
    let body = json!({"ssl_status": true});
    let (status, reported, _) = send(app, Method::POST, &one, token, &[], Some(&body)).await;
    assert_eq!(status, 200, "{reported}");
    let (status, gone, _) = send(app, Method::DELETE, &one, token, &[], None).await;
    assert_eq!(status, 200, "{gone}");
    let now = Timestamp::now().as_millis();
    let later = now + 86_400_000;
    // name, verified, ssl, last result, checked, next check, missing since
    let states = [
        (
            "a.example.com",
            0,
            0,
            "NULL",
            "NULL",
            later.to_string(),
            "NULL".to_owned(),
        ),
        (
            "b.example.com",
            0,
            0,
            "'absent'",
            "NOW",
            later.to_string(),
            "NULL".into(),
        ),
        (
            "c.example.com",
            0,
            0,
            "'mismatch'",
            "NOW",
            "NULL".into(),
            "NULL".into(),
        ),
        (
            "d.example.com",
            0,
            0,
            "'lookup_failed'",
            "NOW",
            later.to_string(),
            "NULL".into(),
        ),
        (
            "e.example.com",
            0,
            0,
            "'verified_elsewhere'",
            "NOW",
            later.to_string(),
            "NULL".into(),
        ),
        (
            "*.f.example.com",
            1,
            1,
            "'found'",
            "NOW",
            later.to_string(),
            "NULL".into(),
        ),
        (
            "g.example.com",
            1,
            0,
            "'absent'",
            "NOW",
            later.to_string(),
            now.to_string(),
        ),
    ];
    for (name, verified, ssl, result, checked, next, missing) in states {
        let checked = checked.replace("NOW", &now.to_string());
        app.data.execute(&format!(
            "INSERT INTO domains (project_id, name, organization_number, token, verified, ssl,
                                  created_at, updated_at, version, last_result, checked_at,
                                  next_check_at, misses, missing_since)
             SELECT id, '{name}', organization_number, 'tok', {verified}, {ssl}, {now}, {now}, 1,
                    {result}, {checked}, {next}, 0, {missing}
               FROM projects WHERE id = 'p-full'"
        ));
    }
}
