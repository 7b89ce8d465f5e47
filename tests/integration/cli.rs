//! The `proxydeck` command line of `cli.md`: the real binary, run as a
//! child process on SQLite files in temporary folders. Where a command's
//! effect must show in the API, a real `proxydeck serve` (or `demo`) child
//! process answers over loopback HTTP.

use std::net::TcpListener;
use std::time::Duration;

use proxydeck::domain::time::Timestamp;
use serde_json::{Value, json};

use crate::binary::*;
use crate::helpers::*;

// ----- Small checks -----

/// A timestamp in the wire format `2026-05-01T12:00:00.000Z`.
#[track_caller]
fn wire_time(value: &Value) -> Timestamp {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a timestamp: {value}"));
    let shape = "dddd-dd-ddTdd:dd:dd.dddZ";
    assert_eq!(text.len(), shape.len(), "{text}");
    for (got, want) in text.chars().zip(shape.chars()) {
        if want == 'd' {
            assert!(got.is_ascii_digit(), "{text}");
        } else {
            assert_eq!(got, want, "{text}");
        }
    }
    Timestamp::parse(text).expect("a valid timestamp")
}

/// A lower-case hyphenated UUIDv7, as generated ids are.
#[track_caller]
fn assert_uuid_v7(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not an id: {value}"));
    assert_eq!(text, text.to_lowercase(), "{text}");
    assert_eq!(text.len(), 36, "{text}");
    let uuid = uuid::Uuid::parse_str(text).expect("a UUID");
    assert_eq!(uuid.get_version_num(), 7, "{text}");
}

/// No member of `value`, however deep, is `null`.
#[track_caller]
fn assert_no_null(value: &Value) {
    match value {
        Value::Null => panic!("a null"),
        Value::Array(items) => items.iter().for_each(assert_no_null),
        Value::Object(members) => members.values().for_each(assert_no_null),
        _ => {}
    }
}

fn by_id<'a>(items: &'a [Value], id: &str) -> &'a Value {
    items
        .iter()
        .find(|item| item["id"] == json!(id))
        .unwrap_or_else(|| panic!("no {id} in {items:#?}"))
}

fn listed_ids(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect()
}

// ----- Fixtures -----

/// A project with every field set, none to its default.
fn full_project() -> Value {
    json!({
        "object": "project",
        "id": "full-project",
        "organization_id": org_id(1),
        "slug": "full",
        "description": "Every field set",
        "type": "ai_analytics",
        "avatar_url": "https://avatars.example/full.png",
        "created_at": "2026-02-01T10:00:00.123Z",
        "updated_at": "2026-02-03T11:30:00.456Z",
        "external_project_url": "https://full.example",
        "log_severity": "WARNING",
        "edgee_behind_proxy_cache": true,
        "force_https": false,
        "cache": true,
        "override_cache": [{
            "path": "^/static/.*", "regex": true, "ttl": 3600, "swr": 60, "pass": true, "rank": 2,
            "conditions": {
                "request_cookies": {"present": ["session"], "absent": ["debug"], "values": {"lang": "fr"}},
                "request_headers": {"present": ["accept"], "absent": [], "values": {"x-n": 3}},
                "request_query_params": {"present": [], "absent": ["nocache"], "values": {"v": [1, "a"]}},
                "response_headers": {"present": ["etag"], "absent": [], "values": {}},
                "request_methods": ["GET", "HEAD"],
                "response_status": [200, 304]
            }
        }],
        "override_cache_enabled": true,
        "cookie_name": "_full",
        "cookie_domain": ".full.example",
        "proxy_only": true,
        "proxy_only_path_regex": "^/api/",
        "inject_sdk": true,
        "inject_sdk_position": "prepend",
        "cookieless": true,
        "autocapture": {"pageview": true, "spa_pageview": true, "engagement": false,
                        "click": true, "form": false, "scroll": true},
        "enforce_no_store_policy": true,
        "trusted_ips": ["10.0.0.0/8", "2001:db8::/32"],
        "password_protection": true,
        "blocked_ips": ["203.0.113.7"],
        "cookie_whitelist": ["session", "csrftoken"],
        "forwarded_headers": [{"name": "X-Env", "value": "production"}],
        "rate_limiting": [{
            "rank": 1, "limit": 50, "window": "60s", "block_duration": 120, "key": ["ip", "ua"],
            "conditions": {"path": "/login", "regex": false, "method": ["POST", "PUT"],
                           "continent": ["EU", "NA"], "country": ["FR", "US"]}
        }],
        "rate_limiting_enabled": true
    })
}

/// What a project with only `id`, `organization_id` and the timestamps
/// lists as: every other field at its default.
fn default_project(id: &str, organization: &str, created_at: &Value, updated_at: &Value) -> Value {
    json!({
        "object": "project", "id": id, "organization_id": organization,
        "slug": "", "description": "", "type": "proxy", "avatar_url": "",
        "created_at": created_at, "updated_at": updated_at,
        "external_project_url": "", "log_severity": "INFO",
        "edgee_behind_proxy_cache": false, "force_https": true, "cache": false,
        "override_cache": [], "override_cache_enabled": false,
        "cookie_name": "", "cookie_domain": "", "proxy_only": false, "proxy_only_path_regex": "",
        "inject_sdk": false, "inject_sdk_position": "append", "cookieless": false,
        "autocapture": {"pageview": false, "spa_pageview": false, "engagement": false,
                        "click": false, "form": false, "scroll": false},
        "enforce_no_store_policy": false, "trusted_ips": [], "password_protection": false,
        "blocked_ips": [], "cookie_whitelist": [], "forwarded_headers": [],
        "rate_limiting": [], "rate_limiting_enabled": false
    })
}

/// A revision with every backend and route field set.
fn full_settings(project_id: &str, revision: u32, active: bool) -> Value {
    json!({
        "object": "proxy_settings", "project_id": project_id, "revision": revision,
        "description": format!("revision {revision}"), "is_active": active,
        "backends": [
            {"name": "origin", "address": "origin.example:443", "enable_ssl": true,
             "check_certificate": "origin.example", "ca_certificate": "-----BEGIN CERTIFICATE-----",
             "sni_hostname": "sni.origin.example", "default": true, "override_host": "www.example"},
            {"name": "static", "address": "static.example:80", "enable_ssl": false, "default": false}
        ],
        "routes": [
            {"path": "/assets/", "regex": false, "backend_name": "static", "rank": "1",
             "continent": [], "region": [], "country": []},
            {"path": "^/eu/.*", "regex": true, "backend_name": "origin", "rank": "2",
             "continent": ["EU"], "region": ["IDF"], "country": ["FR", "DE"]}
        ]
    })
}

