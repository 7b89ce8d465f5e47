//! listOrganizationsUsers, updateOrganizationUser, deleteOrganizationUser:
//! who may, the last admin, and losing access at once.

use super::*;

#[tokio::test]
async fn members_list_the_organization_for_its_members_only() {
    require!(BACKEND);
    let app = team().await;
    let org1 = org_id(1);
    let path = members_path(&org1);
    for caller in ["a1", "e1", "m1"] {
        let (status, list) = app.get_json(&path, &app.token(caller).await).await;
        assert_eq!(status, 200, "{caller}: {list}");
        let mut listed = ids(&list);
        listed.sort();
        assert_eq!(listed, ["a1", "e1", "m1"], "{caller}");
        assert_eq!(list["url"], path);
    }
    let s2 = app.token("s2").await;
    for other in [
        path.clone(),
        members_path(&org_id(99)),
        members_path("nope"),
    ] {
        let (status, body) = app.get_json(&other, &s2).await;
        assert_eq!(status, 404, "{other}: {body}");
        assert_eq!(body["error"]["message"], "no such organization");
    }
    let a1 = app.token("a1").await;
    let (_, admins) = app.get_json(&format!("{path}?role=admin"), &a1).await;
    assert_eq!(
        admins["data"],
        json!([{"object": "user", "id": "a1", "email": "a1@example.com", "name": "Ada Admin",
                "slug": "ada-admin", "role": "admin",
                "created_at": admins["data"][0]["created_at"],
                "updated_at": admins["data"][0]["updated_at"]}])
    );
    let (_, editors) = app.get_json(&format!("{path}?role=editor"), &a1).await;
    assert_eq!(ids(&editors), ["e1"]);
    let (status, bad) = app.get_json(&format!("{path}?role=owner"), &a1).await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(error_param(&bad), "role");
    let (status, bad) = app.get_json(&format!("{path}?start_key=s2"), &a1).await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(error_param(&bad), "start_key");
    let (status, bad) = app
        .get_json(&format!("{path}?role=admin&start_key=e1"), &a1)
        .await;
    assert_eq!(status, 400, "{bad}");
}

#[tokio::test]
async fn members_page_by_when_they_joined() {
    require!(BACKEND);
    let app = TestApp::spawn(BACKEND).await;
    let org1 = org_id(1);
    // A membership imported is as old as the later of its user and its
    // organization: each of these joined at its user's creation.
    let mut lines = vec![
        json!({"object": "organization", "id": org1, "name": "Org 1", "created_at": at(0)}),
        json!({"object": "user", "id": "a1", "email": "a1@example.com", "created_at": at(50),
               "roles": {org1.clone(): "admin"}}),
    ];
    for i in 0..7 {
        lines.push(json!({"object": "user", "id": format!("j{i}"),
            "email": format!("j{i}@example.com"), "created_at": at(100 + i64::from(i)),
            "roles": {org1.clone(): if i % 2 == 0 { "member" } else { "editor" }}}));
    }
    app.seed(lines).await;
    let a1 = app.token("a1").await;
    let path = members_path(&org1);
    // Newest first by default; the walk gets everyone once.
    let walked = walk(&app, &format!("{path}?limit=3"), &a1).await;
    assert_eq!(walked, ["j6", "j5", "j4", "j3", "j2", "j1", "j0", "a1"]);
    let ascending = walk(&app, &format!("{path}?limit=2&order_direction=ASC"), &a1).await;
    let mut reversed = walked.clone();
    reversed.reverse();
    assert_eq!(ascending, reversed);
    let members = walk(&app, &format!("{path}?limit=2&role=member"), &a1).await;
    assert_eq!(members, ["j6", "j4", "j2", "j0"]);
    let (_, page) = app
        .get_json(&format!("{path}?limit=2&start_key=j5"), &a1)
        .await;
    assert_eq!(ids(&page), ["j4", "j3"]);
    assert_eq!(page["has_more"], true);
    assert_eq!(page["last_key"], "j3");
}

