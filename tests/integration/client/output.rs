//! The terminal client's output: the formats, one JSON document, chosen
//! fields and jq programs, the next-page hint, tables that fit, JSON and
//! colour on a terminal.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_output_formats_show_what_the_api_answers() {
    let world = world().await;
    for listing in &LISTINGS {
        let what = listing.args.join(" ");
        let (body, raw) = world.page(&format!("{}?limit=30", listing.path)).await;
        let data = body["data"].as_array().unwrap().clone();
        assert_eq!(data.len(), 30, "{what}");

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
        // One switch for JSON: --output json is refused, naming --json.
        for old in [&["--output", "json"][..], &["-o", "json"]] {
            let mut args = with(listing.args, &["--limit", "30"]);
            args.extend_from_slice(old);
            world.run(&args).error(&["--output json", "--json"]);
        }

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

    // The table cells of each listing: dates in UTC to the minute, the
    // organization by its name.
    let data = world.data("/v1/projects?limit=30").await;
    let names: std::collections::HashMap<String, String> = world
        .data("/v1/organizations?limit=100")
        .await
        .iter()
        .map(|organization| (text_of(&organization["id"]), text_of(&organization["name"])))
        .collect();
    let out = world.run(&["projects", "list", "--limit", "30", "-o", "table"]);
    let rows = table(&out.stdout, LISTINGS[0].headers);
    assert_eq!(rows.len(), data.len());
    for (row, item) in rows.iter().zip(&data) {
        let expected: Vec<String> = vec![
            text_of(&item["id"]),
            text_of(&item["slug"]),
            text_of(&item["type"]),
            names[&text_of(&item["organization_id"])].clone(),
            minute_of(&item["created_at"], "-"),
        ];
        assert_eq!(row, &expected);
    }
    let data = world.data("/v1/api_tokens?limit=30").await;
    let out = world.run(&["tokens", "list", "--limit", "30", "-o", "table"]);
    let rows = table(&out.stdout, LISTINGS[1].headers);
    assert_eq!(rows.len(), data.len());
    for (row, item) in rows.iter().zip(&data) {
        let absent = Value::Null;
        let field = |name: &str| item.get(name).unwrap_or(&absent);
        let expected: Vec<String> = vec![
            text_of(field("id")),
            text_of(field("name")),
            text_of(field("token")),
            minute_of(field("last_used_at"), "never"),
            minute_of(field("expires_at"), "never"),
            minute_of(field("created_at"), "-"),
        ];
        assert_eq!(row, &expected);
    }
    assert!(column(&rows, 4).contains(&"never") && column(&rows, 3).contains(&"never"));
    assert!(column(&rows, 4).iter().any(|cell| cell.len() == 16));
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

    // An empty list: [] in json, nothing in ndjson, words for a table.
    let empty = ["proxy-settings", "list", "p001"];
    assert_eq!(
        world.data("/v1/projects/p001/proxy-settings").await,
        Vec::<Value>::new()
    );
    assert_eq!(world.items(&empty), Vec::<Value>::new());
    assert_eq!(
        world.items(&with(&empty, &["--json", "revision"])),
        Vec::<Value>::new()
    );
    let out = world.run(&with(&empty, &["-o", "ndjson"]));
    assert!(out.status.success() && out.stdout.is_empty(), "{out:#?}");
    let out = world.run(&with(&empty, &["-o", "table"]));
    assert!(out.status.success(), "{out:#?}");
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr, "no proxy settings revisions\n");
    let out = world.run(&["tokens", "list", "--name", "no-such-name", "-o", "table"]);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("", "no API tokens\n")
    );
}

/// `docs/cli.md`: "Commands that print a result accept `--json` and then print
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
    for format in [
        &["--json"][..],
        &["--json", "id"],
        &["--jq", "length"],
        &["-o", "ndjson"],
    ] {
        let out = world.run(&with(&["projects", "list"], format));
        assert_eq!(hint(&out), None, "{format:?}");
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
    // 80 columns: every column fits.
    let out = world.on_terminal(&["projects", "list", "--limit", "3"], &[], 80);
    assert!(out.status.success(), "{out:#?}");
    let (tabled, hint) = out
        .stdout
        .split_once("more may follow: --start-key ")
        .unwrap_or_else(|| panic!("no hint: {out:#?}"));
    let rows = table(tabled.trim_end(), LISTINGS[0].headers);
    assert_eq!(column(&rows, 0), ids_of(&page));
    assert!(
        hint.starts_with(page[2]["id"].as_str().unwrap()),
        "{hint:?}"
    );
    assert!(!out.stdout.contains('\x1b'), "a table is not coloured");
    assert!(
        out.stdout.lines().all(|line| line.chars().count() <= 80),
        "{out:#?}"
    );
    // Narrower: the type goes first, then the creation date; the
    // organization's name stays longest.
    for (columns, headers) in [
        (60, LISTINGS[0].headers),
        (44, &["ID", "SLUG", "ORGANIZATION", "CREATED (UTC)"][..]),
        (30, &["ID", "SLUG", "ORGANIZATION"][..]),
    ] {
        let out = world.on_terminal(&["projects", "list", "--limit", "3"], &[], columns);
        let (tabled, _) = out.stdout.split_once("more may follow").unwrap();
        let rows = table(tabled.trim_end(), headers);
        assert_eq!(column(&rows, 0), ids_of(&page));
        assert!(
            tabled
                .lines()
                .all(|line| line.chars().count() <= usize::from(columns)),
            "{tabled}"
        );
    }
}

