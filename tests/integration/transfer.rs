//! `proxydeck admin export` and `admin import` (`cli.md`): the real binary
//! on SQLite files in temporary folders. Round trips on data that sets
//! every optional field, the order of an export, where its output goes,
//! progress bars (absent off a terminal, drawn on a pseudo-terminal), and
//! all-or-nothing imports of big files.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use proxydeck::domain::time::Timestamp;
use serde_json::{Value, json};

use crate::binary::*;
use crate::helpers::*;

// ----- Data that sets every optional field -----

/// A multi-line certificate, as PEM files hold them.
const PEM: &str = "-----BEGIN CERTIFICATE-----\n\
MIIBszCCAVmgAwIBAgIUQk9HVVMtVEVTVC1DRVJUSUZJQ0FURTAKBggqhkjOPQQD\n\
AjAaMRgwFgYDVQQDDA9vcmlnaW4uZXhhbXBsZTAeFw0yNjAxMDEwMDAwMDBaFw0z\n\
NjAxMDEwMDAwMDBaMBoxGDAWBgNVBAMMD29yaWdpbi5leGFtcGxlMFkwEwYHKoZI\n\
-----END CERTIFICATE-----\n";

/// `utc` (a `Z` timestamp) written as the same instant at +02:00.
fn plus_two(utc: &str) -> String {
    let local = Timestamp::parse(utc)
        .expect("a timestamp")
        .plus_seconds(2 * 3600)
        .unwrap()
        .to_string();
    format!("{}+02:00", local.trim_end_matches('Z'))
}

/// A timestamp as the wire shows it: UTC, `Z`, milliseconds.
fn wire(text: &str) -> String {
    Timestamp::parse(text).expect("a timestamp").to_string()
}

/// `2026-02-01T08:00:00.250Z` plus `minutes`, in UTC.
fn project_time(minutes: i64) -> String {
    Timestamp::parse("2026-02-01T08:00:00.250Z")
        .unwrap()
        .plus_seconds(minutes * 60)
        .unwrap()
        .to_string()
}

/// Values of every JSON kind, nested, with unicode and escapes.
fn tricky_values(i: usize) -> Value {
    json!({
        "nested": {"list": [1, 2.5, -3, null, true, false, {"deep": ["x", {"deeper": null}]}],
                   "empty_object": {}, "empty_list": []},
        "unicode": "héllo wörld ✓ 日本語 🚀 Ωmega",
        "escapes": "quote \" backslash \\ slash / newline \n tab \t return \r nul \u{0} bell \u{7} \u{2028} \u{2029} </script>",
        "clé \"quotée\"": format!("value {i}"),
        "big": u64::MAX,
        "most_negative": i64::MIN,
        "float": 1.5e300,
        "tiny": 5e-324,
        "fraction": 0.1,
        "minus_zero": -0.0,
        "null": null,
        "empty": ""
    })
}

fn name_conditions(i: usize, prefix: &str) -> Value {
    json!({
        "present": [format!("{prefix}-present-{i}"), "ÿ-name"],
        "absent": [format!("{prefix}-absent")],
        "values": tricky_values(i)
    })
}