/// The listing form of an imported revision: the same, without `project_id`.
fn as_listed(settings: &Value) -> Value {
    let mut listed = settings.clone();
    listed.as_object_mut().unwrap().remove("project_id");
    listed
}

// ----- 1. migrate -----

#[test]
fn migrate_creates_the_database_and_prints_one_json_document() {
    let sandbox = Sandbox::new();
    assert!(!sandbox.db_path().exists());

    let out = sandbox.run(&["migrate", "--json"]);
    let first = out.json();
    assert!(first.is_object(), "{first}");
    assert!(sandbox.db_path().is_file(), "no database file was created");
    assert!(
        !dump(&sandbox.db_path()).is_empty(),
        "migrate wrote no schema"
    );

    // Again, on the migrated file: nothing to do, still success.
    let before = dump(&sandbox.db_path());
    let again = sandbox.run(&["migrate", "--json"]).json();
    assert_eq!(again, first);
    assert_eq!(dump(&sandbox.db_path()), before);

    // Without --json: success, and human text.
    let human = sandbox.run(&["migrate"]);
    assert!(human.status.success(), "{human:#?}");
}

#[test]
fn migrate_uses_the_default_database_and_the_environment_variable() {
    let sandbox = Sandbox::new();

    // No --database, no environment: ./proxydeck.db.
    let mut command = proxydeck(sandbox.path());
    command.args(["migrate", "--json"]);
    finish(command, None).json();
    assert!(sandbox.path().join("proxydeck.db").is_file());

    // PROXYDECK_DATABASE_URL picks the file.
    let from_env = sandbox.path().join("from-env.db");
    let mut command = proxydeck(sandbox.path());
    command.args(["migrate", "--json"]).env(
        "PROXYDECK_DATABASE_URL",
        format!("sqlite://{}", from_env.display()),
    );
    finish(command, None).json();
    assert!(from_env.is_file());

    // --database wins over the environment.
    let from_flag = sandbox.path().join("from-flag.db");
    let unused = sandbox.path().join("unused.db");
    let mut command = proxydeck(sandbox.path());
    command
        .args(["migrate", "--json", "--database"])
        .arg(format!("sqlite://{}", from_flag.display()))
        .env(
            "PROXYDECK_DATABASE_URL",
            format!("sqlite://{}", unused.display()),
        );
    finish(command, None).json();
    assert!(from_flag.is_file());
    assert!(!unused.exists());
}

// ----- 2. admin org create -----

#[test]
fn org_create_prints_the_organization() {
    let sandbox = Sandbox::new();
    let before = Timestamp::now();
    let given = "0190B7A4-9A6E-7C3E-8F00-1A2B3C4D5E6F";
    let organization = sandbox.json(&[
        "admin",
        "org",
        "create",
        "--name",
        "Acme Corp",
        "--id",
        given,
    ]);
    let after = Timestamp::now();
    assert_eq!(organization["id"], json!(given.to_lowercase()));
    assert_eq!(organization["name"], json!("Acme Corp"));
    let created = wire_time(&organization["created_at"]);
    assert!(before <= created && created <= after, "{organization}");
    assert_no_null(&organization);

    // Without --id: a new UUIDv7.
    let generated = sandbox.json(&["admin", "org", "create", "--name", "Globex"]);
    assert_uuid_v7(&generated["id"]);
    assert_eq!(generated["name"], json!("Globex"));
    wire_time(&generated["created_at"]);
    assert_ne!(generated["id"], organization["id"]);

    // Without --json: human text, still success.
    let human = sandbox.run(&["admin", "org", "create", "--name", "Initech"]);
    assert!(human.status.success(), "{human:#?}");
    assert!(!human.stdout.trim().is_empty());
}

#[test]
fn org_create_refuses_bad_ids_empty_names_and_duplicates() {
    let sandbox = Sandbox::new();
    let id = "0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f";
    for bad in [
        "nope",
        "0190b7a49a6e7c3e8f001a2b3c4d5e6f",
        "{0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f}",
        "0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6",
    ] {
        sandbox
            .run(&["admin", "org", "create", "--name", "Acme", "--id", bad])
            .error(&["id"]);
    }
    sandbox
        .run(&["admin", "org", "create", "--name", "", "--id", id])
        .error(&["name"]);
    sandbox
        .run(&["admin", "org", "create", "--name", "", "--json"])
        .error(&["name"]);

    sandbox.json(&["admin", "org", "create", "--name", "Acme", "--id", id]);
    sandbox
        .run(&[
            "admin", "org", "create", "--name", "Again", "--id", id, "--json",
        ])
        .error(&[id]);
    // The same id in capitals is the same organization.
    sandbox
        .run(&[
            "admin",
            "org",
            "create",
            "--name",
            "Again",
            "--id",
            &id.to_uppercase(),
        ])
        .error(&[id]);
}

// ----- 3. admin user create -----

#[tokio::test]
async fn user_create_prints_the_user_with_its_organizations() {
    let sandbox = Sandbox::new();
    let (first, second) = (org_id(1), org_id(0xabc));
    sandbox.json(&["admin", "org", "create", "--name", "One", "--id", &first]);
    sandbox.json(&["admin", "org", "create", "--name", "Two", "--id", &second]);

    let user = sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "ops@example.com",
        "--org",
        &first,
        "--org",
        &second.to_uppercase(),
        "--id",
        "ops-user_1",
    ]);
    assert_eq!(user["id"], json!("ops-user_1"));
    assert_eq!(user["email"], json!("ops@example.com"));
    assert_eq!(user["organizations"], json!([first, second]));
    assert_no_null(&user);

    // Without --id: a new UUIDv7.
    let generated = sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "dev@example.com",
        "--org",
        &first,
    ]);
    assert_uuid_v7(&generated["id"]);
    assert_eq!(generated["organizations"], json!([first]));

    // The user sees the projects of both organizations.
    sandbox.import(&[project("in-first", 1, 0), project("in-second", 0xabc, 1)]);
    let secret = sandbox.token("ops-user_1", "ci");
    let server = sandbox.serve(&[]);
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["in-first", "in-second"]);
}

