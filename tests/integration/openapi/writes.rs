//! Real answers of the token and proxy-settings operations (and
//! deleteEdge), successes and errors, against the document.

use crate::openapi_contract::escape;

use super::*;

/// Real answers of createApiToken, getApiToken, deleteApiToken,
/// createProjectProxySettings and updateProjectProxySettings, successes
/// (dry runs included) and errors, validate against what the document
/// says of each, headers included; the dry runs' answers show every
/// member and value their schemas document.
#[tokio::test]
async fn token_and_proxy_settings_answers_validate() {
    let contract = contract();
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![
        org(1),
        user("u1", &[1]),
        user("u2", &[1]),
        project("p1", 1, 0),
        project("p2", 1, 0),
    ])
    .await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let token = app.token("u1").await;
    let member = app.token("u2").await;
    let revision = json!({"description": "d",
        "backends": [{"name": "a", "address": "a.example:443", "default": true}],
        "routes": [{"path": "/", "backend_name": "a", "rank": "1"}]});
    let shapes = std::cell::RefCell::new(Shapes::default());
    let check = |method: &str, path: &str, status: u16, answer: (u16, Value, Option<String>)| {
        let operation = format!("/paths/{}/{method}", escape(path));
        let what = format!("{status} {method} {path}");
        assert_eq!(answer.0, status, "{what}: {}", answer.1);
        let documented = contract
            .response(&operation, status)
            .unwrap_or_else(|| panic!("{what} is not documented"));
        let schema = contract.json_schema_of(&documented);
        contract.assert_valid(&schema, &answer.1, &what);
        shapes.borrow_mut().record(&contract, &schema, &answer.1);
        // A dry run is no stored object, nor is a removed edge report:
        // they have no version.
        if status == 200
            && !["proxy_settings_dry_run", "edge"]
                .contains(&answer.1["object"].as_str().unwrap_or_default())
        {
            let tag = answer.2.expect("an ETag");
            contract.assert_header_valid(&format!("{documented}/headers/ETag"), &tag, &what);
        }
    };
    let tokens = "/v1/api_tokens";
    let one_token = "/v1/api_tokens/{id}";
    let settings = "/v1/projects/{id}/proxy-settings";
    let one_revision = "/v1/projects/{id}/proxy-settings/{revision}";
    let created = send(
        &app,
        Method::POST,
        tokens,
        &token,
        &[],
        Some(&json!({"name": "n"})),
    )
    .await;
    let id = created.1["id"].as_str().unwrap().to_owned();
    check("post", tokens, 200, created);
    let bad = send(&app, Method::POST, tokens, &token, &[], Some(&json!({}))).await;
    check("post", tokens, 400, bad);
    let path = format!("/v1/api_tokens/{id}");
    check(
        "get",
        one_token,
        200,
        send(&app, Method::GET, &path, &token, &[], None).await,
    );
    check(
        "get",
        one_token,
        404,
        send(&app, Method::GET, &path, &member, &[], None).await,
    );
    check(
        "delete",
        one_token,
        200,
        send(&app, Method::DELETE, &path, &token, &[], None).await,
    );
    check(
        "delete",
        one_token,
        404,
        send(&app, Method::DELETE, &path, &token, &[], None).await,
    );
    let path = "/v1/projects/p1/proxy-settings";
    check(
        "post",
        settings,
        200,
        send(&app, Method::POST, path, &token, &[], Some(&revision)).await,
    );
    check(
        "post",
        settings,
        403,
        send(&app, Method::POST, path, &member, &[], Some(&revision)).await,
    );
    check(
        "post",
        settings,
        400,
        send(&app, Method::POST, path, &token, &[], Some(&json!({}))).await,
    );
    let unknown = "/v1/projects/nope/proxy-settings";
    check(
        "post",
        settings,
        404,
        send(&app, Method::POST, unknown, &token, &[], Some(&revision)).await,
    );
    let active = json!({"is_active": true});
    let path = "/v1/projects/p1/proxy-settings/1";
    check(
        "post",
        one_revision,
        200,
        send(&app, Method::POST, path, &token, &[], Some(&active)).await,
    );
    let stale = [("if-match", "\"v1\"")];
    check(
        "post",
        one_revision,
        412,
        send(&app, Method::POST, path, &token, &stale, Some(&active)).await,
    );
    check(
        "post",
        one_revision,
        403,
        send(&app, Method::POST, path, &member, &[], Some(&active)).await,
    );
    let path = "/v1/projects/p1/proxy-settings/x";
    check(
        "post",
        one_revision,
        400,
        send(&app, Method::POST, path, &token, &[], Some(&active)).await,
    );
    let path = "/v1/projects/p1/proxy-settings/9";
    check(
        "post",
        one_revision,
        404,
        send(&app, Method::POST, path, &token, &[], Some(&active)).await,
    );
    // Dry runs: of a project's first revision (none active), of a
    // revision that changes and adds to the active one, of one that
    // removes from it, and of an activation.
    let dry = "/v1/projects/p2/proxy-settings?dry_run=true";
    check(
        "post",
        settings,
        200,
        send(&app, Method::POST, dry, &token, &[], Some(&revision)).await,
    );
    let mut more = revision.clone();
    more["backends"][0]["address"] = json!("b.example:443");
    more["routes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"path": "/b", "backend_name": "a", "rank": "2"}));
    let mut fewer = revision.clone();
    fewer["routes"] = json!([]);
    let dry = "/v1/projects/p1/proxy-settings?dry_run=true";
    for body in [more, fewer] {
        check(
            "post",
            settings,
            200,
            send(&app, Method::POST, dry, &token, &[], Some(&body)).await,
        );
    }
    assert_eq!(
        send(
            &app,
            Method::POST,
            "/v1/projects/p1/proxy-settings",
            &token,
            &[],
            Some(&revision)
        )
        .await
        .0,
        200
    );
    let dry = "/v1/projects/p1/proxy-settings/2?dry_run=true";
    check(
        "post",
        one_revision,
        200,
        send(&app, Method::POST, dry, &token, &[], Some(&active)).await,
    );
    // A revision stored before the checks before activation.
    let mut old = crate::helpers::settings("p1", 3, false);
    old["backends"][0]["address"] = json!("no port");
    app.seed(vec![old]).await;
    let path = "/v1/projects/p1/proxy-settings/3";
    check(
        "post",
        one_revision,
        400,
        send(&app, Method::POST, path, &token, &[], Some(&active)).await,
    );
    // deleteEdge: a report on p1's first revision, removed; again (404);
    // by a member (403).
    let report = json!({"name": "edge-1", "revision": 1, "status": "applied"});
    let path = "/v1/projects/p1/edges";
    assert_eq!(
        send(&app, Method::POST, path, &token, &[], Some(&report))
            .await
            .0,
        200
    );
    let one_edge = "/v1/projects/{id}/edges/{name}";
    let path = "/v1/projects/p1/edges/edge-1";
    for (caller, status) in [(&token, 200), (&token, 404), (&member, 403)] {
        check(
            "delete",
            one_edge,
            status,
            send(&app, Method::DELETE, path, caller, &[], None).await,
        );
    }
    let shapes = shapes.into_inner();
    for reached in [
        "DeletedEdge",
        "CreatedApiToken",
        "DeletedApiToken",
        "ApiToken",
        "ProxySettings",
        "ProxySettingsDryRun",
        "JsonPatchOperation",
    ] {
        let pointer = format!("/components/schemas/{reached}");
        assert!(shapes.objects().contains(pointer.as_str()), "{reached}");
    }
    // Every member and value of the dry run's answer was written.
    let differences: Vec<String> = shapes
        .differences(&contract, &[])
        .into_iter()
        .filter(|difference| {
            ["ProxySettingsDryRun", "JsonPatchOperation"]
                .iter()
                .any(|name| difference.starts_with(&format!("/components/schemas/{name}")))
        })
        .collect();
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Real answers of createInvitation (its link and secret), getInvitation,
/// deleteInvitation and acceptInvitation (a new user's, with its token,
/// and a signed-in user's), and their refusals, validate against the
/// document.
#[tokio::test]
async fn invitation_answers_validate() {
    let contract = contract();
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![org(1), user("u1", &[1]), user("u2", &[1])])
        .await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let token = app.token("u1").await;
    let member = app.token("u2").await;
    let check = |method: &str, path: &str, status: u16, answer: &(u16, Value, Option<String>)| {
        let operation = format!("/paths/{}/{method}", escape(path));
        let what = format!("{status} {method} {path}");
        assert_eq!(answer.0, status, "{what}: {}", answer.1);
        let documented = contract
            .response(&operation, status)
            .unwrap_or_else(|| panic!("{what} is not documented"));
        contract.assert_valid(&contract.json_schema_of(&documented), &answer.1, &what);
    };
    let accept = |body: Value, token: Option<String>| {
        let app = &app;
        async move {
            let mut request = app
                .client
                .post(app.url("/v1/invitations/accept"))
                .json(&body);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let (status, body) = json_of(request.send().await.unwrap()).await;
            (status.as_u16(), body, None)
        }
    };
    let invite = |email: &str, token: &str| {
        let body = json!({"organization_id": org_id(1), "email": email, "role": "editor"});
        let (app, token) = (&app, token.to_owned());
        async move {
            send(
                app,
                Method::POST,
                "/v1/invitations",
                &token,
                &[],
                Some(&body),
            )
            .await
        }
    };
    let created = invite("new@example.com", &token).await;
    check("post", "/v1/invitations", 200, &created);
    check(
        "post",
        "/v1/invitations",
        403,
        &invite("x@example.com", &member).await,
    );
    let bad = send(
        &app,
        Method::POST,
        "/v1/invitations",
        &token,
        &[],
        Some(&json!({"email": "x"})),
    )
    .await;
    check("post", "/v1/invitations", 400, &bad);
    let id = created.1["id"].as_str().unwrap();
    let one = format!("/v1/invitations/{id}");
    check(
        "get",
        "/v1/invitations/{id}",
        200,
        &send(&app, Method::GET, &one, &token, &[], None).await,
    );
    check(
        "get",
        "/v1/invitations/{id}",
        403,
        &send(&app, Method::GET, &one, &member, &[], None).await,
    );
    let secret = created.1["secret"].clone();
    let accepted = accept(json!({"secret": secret, "email": "new@example.com"}), None).await;
    check("post", "/v1/invitations/accept", 200, &accepted);
    assert!(accepted.1.get("api_token").is_some());
    let used = accept(json!({"secret": secret, "email": "new@example.com"}), None).await;
    check("post", "/v1/invitations/accept", 404, &used);
    let for_u2 = invite("u2@example.com", &token).await;
    let body = json!({"secret": for_u2.1["secret"], "email": "u2@example.com"});
    check(
        "post",
        "/v1/invitations/accept",
        409,
        &accept(body.clone(), None).await,
    );
    let signed_in = accept(body, Some(member.clone())).await;
    check("post", "/v1/invitations/accept", 200, &signed_in);
    assert!(signed_in.1.get("api_token").is_none());
    let third = invite("third@example.com", &token).await;
    let gone = format!("/v1/invitations/{}", third.1["id"].as_str().unwrap());
    let deleted = send(&app, Method::DELETE, &gone, &token, &[], None).await;
    check("delete", "/v1/invitations/{id}", 200, &deleted);
    check(
        "delete",
        "/v1/invitations/{id}",
        404,
        &send(&app, Method::DELETE, &gone, &token, &[], None).await,
    );
}