/// A project with every field set, none to its default; timestamps given
/// at +02:00.
fn rich_project(id: &str, organization: &str, created_utc: &str, i: usize) -> Value {
    json!({
        "object": "project",
        "id": id,
        "organization_id": organization,
        "slug": format!("slug-{id}"),
        "description": format!("Project {i}: ünïcødé ✓ \"quoted\" back\\slash\nsecond line\ttab"),
        "type": (["ai_analytics", "mcp"][i % 2]),
        "avatar_url": format!("https://cdn.example/avatars/{id}.png?size=64&x=%20"),
        "created_at": plus_two(created_utc),
        "updated_at": plus_two(&Timestamp::parse(created_utc).unwrap()
            .plus_seconds(86_400 + i as i64).unwrap().to_string()),
        "external_project_url": format!("https://{id}.example/path?q=1"),
        "log_severity": (["DEBUG", "WARNING", "ERROR"][i % 3]),
        "edgee_behind_proxy_cache": true,
        "force_https": false,
        "cache": true,
        "override_cache": [
            {"path": "^/static/(.*)\\.(css|js)$", "regex": true, "ttl": 3600 + i, "swr": 60,
             "pass": true, "rank": 1,
             "conditions": {
                 "request_cookies": name_conditions(i, "cookie"),
                 "request_headers": name_conditions(i, "header"),
                 "request_query_params": name_conditions(i, "query"),
                 "response_headers": name_conditions(i, "response"),
                 "request_methods": ["GET", "HEAD", "OPTIONS"],
                 "response_status": [200, 301, 404, 599]
             }},
            {"path": "/api/", "regex": false, "ttl": 0, "swr": 0, "pass": false, "rank": 2,
             "conditions": {
                 "request_cookies": {"present": [], "absent": [], "values": {"n": i}},
                 "request_headers": {"present": ["x-a"], "absent": ["x-b"], "values": {}},
                 "request_query_params": {"present": [], "absent": [], "values": {"a": [[], {}]}},
                 "response_headers": {"present": [], "absent": ["set-cookie"], "values": {}},
                 "request_methods": ["POST"],
                 "response_status": [100]
             }}
        ],
        "override_cache_enabled": true,
        "cookie_name": format!("_c{i}"),
        "cookie_domain": ".example.org",
        "proxy_only": true,
        "proxy_only_path_regex": "^/api/(v\\d+)/.*$",
        "inject_sdk": true,
        "inject_sdk_position": "prepend",
        "cookieless": true,
        "autocapture": {"pageview": true, "spa_pageview": true, "engagement": true,
                        "click": true, "form": true, "scroll": true},
        "enforce_no_store_policy": true,
        "trusted_ips": ["10.0.0.0/8", "192.0.2.1", "2001:db8::/32", "::1"],
        "password_protection": true,
        "blocked_ips": ["203.0.113.7", "198.51.100.0/24", "2001:db8:dead::beef"],
        "cookie_whitelist": ["session", "csrftoken", format!("c{i}")],
        "forwarded_headers": [
            {"name": "X-Env", "value": "production"},
            {"name": "X-Quote", "value": format!("a \"quoted\" value; n={i}")}
        ],
        "rate_limiting": [
            {"rank": 1, "limit": 50, "window": "1s", "block_duration": 300, "key": ["ip", "ua"],
             "conditions": {"path": "/login/ü", "regex": true,
                            "method": ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE"],
                            "continent": ["AF", "AN", "AS", "EU", "NA", "OC", "SA"],
                            "country": ["FR", "JP", "XK"]}},
            {"rank": 2, "limit": 7, "window": "60s", "block_duration": 1, "key": ["ua"],
             "conditions": {"path": "/x", "regex": false, "method": ["GET"],
                            "continent": ["EU"], "country": ["DE"]}}
        ],
        "rate_limiting_enabled": true
    })
}

/// A revision with every optional backend string and route member set.
fn rich_settings(project_id: &str, revision: u32, active: bool) -> Value {
    json!({
        "object": "proxy_settings", "project_id": project_id, "revision": revision,
        "description": format!("révision {revision}: \"quoted\"\nline two"),
        "is_active": active,
        "backends": [
            {"name": "origin", "address": "origin.example:443", "enable_ssl": true,
             "check_certificate": "origin.example", "ca_certificate": PEM,
             "sni_hostname": "sni.origin.example", "default": true,
             "override_host": "www.origin.example"},
            {"name": "static ü", "address": "[2001:db8::1]:8080", "enable_ssl": false,
             "check_certificate": "", "ca_certificate": "-----BEGIN CERTIFICATE-----\r\nAA==\r\n-----END CERTIFICATE-----",
             "sni_hostname": "static.example", "default": false,
             "override_host": "static.example"}
        ],
        "routes": [
            {"path": "^/eu/(.*)$", "regex": true, "backend_name": "origin", "rank": "1",
             "continent": ["EU", "AF"], "region": ["IDF", "BY"], "country": ["FR", "DE"]},
            {"path": "/static/", "regex": false, "backend_name": "static ü",
             "rank": format!("{}", 10 + revision),
             "continent": ["NA"], "region": ["CA-QC"], "country": ["CA"]}
        ]
    })
}