/// Tables fit the terminal's width, or COLUMNS when piped: the least
/// useful columns go, long cells end in `…`, a row never wraps; without
/// either, nothing is cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_tables_fit_the_width() {
    let world = world().await;
    let long = "the-nightly-deploy-of-every-edge-configuration";
    world.app.token_with("u1", long, None).await;
    let data = world.data("/v1/api_tokens?limit=5").await;
    assert_eq!(data[0]["name"], json!(long));
    let piped = |columns: Option<&str>| -> Out {
        let mut command = world.bare(&["tokens", "list", "--limit", "5", "-o", "table"]);
        command
            .args(["--url", &world.url(), "--token"])
            .arg(&world.secret);
        if let Some(columns) = columns {
            command.env("COLUMNS", columns);
        }
        let out = finish(command, None);
        assert!(out.status.success(), "{out:#?}");
        out
    };
    let widest = |text: &str| text.lines().map(|line| line.chars().count()).max().unwrap();

    // No width: every column, nothing cut.
    let out = piped(None);
    assert!(widest(&out.stdout) > 120, "{}", out.stdout);
    let rows = table(&out.stdout, LISTINGS[1].headers);
    assert_eq!(rows[0][1], long);
    assert_eq!(column(&rows, 0), ids_of(&data));

    // 80 columns: CREATED, then TOKEN, then LAST USED go; the name is cut.
    for out in [
        piped(Some("80")),
        world.on_terminal(&["tokens", "list", "--limit", "5", "-o", "table"], &[], 80),
    ] {
        let text = out
            .stdout
            .split("more may follow")
            .next()
            .unwrap()
            .trim_end();
        assert!(widest(text) <= 80, "{text}");
        let rows = table(text, &["ID", "NAME", "EXPIRES (UTC)"]);
        assert_eq!(column(&rows, 0), ids_of(&data), "ids are never cut");
        for (row, item) in rows.iter().zip(&data) {
            let name = item["name"].as_str().unwrap();
            match row[1].strip_suffix('…') {
                Some(kept) => assert!(name.starts_with(kept) && kept.len() >= 11, "{row:?}"),
                None => assert_eq!(row[1], name),
            }
            assert_eq!(row[2], minute_of(&item["expires_at"], "never"));
        }
        assert!(rows[0][1].ends_with('…'), "{rows:?}");
    }
    // 130 columns: every column, once the long name is cut.
    let out = piped(Some("130"));
    assert_eq!(widest(&out.stdout), 130);
    let rows = table(&out.stdout, LISTINGS[1].headers);
    assert!(rows[0][1].ends_with('…') && rows[0][1].chars().count() < long.len());
    // Too narrow for what must stay: lines are cut, never wrapped.
    let out = piped(Some("30"));
    assert_eq!(out.stdout.lines().count(), data.len() + 1);
    assert!(widest(&out.stdout) <= 30, "{}", out.stdout);
}