/// Real answers of the teams' writes (createOrganization,
/// updateOrganization, deleteOrganization, updateOrganizationUser,
/// deleteOrganizationUser, updateUser), successes and errors, validate
/// against what the document says of each, headers included.
#[tokio::test]
async fn teams_answers_validate() {
    let contract = contract();
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![org(1), user("u1", &[1]), user("u2", &[1])])
        .await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let token = app.token("u1").await;
    let member = app.token("u2").await;
    let check = |method: &str, path: &str, status: u16, answer: (u16, Value, Option<String>)| {
        let operation = format!("/paths/{}/{method}", escape(path));
        let what = format!("{status} {method} {path}");
        assert_eq!(answer.0, status, "{what}: {}", answer.1);
        let documented = contract
            .response(&operation, status)
            .unwrap_or_else(|| panic!("{what} is not documented"));
        contract.assert_valid(&contract.json_schema_of(&documented), &answer.1, &what);
        if status == 200 {
            let tag = answer.2.expect("an ETag");
            contract.assert_header_valid(&format!("{documented}/headers/ETag"), &tag, &what);
        }
    };
    let post = |path: String, token: &str, body: Value| {
        let token = token.to_owned();
        let app = &app;
        async move { send(app, Method::POST, &path, &token, &[], Some(&body)).await }
    };
    let delete = |path: String, token: &str| {
        let token = token.to_owned();
        let app = &app;
        async move { send(app, Method::DELETE, &path, &token, &[], None).await }
    };
    let organizations = "/v1/organizations";
    let organization = "/v1/organizations/{id}";
    let member_path = "/v1/organizations/{id}/users/{userId}";
    let user_path = "/v1/users/{id}";
    let created = post(
        organizations.into(),
        &token,
        json!({"name": "N", "slug": "n"}),
    )
    .await;
    let id = created.1["id"].as_str().unwrap().to_owned();
    check("post", organizations, 200, created);
    check(
        "post",
        organizations,
        400,
        post(organizations.into(), &token, json!({})).await,
    );
    check(
        "post",
        organizations,
        409,
        post(
            organizations.into(),
            &token,
            json!({"name": "N", "slug": "n"}),
        )
        .await,
    );
    let org1 = org_id(1);
    let path = format!("/v1/organizations/{org1}");
    check(
        "post",
        organization,
        200,
        post(path.clone(), &token, json!({"id": org1, "name": "R"})).await,
    );
    check(
        "post",
        organization,
        403,
        post(path.clone(), &member, json!({"id": org1, "name": "R"})).await,
    );
    check(
        "delete",
        organization,
        403,
        delete(path.clone(), &member).await,
    );
    let members = format!("/v1/organizations/{org1}/users");
    check(
        "post",
        member_path,
        200,
        post(format!("{members}/u2"), &token, json!({"role": "editor"})).await,
    );
    check(
        "post",
        member_path,
        409,
        post(format!("{members}/u1"), &token, json!({"role": "member"})).await,
    );
    check(
        "post",
        member_path,
        404,
        post(format!("{members}/u9"), &token, json!({"role": "member"})).await,
    );
    check(
        "post",
        user_path,
        200,
        post("/v1/users/u1".into(), &token, json!({"terms_version": "1"})).await,
    );
    check(
        "post",
        user_path,
        403,
        post("/v1/users/u2".into(), &token, json!({"terms_version": "1"})).await,
    );
    check(
        "delete",
        member_path,
        200,
        delete(format!("{members}/u2"), &token).await,
    );
    check(
        "delete",
        organization,
        200,
        delete(format!("/v1/organizations/{id}"), &token).await,
    );
    check(
        "delete",
        organization,
        404,
        delete(format!("/v1/organizations/{id}"), &token).await,
    );
}