/// What an import file with every optional field looks like: organizations,
/// users, projects and proxy settings, with creation times out of file
/// order, ties, and +02:00 offsets.
pub(crate) struct RichData {
    pub(crate) lines: Vec<Value>,
    /// Project ids, in file order.
    projects: Vec<String>,
    /// The project deleted before the export, and its revisions.
    doomed: &'static str,
}

pub(crate) fn rich_data() -> RichData {
    let mut lines = vec![
        json!({"object": "organization", "id": org_id(1), "name": "Acme Corp",
               "created_at": plus_two("2026-01-01T10:00:00.000Z")}),
        // Earlier than the line above.
        json!({"object": "organization", "id": org_id(2),
               "name": "Ünïcødé \"Quotes\" \\ Back-slash 🚀 日本",
               "created_at": plus_two("2026-01-01T07:00:00.500Z")}),
        // A tie: the same instant, the smaller id listed second.
        json!({"object": "organization", "id": org_id(0x30), "name": "Tie, larger id",
               "created_at": plus_two("2026-01-02T00:00:00.000Z")}),
        json!({"object": "organization", "id": org_id(0x20), "name": "Tie, smaller id",
               "created_at": "2026-01-02T00:00:00Z"}),
        // No created_at: the time of import.
        json!({"object": "organization", "id": org_id(5), "name": "Undated"}),
        json!({"object": "user", "id": "u-multi", "email": "multi@example.com",
               "organizations": [org_id(0x30), org_id(1), org_id(2)],
               "created_at": plus_two("2026-01-05T00:00:00.000Z")}),
        json!({"object": "user", "id": "u-single", "email": "ünï@exämple.com",
               "organizations": [org_id(2)], "created_at": "2026-01-04T00:00:00.999Z"}),
        json!({"object": "user", "id": "u-b", "email": "b@example.com",
               "organizations": [org_id(0x20)], "created_at": plus_two("2026-01-06T00:00:00.000Z")}),
        json!({"object": "user", "id": "u-a", "email": "a@example.com",
               "organizations": [org_id(0x20), org_id(5)], "created_at": "2026-01-06T00:00:00Z"}),
        json!({"object": "user", "id": "u-undated", "email": "undated@example.com",
               "organizations": [org_id(5)]}),
    ];
    let organizations = [org_id(1), org_id(2), org_id(0x30), org_id(0x20)];
    let mut projects = Vec::new();
    for i in 0..40 {
        let id = format!("proj-{i:02}");
        // Creation order is a permutation of file order.
        let created = project_time(((i * 17) % 40) as i64);
        lines.push(rich_project(&id, &organizations[i % 4], &created, i));
        projects.push(id);
    }
    // A tie written in two offsets; the larger id first in the file.
    let tie = project_time(100);
    lines.push(rich_project("tie-b", &org_id(1), &tie, 41));
    let mut tie_a = rich_project("tie-a", &org_id(2), &tie, 42);
    tie_a["created_at"] = json!(tie);
    lines.push(tie_a);
    lines.push(rich_project("doomed", &org_id(1), &project_time(5), 43));
    projects.extend(["tie-b".to_owned(), "tie-a".to_owned(), "doomed".to_owned()]);
    // Revisions out of order, after every project; 10 sorts after 9 as a
    // number, before it as text.
    for (project, revision, active) in [
        ("proj-39", 1, true),
        ("proj-03", 2, false),
        ("proj-03", 10, true),
        ("proj-03", 1, false),
        ("proj-03", 9, false),
        ("doomed", 1, true),
        ("tie-a", 1, false),
        ("tie-b", 2, true),
        ("tie-b", 1, false),
        ("doomed", 2, false),
        ("proj-00", 3, false),
        ("proj-00", 1, false),
        ("proj-00", 2, true),
    ] {
        lines.push(rich_settings(project, revision, active));
    }
    RichData {
        lines,
        projects,
        doomed: "doomed",
    }
}

