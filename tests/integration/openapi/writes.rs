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
