//! The terminal client's output: the formats, one JSON document, the
//! next-page hint, a table on a terminal.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_output_formats_show_what_the_api_answers() {
    let world = world().await;
    for listing in &LISTINGS {
        let what = listing.args.join(" ");
        let (body, raw) = world.page(&format!("{}?limit=30", listing.path)).await;
        let data = body["data"].as_array().unwrap().clone();
        assert_eq!(data.len(), 30, "{what}");

        // json: one array, equal to the page's data.
        let items = world.items(&with(listing.args, &["--limit", "30", "--output", "json"]));
        assert_eq!(items, data, "{what} --output json");
        // No --output, stdout not a terminal: json.
        assert_eq!(
            world.items(&with(listing.args, &["--limit", "30"])),
            data,
            "{what}"
        );
        // The --json flag: json, before or after the command.
        assert_eq!(
            world.items(&with(listing.args, &["--limit", "30", "--json"])),
            data,
            "{what} --json"
        );
        let mut first = vec!["--json"];
        first.extend_from_slice(listing.args);
        first.extend(["--limit", "30"]);
        assert_eq!(world.items(&first), data, "--json {what}");
        // -o is --output.
        assert_eq!(
            world.items(&with(listing.args, &["--limit", "30", "-o", "json"])),
            data,
            "{what} -o json"
        );

        // ndjson: one object per line, in order, each exactly as sent.
        let out = world.run(&with(
            listing.args,
            &["--limit", "30", "--output", "ndjson"],
        ));
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{what}: {out:#?}"
        );
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), data.len(), "{what} --output ndjson");
        for (line, item) in lines.iter().zip(&data) {
            assert_eq!(
                &serde_json::from_str::<Value>(line).unwrap(),
                item,
                "{what}"
            );
            assert!(
                raw.contains(line),
                "{what}: a line differs from the API's text"
            );
        }

        // table: a header, then one row per item, in order.
        let out = world.run(&with(listing.args, &["--limit", "30", "--output", "table"]));
        assert!(out.status.success(), "{what}: {out:#?}");
        let rows = table(&out.stdout, listing.headers);
        let keys: Vec<String> = data
            .iter()
            .map(|item| text_of(&item[listing.key]))
            .collect();
        assert_eq!(column(&rows, 0), keys, "{what} --output table");
    }

    // The table cells of each listing.
    let data = world.data("/v1/projects?limit=30").await;
    let out = world.run(&["projects", "list", "--limit", "30", "-o", "table"]);
    let rows = table(&out.stdout, LISTINGS[0].headers);
    for (row, item) in rows.iter().zip(&data) {
        let expected: Vec<String> = ["id", "slug", "type", "organization_id", "created_at"]
            .iter()
            .map(|f| text_of(&item[*f]))
            .collect();
        assert_eq!(row, &expected);
    }
    let data = world.data("/v1/api_tokens?limit=30").await;
    let out = world.run(&["tokens", "list", "--limit", "30", "-o", "table"]);
    let rows = table(&out.stdout, LISTINGS[1].headers);
    for (row, item) in rows.iter().zip(&data) {
        let expected: Vec<String> = [
            "id",
            "name",
            "token",
            "last_used_at",
            "expires_at",
            "created_at",
        ]
        .iter()
        .map(|f| text_of(item.get(*f).unwrap_or(&Value::Null)))
        .collect();
        assert_eq!(row, &expected);
    }
    assert!(column(&rows, 4).contains(&"-") && column(&rows, 3).contains(&"-"));
    let data = world.data("/v1/projects/big/proxy-settings?limit=30").await;
    let out = world.run(&[
        "proxy-settings",
        "list",
        BIG,
        "--limit",
        "30",
        "-o",
        "table",
    ]);
    let rows = table(&out.stdout, LISTINGS[2].headers);
    for (row, item) in rows.iter().zip(&data) {
        assert_eq!(row[1], text_of(&item["is_active"]));
        assert_eq!(
            row[2],
            item["backends"].as_array().unwrap().len().to_string()
        );
        assert_eq!(row[3], item["routes"].as_array().unwrap().len().to_string());
        assert_eq!(row[4], text_of(&item["description"]));
    }
    assert_eq!(rows[0][1], "true");

    // An empty list: [] in json, nothing in ndjson, a header in a table.
    let empty = ["proxy-settings", "list", "p001"];
    assert_eq!(
        world.data("/v1/projects/p001/proxy-settings").await,
        Vec::<Value>::new()
    );
    assert_eq!(world.items(&empty), Vec::<Value>::new());
    let out = world.run(&with(&empty, &["-o", "ndjson"]));
    assert!(out.status.success() && out.stdout.is_empty(), "{out:#?}");
    let out = world.run(&with(&empty, &["-o", "table"]));
    assert!(out.status.success(), "{out:#?}");
    assert!(table(&out.stdout, LISTINGS[2].headers).is_empty());
    assert!(out.stderr.is_empty(), "{out:#?}");
}