// ----- Reading an export -----

/// The lines of an export, each checked to be one JSON object.
#[track_caller]
fn parse_export(text: &str) -> Vec<Value> {
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "the export does not end with a line break"
    );
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("line {} is not JSON ({e}): {line}", i + 1));
            assert!(value.is_object(), "line {}: {line}", i + 1);
            value
        })
        .collect()
}

fn of_kind<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["object"] == json!(kind))
        .collect()
}

fn created_key(item: &Value) -> (Timestamp, String) {
    let created = Timestamp::parse(item["created_at"].as_str().expect("created_at")).unwrap();
    (created, item["id"].as_str().expect("an id").to_owned())
}

/// cli.md's order: organizations, users, projects, proxy settings; each in
/// creation order (created_at, then id), proxy settings by their project's
/// creation order, then revision.
#[track_caller]
fn assert_export_order(lines: &[Value]) {
    let rank = |kind: &str| match kind {
        "organization" => 0,
        "user" => 1,
        "project" => 2,
        "proxy_settings" => 3,
        other => panic!("unexpected kind {other}"),
    };
    let kinds: Vec<u8> = lines
        .iter()
        .map(|l| rank(l["object"].as_str().expect("object")))
        .collect();
    assert!(
        kinds.windows(2).all(|w| w[0] <= w[1]),
        "kinds out of order: {kinds:?}"
    );
    for kind in ["organization", "user", "project"] {
        let keys: Vec<_> = of_kind(lines, kind).into_iter().map(created_key).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "{kind}s are not in creation order");
        let unique: HashSet<_> = keys.iter().map(|k| &k.1).collect();
        assert_eq!(unique.len(), keys.len(), "a {kind} is exported twice");
    }
    let project_position: Vec<&str> = of_kind(lines, "project")
        .into_iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    let keys: Vec<(usize, u64)> = of_kind(lines, "proxy_settings")
        .into_iter()
        .map(|s| {
            let project = s["project_id"].as_str().expect("project_id");
            let position = project_position
                .iter()
                .position(|p| *p == project)
                .unwrap_or_else(|| panic!("settings of a project not exported: {s}"));
            (position, s["revision"].as_u64().expect("revision"))
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        keys, sorted,
        "proxy settings are not in project, then revision order"
    );
}

/// The export of `sandbox`'s store to `file`, asserting success; answers
/// the counts printed with `--json`.
#[track_caller]
fn export_to(sandbox: &Sandbox, file: &Path) -> Value {
    let out = sandbox.run(&["admin", "export", &file.display().to_string(), "--json"]);
    assert!(out.stderr.is_empty(), "{out:#?}");
    out.json()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The names in a folder, sorted.
/// The files in `folder`, but SQLite's own `-wal` and `-shm` files, which
/// come and go with connections.
fn listing(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("the folder is readable")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with("-wal") && !name.ends_with("-shm"))
        .collect();
    names.sort();
    names
}

/// `n` minimal projects of organization 1, one line each, after the
/// organization.
fn many_projects(n: usize) -> Vec<String> {
    let mut lines = vec![org(1).to_string()];
    lines.extend((0..n).map(|i| {
        json!({"object": "project", "id": format!("bulk-{i:05}"), "organization_id": org_id(1),
               "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"})
        .to_string()
    }));
    lines
}

