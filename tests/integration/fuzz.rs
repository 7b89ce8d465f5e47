//! Fuzz-style property tests over HTTP: arbitrary `start_key` values, query
//! strings, path ids and `Authorization` headers on every listing. Each is
//! answered as the rules say (200, or a 400 naming the parameter, or 401 or
//! 404) and never with a 5xx; the server never fails. Bounded by
//! `PROPTEST_CASES` (else 256 cases each, about a second).

use proptest::prelude::*;
use reqwest::header::HeaderValue;
use serde_json::Value;

use super::BACKEND;
use crate::helpers::*;

/// Cases per test when `PROPTEST_CASES` is not set.
const CASES: u32 = 256;

/// Organization 1 is the caller's (`u1`), organization 2 another user's.
/// Projects p1 to p4 are the caller's, `gone` was deleted, `hidden` is in
/// organization 2. p1 has revisions 1, 2, 3 and 5. The caller has tokens
/// `t1`, `t2` and the revoked `t3`, besides the one it calls with.
struct Fixture {
    app: TestApp,
    token: String,
    /// Every `start_key` that names an item of each listing, as the caller
    /// sees it (removed items included).
    keys: [(String, Vec<String>); 3],
}

async fn fixture() -> Fixture {
    // The fuzzers send thousands of bad tokens from one address: without
    // the per-address limit on failures (auth.rs tests it), so that each
    // one is judged on its own.
    let mut options = test_options();
    options.rate_limit.failures = None;
    let app = TestApp::spawn_with(BACKEND, options, suite_store_options()).await;
    let mut lines = vec![org(1), org(2), user("u1", &[1]), user("u2", &[2])];
    for (id, organization, created) in [
        ("p1", 1, 0),
        ("p2", 1, 0),
        ("p3", 1, 1),
        ("p4", 1, 2),
        ("gone", 1, 3),
        ("hidden", 2, 0),
    ] {
        lines.push(project(id, organization, created));
    }
    for revision in [1, 2, 3, 5] {
        lines.push(settings("p1", revision, revision == 5));
    }
    lines.push(settings("hidden", 1, true));
    app.seed(lines).await;
    app.store
        .run(RemoveProject(String::from("gone")))
        .await
        .unwrap();
    let mut token_ids = Vec::new();
    for name in ["t1", "t2", "t3"] {
        token_ids.push(app.token_with("u1", name, None).await.0.id);
    }
    app.store
        .run(RevokeToken(String::from(&token_ids[2])))
        .await
        .unwrap();
    app.token_with("u2", "theirs", None).await;
    let (caller, token) = app.token_with("u1", "caller", None).await;
    token_ids.push(caller.id);
    let strings = |keys: &[&str]| keys.iter().map(|k| (*k).to_owned()).collect();
    let keys = [
        (
            "/v1/projects".into(),
            strings(&["p1", "p2", "p3", "p4", "gone"]),
        ),
        ("/v1/api_tokens".into(), token_ids),
        (
            "/v1/projects/p1/proxy-settings".into(),
            strings(&["1", "2", "3", "5"]),
        ),
    ];
    Fixture { app, token, keys }
}

/// A 400 that names `param`, in the error body's shape.
fn assert_refused_naming(status: reqwest::StatusCode, body: &Value, param: &str, what: &str) {
    assert_eq!(status, 400, "{what}: {body}");
    assert_eq!(assert_error_shape(body), "invalid_request_error");
    assert_eq!(error_param(body), param, "{what}");
}

/// Keys of every kind: any text, id-shaped text, digits (revisions near
/// and far past the integer range), real keys of any listing, and real keys
/// with one character changed.
fn start_key(real: Vec<String>) -> impl Strategy<Value = String> {
    let near = (
        proptest::sample::select(real.clone()),
        any::<prop::sample::Index>(),
        any::<char>(),
    )
        .prop_map(|(key, at, replacement)| {
            let mut chars: Vec<char> = key.chars().collect();
            let at = at.index(chars.len());
            chars[at] = replacement;
            chars.into_iter().collect()
        });
    prop_oneof![
        any::<String>(),
        "[A-Za-z0-9_-]{0,70}",
        "[0-9]{1,25}",
        "[-+ 0]{0,2}[0-9]{1,3}",
        proptest::sample::select(real),
        near,
    ]
}

