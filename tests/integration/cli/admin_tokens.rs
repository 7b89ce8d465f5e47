//! `admin token create` and `admin token revoke`: the secret printed once,
//! only its digest stored, lifetimes, revocation.

use super::*;

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

/// docs/decisions.md section 4: a token is stored only as its SHA-256 digest.
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
    // The binary reads the system's clock.
    until("the token's expiry passes", || Timestamp::now() >= expires).await;
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

    // The server was told --token-cache-ttl 200ms: the revocation shows
    // once the cached entry has expired.
    eventually("the revoked token is refused", || async {
        server
            .get_raw("/v1/projects", &doomed_secret)
            .await
            .status()
            == 401
    })
    .await;
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