// ----- Round trip -----

#[tokio::test]
async fn export_import_export_gives_identical_bytes_with_every_optional_field() {
    let data = rich_data();
    let a = Sandbox::new();

    let before_import = Timestamp::now();
    let imported = a.import(&data.lines);
    let after_import = Timestamp::now();
    assert_eq!(
        imported,
        json!({"organizations": 5, "users": 5, "projects": 43, "proxy_settings": 13})
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
        json!({"organizations": 5, "users": 5, "projects": 42, "proxy_settings": 11})
    );
    let text1 = read(&file1);
    let lines = parse_export(&text1);
    assert_eq!(lines.len(), 5 + 5 + 42 + 11);
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
        assert_eq!(*exported, &expected);
    }
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
                "organizations": [org_id(1), org_id(2), org_id(0x30)],
                "created_at": "2026-01-05T00:00:00.000Z"})
    );
    assert_eq!(
        users[0],
        &json!({"object": "user", "id": "u-single", "email": "ünï@exämple.com",
                "organizations": [org_id(2)], "created_at": "2026-01-04T00:00:00.999Z"})
    );
    // Given as [0x20, 5]: sorted.
    assert_eq!(users[2]["organizations"], json!([org_id(5), org_id(0x20)]));

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

// ----- Where the export goes -----

#[test]
fn export_destinations_summaries_and_failures() {
    let sandbox = Sandbox::new();
    sandbox.import(&[
        org(1),
        org(2),
        user("u1", &[1, 2]),
        project("p1", 1, 0),
        project("p2", 2, 1),
        settings("p1", 1, true),
    ]);
    let counts = json!({"organizations": 2, "users": 1, "projects": 2, "proxy_settings": 1});

    // To a FILE with --json: the counts, one JSON document on stdout.
    let file = sandbox.path().join("out.ndjson");
    assert_eq!(export_to(&sandbox, &file), counts);
    let exported = read(&file);
    assert_eq!(parse_export(&exported).len(), 6);

    // To a FILE without --json: human text on stdout, nothing on stderr.
    let out = sandbox.run(&["admin", "export", &file.display().to_string()]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:#?}");
    assert!(out.stdout.contains("2 projects"), "{out:#?}");
    assert_eq!(read(&file), exported);

    // A relative FILE is in the current folder.
    let out = sandbox.run(&["admin", "export", "relative.ndjson", "--quiet"]);
    assert!(out.status.success(), "{out:#?}");
    assert_eq!(read(&sandbox.path().join("relative.ndjson")), exported);

    // To stdout (no FILE, or -): only NDJSON there; the summary on stderr,
    // as JSON with --json; none with --quiet.
    for args in [
        vec!["admin", "export"],
        vec!["admin", "export", "-"],
        vec!["admin", "export", "--json"],
        vec!["admin", "export", "-", "--json"],
        vec!["admin", "export", "--quiet"],
        vec!["admin", "export", "-q", "--json"],
    ] {
        let out = sandbox.run(&args);
        assert!(out.status.success(), "{args:?}: {out:#?}");
        assert_eq!(out.stdout, exported, "{args:?}");
        let quiet = args.contains(&"--quiet") || args.contains(&"-q");
        if quiet {
            assert!(out.stderr.is_empty(), "{args:?}: {out:#?}");
        } else if args.contains(&"--json") {
            assert_eq!(one_json_document(&out.stderr), counts, "{args:?}");
        } else {
            assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out:#?}");
            assert!(out.stderr.contains("2 projects"), "{args:?}: {out:#?}");
        }
    }
    // --quiet to a FILE still prints the result.
    let out = sandbox.run(&[
        "admin",
        "export",
        &file.display().to_string(),
        "-q",
        "--json",
    ]);
    assert_eq!(out.json(), counts);

    // A FILE in a folder that does not exist: one line, nothing created.
    let before = listing(sandbox.path());
    let missing = sandbox.path().join("no-such-folder").join("out.ndjson");
    let line = sandbox
        .run(&["admin", "export", &missing.display().to_string(), "--json"])
        .error(&["no-such-folder"]);
    assert!(!line.contains('\r'), "{line}");
    assert!(!sandbox.path().join("no-such-folder").exists());
    assert_eq!(listing(sandbox.path()), before);

    // A pre-existing FILE is replaced on success...
    let old = sandbox.path().join("old.ndjson");
    std::fs::write(&old, "old content\n".repeat(10_000)).unwrap();
    assert_eq!(export_to(&sandbox, &old), counts);
    assert_eq!(read(&old), exported);

    // ...and only then: a FILE that is a folder cannot be replaced; the
    // folder stays as it was and no temporary file is left behind.
    let folder = sandbox.path().join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("inside.txt"), "kept").unwrap();
    let before = listing(sandbox.path());
    sandbox
        .run(&["admin", "export", &folder.display().to_string()])
        .error(&[]);
    assert_eq!(listing(sandbox.path()), before);
    assert_eq!(listing(&folder), ["inside.txt"]);

    // An export that fails half-way (a stored revision no longer reads)
    // leaves the existing FILE untouched and nothing beside it.
    std::fs::write(&old, "old content\n").unwrap();
    let connection = rusqlite::Connection::open(sandbox.db_path()).unwrap();
    connection
        .execute(
            "UPDATE proxy_settings SET body = '{not json' WHERE project_id = 'p1'",
            [],
        )
        .unwrap();
    drop(connection);
    let before = listing(sandbox.path());
    sandbox
        .run(&["admin", "export", &old.display().to_string(), "--json"])
        .error(&[]);
    assert_eq!(read(&old), "old content\n");
    assert_eq!(listing(sandbox.path()), before);
}