#[test]
fn any_start_key_is_an_item_or_a_400_naming_start_key() {
    require!(BACKEND);
    let runtime = runtime();
    let Fixture { app, token, keys } = runtime.block_on(fixture());
    let every_key: Vec<String> = keys.iter().flat_map(|(_, k)| k.clone()).collect();
    let strategy = (0..keys.len(), any::<bool>(), start_key(every_key));
    check_property(
        property_cases(CASES),
        strategy,
        |(listing, ascending, key)| {
            let (path, real) = &keys[listing];
            let direction = if ascending { "ASC" } else { "DESC" };
            let request = with_query(path, &[("order_direction", direction), ("start_key", &key)]);
            let (status, body) = runtime.block_on(app.get_json(&request, &token));
            if real.contains(&key) {
                assert_eq!(status, 200, "{request}: {body}");
            } else {
                assert_refused_naming(status, &body, "start_key", &request);
            }
            Ok(())
        },
    );
}

/// Query strings of any shape: the listing's parameters and others, valid
/// and invalid values, any bytes.
fn raw_query() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        "organization_id|name|limit|start_key|order_direction",
        "[a-z_]{0,12}",
        any::<String>(),
    ];
    let value = prop_oneof![
        "[0-9]{0,4}",
        "ASC|DESC|desc",
        "p[0-9]|gone|hidden|t1|ci",
        Just(org_id(1)),
        Just(org_id(2)),
        any::<String>(),
    ];
    let pairs = proptest::collection::vec((name, value), 0..5).prop_map(|pairs| {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.extend_pairs(pairs);
        query.finish()
    });
    let bytes = proptest::collection::vec(any::<u8>(), 0..60)
        .prop_map(|bytes| form_urlencoded::byte_serialize(&bytes).collect());
    prop_oneof![pairs, bytes]
}

#[test]
fn any_query_string_is_answered_or_refused_by_name() {
    require!(BACKEND);
    let runtime = runtime();
    let Fixture { app, token, keys } = runtime.block_on(fixture());
    let strategy = (0..keys.len(), raw_query());
    check_property(property_cases(CASES), strategy, |(listing, query)| {
        let request = format!("{}?{query}", keys[listing].0);
        let (status, body) = runtime.block_on(app.get_json(&request, &token));
        let names: Vec<String> = form_urlencoded::parse(query.as_bytes())
            .map(|(name, _)| name.into_owned())
            .collect();
        match status.as_u16() {
            200 => {}
            400 => {
                let param = error_param(&body);
                assert!(
                    param == "query" || names.iter().any(|n| n == param),
                    "{request}: names {param}, not in the query: {body}"
                );
            }
            // Organization 2 is not the caller's.
            404 => assert!(
                names.iter().any(|n| n == "organization_id"),
                "{request}: {body}"
            ),
            _ => panic!("{request}: {status} {body}"),
        }
        if status != 200 {
            assert_error_shape(&body);
        }
        Ok(())
    });
}

