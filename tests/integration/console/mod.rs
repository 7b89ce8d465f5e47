//! The web console (`/console`): served with a strict policy, and used in
//! a real headless Chromium against a real `proxydeck demo` process, as a
//! person would: signing in, paging, filtering, opening a project,
//! comparing and activating revisions, adding and checking a project's
//! domains, making and revoking tokens, organizations, their members and
//! invitations. Every
//! change the console makes is checked through the public API.

mod browser;
mod domains;
mod project_edits;
mod projects;
mod quality;
mod revision_edits;
mod revisions;
mod rollouts;
mod teams;
mod tokens;

use reqwest::StatusCode;
use reqwest::header::{
    CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH, X_FRAME_OPTIONS,
};
use serde_json::{Value, json};

use crate::binary::{Sandbox, Server};
use crate::helpers::json_of;
use browser::{Browser, Screen};

const GLOBEX: &str = "0190b7a4-0000-7000-8000-000000000002";

/// `proxydeck demo` on a fresh SQLite file; answers the server and the
/// demo user's token (admin of Acme Corp, editor of Globex).
fn demo(sandbox: &Sandbox) -> (Server, String) {
    demo_with(sandbox, &[])
}

/// Like [`demo`], with `more` of `demo`'s flags.
fn demo_with(sandbox: &Sandbox, more: &[&str]) -> (Server, String) {
    let server = Server::start(|listen| {
        let mut command = sandbox.command(&["demo", "--json", "--listen", listen]);
        command.args(more);
        command
    });
    let started: Value = serde_json::from_str(&server.stdout_line()).expect("the demo's JSON line");
    let token = started["token"].as_str().expect("a token").to_owned();
    (server, token)
}

/// A user who is a `member` of Globex (reads, may not change), made with
/// the operator's command line on the demo's file; answers a token of it.
fn globex_member(sandbox: &Sandbox) -> String {
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "viewer@globex.example",
        "--name",
        "Globex Viewer",
        "--org",
        &format!("{GLOBEX}:member"),
        "--id",
        "globex-viewer",
    ]);
    sandbox.token("globex-viewer", "console")
}

/// A request of the API with `token` and the JSON `body`: the status and
/// the answer's JSON.
async fn api(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = server
        .client
        .request(method, server.url(path))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("an answer");
    json_of(response).await
}

/// The active revision of a project, as the API says.
async fn active_revision(server: &Server, project: &str, token: &str) -> u64 {
    let revisions = server.revisions(project, token).await;
    let active: Vec<u64> = revisions
        .iter()
        .filter(|revision| revision["is_active"] == json!(true))
        .map(|revision| revision["revision"].as_u64().unwrap())
        .collect();
    assert_eq!(active.len(), 1, "{revisions:#?}");
    active[0]
}

#[tokio::test]
async fn the_console_is_served_from_the_binary_with_a_strict_policy() {
    let sandbox = Sandbox::new();
    let (server, _) = demo(&sandbox);
    for (path, kind) in [
        ("/console", "text/html"),
        ("/console/", "text/html"),
        ("/console/console.js", "text/javascript"),
        ("/console/revision-diff.js", "text/javascript"),
        ("/console/console.css", "text/css"),
        ("/console/icon.svg", "image/svg+xml"),
    ] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        assert!(
            headers[CONTENT_TYPE].to_str().unwrap().starts_with(kind),
            "{path}: {headers:?}"
        );
        let policy = headers[CONTENT_SECURITY_POLICY].to_str().unwrap();
        for rule in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'none'",
        ] {
            assert!(policy.contains(rule), "{path}: {policy}");
        }
        assert!(
            !policy.contains("unsafe") && !policy.contains("http"),
            "{policy}"
        );
        assert_eq!(headers[X_FRAME_OPTIONS], "DENY", "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["referrer-policy"], "no-referrer", "{path}");
        // A reload revalidates and gets a 304.
        let again = server
            .client
            .get(server.url(path))
            .header(IF_NONE_MATCH, headers[ETAG].clone())
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path}");
    }
    let page = server
        .client
        .get(server.url("/console"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"<script type="module" src="/console/console.js"></script>"#),
        "{page}"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "an outside address: {page}"
    );
    for (path, status) in [
        ("/console/nothing.js", 404),
        ("/console/..%2Fopenapi.json", 404),
    ] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), status, "{path}");
    }
    let posted = server
        .client
        .post(server.url("/console"))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 405);
}

#[tokio::test]
async fn the_console_can_be_switched_off() {
    let sandbox = Sandbox::new();
    // By flag, and by the environment: /console is then an unknown route.
    let by_flag = sandbox.serve(&["--console", "off"]);
    let by_environment = Server::start(|listen| {
        let mut command = sandbox.command(&["serve", "--listen", listen]);
        command.env("PROXYDECK_CONSOLE", "off");
        command
    });
    for server in [&by_flag, &by_environment] {
        for path in ["/console", "/console/console.js"] {
            let response = server.client.get(server.url(path)).send().await.unwrap();
            assert_eq!(response.status(), 404, "{path}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["error"]["type"], json!("not_found_error"), "{body}");
        }
        let document = server
            .client
            .get(server.url("/openapi.json"))
            .send()
            .await
            .unwrap();
        assert_eq!(document.status(), 200);
    }
    let on = sandbox.serve(&[]);
    let page = on.client.get(on.url("/console")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    // Anything but on or off is refused before serving, naming the flag.
    sandbox
        .run(&["serve", "--console", "yes"])
        .error(&["--console", "on or off"]);
}