#[test]
fn exporting_an_empty_store_writes_nothing_but_succeeds() {
    let sandbox = Sandbox::new();
    sandbox.json(&["migrate"]);
    let file = sandbox.path().join("empty.ndjson");
    assert_eq!(
        export_to(&sandbox, &file),
        json!({"organizations": 0, "users": 0, "projects": 0, "proxy_settings": 0})
    );
    assert_eq!(read(&file), "");
    let out = sandbox.run(&["admin", "export", "--quiet"]);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:#?}");
}

// ----- Progress -----

/// No progress bar, spinner or carriage return in `text`.
#[track_caller]
fn assert_no_bar(text: &str, what: &str) {
    for needle in ["\r", "\u{1b}", "=>", "/s", " lines", "ETA", "KiB", "MiB"] {
        assert!(!text.contains(needle), "{what}: {needle:?} in {text:?}");
    }
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let sandbox = Sandbox::new();
    let file = sandbox.ndjson("big.ndjson", &many_projects(10_000));

    let out = sandbox.run(&["admin", "import", &file]);
    assert!(out.status.success(), "{out:#?}");
    assert!(out.stderr.is_empty(), "import: {:?}", out.stderr);
    assert_no_bar(&out.stdout, "import stdout");

    let text = std::fs::read_to_string(&file).unwrap();
    let out = sandbox.run_with_stdin(&["admin", "import", "-", "--json"], &text);
    assert!(out.status.success(), "{out:#?}");
    assert!(out.stderr.is_empty(), "import from stdin: {:?}", out.stderr);

    let exported = sandbox.path().join("out.ndjson");
    let out = sandbox.run(&["admin", "export", &exported.display().to_string()]);
    assert!(out.status.success(), "{out:#?}");
    assert!(out.stderr.is_empty(), "export to a file: {:?}", out.stderr);
    assert_no_bar(&out.stdout, "export stdout");

    let out = sandbox.run(&["admin", "export"]);
    assert!(out.status.success(), "{out:#?}");
    assert_eq!(out.stderr.lines().count(), 1, "{:?}", out.stderr);
    assert_no_bar(&out.stderr, "export to stdout, stderr");
    assert_eq!(out.stdout.lines().count(), 10_001);
}