/// Any path id on the proxy-settings listing: the caller's live projects
/// are served, other well-formed ids are 404 (unknown, deleted and
/// invisible alike), anything else is a 400 naming `id`.
#[test]
fn any_project_id_in_the_path_is_served_404_or_a_400_naming_id() {
    require!(BACKEND);
    let runtime = runtime();
    let Fixture { app, token, .. } = runtime.block_on(fixture());
    let strategy = prop_oneof![
        "p[0-9]|gone|hidden|nowhere".prop_map(String::into_bytes),
        "[A-Za-z0-9_-]{1,70}".prop_map(String::into_bytes),
        any::<String>().prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 1..40),
    ];
    check_property(property_cases(CASES), strategy, |id| {
        // A segment "." or ".." (or "%2E") is removed by the client's URL
        // parser before anything is sent (RFC 3986 5.2.4, WHATWG URL): no
        // HTTP client can ask for it, so there is nothing to check.
        if matches!(id.as_slice(), b"." | b"..") {
            return Ok(());
        }
        let encoded: String = percent_encode_segment(&id);
        let request = format!("/v1/projects/{encoded}/proxy-settings");
        let response = runtime.block_on(app.get(&request, &token));
        let (status, body) = runtime.block_on(json_of(response));
        let text = std::str::from_utf8(&id).ok();
        if text.is_some_and(|t| ["p1", "p2", "p3", "p4"].contains(&t)) {
            assert_eq!(status, 200, "{request}: {body}");
        } else if text.is_some_and(proxydeck::domain::ids::is_valid_id) {
            assert_eq!(status, 404, "{request}: {body}");
            assert_eq!(assert_error_shape(&body), "not_found_error");
        } else {
            assert_refused_naming(status, &body, "id", &request);
        }
        Ok(())
    });
}

/// Every byte outside the unreserved set written as `%XX`, so the id
/// reaches the server as one path segment.
fn percent_encode_segment(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (*b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Any `Authorization` value a client can send (any bytes a header value
/// may hold), and the caller's real token with one character changed, is
/// a 401 with `WWW-Authenticate: Bearer`; the real token still passes.
#[test]
fn any_authorization_header_but_the_real_token_is_a_401() {
    require!(BACKEND);
    let runtime = runtime();
    let Fixture { app, token, .. } = runtime.block_on(fixture());
    let bearer = format!("Bearer {token}");
    let mutated = (any::<prop::sample::Index>(), any::<char>()).prop_map({
        move |(at, replacement)| {
            let mut chars: Vec<char> = bearer.chars().collect();
            let at = at.index(chars.len());
            chars[at] = replacement;
            chars.into_iter().collect::<String>().into_bytes()
        }
    });
    let header_byte = prop_oneof![Just(b'\t'), 0x20u8..0x7f, 0x80u8..=0xff];
    let strategy = prop_oneof![
        proptest::collection::vec(header_byte, 0..80),
        "(Bearer|bearer|Basic|Token)  ?(pxd_)?[A-Za-z0-9]{0,45}".prop_map(String::into_bytes),
        mutated,
    ];
    let listings = [
        "/v1/projects",
        "/v1/api_tokens",
        "/v1/projects/p1/proxy-settings",
    ];
    check_property(
        property_cases(CASES),
        (strategy, 0..listings.len()),
        |(header, listing)| {
            // Bytes a header value cannot hold never leave a client.
            prop_assume!(HeaderValue::from_bytes(&header).is_ok());
            let same_token = carries(&header, &token);
            let response = runtime.block_on(
                app.client
                    .get(app.url(listings[listing]))
                    .header("authorization", HeaderValue::from_bytes(&header).unwrap())
                    .send(),
            );
            let response = response.expect("the request is answered");
            let challenge = response.headers().get("www-authenticate").cloned();
            let (status, body) = runtime.block_on(json_of(response));
            if same_token {
                assert_eq!(status, 200, "{body}");
            } else {
                assert_eq!(
                    status,
                    401,
                    "{:?}: {body}",
                    String::from_utf8_lossy(&header)
                );
                assert_eq!(assert_error_shape(&body), "authentication_error");
                assert_eq!(challenge.unwrap(), "Bearer");
            }
            Ok(())
        },
    );
}

/// Whether `header` carries `token` as `docs/decisions.md` section 4 reads it:
/// `Bearer` in any case, spaces, the token. The ends of a header value
/// (spaces and tabs) are not part of it in HTTP.
fn carries(header: &[u8], token: &str) -> bool {
    let Ok(text) = std::str::from_utf8(header) else {
        return false;
    };
    let text = text.trim_matches([' ', '\t']);
    text.split_once(' ').is_some_and(|(scheme, rest)| {
        scheme.eq_ignore_ascii_case("bearer") && rest.trim_matches(' ') == token
    })
}