/// `cli.md`: "Commands that print a result accept `--json` and then print
/// exactly one JSON document on stdout". An explicit `--output` that says
/// otherwise must not break that: either JSON wins or the pair is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_json_flag_prints_one_json_document_whatever_the_output() {
    let world = world().await;
    let data = world.data("/v1/projects?limit=3").await;
    for format in ["table", "ndjson"] {
        let out = world.run(&["projects", "list", "--limit", "3", "--json", "-o", format]);
        if out.status.success() {
            assert_eq!(out.json(), Value::Array(data.clone()), "--json -o {format}");
        } else {
            out.error(&["--json"]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_table_hints_the_next_page_json_does_not() {
    let world = world().await;
    let hint = |out: &Out| -> Option<String> {
        assert!(out.status.success(), "{out:#?}");
        let lines: Vec<&str> = out.stderr.lines().collect();
        match lines.as_slice() {
            [] => None,
            [line] => {
                let rest = line
                    .strip_prefix("more may follow: --start-key ")
                    .unwrap_or_else(|| panic!("not a hint: {line:?}"));
                Some(rest.split_whitespace().next().unwrap().to_owned())
            }
            more => panic!("several lines on stderr: {more:?}"),
        }
    };

    // Projects, the API's default page: the hint names last_key.
    let (first, _) = world.page("/v1/projects").await;
    assert_eq!(first["has_more"], json!(true));
    let out = world.run(&["projects", "list", "-o", "table"]);
    assert_eq!(hint(&out), Some(text_of(&first["last_key"])));
    // Following the hint gives the next page.
    let key = hint(&out).unwrap();
    let next = world.data(&format!("/v1/projects?start_key={key}")).await;
    assert_eq!(
        world.items(&["projects", "list", "--start-key", &key]),
        next
    );
    // json and ndjson: no hint.
    for format in ["json", "ndjson"] {
        let out = world.run(&["projects", "list", "-o", format]);
        assert_eq!(hint(&out), None, "-o {format}");
    }
    assert_eq!(hint(&world.run(&["projects", "list"])), None);
    // The last page: no hint.
    let last = world.walk("/v1/projects?limit=100").await;
    let key = text_of(&last[last.len() - 5]["id"]);
    let out = world.run(&["projects", "list", "-o", "table", "--start-key", &key]);
    assert_eq!(hint(&out), None);
    assert_eq!(table(&out.stdout, LISTINGS[0].headers).len(), 4);

    // Proxy settings: 100 of 130 by default.
    let (first, _) = world.page("/v1/projects/big/proxy-settings").await;
    assert_eq!(first["last_key"], json!("31"));
    let out = world.run(&["proxy-settings", "list", BIG, "-o", "table"]);
    assert_eq!(hint(&out), Some("31".to_owned()));
    let out = world.run(&[
        "proxy-settings",
        "list",
        BIG,
        "-o",
        "table",
        "--start-key",
        "31",
    ]);
    assert_eq!(hint(&out), None);
    assert_eq!(table(&out.stdout, LISTINGS[2].headers).len(), 30);

    // Tokens: a full page of 20 names its last id.
    let page = world.data("/v1/api_tokens").await;
    assert_eq!(page.len(), 20);
    let out = world.run(&["tokens", "list", "-o", "table"]);
    assert_eq!(hint(&out), Some(text_of(&page[19]["id"])));
    let out = world.run(&["tokens", "list", "-o", "table", "--name", "ci"]);
    assert_eq!(hint(&out), None, "a short page is the last");
    let out = world.run(&["tokens", "list", "-o", "ndjson"]);
    assert_eq!(hint(&out), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_prints_a_table_on_a_terminal() {
    let world = world().await;
    let page = world.data("/v1/projects?limit=3").await;
    let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
    let line = [
        env!("CARGO_BIN_EXE_proxydeck"),
        "projects",
        "list",
        "--limit",
        "3",
        "--url",
        &world.url(),
        "--token",
        &world.secret,
    ]
    .iter()
    .map(|part| quote(part))
    .collect::<Vec<_>>()
    .join(" ");
    let mut script = Command::new("/usr/bin/script");
    script
        .args(["-qfec", &line, "/dev/null"])
        .current_dir(world.cwd.path())
        .env("TERM", "xterm");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PROXYDECK_") {
            script.env_remove(&key);
        }
    }
    let out = finish(script, None);
    assert!(out.status.success(), "{out:#?}");
    let shown = out.stdout.replace("\r\n", "\n");
    let (tabled, hint) = shown
        .split_once("more may follow: --start-key ")
        .unwrap_or_else(|| panic!("no hint: {shown:?}"));
    let rows = table(tabled.trim_end(), LISTINGS[0].headers);
    assert_eq!(column(&rows, 0), ids_of(&page));
    assert!(
        hint.starts_with(page[2]["id"].as_str().unwrap()),
        "{hint:?}"
    );
}