#[test]
fn user_create_refuses_unknown_organizations_bad_emails_and_bad_ids() {
    let sandbox = Sandbox::new();
    let known = org_id(1);
    let unknown = org_id(99);
    sandbox.json(&["admin", "org", "create", "--name", "One", "--id", &known]);

    sandbox
        .run(&[
            "admin",
            "user",
            "create",
            "--email",
            "a@example.com",
            "--org",
            &known,
            "--org",
            &unknown,
            "--json",
        ])
        .error(&[&unknown]);
    for bad in [
        "not-an-email",
        "two@at@example.com",
        "with space@example.com",
        "@example.com",
    ] {
        sandbox
            .run(&["admin", "user", "create", "--email", bad, "--org", &known])
            .error(&["email"]);
    }
    sandbox
        .run(&[
            "admin",
            "user",
            "create",
            "--email",
            "a@example.com",
            "--org",
            &known,
            "--id",
            "has space",
        ])
        .error(&["id"]);
    sandbox
        .run(&[
            "admin",
            "user",
            "create",
            "--email",
            "a@example.com",
            "--org",
            "not-a-uuid",
        ])
        .error(&["organizations"]);

    // Nothing of the refused users was written: the ids are still free.
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "a@example.com",
        "--org",
        &known,
        "--id",
        "u1",
    ]);
    sandbox
        .run(&[
            "admin",
            "user",
            "create",
            "--email",
            "b@example.com",
            "--org",
            &known,
            "--id",
            "u1",
        ])
        .error(&["u1"]);
}

// ----- 4. admin token create -----

#[tokio::test]
async fn token_create_prints_the_secret_once_and_it_authenticates() {
    let sandbox = Sandbox::new();
    sandbox.directory(1, "u1");

    let before = Timestamp::now();
    let expiring = sandbox.json(&[
        "admin",
        "token",
        "create",
        "--user",
        "u1",
        "--name",
        "ci",
        "--expires-in",
        "90d",
    ]);
    let after = Timestamp::now();
    assert_eq!(expiring["object"], json!("api_token"));
    assert_eq!(expiring["user_id"], json!("u1"));
    assert_eq!(expiring["name"], json!("ci"));
    assert_eq!(expiring["from_browser"], json!(false));
    assert!(expiring.get("last_used_at").is_none(), "{expiring}");
    assert_no_null(&expiring);
    let created = wire_time(&expiring["created_at"]);
    assert!(before <= created && created <= after, "{expiring}");
    wire_time(&expiring["updated_at"]);
    let ninety_days = 90 * 86_400;
    let expires = wire_time(&expiring["expires_at"]);
    assert!(
        before.plus_seconds(ninety_days).unwrap() <= expires
            && expires <= after.plus_seconds(ninety_days).unwrap(),
        "{expiring}"
    );
    let secret = expiring["token"].as_str().expect("a secret").to_owned();
    assert!(secret.starts_with("pxd_"), "{secret}");
    assert_eq!(secret.len(), 42, "{secret}");
    assert!(
        secret[4..].bytes().all(|b| b.is_ascii_alphanumeric()),
        "{secret}"
    );

    let forever = sandbox.json(&[
        "admin", "token", "create", "--user", "u1", "--name", "forever",
    ]);
    assert!(forever.get("expires_at").is_none(), "{forever}");
    let forever_secret = forever["token"].as_str().unwrap().to_owned();
    assert_ne!(forever_secret, secret);

    let server = sandbox.serve(&[]);
    for token in [&secret, &forever_secret] {
        let (status, body) = server.get("/v1/projects", token).await;
        assert_eq!(status, 200, "{body}");
    }
    let raw = server.text("/v1/api_tokens?limit=100", &secret).await;
    assert!(
        !raw.contains(&secret) && !raw.contains(&forever_secret),
        "{raw}"
    );
    let listed = server.tokens(&secret).await;
    for (printed, secret) in [(&expiring, &secret), (&forever, &forever_secret)] {
        let id = printed["id"].as_str().unwrap();
        let entry = by_id(&listed, id);
        assert_eq!(
            entry["token"],
            json!(format!("pxd_****{}", &secret[secret.len() - 4..])),
            "{entry}"
        );
        for field in [
            "object",
            "user_id",
            "name",
            "from_browser",
            "created_at",
            "expires_at",
        ] {
            assert_eq!(entry.get(field), printed.get(field), "{field} of {entry}");
        }
    }
}

/// decisions.md section 4: a token is stored only as its SHA-256 digest.
/// Every byte the store keeps (the database file, its WAL and shared
/// memory) is searched for the secrets' random parts; the digests are
/// searched too, so the scan is shown to reach the tokens' rows.
#[test]
fn the_store_keeps_digests_never_secrets() {
    let sandbox = Sandbox::new();
    sandbox.directory(1, "u1");
    let secrets: Vec<String> = (0..3)
        .map(|i| {
            let name = format!("t{i}");
            let made = sandbox.json(&["admin", "token", "create", "--user", "u1", "--name", &name]);
            made["token"].as_str().expect("a secret").to_owned()
        })
        .collect();
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(sandbox.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().contains("x.db") {
            stored.extend(std::fs::read(&path).unwrap());
        }
    }
    let holds = |needle: &[u8]| stored.windows(needle.len()).any(|w| w == needle);
    for secret in &secrets {
        assert!(
            !holds(&secret.as_bytes()[4..36]),
            "a secret's random part is stored"
        );
        let digest = proxydeck::domain::token::digest(secret);
        assert!(
            holds(&digest.0),
            "the digest is stored where the scan looks"
        );
    }
}