/// `--json FIELDS` keeps those members, in that order, as `gh` does;
/// `--jq` runs a jq program over the JSON array.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_json_fields_and_jq() {
    let world = world().await;
    let data = world.data("/v1/projects?limit=7").await;
    let pick = |fields: &[&str]| -> Vec<Value> {
        data.iter()
            .map(|item| {
                let picked: serde_json::Map<String, Value> = fields
                    .iter()
                    .map(|f| {
                        (
                            (*f).to_owned(),
                            item.get(*f).cloned().unwrap_or(Value::Null),
                        )
                    })
                    .collect();
                Value::Object(picked)
            })
            .collect()
    };
    assert_eq!(
        world.items(&["projects", "list", "--limit", "7", "--json", "id,slug"]),
        pick(&["id", "slug"])
    );
    // The order given, each object on its line.
    let out = world.run(&["projects", "list", "--limit", "7", "--json", "slug,id"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 9, "{out:#?}");
    assert!(lines[1].starts_with("{\"slug\":"), "{lines:?}");
    // --json before the command still means every field.
    assert_eq!(
        world.items(&["--json", "projects", "list", "--limit", "7"]),
        data
    );
    // A field an object lacks is null.
    let tokens = world.items(&[
        "tokens",
        "list",
        "--limit",
        "3",
        "--json",
        "name,last_used_at",
    ]);
    assert_eq!(tokens.len(), 3);
    assert!(
        tokens
            .iter()
            .all(|t| t["last_used_at"].is_null() && t["name"].is_string())
    );
    // An unknown field: one line naming the valid ones.
    let line = world
        .run(&["projects", "list", "--json", "id,slgu"])
        .error(&["\"slgu\"", "slug", "organization_id", "created_at"]);
    assert!(!line.contains("revision"), "{line}");
    world
        .run(&["proxy-settings", "list", BIG, "--json", "id"])
        .error(&["\"id\"", "revision", "is_active"]);

    // --jq: strings raw, other values as JSON, one a line.
    let out = world.run(&["projects", "list", "--limit", "7", "--jq", ".[].id"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    assert_eq!(out.stdout.lines().collect::<Vec<_>>(), ids_of(&data));
    let out = world.run(&[
        "projects",
        "list",
        "--limit",
        "7",
        "--json",
        "id,slug",
        "--jq",
        "map(.slug)",
    ]);
    assert_eq!(
        one_json_document(&out.stdout),
        json!(column_of(&data, "slug"))
    );
    let out = world.run(&["projects", "list", "--all", "--jq", "length"]);
    assert_eq!(out.stdout, format!("{}\n", PROJECTS + 1));
    let out = world.run(&[
        "proxy-settings",
        "list",
        BIG,
        "--all",
        "--jq",
        ".[] | select(.is_active) | .revision",
    ]);
    assert_eq!(out.stdout, format!("{REVISIONS}\n"));
    // A program jaq cannot compile: one line, before any request.
    let mut command = world.bare(&["projects", "list", "--jq", ".[", "--token", "pxd_x"]);
    command.args(["--url", "http://127.0.0.1:9"]);
    finish(command, None).error(&["--jq", "expected"]);
    world
        .run(&["projects", "list", "--jq", "env"])
        .error(&["--jq", "env"]);
    // --jq prints JSON: not with a table.
    world
        .run(&["projects", "list", "--jq", ".", "-o", "table"])
        .error(&["--jq", "--output table"]);
}

fn column_of<'a>(items: &'a [Value], field: &str) -> Vec<&'a str> {
    items
        .iter()
        .map(|item| item[field].as_str().unwrap())
        .collect()
}

/// JSON on a terminal is indented and coloured as jq colours it; never
/// coloured with NO_COLOR set (an empty NO_COLOR counts as unset), nor
/// when piped. The same holds for log lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_colours_only_a_terminal_and_never_with_no_color() {
    let world = world().await;
    let data = world.data("/v1/projects?limit=2").await;
    let args = ["projects", "list", "--limit", "2", "--json", "id,slug"];
    let mut indented = String::from("[\n");
    for (i, item) in data.iter().enumerate() {
        indented.push_str(&format!(
            "  {{\n    \"id\": {},\n    \"slug\": {}\n  }}{}\n",
            item["id"],
            item["slug"],
            if i + 1 < data.len() { "," } else { "" }
        ));
    }
    indented.push_str("]\n");

    let coloured = world.on_terminal(&args, &[], 100);
    assert!(coloured.status.success(), "{coloured:#?}");
    assert!(
        coloured
            .stdout
            .contains(&format!("\x1b[32m{}\x1b[0m", data[0]["slug"])),
        "{coloured:#?}"
    );
    assert!(
        coloured.stdout.contains("\x1b[1;34m\"id\"\x1b[0m"),
        "{coloured:#?}"
    );
    assert_eq!(without_escapes(&coloured.stdout), indented);
    for no_color in [&[("NO_COLOR", "1")][..], &[("NO_COLOR", "no")]] {
        let out = world.on_terminal(&args, no_color, 100);
        assert_eq!(out.stdout, indented, "{no_color:?}");
    }
    let out = world.on_terminal(&args, &[("NO_COLOR", "")], 100);
    assert_eq!(out.stdout, coloured.stdout);
    // Piped: compact, no colour.
    let out = world.run(&args);
    assert!(
        !out.stdout.contains('\x1b') && out.stdout.lines().count() == 4,
        "{out:#?}"
    );

    // Logs: a warning on a terminal, coloured unless NO_COLOR; piped, plain.
    let warned = [
        "config",
        "check",
        "--database",
        "postgres://app:hunter2@127.0.0.1/x",
    ];
    let out = on_terminal(world.cwd.path(), &warned, &[], 200);
    let warning = out
        .stdout
        .lines()
        .find(|line| line.contains("WARN"))
        .unwrap_or_else(|| panic!("no warning: {out:#?}"));
    assert!(warning.contains('\x1b'), "{warning:?}");
    let out = on_terminal(world.cwd.path(), &warned, &[("NO_COLOR", "1")], 200);
    assert!(
        out.stdout.contains("WARN") && !out.stdout.contains('\x1b'),
        "{out:#?}"
    );
    let mut command = proxydeck(world.cwd.path());
    command.args(warned);
    let out = finish(command, None);
    assert!(
        out.stderr.contains("WARN") && !out.stderr.contains('\x1b'),
        "{out:#?}"
    );
    assert!(!out.stderr.contains("hunter2") && !out.stdout.contains("hunter2"));
}