/// Real answers of the rollouts' operations (createRollout, listRollouts,
/// getRollout, the four actions, getEdgeTarget), successes and errors,
/// validate against the document, and show every member and value of
/// their schemas: each state of a rollout, of a stage and of an edge's
/// health.
#[tokio::test]
async fn rollout_answers_validate() {
    let contract = contract();
    let app = TestApp::spawn(Backend::Sqlite).await;
    let mut lines = vec![
        org(1),
        user("u1", &[1]),
        user("u2", &[1]),
        project("p1", 1, 0),
    ];
    lines.extend((1..=3).map(|r| crate::helpers::settings("p1", r, r == 1)));
    app.seed(lines).await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let token = app.token("u1").await;
    let member = app.token("u2").await;
    let shapes = std::cell::RefCell::new(Shapes::default());
    let check = |method: &str, path: &str, status: u16, answer: (u16, Value, Option<String>)| {
        let operation = format!("/paths/{}/{method}", escape(path));
        let what = format!("{status} {method} {path}");
        assert_eq!(answer.0, status, "{what}: {}", answer.1);
        let documented = contract
            .response(&operation, status)
            .unwrap_or_else(|| panic!("{what} is not documented"));
        let schema = contract.json_schema_of(&documented);
        contract.assert_valid(&schema, &answer.1, &what);
        shapes.borrow_mut().record(&contract, &schema, &answer.1);
        answer.1
    };
    let (rollouts, one, target) = (
        "/v1/projects/{id}/rollouts",
        "/v1/projects/{id}/rollouts/{number}",
        "/v1/projects/{id}/edges/{name}/target",
    );
    let call = |method: Method, path: String, caller: &str, body: Option<Value>| {
        let (app, caller) = (&app, caller.to_owned());
        async move { send(app, method, &path, &caller, &[], body.as_ref()).await }
    };
    let report = |name: &str, revision: u32, how: &str| {
        let mut body = json!({"name": name, "revision": revision, "status": "applied",
                              "canary": name.starts_with("canary")});
        match how {
            "healthy" => body["healthy"] = json!(true),
            "unhealthy" => {
                body["healthy"] = json!(false);
                body["error"] = json!("check exited with status 1");
            }
            _ => {
                body["status"] = json!("failed");
                body["error"] = json!("haproxy -c refused it");
            }
        }
        call(
            Method::POST,
            "/v1/projects/p1/edges".into(),
            &token,
            Some(body),
        )
    };
    for name in ["canary-a", "edge-b", "edge-c"] {
        assert_eq!(report(name, 1, "healthy").await.0, 200);
    }
    // Rollout 1: two edges first, one failure tolerated.
    let plan = json!({"revision": 2, "stages": [{"edges": 2}, {"percent": 100}],
                      "bake_seconds": 3600, "max_failures": 1, "min_healthy_percent": 50});
    let path = |suffix: &str| format!("/v1/projects/p1/rollouts{suffix}");
    check(
        "post",
        rollouts,
        201,
        call(Method::POST, path(""), &token, Some(plan.clone())).await,
    );
    check(
        "post",
        rollouts,
        409,
        call(Method::POST, path(""), &token, Some(plan.clone())).await,
    );
    check(
        "post",
        rollouts,
        400,
        call(Method::POST, path(""), &token, Some(json!({"revision": 0}))).await,
    );
    check(
        "post",
        rollouts,
        403,
        call(Method::POST, path(""), &member, Some(plan.clone())).await,
    );
    let stage_one = check(
        "get",
        one,
        200,
        call(Method::GET, path("/1"), &token, None).await,
    );
    let first: Vec<String> = stage_one["stages"][0]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(first.len(), 2, "{stage_one}");
    // One healthy, one failed (tolerated), one waiting.
    assert_eq!(report(&first[0], 2, "healthy").await.0, 200);
    assert_eq!(report(&first[1], 2, "failed").await.0, 200);
    check(
        "get",
        one,
        200,
        call(Method::GET, path("/1"), &token, None).await,
    );
    for edge in ["canary-a", "edge-c"] {
        let edge_path = format!("/v1/projects/p1/edges/{edge}/target");
        check(
            "get",
            target,
            200,
            call(Method::GET, edge_path, &token, None).await,
        );
    }
    let action = |name: &str| format!("/v1/projects/{{id}}/rollouts/{{number}}/{name}");
    check(
        "post",
        &action("pause"),
        200,
        call(Method::POST, path("/1/pause"), &token, None).await,
    );
    check(
        "post",
        &action("pause"),
        409,
        call(Method::POST, path("/1/pause"), &token, None).await,
    );
    check(
        "post",
        &action("resume"),
        200,
        call(Method::POST, path("/1/resume"), &token, None).await,
    );
    check(
        "post",
        &action("promote"),
        200,
        call(Method::POST, path("/1/promote"), &token, None).await,
    );
    check(
        "post",
        &action("abort"),
        200,
        call(Method::POST, path("/1/abort"), &token, None).await,
    );
    check(
        "post",
        &action("abort"),
        409,
        call(Method::POST, path("/1/abort"), &token, None).await,
    );
    check(
        "post",
        &action("promote"),
        404,
        call(Method::POST, path("/9/promote"), &token, None).await,
    );
    // Rollout 2: its first edge unhealthy, rolled back past a stage never
    // reached.
    let plan =
        json!({"revision": 3, "stages": [{"edges": 1}, {"percent": 100}], "bake_seconds": 3600});
    check(
        "post",
        rollouts,
        201,
        call(Method::POST, path(""), &token, Some(plan)).await,
    );
    let canary = "/v1/projects/p1/edges/canary-a/target".to_owned();
    let aimed = check(
        "get",
        target,
        200,
        call(Method::GET, canary.clone(), &token, None).await,
    );
    assert_eq!(aimed["revision"], 3, "{aimed}");
    assert_eq!(report("canary-a", 3, "unhealthy").await.0, 200);
    let rolled_back = wait_for(&app, &token, 2, "rolled_back").await;
    check("get", one, 200, rolled_back);
    // Rollout 3: no bake, nothing to wait for: succeeded.
    let plan = json!({"revision": 2, "bake_seconds": 0, "min_healthy_percent": 0});
    check(
        "post",
        rollouts,
        201,
        call(Method::POST, path(""), &token, Some(plan)).await,
    );
    check(
        "get",
        one,
        200,
        wait_for(&app, &token, 3, "succeeded").await,
    );
    check(
        "get",
        target,
        200,
        call(Method::GET, canary, &token, None).await,
    );
    // The list, its pages, and refusals.
    check(
        "get",
        rollouts,
        200,
        call(Method::GET, path("?limit=2"), &token, None).await,
    );
    check(
        "get",
        rollouts,
        200,
        call(Method::GET, path("?start_key=2"), &token, None).await,
    );
    // Nothing before the first: an empty page, without last_key.
    check(
        "get",
        rollouts,
        200,
        call(Method::GET, path("?start_key=1"), &token, None).await,
    );
    check(
        "get",
        rollouts,
        400,
        call(Method::GET, path("?start_key=x"), &token, None).await,
    );
    check(
        "get",
        one,
        404,
        call(Method::GET, path("/99"), &token, None).await,
    );
    let bad_name = "/v1/projects/p1/edges/no%20space/target".to_owned();
    check(
        "get",
        target,
        400,
        call(Method::GET, bad_name, &token, None).await,
    );
    let unknown = "/v1/projects/nope/edges/e/target".to_owned();
    check(
        "get",
        target,
        404,
        call(Method::GET, unknown, &token, None).await,
    );
    let differences: Vec<String> = shapes
        .into_inner()
        .differences(&contract, &[])
        .into_iter()
        .filter(|difference| {
            ["Rollout", "EdgeTarget"]
                .iter()
                .any(|name| difference.starts_with(&format!("/components/schemas/{name}")))
        })
        .collect();
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Rollout `number` of p1 once its state is `state` (the service steps
/// rollouts once a second).
async fn wait_for(
    app: &TestApp,
    token: &str,
    number: u32,
    state: &str,
) -> (u16, Value, Option<String>) {
    let path = format!("/v1/projects/p1/rollouts/{number}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let answer = send(app, Method::GET, &path, token, &[], None).await;
        if answer.1["state"] == state {
            return answer;
        }
        assert!(std::time::Instant::now() < deadline, "still: {}", answer.1);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