/// `command` run under `script`, which gives it a pseudo-terminal for
/// stdin, stdout and stderr; what the terminal showed comes back on
/// `script`'s stdout.
fn on_a_terminal(cwd: &Path, command: &Command) -> Command {
    on_a_terminal_reading(cwd, command, None)
}

/// Like [`on_a_terminal`], with stdin read from `input` (a file) instead.
fn on_a_terminal_reading(cwd: &Path, command: &Command, input: Option<&str>) -> Command {
    let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
    let mut line = quote(&command.get_program().to_string_lossy());
    for arg in command.get_args() {
        line.push(' ');
        line.push_str(&quote(&arg.to_string_lossy()));
    }
    if let Some(input) = input {
        line.push_str(" < ");
        line.push_str(&quote(input));
    }
    let mut script = Command::new("/usr/bin/script");
    script.args(["-qfec", &line, "/dev/null"]).current_dir(cwd);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PROXYDECK_") {
            script.env_remove(&key);
        }
    }
    // indicatif draws nothing on a dumb (or unnamed) terminal.
    script.env("TERM", "xterm").env_remove("RUST_LOG");
    script
}

/// Signs that a progress bar was drawn in what a terminal showed.
#[track_caller]
fn assert_drew_a_bar(shown: &str, unit: &str) {
    assert!(
        shown.contains("/s") && shown.contains(unit) && shown.contains("\u{1b}["),
        "no progress bar ({unit}) was drawn: {shown:?}"
    );
}