#[tokio::test]
async fn admins_change_roles_with_if_match_and_the_change_counts_at_once() {
    require!(BACKEND);
    let app = team().await;
    let org1 = org_id(1);
    let a1 = app.token("a1").await;
    let e1 = app.token("e1").await;
    let m1 = app.token("m1").await;
    let s2 = app.token("s2").await;
    let e1_path = member_path(&org1, "e1");
    for (token, want) in [(&e1, 403), (&m1, 403), (&s2, 404)] {
        let (status, answer, _) = post(
            &app,
            &member_path(&org1, "m1"),
            token,
            json!({"role": "admin"}),
        )
        .await;
        assert_eq!(status, want, "{answer}");
    }
    let (status, answer, _) = post(
        &app,
        &member_path(&org1, "s2"),
        &a1,
        json!({"role": "admin"}),
    )
    .await;
    assert_eq!(status, 404, "not a member: {answer}");
    assert_eq!(answer["error"]["message"], "no such user");
    let (status, answer, _) = post(&app, &e1_path, &a1, json!({"role": "owner"})).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(params(&answer), ["role"]);
    // The user's own members are read-only: ignored.
    let (status, demoted, tag) = post(
        &app,
        &e1_path,
        &a1,
        json!({"role": "member", "email": "new@example.com", "name": "New", "id": "zz"}),
    )
    .await;
    assert_eq!(status, 200, "{demoted}");
    assert_eq!(demoted["role"], "member");
    assert_eq!(demoted["id"], "e1");
    assert_eq!(demoted["email"], "e1@example.com");
    assert_eq!(demoted["slug"], "e1");
    assert_eq!(tag.as_deref(), Some("\"v2\""));
    // A member now: its next write is refused at once.
    let (status, answer, _) = post(
        &app,
        "/v1/projects",
        &e1,
        json!({"organization_id": org1, "slug": "by-e1"}),
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    let stale = [("If-Match", "\"v1\"")];
    let body = json!({"role": "editor"});
    let (status, _, _) = send(&app, Method::POST, &e1_path, &a1, &stale, Some(&body)).await;
    assert_eq!(status, 412);
    let fresh = [("If-Match", "\"v2\"")];
    let (status, promoted, _) = send(
        &app,
        Method::POST,
        &e1_path,
        &a1,
        &fresh,
        Some(&json!({"role": "admin"})),
    )
    .await;
    assert_eq!(status, 200, "{promoted}");
    // An admin now: it manages at once.
    let (status, _, _) = post(
        &app,
        &member_path(&org1, "m1"),
        &e1,
        json!({"role": "editor"}),
    )
    .await;
    assert_eq!(status, 200);
    let audit = audit_of(&app, Some(&format!("{org1}/m1"))).await;
    assert_eq!(audit[0].operation, "updateOrganizationUser");
    assert_eq!(audit[0].user_id, "e1");
}

#[tokio::test]
async fn the_last_admin_stays() {
    require!(BACKEND);
    let app = team().await;
    let org1 = org_id(1);
    let a1 = app.token("a1").await;
    let a1_path = member_path(&org1, "a1");
    let message = "the organization's last admin cannot leave, be removed or become editor or \
                   member; make another member admin first";
    for (status, answer) in [
        post(&app, &a1_path, &a1, json!({"role": "editor"})).await,
        post(&app, &a1_path, &a1, json!({"role": "member"})).await,
        delete(&app, &a1_path, &a1).await,
    ]
    .map(|(status, answer, _)| (status, answer))
    {
        assert_eq!(status, 409, "{answer}");
        assert_eq!(answer["error"]["type"], "conflict_error");
        assert_eq!(answer["error"]["message"], message);
    }
    // Staying admin is no change of the rule.
    assert_eq!(
        post(&app, &a1_path, &a1, json!({"role": "admin"})).await.0,
        200
    );
    // With another admin, the first may go.
    assert_eq!(
        post(
            &app,
            &member_path(&org1, "e1"),
            &a1,
            json!({"role": "admin"})
        )
        .await
        .0,
        200
    );
    let e1 = app.token("e1").await;
    let (status, _, _) = delete(&app, &a1_path, &e1).await;
    assert_eq!(status, 200, "an admin removes another");
    let (status, answer, _) = delete(&app, &member_path(&org1, "e1"), &e1).await;
    assert_eq!(status, 409, "now the last: {answer}");
}

#[tokio::test]
async fn members_leave_and_admins_remove_and_both_lose_access_at_once() {
    require!(BACKEND);
    let app = team().await;
    app.seed(vec![project("p1", 1, 0)]).await;
    let org1 = org_id(1);
    let a1 = app.token("a1").await;
    let e1 = app.token("e1").await;
    let m1 = app.token("m1").await;
    let s2 = app.token("s2").await;
    // Others than admins remove no one; strangers see nothing.
    assert_eq!(delete(&app, &member_path(&org1, "m1"), &e1).await.0, 403);
    assert_eq!(delete(&app, &member_path(&org1, "e1"), &m1).await.0, 403);
    assert_eq!(delete(&app, &member_path(&org1, "m1"), &s2).await.0, 404);
    assert_eq!(delete(&app, &member_path(&org1, "s2"), &s2).await.0, 404);
    // m1 leaves.
    let (status, left, _) = delete(&app, &member_path(&org1, "m1"), &m1).await;
    assert_eq!(status, 200, "{left}");
    assert_eq!(left, json!({"object": "user", "id": "m1", "deleted": true}));
    let (_, me) = app.get_json("/v1/users/me", &m1).await;
    assert_eq!(me["roles"], json!({}));
    assert_eq!(me["role"], "member");
    // In no organization: it still authenticates and creates one.
    create_org(&app, &m1, "Fresh", "fresh").await;
    // a1 removes e1: its next write is refused at once, whatever the token
    // cache holds.
    assert_eq!(
        post(
            &app,
            "/v1/projects/p1",
            &e1,
            json!({"description": "before"})
        )
        .await
        .0,
        200
    );
    let (status, removed, _) = delete(&app, &member_path(&org1, "e1"), &a1).await;
    assert_eq!(status, 200, "{removed}");
    let (status, answer, _) = post(
        &app,
        "/v1/projects/p1",
        &e1,
        json!({"description": "after"}),
    )
    .await;
    assert_eq!(status, 404, "{answer}");
    assert_eq!(
        post(
            &app,
            &member_path(&org1, "a1"),
            &e1,
            json!({"role": "member"})
        )
        .await
        .0,
        404
    );
    let (_, me) = app.get_json("/v1/users/me", &e1).await;
    assert_eq!(me["roles"], json!({}));
    let (_, members) = app.get_json(&members_path(&org1), &a1).await;
    assert_eq!(ids(&members), ["a1"]);
    assert_eq!(
        audit_of(&app, Some(&format!("{org1}/e1"))).await[0].operation,
        "deleteOrganizationUser"
    );
}

/// Two admins demoting each other at once, again and again: the
/// organization always keeps one admin (the writes decide under its row
/// lock, on roles read after it).
#[tokio::test]
async fn two_admins_demoting_each_other_at_once_leave_one() {
    require!(BACKEND);
    let app = team().await;
    let org1 = org_id(1);
    let tokens = [app.token("a1").await, app.token("e1").await];
    let users = ["a1", "e1"];
    for round in 0..10 {
        app.data.execute(&format!(
            "UPDATE memberships SET role = 'admin' WHERE organization_id = '{org1}'
               AND user_id IN ('a1', 'e1')"
        ));
        let demote = |me: usize| {
            let path = member_path(&org1, users[1 - me]);
            let token = tokens[me].clone();
            let app = &app;
            async move { post(app, &path, &token, json!({"role": "member"})).await }
        };
        let (first, second) = tokio::join!(demote(0), demote(1));
        let mut statuses = [first.0, second.0];
        statuses.sort();
        // One demotes the other; the other is refused, as the member it now
        // is (403), or as the last admin's demoter (409).
        assert_eq!(statuses[0], 200, "round {round}: {first:?} {second:?}");
        assert!(
            [403, 409].contains(&statuses[1]),
            "round {round}: {first:?} {second:?}"
        );
        let admins = app.data.count(&format!(
            "SELECT COUNT(*) FROM memberships WHERE organization_id = '{org1}' AND role = 'admin'"
        ));
        assert_eq!(admins, 1, "round {round}");
    }
}

/// The members listing reads a range of an index: a page of an
/// organization of 10,000 members costs what a page of one of 30 does,
/// deep pages and one role's included. SQLite: the steps its statements
/// ran; PostgreSQL: the plan of the statement that read the page.
#[tokio::test]
async fn a_page_of_ten_thousand_members_costs_what_a_small_one_does() {
    require!(BACKEND);
    let mut options = test_options();
    options.auth.usage_flush_interval = std::time::Duration::from_secs(3600);
    let app = TestApp::spawn_with(BACKEND, options, suite_store_options()).await;
    app.seed(vec![org(1), org(2), user("big", &[1]), user("small", &[2])])
        .await;
    let (big, small) = (org_id(1), org_id(2));
    // Members made in SQL: 10,000 in organization 1, 30 in 2, every third
    // an editor.
    let numbers = match BACKEND {
        Backend::Sqlite => {
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)"
        }
        Backend::Postgres => "WITH n(i) AS (SELECT generate_series(1, 10000))",
    };
    for (org, count) in [(&big, 10_000), (&small, 30)] {
        app.data.execute(&format!(
            "{numbers} INSERT INTO users (id, email, name, created_at, updated_at)
               SELECT 'x' || i || '-' || '{org}', 'x' || i || '@example.com', 'x' || i, i, i
                 FROM n WHERE i <= {count};
             {numbers} INSERT INTO memberships
               (user_id, organization_id, role, created_at, organization_created_at, organization_type)
               SELECT 'x' || i || '-' || '{org}', '{org}',
                      CASE WHEN i % 3 = 0 THEN 'editor' ELSE 'member' END, 1000 + i, 0, 'pro'
                 FROM n WHERE i <= {count};"
        ));
    }
    if BACKEND == Backend::Postgres {
        app.data.execute("ANALYZE memberships; ANALYZE users");
    }
    let big_token = app.token("big").await;
    let small_token = app.token("small").await;
    // Authenticates (and caches) the tokens: what follows reads pages.
    assert_eq!(app.get("/v1/users/me", &big_token).await.status(), 200);
    assert_eq!(app.get("/v1/users/me", &small_token).await.status(), 200);
    let mut costs = Vec::new();
    for (path, token) in [
        (format!("{}?limit=20", members_path(&small)), &small_token),
        (format!("{}?limit=20", members_path(&big)), &big_token),
        (
            format!("{}?limit=20&start_key=x9000-{big}", members_path(&big)),
            &big_token,
        ),
        (
            format!(
                "{}?limit=20&role=editor&start_key=x300-{big}",
                members_path(&big)
            ),
            &big_token,
        ),
        (
            format!(
                "{}?limit=20&order_direction=ASC&start_key=x5000-{big}",
                members_path(&big)
            ),
            &big_token,
        ),
    ] {
        let steps_before = metric("proxydeck_sqlite_vm_steps_total");
        let (status, body) = app.get_json(&path, token).await;
        costs.push(metric("proxydeck_sqlite_vm_steps_total") - steps_before);
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(ids(&body).len(), 20, "{path}");
        assert_eq!(body["has_more"], true, "{path}");
        if BACKEND == Backend::Postgres {
            let plan = app
                .data
                .postgres_plan_of_last("FROM memberships m JOIN users");
            assert!(
                plan.contains("memberships_members") && !plan.contains("Seq Scan on memberships"),
                "{path}: not a range read of the members' index:\n{plan}"
            );
        }
    }
    if BACKEND == Backend::Sqlite {
        let small = costs[0];
        assert!(small > 0.0, "no step counted");
        for cost in &costs[1..] {
            assert!(*cost <= small * 1.5, "steps: {costs:?}");
        }
    }
}