/// A password in the database URL never reaches the output, whether the
/// server is unreachable or refuses the database.
#[test]
fn a_database_password_never_reaches_the_output() {
    let sandbox = Sandbox::new();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let urls = [
        format!("postgres://proxydeck:hunter2secret@{closed}/proxydeck"),
        "postgres://postgres:hunter2secret@127.0.0.1:5432/no_such_database_here".to_owned(),
    ];
    for url in &urls {
        for args in [&["migrate"][..], &["serve", "--listen", "127.0.0.1:0"]] {
            let mut command = proxydeck(sandbox.path());
            command
                .args(args)
                .args(["--database", url, "--db-timeout", "1s"]);
            let out = finish(command, None);
            assert!(!out.status.success(), "{args:?} {url}: {out:#?}");
            assert!(
                !out.stderr.contains("hunter2") && !out.stdout.contains("hunter2"),
                "{args:?}: the password is in the output: {out:#?}"
            );
        }
    }
}

/// `proxydeck ... | head`: when the reader of stdout has gone, a command
/// stops quietly with success, as other Unix tools do, instead of a panic
/// or an error about a broken pipe.
#[test]
fn a_closed_stdout_ends_commands_quietly() {
    let sandbox = Sandbox::new();
    sandbox.json(&["admin", "org", "create", "--name", "Acme"]);
    for args in [&["migrate", "--json"][..], &["admin", "export"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = sandbox
            .command(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

#[test]
fn token_create_refuses_bad_durations_unknown_users_and_empty_names() {
    let sandbox = Sandbox::new();
    sandbox.directory(1, "u1");
    for bad in ["90x", "abc", "90", "d", "-1d", "1.5h"] {
        let flag = format!("--expires-in={bad}");
        let out = sandbox.run(&[
            "admin", "token", "create", "--user", "u1", "--name", "ci", &flag,
        ]);
        assert!(!out.status.success(), "{bad}: {out:#?}");
        let first = out.stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("error:"), "{bad}: {out:#?}");
        assert!(first.contains("--expires-in"), "{bad}: {out:#?}");
        assert!(out.stdout.trim().is_empty(), "{bad}: {out:#?}");
    }
    // Past year 9999.
    sandbox
        .run(&[
            "admin",
            "token",
            "create",
            "--user",
            "u1",
            "--name",
            "ci",
            "--expires-in",
            "99999999d",
        ])
        .error(&["--expires-in"]);
    sandbox
        .run(&[
            "admin", "token", "create", "--user", "nobody", "--name", "ci", "--json",
        ])
        .error(&["nobody"]);
    sandbox
        .run(&["admin", "token", "create", "--user", "u1", "--name", ""])
        .error(&["name"]);
}

/// `cli.md`: "non-zero with a one-line error on stderr otherwise". A value
/// the argument parser refuses is an error like any other.
#[test]
fn argument_errors_are_one_line() {
    let sandbox = Sandbox::new();
    sandbox.directory(1, "u1");
    sandbox
        .run(&[
            "admin",
            "token",
            "create",
            "--user",
            "u1",
            "--name",
            "ci",
            "--expires-in",
            "90x",
        ])
        .error(&["--expires-in", "90x"]);
}

#[tokio::test]
async fn token_created_with_a_short_lifetime_expires() {
    let sandbox = Sandbox::new();
    let other = sandbox.directory(1, "u1");
    let token = sandbox.json(&[
        "admin",
        "token",
        "create",
        "--user",
        "u1",
        "--name",
        "brief",
        "--expires-in",
        "1s",
    ]);
    let secret = token["token"].as_str().unwrap();
    let expires = wire_time(&token["expires_at"]);
    let created = wire_time(&token["created_at"]);
    // Both are "now" plus or minus a moment: the lifetime is one second.
    let lifetime = expires.as_millis() - created.as_millis();
    assert!((950..=1_050).contains(&lifetime), "{token}");

    let server = sandbox.serve(&[]);
    let (status, body) = server.get("/v1/projects", secret).await;
    if Timestamp::now() < expires {
        assert_eq!(status, 200, "{body}");
    }
    let wait = expires.as_millis() - Timestamp::now().as_millis() + 100;
    tokio::time::sleep(Duration::from_millis(u64::try_from(wait).unwrap_or(0))).await;
    let (status, body) = server.get("/v1/projects", secret).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(assert_error_shape(&body), "authentication_error");
    // Expired tokens still show in their owner's listing.
    let listed = server.tokens(&other).await;
    assert_eq!(
        by_id(&listed, token["id"].as_str().unwrap())["expires_at"],
        token["expires_at"]
    );
}

// ----- 5. admin token revoke -----

#[tokio::test]
async fn token_revoke_stops_the_token_authenticating() {
    let sandbox = Sandbox::new();
    sandbox.directory(1, "u1");
    let doomed = sandbox.json(&[
        "admin", "token", "create", "--user", "u1", "--name", "doomed",
    ]);
    let doomed_id = doomed["id"].as_str().unwrap().to_owned();
    let doomed_secret = doomed["token"].as_str().unwrap().to_owned();
    let survivor = sandbox.token("u1", "survivor");

    let server = sandbox.serve(&[]);
    // The doomed token is in use (and so in the server's cache).
    let (status, body) = server.get("/v1/projects", &doomed_secret).await;
    assert_eq!(status, 200, "{body}");
    assert!(listed_ids(&server.tokens(&survivor).await).contains(&doomed_id.as_str()));

    let revoked = sandbox.json(&["admin", "token", "revoke", &doomed_id]);
    assert!(revoked.is_object(), "{revoked}");

    // The server was told --token-cache-ttl 200ms.
    tokio::time::sleep(Duration::from_millis(400)).await;
    for path in ["/v1/projects", "/v1/api_tokens"] {
        let response = server.get_raw(path, &doomed_secret).await;
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        let (status, body) = json_of(response).await;
        assert_eq!(status, 401, "{path}: {body}");
        assert_eq!(assert_error_shape(&body), "authentication_error");
        assert!(
            challenge.is_some_and(|c| c.starts_with("Bearer")),
            "no WWW-Authenticate: Bearer"
        );
        assert!(!body.to_string().contains(&doomed_secret));
    }

    let listed = server.tokens(&survivor).await;
    assert!(
        !listed_ids(&listed).contains(&doomed_id.as_str()),
        "{listed:#?}"
    );
    assert_eq!(listed.len(), 2, "{listed:#?}"); // "cli" and "survivor"

    sandbox
        .run(&[
            "admin",
            "token",
            "revoke",
            "0190b7a4-0000-7000-8000-00000000dead",
        ])
        .error(&["0190b7a4-0000-7000-8000-00000000dead"]);
    sandbox
        .run(&["admin", "token", "revoke", "no-such-token", "--json"])
        .error(&["no-such-token"]);
}

// ----- 6. admin import -----

#[tokio::test]
async fn import_loads_every_kind_and_the_api_shows_it_exactly() {
    let sandbox = Sandbox::new();
    let full = full_project();
    // Some fields given, the others absent; no timestamps.
    let partial = json!({
        "object": "project", "id": "partial-project", "organization_id": org_id(2).to_uppercase(),
        "slug": "partial", "cache": true, "inject_sdk": true, "trusted_ips": ["192.0.2.1"],
        "rate_limiting_enabled": true, "rate_limiting": [{"rank": 3, "limit": 10}],
        "autocapture": {"click": true}
    });
    let minimal =
        json!({"object": "project", "id": "minimal-project", "organization_id": org_id(2)});
    let revision_one = full_settings("full-project", 1, false);
    let revision_two = full_settings("full-project", 2, true);
    let bare_revision =
        json!({"object": "proxy_settings", "project_id": "minimal-project", "revision": 1});
    let lines = vec![
        json!({"object": "organization", "id": org_id(1), "name": "One",
               "created_at": "2026-01-01T00:00:00.000Z"}),
        json!({"object": "organization", "id": org_id(2), "name": "Two"}),
        json!({"object": "user", "id": "u1", "email": "u1@example.com",
               "organizations": [org_id(1), org_id(2)]}),
        full.clone(),
        partial,
        minimal,
        revision_one.clone(),
        revision_two.clone(),
        bare_revision,
    ];
    let before = Timestamp::now();
    let counts = sandbox.import(&lines);
    let after = Timestamp::now();
    assert_eq!(
        counts,
        json!({"organizations": 2, "users": 1, "projects": 3, "proxy_settings": 3})
    );

    let secret = sandbox.token("u1", "reader");
    let server = sandbox.serve(&[]);
    let projects = server.projects(&secret).await;
    // The two without created_at share the time of import: ties go by id.
    assert_eq!(
        listed_ids(&projects),
        ["full-project", "minimal-project", "partial-project"]
    );

    assert_eq!(by_id(&projects, "full-project"), &full);

    let listed = by_id(&projects, "minimal-project");
    let created = wire_time(&listed["created_at"]);
    assert!(before <= created && created <= after, "{listed}");
    assert_eq!(listed["updated_at"], listed["created_at"]);
    assert_eq!(
        listed,
        &default_project(
            "minimal-project",
            &org_id(2),
            &listed["created_at"],
            &listed["updated_at"]
        )
    );

    let listed = by_id(&projects, "partial-project");
    let created = wire_time(&listed["created_at"]);
    assert!(before <= created && created <= after, "{listed}");
    let mut expected = default_project(
        "partial-project",
        &org_id(2),
        &listed["created_at"],
        &listed["updated_at"],
    );
    for (field, value) in [
        ("slug", json!("partial")),
        ("cache", json!(true)),
        ("inject_sdk", json!(true)),
        ("trusted_ips", json!(["192.0.2.1"])),
        ("rate_limiting_enabled", json!(true)),
        (
            "rate_limiting",
            json!([{"rank": 3, "limit": 10, "window": "10s", "block_duration": 60,
                    "key": ["ip"], "conditions": {}}]),
        ),
        (
            "autocapture",
            json!({"pageview": false, "spa_pageview": false, "engagement": false,
                   "click": true, "form": false, "scroll": false}),
        ),
    ] {
        expected[field] = value;
    }
    assert_eq!(listed, &expected);

    assert_eq!(
        server.revisions("full-project", &secret).await,
        [as_listed(&revision_one), as_listed(&revision_two)]
    );
    assert_eq!(
        server.revisions("minimal-project", &secret).await,
        [
            json!({"object": "proxy_settings", "revision": 1, "description": "",
                "is_active": false, "backends": [], "routes": []})
        ]
    );
    assert_eq!(
        server.revisions("partial-project", &secret).await,
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn import_reads_standard_input() {
    let sandbox = Sandbox::new();
    let lines = [
        org(1),
        user("u1", &[1]),
        project("from-stdin", 1, 5),
        settings("from-stdin", 1, true),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let counts = sandbox
        .run_with_stdin(&["admin", "import", "-", "--json"], &text)
        .json();
    assert_eq!(
        counts,
        json!({"organizations": 1, "users": 1, "projects": 1, "proxy_settings": 1})
    );

    let secret = sandbox.token("u1", "reader");
    let server = sandbox.serve(&[]);
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["from-stdin"]);
    assert_eq!(projects[0]["created_at"], json!(at(5)));
    assert_eq!(server.revisions("from-stdin", &secret).await.len(), 1);

    // CRLF line ends and blank lines are fine.
    let crlf = format!(
        "{}\r\n\r\n{}\r\n",
        project("crlf-1", 1, 6),
        settings("crlf-1", 1, true)
    );
    let counts = sandbox
        .run_with_stdin(&["admin", "import", "-", "--json"], &crlf)
        .json();
    assert_eq!(
        counts,
        json!({"organizations": 0, "users": 0, "projects": 1, "proxy_settings": 1})
    );
    assert_eq!(
        listed_ids(&server.projects(&secret).await),
        ["from-stdin", "crlf-1"]
    );

    // An empty input imports nothing, successfully.
    let counts = sandbox
        .run_with_stdin(&["admin", "import", "-", "--json"], "")
        .json();
    assert_eq!(
        counts,
        json!({"organizations": 0, "users": 0, "projects": 0, "proxy_settings": 0})
    );
    // A file that does not exist: one line naming it.
    let missing = sandbox.path().join("missing.ndjson").display().to_string();
    sandbox
        .run(&["admin", "import", &missing, "--json"])
        .error(&["missing.ndjson"]);
}

// ----- 7. Importing twice -----

#[tokio::test]
async fn reimporting_the_same_file_changes_nothing() {
    let sandbox = Sandbox::new();
    let lines: Vec<String> = [
        json!({"object": "organization", "id": org_id(1), "name": "One"}),
        json!({"object": "organization", "id": org_id(2), "name": "Two",
               "created_at": "2026-01-02T00:00:00.000Z"}),
        json!({"object": "user", "id": "u1", "email": "u1@example.com",
               "organizations": [org_id(1), org_id(2)]}),
        // With timestamps.
        full_project(),
        project("dated", 2, 30),
        // Without any: they take the time of the first import.
        json!({"object": "project", "id": "undated", "organization_id": org_id(1),
               "description": "no timestamps"}),
        json!({"object": "project", "id": "undated-2", "organization_id": org_id(2)}),
        // Only created_at.
        json!({"object": "project", "id": "half-dated", "organization_id": org_id(1),
               "created_at": at(60)}),
        full_settings("full-project", 1, false),
        full_settings("full-project", 2, true),
        settings("undated", 1, true),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let file = sandbox.ndjson("data.ndjson", &lines);

    let first_counts = sandbox.json(&["admin", "import", &file]);
    let secret = sandbox.token("u1", "reader");
    let before = dump(&sandbox.db_path());

    let server = sandbox.serve(&["--last-used-flush-interval", "1h"]);
    let project_ids = [
        "full-project",
        "dated",
        "undated",
        "undated-2",
        "half-dated",
    ];
    let mut paths = vec![
        "/v1/projects?limit=100".to_owned(),
        "/v1/projects?limit=100&order_direction=ASC".to_owned(),
        "/v1/projects?limit=2".to_owned(),
    ];
    for id in project_ids {
        paths.push(format!("/v1/projects/{id}/proxy-settings"));
    }
    let mut listings = Vec::new();
    for path in &paths {
        listings.push(server.text(path, &secret).await);
    }
    assert_eq!(
        listed_ids(&server.projects(&secret).await).len(),
        project_ids.len()
    );

    // Time passes: a timestamp rewritten now would differ.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second_counts = sandbox.json(&["admin", "import", &file]);
    assert_eq!(second_counts, first_counts);

    for (path, first) in paths.iter().zip(&listings) {
        let again = server.text(path, &secret).await;
        assert_eq!(&again, first, "{path} changed on the second import");
    }
    drop(server);
    assert_eq!(dump(&sandbox.db_path()), before, "the second import wrote");
}

/// `cli.md`: "importing the same file twice leaves the store as after the
/// first time" — also when the file upserts one project twice.
#[tokio::test]
async fn reimporting_a_file_that_upserts_a_project_twice_changes_nothing() {
    let sandbox = Sandbox::new();
    let lines: Vec<String> = [
        org(1),
        user("u1", &[1]),
        json!({"object": "project", "id": "twice", "organization_id": org_id(1),
               "description": "first version"}),
        json!({"object": "project", "id": "twice", "organization_id": org_id(1),
               "description": "second version"}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let file = sandbox.ndjson("twice.ndjson", &lines);
    sandbox.json(&["admin", "import", &file]);
    let secret = sandbox.token("u1", "reader");
    let server = sandbox.serve(&[]);
    let first = server.text("/v1/projects", &secret).await;
    assert!(first.contains("second version"), "{first}");

    tokio::time::sleep(Duration::from_millis(20)).await;
    sandbox.json(&["admin", "import", &file]);
    let second = server.text("/v1/projects", &secret).await;
    assert_eq!(second, first);
}

// ----- 8. All or nothing -----

/// One bad line of an eight-line file.
struct BadLine {
    what: &'static str,
    /// Lines (1-based) replaced in the template.
    lines: Vec<(usize, String)>,
    /// What the one-line error must hold besides `line 5`.
    field: Option<&'static str>,
}

#[tokio::test]
async fn import_is_all_or_nothing_and_names_the_bad_line_and_field() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    let keep = project("keep", 1, 0);
    sandbox.import(&[keep.clone(), settings("keep", 1, true)]);
    // The server writes nothing by itself: token use waits for the flush.
    let server = sandbox.serve(&["--last-used-flush-interval", "1h"]);
    let paths = ["/v1/projects?limit=100", "/v1/projects/keep/proxy-settings"];
    let mut listings = Vec::new();
    for path in paths {
        listings.push(server.text(path, &secret).await);
    }
    assert_eq!(listed_ids(&server.projects(&secret).await), ["keep"]);
    let before = dump(&sandbox.db_path());

    let p5 = |extra: Value| {
        let mut line = json!({"object": "project", "id": "p5", "organization_id": org_id(1)});
        for (key, value) in extra.as_object().unwrap() {
            line[key] = value.clone();
        }
        line.to_string()
    };
    let mut changed_keep = keep.clone();
    changed_keep["description"] = json!("changed");
    changed_keep["updated_at"] = json!(at(100));
    let template: Vec<String> = [
        json!({"object": "organization", "id": org_id(2), "name": "Two"}),
        json!({"object": "user", "id": "u2", "email": "u2@example.com",
               "organizations": [org_id(1), org_id(2)]}),
        changed_keep,
        project("p-new", 1, 10),
        project("p5", 1, 11), // replaced by each case
        settings("p-new", 1, true),
        json!({"object": "organization", "id": org_id(3), "name": "Three"}),
        project("p-late", 1, 20),
    ]
    .iter()
    .map(Value::to_string)
    .collect();

    let line5 = |what, text: String, field| BadLine {
        what,
        lines: vec![(5, text)],
        field,
    };
    let cases = vec![
        line5(
            "bad JSON",
            r#"{"object": "project", "id": "p5","#.into(),
            None,
        ),
        line5("not an object", "[1, 2]".into(), None),
        line5(
            "unknown kind",
            r#"{"object": "widget", "id": "w"}"#.into(),
            Some("object"),
        ),
        line5(
            "unknown field",
            p5(json!({"colour": "red"})),
            Some("colour"),
        ),
        line5("wrong type", p5(json!({"cache": "yes"})), Some("cache")),
        line5("null", p5(json!({"slug": null})), Some("slug")),
        line5(
            "nested wrong type",
            p5(json!({"override_cache": [{"path": "/", "ttl": "long"}]})),
            Some("override_cache[0].ttl"),
        ),
        line5(
            "enum off the list",
            p5(json!({"log_severity": "LOUD"})),
            Some("log_severity"),
        ),
        line5(
            "type off the list",
            p5(json!({"type": "website"})),
            Some("type"),
        ),
        line5(
            "rate window off the list",
            p5(json!({"rate_limiting": [{"rank": 1, "limit": 1, "window": "5s"}]})),
            Some("rate_limiting[0].window"),
        ),
        line5(
            "bad IP",
            p5(json!({"blocked_ips": ["300.1.1.1"]})),
            Some("blocked_ips[0]"),
        ),
        line5(
            "missing required field",
            json!({"object": "project", "id": "p5"}).to_string(),
            Some("organization_id"),
        ),
        line5(
            "route naming a missing backend",
            json!({"object": "proxy_settings", "project_id": "p-new", "revision": 2,
                   "backends": [{"name": "origin", "address": "o.example:443"}],
                   "routes": [{"path": "/", "backend_name": "missing", "rank": "1"}]})
            .to_string(),
            Some("routes[0].backend_name"),
        ),
        line5(
            "a second active revision (one in the store)",
            settings("keep", 2, true).to_string(),
            Some("is_active"),
        ),
        BadLine {
            what: "a second active revision (both in the file)",
            lines: vec![
                (3, project("p-new", 1, 10).to_string()),
                (4, settings("p-new", 1, true).to_string()),
                (5, settings("p-new", 2, true).to_string()),
            ],
            field: Some("is_active"),
        },
        line5(
            "settings of a project that does not exist",
            settings("nowhere", 1, false).to_string(),
            Some("project_id"),
        ),
        line5(
            "a project of an organization defined only later",
            json!({"object": "project", "id": "p5", "organization_id": org_id(3)}).to_string(),
            Some("organization_id"),
        ),
        line5(
            "a project of an organization defined nowhere",
            json!({"object": "project", "id": "p5", "organization_id": org_id(77)}).to_string(),
            Some("organization_id"),
        ),
        line5(
            "a user of an unknown organization",
            json!({"object": "user", "id": "u5", "email": "u5@example.com",
                   "organizations": [org_id(1), org_id(77)]})
            .to_string(),
            Some("organizations[1]"),
        ),
        BadLine {
            what: "blank lines still count",
            lines: vec![(2, String::new()), (5, p5(json!({"colour": "red"})))],
            field: Some("colour"),
        },
    ];

    for case in &cases {
        let mut lines = template.clone();
        for (number, text) in &case.lines {
            lines[number - 1] = text.clone();
        }
        assert_eq!(lines.len(), 8);
        let file = sandbox.ndjson("bad.ndjson", &lines);
        let out = sandbox.run(&["admin", "import", &file, "--json"]);
        let mut needles = vec!["line 5"];
        needles.extend(case.field);
        let message = std::panic::catch_unwind(|| out.error(&needles))
            .unwrap_or_else(|_| panic!("case {:?}: {out:#?}", case.what));
        assert!(!message.contains("line 1:"), "{}: {message}", case.what);
        assert_eq!(
            dump(&sandbox.db_path()),
            before,
            "case {:?} wrote to the store",
            case.what
        );
    }

    // Through the API: exactly what was there before.
    for (path, first) in paths.iter().zip(&listings) {
        let again = server.text(path, &secret).await;
        assert_eq!(&again, first, "{path} changed");
    }
    drop(server);

    // The template itself is valid: the failures were line 5's alone.
    let file = sandbox.ndjson("good.ndjson", &template);
    let counts = sandbox.json(&["admin", "import", &file]);
    assert_eq!(
        counts,
        json!({"organizations": 2, "users": 1, "projects": 4, "proxy_settings": 1})
    );
    let server = sandbox.serve(&[]);
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["keep", "p-new", "p5", "p-late"]);
    assert_eq!(by_id(&projects, "keep")["description"], json!("changed"));
}

// ----- 9. demo -----

/// Starts `demo --json` on the sandbox's database; answers the server and
/// the first stdout line, parsed.
fn start_demo(sandbox: &Sandbox) -> (Server, Value) {
    let server = Server::start(|listen| sandbox.command(&["demo", "--json", "--listen", listen]));
    let line = server.stdout_line();
    let started: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("the first line is not JSON ({e}): {line:?}"));
    let keys: Vec<&str> = started
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {line}"))
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["token", "url"], "{line}");
    assert_eq!(started["url"], json!(server.base), "{line}");
    (server, started)
}

#[tokio::test]
async fn demo_prints_url_and_token_then_serves_demo_data() {
    let sandbox = Sandbox::new();
    let (server, started) = start_demo(&sandbox);
    let token = started["token"].as_str().unwrap();
    assert!(token.starts_with("pxd_") && token.len() == 42, "{token}");

    let (status, body) = server.get("/v1/projects", token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], json!("list"));
    assert!(!body["data"].as_array().unwrap().is_empty(), "{body}");

    let projects = server.projects(token).await;
    let mut revisions = 0;
    for project in &projects {
        revisions += server
            .revisions(project["id"].as_str().unwrap(), token)
            .await
            .len();
    }
    assert!(revisions > 0, "the demo has no proxy settings revisions");

    let tokens = server.tokens(token).await;
    let hint = format!("pxd_****{}", &token[token.len() - 4..]);
    assert!(
        tokens.iter().any(|listed| listed["token"] == json!(hint)),
        "the demo token is not listed: {tokens:#?}"
    );
}

#[tokio::test]
async fn demo_runs_twice_on_the_same_file() {
    let sandbox = Sandbox::new();
    let (first, started) = start_demo(&sandbox);
    let first_token = started["token"].as_str().unwrap().to_owned();
    let first_listing = first.text("/v1/projects?limit=100", &first_token).await;
    drop(first);

    let (second, started) = start_demo(&sandbox);
    let second_token = started["token"].as_str().unwrap().to_owned();
    assert_ne!(first_token, second_token);
    let second_listing = second.text("/v1/projects?limit=100", &second_token).await;
    assert_eq!(second_listing, first_listing, "the demo data changed");
    let tokens = second.tokens(&second_token).await;
    let hint = format!("pxd_****{}", &second_token[second_token.len() - 4..]);
    assert!(
        tokens.iter().any(|listed| listed["token"] == json!(hint)),
        "{tokens:#?}"
    );
}

// ----- 10. serve and its environment -----

#[tokio::test]
async fn serve_honours_the_environment_and_flags_override_it() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    sandbox.import(&[project("p1", 1, 0)]);
    let other = sandbox.path().join("other.db");

    // Only the environment.
    let server = Server::start(|listen| {
        let mut command = proxydeck(sandbox.path());
        command
            .args(["serve", "--token-cache-ttl", "200ms"])
            .env("PROXYDECK_LISTEN", listen)
            .env("PROXYDECK_DATABASE_URL", sandbox.db_url());
        command
    });
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["p1"]);
    drop(server);
    assert!(!sandbox.path().join("proxydeck.db").exists());

    // Flags win over the environment.
    let env_port = free_port();
    let server = Server::start(|listen| {
        let mut command = proxydeck(sandbox.path());
        command
            .args(["serve", "--listen", listen, "--database"])
            .arg(sandbox.db_url())
            .env("PROXYDECK_LISTEN", format!("127.0.0.1:{env_port}"))
            .env(
                "PROXYDECK_DATABASE_URL",
                format!("sqlite://{}", other.display()),
            );
        command
    });
    let projects = server.projects(&secret).await;
    assert_eq!(listed_ids(&projects), ["p1"]);
    assert!(
        !accepts(env_port),
        "the server listens on PROXYDECK_LISTEN too"
    );
    assert!(!other.exists(), "the server opened PROXYDECK_DATABASE_URL");
}

// ----- 11. Bad databases and taken ports -----

#[test]
fn bad_database_urls_fail_with_one_line() {
    let sandbox = Sandbox::new();
    let garbage = sandbox.path().join("garbage.db");
    std::fs::write(
        &garbage,
        "this is not a database, just some text ".repeat(200),
    )
    .unwrap();
    let urls = [
        "mysql://x".to_owned(),
        "sqlite://".to_owned(),
        "proxydeck.db".to_owned(),
        "sqlite://a.db?mode=ro".to_owned(),
        format!("sqlite://{}/no/such/folder/x.db", sandbox.path().display()),
        format!("sqlite://{}", garbage.display()),
    ];
    let commands: [&[&str]; 5] = [
        &["migrate", "--json"],
        &["serve", "--listen", "127.0.0.1:0"],
        &["demo", "--listen", "127.0.0.1:0", "--json"],
        &["admin", "org", "create", "--name", "Acme"],
        &["admin", "import", "-"],
    ];
    for url in &urls {
        for args in commands {
            let mut command = proxydeck(sandbox.path());
            command.args(args).args(["--database", url]);
            let out = finish(command, Some(""));
            std::panic::catch_unwind(|| out.error(&[]))
                .unwrap_or_else(|_| panic!("{args:?} --database {url}: {out:#?}"));
        }
        // The same through the environment variable.
        let mut command = proxydeck(sandbox.path());
        command
            .args(["migrate", "--json"])
            .env("PROXYDECK_DATABASE_URL", url);
        finish(command, None).error(&[]);
    }
    assert!(!sandbox.path().join("proxydeck.db").exists());
    assert!(!sandbox.path().join("a.db").exists());
}

#[test]
fn serve_on_a_taken_port_fails_with_one_line() {
    let sandbox = Sandbox::new();
    sandbox.json(&["migrate"]);
    let taken = TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = taken.local_addr().unwrap().to_string();
    for command in ["serve", "demo"] {
        let out = sandbox.run(&[command, "--listen", &address]);
        let line = out.error_after_logs(&[&address]);
        assert!(line.to_lowercase().contains("listen"), "{line}");
    }
    sandbox
        .run(&["serve", "--listen", "not-an-address"])
        .error_after_logs(&["not-an-address"]);
    drop(taken);
}

// ----- 12. --help -----

#[test]
fn every_command_has_help_with_an_example() {
    let sandbox = Sandbox::new();
    let commands: [&[&str]; 18] = [
        &[],
        &["serve"],
        &["demo"],
        &["migrate"],
        &["config", "check"],
        &["admin", "org", "create"],
        &["admin", "user", "create"],
        &["admin", "token", "create"],
        &["admin", "token", "revoke"],
        &["admin", "import"],
        &["admin", "project", "delete"],
        &["admin", "export"],
        &["admin", "org", "list"],
        &["admin", "user", "list"],
        &["admin", "token", "list"],
        &["projects", "list"],
        &["tokens", "list"],
        &["proxy-settings", "list"],
    ];
    for args in commands {
        let mut command = proxydeck(sandbox.path());
        command.args(args).arg("--help");
        let out = finish(command, None);
        assert!(out.status.success(), "{args:?}: {out:#?}");
        assert!(
            out.stdout.contains("Example"),
            "{args:?} has no example: {}",
            out.stdout
        );
        if let Some(last) = args.last() {
            assert!(out.stdout.contains(last), "{args:?}: {}", out.stdout);
        }
    }
    assert!(!sandbox.path().join("proxydeck.db").exists());
}

// ----- 13. admin project delete -----

#[tokio::test]
async fn project_delete_removes_it_from_the_listings() {
    let sandbox = Sandbox::new();
    let secret = sandbox.directory(1, "u1");
    sandbox.import(&[
        project("p1", 1, 0),
        project("p2", 1, 1),
        project("p3", 1, 2),
        settings("p2", 1, true),
    ]);
    let server = sandbox.serve(&[]);
    assert_eq!(
        listed_ids(&server.projects(&secret).await),
        ["p1", "p2", "p3"]
    );
    assert_eq!(server.revisions("p2", &secret).await.len(), 1);

    let deleted = sandbox.json(&["admin", "project", "delete", "p2"]);
    assert!(deleted.is_object(), "{deleted}");
    assert_eq!(listed_ids(&server.projects(&secret).await), ["p1", "p3"]);
    let (status, body) = server.get("/v1/projects/p2/proxy-settings", &secret).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(assert_error_shape(&body), "not_found_error");

    sandbox
        .run(&["admin", "project", "delete", "no-such-project", "--json"])
        .error(&["no-such-project"]);
    assert_eq!(listed_ids(&server.projects(&secret).await), ["p1", "p3"]);
}