#[test]
fn import_draws_a_progress_bar_on_a_terminal_unless_quiet() {
    let sandbox = Sandbox::new();
    // The bar draws on the first 64 KiB read, then at most 20 times a
    // second: 1.3 MiB is plenty.
    let file = sandbox.ndjson("big.ndjson", &many_projects(10_000));

    let out = finish(
        on_a_terminal(
            sandbox.path(),
            &sandbox.command(&["admin", "import", &file]),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_drew_a_bar(&out.stdout, "iB");
    assert!(out.stdout.contains("10000 projects"), "{:?}", out.stdout);

    // From standard input, of unknown size: a spinner with the rate.
    let spun = Sandbox::new();
    let out = finish(
        on_a_terminal_reading(
            spun.path(),
            &spun.command(&["admin", "import", "-"]),
            Some(&file),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_drew_a_bar(&out.stdout, "iB");
    assert!(out.stdout.contains("10000 projects"), "{:?}", out.stdout);

    // --quiet: the summary only.
    let quiet = Sandbox::new();
    let out = finish(
        on_a_terminal(
            quiet.path(),
            &quiet.command(&["admin", "import", &file, "--quiet"]),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_no_bar(
        &out.stdout.replace("\r\n", "\n"),
        "import --quiet on a terminal",
    );
    assert!(out.stdout.contains("10000 projects"), "{:?}", out.stdout);
}

#[test]
fn export_draws_a_progress_bar_on_a_terminal_unless_quiet() {
    let sandbox = Sandbox::new();
    let file = sandbox.ndjson("big.ndjson", &many_projects(20_000));
    sandbox.json(&["admin", "import", &file, "--quiet"]);
    let exported = sandbox.path().join("out.ndjson");
    let target = exported.display().to_string();

    let out = finish(
        on_a_terminal(
            sandbox.path(),
            &sandbox.command(&["admin", "export", &target]),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_drew_a_bar(&out.stdout, " lines");
    assert!(out.stdout.contains("20000 projects"), "{:?}", out.stdout);
    assert_eq!(read(&exported).lines().count(), 20_001);

    let out = finish(
        on_a_terminal(
            sandbox.path(),
            &sandbox.command(&["admin", "export", &target, "-q"]),
        ),
        None,
    );
    assert!(out.status.success(), "{out:#?}");
    assert_no_bar(&out.stdout.replace("\r\n", "\n"), "export -q on a terminal");
    assert!(out.stdout.contains("20000 projects"), "{:?}", out.stdout);
    assert_eq!(read(&exported).lines().count(), 20_001);
}

// ----- All or nothing, on a big file -----

#[test]
fn an_error_deep_in_a_big_import_writes_nothing_and_names_its_line() {
    let sandbox = Sandbox::new();
    sandbox.import(&[
        org(1),
        user("u1", &[1]),
        project("keep", 1, 0),
        settings("keep", 1, true),
    ]);
    sandbox.token("u1", "kept");
    let before = dump(&sandbox.db_path());

    let good = many_projects(9_999);
    assert_eq!(good.len(), 10_000);

    // A value rule broken on line 5000 (found while reading).
    let mut lines = good.clone();
    lines[4_999] = json!({"object": "project", "id": "bad", "organization_id": org_id(1),
                          "log_severity": "LOUD"})
    .to_string();
    let file = sandbox.ndjson("bad-5000.ndjson", &lines);
    let line = sandbox
        .run(&["admin", "import", &file, "--json"])
        .error(&["line 5000", "log_severity"]);
    assert!(!line.contains("line 1:"), "{line}");
    assert_eq!(
        dump(&sandbox.db_path()),
        before,
        "line 5000: the store changed"
    );

    // The same through standard input.
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    sandbox
        .run_with_stdin(&["admin", "import", "-"], &text)
        .error(&["line 5000", "log_severity"]);
    assert_eq!(dump(&sandbox.db_path()), before, "stdin: the store changed");

    // A reference to nothing on line 7000 (found while writing, after 6998
    // projects went into the transaction).
    let mut lines = good.clone();
    lines[6_999] = settings("nowhere", 1, true).to_string();
    let file = sandbox.ndjson("bad-7000.ndjson", &lines);
    sandbox
        .run(&["admin", "import", &file])
        .error(&["line 7000", "project_id"]);
    assert_eq!(
        dump(&sandbox.db_path()),
        before,
        "line 7000: the store changed"
    );

    // The last line of the file.
    let mut lines = good;
    lines[9_999] = "{\"object\": \"project\"".to_owned();
    let file = sandbox.ndjson("bad-10000.ndjson", &lines);
    sandbox
        .run(&["admin", "import", &file])
        .error(&["line 10000"]);
    assert_eq!(
        dump(&sandbox.db_path()),
        before,
        "line 10000: the store changed"
    );
}

/// The fixtures' +02:00 times name the instants they mean to.
#[test]
fn plus_two_writes_the_same_instant() {
    let shifted = plus_two("2026-01-01T23:30:00.250Z");
    assert_eq!(shifted, "2026-01-02T01:30:00.250+02:00");
    assert_eq!(wire(&shifted), "2026-01-01T23:30:00.250Z");
}

/// An export file gets the mode any new file gets there (not a temporary
/// file's private 0600), and replacing an export keeps the old file's mode.
#[test]
fn export_files_get_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt as _;
    let sandbox = Sandbox::new();
    sandbox.directory(1, "u1");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    // What this process's umask gives a new file.
    let probe = sandbox.path().join("probe");
    std::fs::File::create(&probe).unwrap();

    let fresh = sandbox.path().join("fresh.ndjson");
    export_to(&sandbox, &fresh);
    assert_eq!(mode(&fresh), mode(&probe));

    let kept = sandbox.path().join("kept.ndjson");
    std::fs::write(&kept, "old\n").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).unwrap();
    export_to(&sandbox, &kept);
    assert_eq!(mode(&kept), 0o640);
    assert_ne!(read(&kept), "old\n");
}
