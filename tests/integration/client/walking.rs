//! The terminal client's filters and order, and `--all` walking every page
//! once.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_filters_and_order_give_what_the_api_gives() {
    let world = world().await;
    let org2 = org_id(2);
    let some_project = world.data("/v1/projects?limit=10").await[9]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let some_token = world.data("/v1/api_tokens?limit=10").await[9]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let early_project = world
        .data(&format!(
            "/v1/projects?limit=10&order_direction=ASC&organization_id={org2}"
        ))
        .await[4]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["projects", "list"], "/v1/projects".into()),
        (
            vec!["projects", "list", "--limit", "7"],
            "/v1/projects?limit=7".into(),
        ),
        (
            vec!["projects", "list", "--order-direction", "asc"],
            "/v1/projects?order_direction=ASC".into(),
        ),
        (
            vec![
                "projects",
                "list",
                "--order-direction",
                "ASC",
                "--limit",
                "100",
            ],
            "/v1/projects?order_direction=ASC&limit=100".into(),
        ),
        (
            vec![
                "projects",
                "list",
                "--order-direction",
                "Desc",
                "--limit",
                "5",
            ],
            "/v1/projects?order_direction=DESC&limit=5".into(),
        ),
        (
            vec!["projects", "list", "--organization-id", &org2],
            format!("/v1/projects?organization_id={org2}"),
        ),
        (
            vec![
                "projects",
                "list",
                "--organization-id",
                &org2,
                "--order-direction",
                "asc",
                "--limit",
                "4",
                "--start-key",
                &early_project,
            ],
            format!(
                "/v1/projects?organization_id={org2}&order_direction=ASC&limit=4&start_key={early_project}"
            ),
        ),
        (
            vec![
                "projects",
                "list",
                "--start-key",
                &some_project,
                "--limit",
                "3",
            ],
            format!("/v1/projects?start_key={some_project}&limit=3"),
        ),
        (vec!["tokens", "list"], "/v1/api_tokens".into()),
        (
            vec!["tokens", "list", "--name", "ci"],
            "/v1/api_tokens?name=ci".into(),
        ),
        (
            vec![
                "tokens",
                "list",
                "--name",
                "ci",
                "--order-direction",
                "asc",
                "--limit",
                "2",
            ],
            "/v1/api_tokens?name=ci&order_direction=ASC&limit=2".into(),
        ),
        (
            vec!["tokens", "list", "--name", "no-such-name"],
            "/v1/api_tokens?name=no-such-name".into(),
        ),
        (
            vec!["tokens", "list", "--start-key", &some_token, "--limit", "6"],
            format!("/v1/api_tokens?start_key={some_token}&limit=6"),
        ),
        (
            vec![
                "tokens",
                "list",
                "--order-direction",
                "ASC",
                "--limit",
                "100",
            ],
            "/v1/api_tokens?order_direction=ASC&limit=100".into(),
        ),
        (
            vec!["proxy-settings", "list", BIG],
            "/v1/projects/big/proxy-settings".into(),
        ),
        (
            vec![
                "proxy-settings",
                "list",
                BIG,
                "--limit",
                "10",
                "--order-direction",
                "asc",
            ],
            "/v1/projects/big/proxy-settings?limit=10&order_direction=ASC".into(),
        ),
        (
            vec!["proxy-settings", "list", BIG, "--start-key", "120"],
            "/v1/projects/big/proxy-settings?start_key=120".into(),
        ),
        (
            vec![
                "proxy-settings",
                "list",
                BIG,
                "--start-key",
                "5",
                "--order-direction",
                "ASC",
                "--limit",
                "3",
            ],
            "/v1/projects/big/proxy-settings?start_key=5&order_direction=ASC&limit=3".into(),
        ),
    ];
    for (args, path) in &cases {
        let expected = world.data(path).await;
        assert!(
            !expected.is_empty() || path.contains("no-such-name"),
            "{path}"
        );
        assert_eq!(&world.items(args), &expected, "{args:?} vs {path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_all_walks_every_page_once_in_order() {
    let world = world().await;

    // 250 visible projects plus the big one: three pages of 100.
    let walked = world.walk("/v1/projects?limit=100").await;
    assert_eq!(walked.len(), PROJECTS + 1);
    for format in [&["--json"][..], &["-o", "ndjson"]] {
        let out = world.run(&with(&["projects", "list", "--all"], format));
        assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
        let items: Vec<Value> = if format == ["--json"] {
            one_json_document(&out.stdout).as_array().unwrap().clone()
        } else {
            out.stdout
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        assert_eq!(items, walked, "projects --all {format:?}");
    }
    let ascending = world
        .walk("/v1/projects?limit=100&order_direction=ASC")
        .await;
    let mut reversed = walked.clone();
    reversed.reverse();
    assert_eq!(ids_of(&ascending), ids_of(&reversed));
    assert_eq!(
        world.items(&["projects", "list", "--all", "--order-direction", "asc"]),
        ascending
    );
    // With a small page: many requests, still every item once.
    let small = world.items(&["projects", "list", "--all", "--limit", "7"]);
    assert_eq!(small, walked);
    // Narrowed to an organization.
    let org2 = org_id(2);
    assert_eq!(
        world.items(&["projects", "list", "--all", "--organization-id", &org2]),
        world
            .walk(&format!("/v1/projects?limit=100&organization_id={org2}"))
            .await
    );
    // From a start key to the end.
    let key = text_of(&walked[149]["id"]);
    assert_eq!(
        world.items(&["projects", "list", "--all", "--start-key", &key]),
        walked[150..].to_vec()
    );
    // The table: every row once, no hint.
    let out = world.run(&["projects", "list", "--all", "-o", "table"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    let rows = table(&out.stdout, LISTINGS[0].headers);
    assert_eq!(column(&rows, 0), ids_of(&walked));

    // 130 revisions: pages of 100 and 30.
    let revisions = world
        .walk("/v1/projects/big/proxy-settings?limit=100")
        .await;
    assert_eq!(revisions.len(), REVISIONS as usize);
    let numbers: Vec<u64> = revisions
        .iter()
        .map(|r| r["revision"].as_u64().unwrap())
        .collect();
    assert_eq!(
        numbers,
        (1..=u64::from(REVISIONS)).rev().collect::<Vec<_>>()
    );
    assert_eq!(
        world.items(&["proxy-settings", "list", BIG, "--all"]),
        revisions
    );
    let ascending = world.items(&[
        "proxy-settings",
        "list",
        BIG,
        "--all",
        "--order-direction",
        "asc",
        "--json",
    ]);
    let mut reversed = revisions.clone();
    reversed.reverse();
    assert_eq!(ascending, reversed);

    // 120 tokens, no has_more: pages of 100 and a short one of 20.
    let tokens = world.token_walk(100).await;
    assert_eq!(tokens.len(), TOKENS);
    let mut ids: Vec<&str> = ids_of(&tokens);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), TOKENS, "a token twice");
    assert_eq!(world.items(&["tokens", "list", "--all"]), tokens);
    // Pages of 20: six full pages, then an empty one ends the walk.
    assert_eq!(
        world.items(&["tokens", "list", "--all", "--limit", "20"]),
        tokens
    );
    assert_eq!(world.token_walk(20).await, tokens);
    // Pages of 7 (the last one short), ascending.
    let ascending = world.items(&[
        "tokens",
        "list",
        "--all",
        "--limit",
        "7",
        "--order-direction",
        "asc",
    ]);
    let mut reversed = tokens.clone();
    reversed.reverse();
    assert_eq!(ids_of(&ascending), ids_of(&reversed));
    // Narrowed by name.
    let ci: Vec<Value> = tokens
        .iter()
        .filter(|t| t["name"] == json!("ci"))
        .cloned()
        .collect();
    assert_eq!(ci.len(), 11);
    assert_eq!(
        world.items(&["tokens", "list", "--all", "--name", "ci", "--limit", "3"]),
        ci
    );
}

/// `--all` against a `proxydeck serve` that lets each token make two
/// requests a second, one at once: pages after the first are answered 429
/// with `Retry-After`; the client waits that long, tries again, and ends
/// the walk with every item once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_all_waits_as_retry_after_says() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    let lines: Vec<Value> = (0..25)
        .map(|i| project(&format!("r{i:02}"), 1, i))
        .collect();
    sandbox.import(&lines);
    // The test reads with a token of its own: the limit is per token.
    let observer = sandbox.token("u1", "observer");
    let server = sandbox.serve(&[
        "--rate-limit",
        "2",
        "--rate-limit-burst",
        "1",
        "--last-used-flush-interval",
        "1h",
    ]);
    let rejections = "proxydeck_rate_limit_rejections_total";
    assert_eq!(server.metric(rejections).await, 0.0);
    let all = server.projects(&observer).await;
    assert_eq!(all.len(), 25);

    let mut command = proxydeck(sandbox.path());
    command
        .args(["projects", "list", "--all", "--limit", "10", "--json"])
        .args(["--order-direction", "asc", "--url", &server.base])
        .env("PROXYDECK_TOKEN", &secret);
    let out = finish(command, None);
    assert!(out.stderr.is_empty(), "{out:#?}");
    assert_eq!(out.json(), Value::Array(all));
    // 429 did happen: three pages, at most two a second, one at once.
    assert!(server.metric(rejections).await >= 1.0);
}

/// A 503 while the store is away (`Retry-After: 1`): the client waits and
/// tries again, and the walk ends with every item once the store is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_waits_out_503_while_the_store_is_away() {
    let app = TestApp::spawn_impatient().await;
    let mut lines = vec![org(1), user("u1", &[1])];
    lines.extend((0..12).map(|i| project(&format!("s{i:02}"), 1, i)));
    app.seed(lines).await;
    let (_, secret) = app.token_with("u1", "reader", None).await;
    let (status, first) = app.get_json("/v1/projects?limit=100", &secret).await;
    assert_eq!(status, 200, "{first}");

    let unavailable =
        r#"proxydeck_http_requests_total{route="/v1/projects",method="GET",status="503"}"#;
    assert_eq!(metric(unavailable), 0.0);
    let moved = app.take_store_away();
    let cwd = tempfile::tempdir().unwrap();
    let mut command = proxydeck(cwd.path());
    command
        .args(["projects", "list", "--all", "--limit", "5", "--json"])
        .args([
            "--url",
            &format!("http://{}", app.address),
            "--token",
            &secret,
        ]);
    let client = tokio::task::spawn_blocking(move || finish(command, None));
    until("the client is answered 503", || metric(unavailable) >= 1.0).await;
    app.bring_store_back(moved);
    let out = client.await.unwrap();
    assert!(out.stderr.is_empty(), "{out:#?}");
    assert_eq!(out.json(), first["data"]);
}
