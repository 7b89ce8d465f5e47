//! Text from the server that would act on a terminal (clear the screen,
//! retitle the window, write the clipboard through OSC 52, an 8-bit CSI,
//! a right-to-left override): shown escaped wherever a person reads it,
//! on a terminal and piped (tables, the text of an object, diffs, the
//! edges' summary, `--jq` strings on a terminal); JSON keeps the value
//! exactly.

use reqwest::Method;

use super::*;

/// What a hostile description or edge error holds.
const HOSTILE: &str = "\u{1b}[2J\u{1b}]0;title\u{7}\u{1b}]52;c;aGk=\u{7}\u{9b}31m\u{202e}reversed";
/// How the client shows it.
const SHOWN: &str = r"\u{1b}[2J\u{1b}]0;title\u{7}\u{1b}]52;c;aGk=\u{7}\u{9b}31m\u{202e}reversed";

/// The parts of [`HOSTILE`] found raw in `text`.
fn raw(text: &str) -> Vec<&'static str> {
    ["\u{1b}[2J", "\u{1b}]", "\u{7}", "\u{9b}", "\u{202e}"]
        .into_iter()
        .filter(|part| text.contains(part))
        .collect()
}

/// `site` (u1's) has the hostile description, and so have its revisions
/// 1 and 2; an edge failed on 2 with the hostile text as its error.
async fn served() -> (TestApp, String, TempDir) {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let mut site = project("site", 1, 1);
    site["description"] = json!(HOSTILE);
    let mut lines = vec![org(1), user("u1", &[1]), site];
    for revision in [1, 2] {
        let mut settings = settings("site", revision, revision == 1);
        settings["description"] = json!(format!("{HOSTILE} {revision}"));
        lines.push(settings);
    }
    app.seed(lines).await;
    let token = app.token("u1").await;
    let report = json!({"name": "edge-1", "revision": 2, "status": "failed", "error": HOSTILE});
    let path = "/v1/projects/site/edges";
    let (status, edge, _) = send(&app, Method::POST, path, &token, &[], Some(&report)).await;
    assert_eq!(status, 200, "{edge}");
    (app, token, tempfile::tempdir().expect("a temporary folder"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_from_the_server_never_acts_on_the_terminal() {
    let (app, token, cwd) = served().await;
    let url = app.url("");
    let env = [
        ("PROXYDECK_URL", url.as_str()),
        ("PROXYDECK_TOKEN", token.as_str()),
    ];
    let terminal = |args: &[&str]| {
        let out = on_terminal(cwd.path(), args, &env, 400);
        assert!(out.status.success(), "{args:?}: {out:#?}");
        assert_eq!(raw(&out.stdout), Vec::<&str>::new(), "{args:?}: {out:#?}");
        out.stdout
    };
    // The text of an object, a table, a diff, the edges' summary.
    let shown = terminal(&["projects", "get", "site"]);
    assert!(
        shown
            .lines()
            .any(|line| line.starts_with("  description ") && line.ends_with(&format!(" {SHOWN}"))),
        "{shown}"
    );
    let shown = terminal(&["proxy-settings", "list", "site"]);
    assert!(shown.contains(&format!("{SHOWN} 2")), "{shown}");
    let shown = terminal(&["proxy-settings", "diff", "site", "1", "2"]);
    assert!(shown.contains(r"\u{202e}reversed 1"), "{shown}");
    let shown = terminal(&["proxy-settings", "edges", "site"]);
    assert!(
        shown.starts_with(&format!("1 failed on 2: {SHOWN}\n")),
        "{shown}"
    );
    // --jq's strings, which a person reads there.
    assert_eq!(
        terminal(&["projects", "get", "site", "--jq", ".description"]),
        format!("{SHOWN}\n")
    );
    // JSON on a terminal: the same value, its characters as JSON escapes.
    let shown = terminal(&["projects", "get", "site", "--json", "description"]);
    assert!(shown.contains(r"\u202e"), "{shown}");
    assert_eq!(
        serde_json::from_str::<Value>(&without_escapes(&shown)).unwrap(),
        json!({"description": HOSTILE})
    );

    // Piped: the text for people is escaped too...
    let run = |args: &[&str]| {
        let out = client(&app, &token, cwd.path(), args);
        assert!(out.status.success(), "{args:?}: {out:#?}");
        out.stdout
    };
    for (args, expected) in [
        // The diff quotes values as JSON: JSON escapes its C0 controls.
        (
            &["proxy-settings", "diff", "site", "1", "2"][..],
            r"\u001b]52;c;aGk=\u0007\u{9b}31m\u{202e}reversed 1",
        ),
        (&["proxy-settings", "list", "site", "-o", "table"], SHOWN),
        (&["proxy-settings", "edges", "site", "-o", "table"], SHOWN),
    ] {
        let shown = run(args);
        assert_eq!(raw(&shown), Vec::<&str>::new(), "{args:?}: {shown}");
        assert!(shown.contains(expected), "{args:?}: {shown}");
    }
    // ... and JSON and --jq are exactly what the server sent.
    let (_, text) = {
        let response = app.get("/v1/projects/site", &token).await;
        let status = response.status();
        (status, response.text().await.unwrap())
    };
    assert_eq!(run(&["projects", "get", "site"]), format!("{text}\n"));
    assert_eq!(
        run(&["projects", "get", "site", "--jq", ".description"]),
        format!("{HOSTILE}\n")
    );
    let edges = client(
        &app,
        &token,
        cwd.path(),
        &["proxy-settings", "edges", "site"],
    )
    .json();
    assert_eq!(edges[0]["error"], json!(HOSTILE));
}
