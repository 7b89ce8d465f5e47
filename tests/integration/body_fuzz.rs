//! Fuzz-style property tests of the write operations' bodies (as `fuzz.rs`
//! does for query strings): arbitrary JSON, and valid bodies with one
//! member mutated (another value, a wrong type, an out-of-range number,
//! removed, an unknown member beside it, deep nesting, a huge string), sent
//! as JSON text, with a byte made non-UTF-8, cut short or as any bytes,
//! under any `Content-Type`. Never a 5xx; a refusal has the error body's
//! shape (a 400 names a member) and changes nothing; an acceptance is a 200
//! in the documented shape. Bounded by `PROPTEST_CASES` (else 128 cases
//! each: a case is a write and four reads, one to two seconds in all).

use proptest::prelude::*;
use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

/// Cases per test when `PROPTEST_CASES` is not set.
const CASES: u32 = 128;

/// Bodies stay under the 1 MiB limit: the service may close a connection
/// whose body it refuses unread, which a client sees as an error rather
/// than an answer (the 413 has its own tests).
const LARGEST_STRING: usize = 600_000;

/// u1 is admin of organization 1, with projects p1 and p2; p1 has
/// revisions 1 (active) and 2; u1 has the token `t1` besides its own.
struct Fixture {
    app: TestApp,
    token: String,
}

async fn fixture() -> Fixture {
    let app = TestApp::spawn_with(BACKEND, test_options(), suite_store_options()).await;
    app.seed(vec![
        org(1),
        org(2),
        user("u1", &[1]),
        user("u2", &[2]),
        project("p1", 1, 0),
        project("p2", 1, 1),
        project("hidden", 2, 0),
        settings("p1", 1, true),
        settings("p1", 2, false),
    ])
    .await;
    app.token_with("u1", "t1", None).await;
    let token = app.token("u1").await;
    Fixture { app, token }
}

/// What a refused write must leave as it was: p1 as getProject answers it
/// (with its ETag), the first page of the `listing` the operation adds to
/// (projects, p1's revisions or the caller's tokens; newest first, where a
/// new item would show), the store's counts of every kind and the newest
/// audit record (every accepted write adds one).
async fn state(app: &TestApp, token: &str, listing: &str) -> Value {
    let (status, project, tag) = send(app, Method::GET, "/v1/projects/p1", token, &[], None).await;
    assert_eq!(status, 200, "the service still answers: {project}");
    let (status, mut items) = app.get_json(listing, token).await;
    assert_eq!(status, 200, "{listing}: {items}");
    // The caller's own token is used by every request.
    for item in items["data"].as_array_mut().unwrap() {
        item.as_object_mut().unwrap().remove("last_used_at");
    }
    let counts = app.store.run(CountObjects).await.expect("the store counts");
    let audit = audit_of(app, None)
        .await
        .first()
        .map(|r| format!("{r:?}"))
        .unwrap_or_default();
    json!({"project": project, "tag": tag, "listing": items["data"],
           "counts": format!("{counts:?}"), "audit": audit})
}

/// Any JSON value: scalars of every kind, arrays and objects, a few levels.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::from),
        "[a-z0-9./:-]{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            proptest::collection::btree_map("[a-z_]{0,10}|.{0,5}", inner, 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// Values that sit at the edges of types and ranges.
fn odd_value() -> impl Strategy<Value = Value> {
    proptest::sample::select(vec![
        json!(null),
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5),
        json!(-0.0),
        json!(1e300),
        json!(-1e300),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(4294967296u64),
        json!(""),
        json!(" "),
        json!("\u{0}"),
        json!("\u{7f}\n"),
        json!("-"),
        json!("1"),
        json!("true"),
        json!([]),
        json!([null]),
        json!({}),
        json!({"": null}),
    ])
}

/// One change to the member at a point of a valid body.
#[derive(Clone, Debug)]
enum Mutation {
    Replace(Value),
    Remove,
    /// A member beside the others (of the object there, else in its place).
    Add(String, Value),
    /// The value wrapped in this many arrays and objects.
    Nest(usize),
    /// A string of this many times the character.
    Huge(usize, char),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let name = "[a-z_]{1,12}|id|object|revision|is_active|organization_id|token|project_id";
    prop_oneof![
        3 => any_json().prop_map(Mutation::Replace),
        3 => odd_value().prop_map(Mutation::Replace),
        1 => Just(Mutation::Remove),
        2 => (name, any_json()).prop_map(|(name, value)| Mutation::Add(name, value)),
        1 => (1usize..300).prop_map(Mutation::Nest),
        1 => (prop_oneof![1usize..300, 1_000..LARGEST_STRING], any::<char>())
            .prop_map(|(n, c)| Mutation::Huge(n, c)),
    ]
}

/// JSON pointers to every value of `body`, the body itself first.
fn pointers(body: &Value) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut at = 0;
    while at < all.len() {
        let children: Vec<String> = match body.pointer(&all[at]) {
            Some(Value::Object(members)) => members.keys().cloned().collect(),
            Some(Value::Array(items)) => (0..items.len()).map(|i| i.to_string()).collect(),
            _ => Vec::new(),
        };
        let parent = all[at].clone();
        all.extend(children.into_iter().map(|c| format!("{parent}/{c}")));
        at += 1;
    }
    all
}

fn mutate(mut body: Value, pointer: &str, mutation: Mutation) -> Value {
    if let Mutation::Remove = mutation {
        let Some((parent, last)) = pointer.rsplit_once('/') else {
            return json!({});
        };
        match body.pointer_mut(parent) {
            Some(Value::Object(members)) => {
                members.remove(last);
            }
            Some(Value::Array(items)) => {
                items.remove(last.parse().unwrap());
            }
            _ => unreachable!("a pointer's parent holds it"),
        }
        return body;
    }
    let target = body.pointer_mut(pointer).expect("a pointer of the body");
    match mutation {
        Mutation::Replace(value) => *target = value,
        Mutation::Add(name, value) => match target {
            Value::Object(members) => {
                members.insert(name, value);
            }
            other => *other = json!({ name: value }),
        },
        Mutation::Nest(depth) => {
            for level in 0..depth {
                let inner = target.take();
                *target = if level % 2 == 0 {
                    json!([inner])
                } else {
                    json!({ "a": inner })
                };
            }
        }
        Mutation::Huge(n, c) => {
            // As JSON text: `\u0000` is six bytes.
            let one = Value::from(c.to_string()).to_string().len() - 2;
            *target = Value::from(c.to_string().repeat(n.min(LARGEST_STRING / one)));
        }
        Mutation::Remove => unreachable!(),
    }
    body
}

/// How the body's text becomes bytes.
#[derive(Clone, Debug)]
enum Encoding {
    Text,
    /// One byte replaced by one of 0x80 to 0xFF (mostly not UTF-8).
    NotUtf8(prop::sample::Index, u8),
    /// Cut short before this byte.
    Cut(prop::sample::Index),
    /// Any bytes instead.
    Bytes(Vec<u8>),
}

fn encoding() -> impl Strategy<Value = Encoding> {
    prop_oneof![
        12 => Just(Encoding::Text),
        1 => (any::<prop::sample::Index>(), 0x80u8..=0xff)
            .prop_map(|(at, byte)| Encoding::NotUtf8(at, byte)),
        1 => any::<prop::sample::Index>().prop_map(Encoding::Cut),
        1 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(Encoding::Bytes),
    ]
}

fn encode(body: &Value, encoding: &Encoding) -> Vec<u8> {
    let mut bytes = body.to_string().into_bytes();
    match encoding {
        Encoding::Text => {}
        Encoding::NotUtf8(at, byte) => {
            let at = at.index(bytes.len());
            bytes[at] = *byte;
        }
        Encoding::Cut(at) => bytes.truncate(at.index(bytes.len())),
        Encoding::Bytes(any) => bytes.clone_from(any),
    }
    bytes
}

/// `Content-Type` values: JSON mostly, and others the service refuses.
fn content_type() -> impl Strategy<Value = Option<String>> {
    let other = proptest::sample::select(vec![
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("application/json; charset=latin1"),
        Some("application/jsonx"),
        Some("multipart/form-data; boundary=x"),
    ])
    .prop_map(|t| t.map(str::to_owned));
    prop_oneof![
        12 => Just(Some("application/json".to_owned())),
        2 => Just(Some("application/json; charset=utf-8".to_owned())),
        2 => other,
        1 => "[ -~]{0,30}".prop_map(Some),
    ]
}

/// A body to send: a valid one, mutated at one point or not, or any JSON
/// with the operation's member names and others.
fn bodies(valid: BoxedStrategy<Value>, members: &'static [&'static str]) -> BoxedStrategy<Value> {
    let mutated = (
        valid.clone(),
        any::<prop::sample::Index>(),
        proptest::option::weighted(0.8, mutation()),
    )
        .prop_map(|(body, at, mutation)| match mutation {
            None => body,
            Some(mutation) => {
                let all = pointers(&body);
                let pointer = all[at.index(all.len())].clone();
                mutate(body, &pointer, mutation)
            }
        });
    let name = prop_oneof![proptest::sample::select(members), Just("other")];
    let random_object = proptest::collection::btree_map(name, any_json(), 0..6)
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
    prop_oneof![
        8 => mutated,
        1 => random_object,
        1 => any_json(),
    ]
    .boxed()
}

/// Sends `bodies` to `path` and checks each answer and that a refusal
/// changed nothing (`listing` included); `accepted` checks a 200's body.
fn fuzz_write(
    path: &'static str,
    listing: &'static str,
    valid: BoxedStrategy<Value>,
    members: &'static [&'static str],
    accepted: fn(Value) -> Result<(), String>,
) {
    let runtime = runtime();
    let fixture = runtime.block_on(fixture());
    let Fixture { app, token } = &fixture;
    let strategy = (bodies(valid, members), encoding(), content_type());
    let before = std::cell::RefCell::new(runtime.block_on(state(app, token, listing)));
    check_property(
        property_cases(CASES),
        strategy,
        |(body, encoding, content_type)| {
            // A 415 reads the body (as large as any here) before it
            // answers: the connection goes on with the next case.
            let bytes = encode(&body, &encoding);
            let json = content_type.as_deref().is_some_and(|t| {
                let t = t.to_ascii_lowercase();
                let t: String = t.chars().filter(|c| *c != ' ').collect();
                t == "application/json" || t == "application/json;charset=utf-8"
            });
            let headers: Vec<(&str, &str)> = content_type
                .iter()
                .map(|t| ("content-type", t.as_str()))
                .collect();
            let what = format!(
                "POST {path} {content_type:?} {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            );
            let (status, answer, tag) = runtime.block_on(send_bytes(
                app,
                Method::POST,
                path,
                token,
                &headers,
                Some(bytes.clone()),
            ));
            // Read before any check, so that a failing case leaves the next
            // one (while shrinking) the state it starts from.
            let after = runtime.block_on(state(app, token, listing));
            let earlier = before.replace(after.clone());
            match status {
                200 => {
                    assert!(json, "{what}: accepted: {answer}");
                    assert!(tag.is_some(), "{what}: no ETag");
                    if let Err(e) = accepted(answer.clone()) {
                        panic!("{what}: not the documented shape ({e}): {answer}");
                    }
                }
                400 => {
                    assert_eq!(assert_error_shape(&answer), "invalid_request_error");
                    // A member may be named "" (the body's `{"": 1}`).
                    assert!(!params(&answer).is_empty(), "{what}: {answer}");
                }
                404 | 409 | 415 => {}
                _ => panic!("{what}: {status} {answer}"),
            }
            if !json {
                assert_eq!(status, 415, "{what}: {answer}");
            } else if std::str::from_utf8(&bytes).is_err()
                || serde_json::from_slice::<Value>(&bytes).is_err()
            {
                assert_eq!(status, 400, "{what}: {answer}");
                assert!(params(&answer).contains(&"body".to_owned()), "{answer}");
            }
            if status != 200 {
                assert_eq!(earlier, after, "{what}: refused, yet changed");
            }
            Ok(())
        },
    );
}

/// Whether `answer` is a `T` of the generated client, with no member the
/// document does not have (the client would drop it unseen). The client
/// writes no empty list and no `null` back, so those are not compared.
fn documented<T: serde::de::DeserializeOwned + serde::Serialize>(
    answer: Value,
) -> Result<(), String> {
    let typed: T = serde_json::from_value(answer.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(typed).map_err(|e| e.to_string())?;
    let members = answer.as_object().ok_or("not an object")?;
    match members.iter().find(|(name, value)| {
        let empty = value.is_null() || value.as_array().is_some_and(Vec::is_empty);
        !empty && back.get(name.as_str()).is_none()
    }) {
        Some((name, _)) => Err(format!("{name} is not a documented member")),
        None => Ok(()),
    }
}

#[test]
fn any_body_of_create_project_is_created_or_refused_unchanged() {
    require!(BACKEND);
    fuzz_write(
        "/v1/projects",
        "/v1/projects?limit=10",
        {
            let organization = prop_oneof![
                8 => Just(org_id(1)),
                1 => Just(org_id(2)),
                1 => Just(org_id(9)),
            ];
            (organization, "[a-z0-9]{1,12}|p1|p2")
                .prop_map(|(organization, slug)| {
                    json!({"organization_id": organization, "slug": slug, "description": "d",
                       "type": "proxy", "force_https": true, "log_severity": "DEBUG",
                       "trusted_ips": ["10.0.0.0/8", "::1"],
                       "override_cache": [{"path": "/", "ttl": 60, "rank": 1}],
                       "rate_limiting": [{"rank": 1, "limit": 10, "block_duration": 60}],
                       "cookie_whitelist": ["session"]})
                })
                .boxed()
        },
        &[
            "organization_id",
            "slug",
            "description",
            "type",
            "trusted_ips",
            "cache",
        ],
        // The documented answer is a `ProjectBase`; proxydeck's is the
        // whole project, as getProject answers it.
        |answer| {
            serde_json::from_value::<edgee_api_client::types::ProjectBase>(answer.clone())
                .map_err(|e| e.to_string())?;
            documented::<edgee_api_client::types::Project>(answer)
        },
    );
}

#[test]
fn any_body_of_update_project_is_applied_or_refused_unchanged() {
    require!(BACKEND);
    fuzz_write(
        "/v1/projects/p1",
        "/v1/projects?limit=10",
        {
            ("[a-z0-9]{1,12}|p1|p2", ".{0,20}", any::<bool>())
                .prop_map(|(slug, description, cache)| {
                    json!({"id": "p1", "slug": slug, "description": description,
                       "cache": cache, "log_severity": null, "blocked_ips": ["192.0.2.1"],
                       "forwarded_headers": null})
                })
                .boxed()
        },
        &[
            "id",
            "slug",
            "description",
            "cache",
            "organization_id",
            "blocked_ips",
        ],
        documented::<edgee_api_client::types::Project>,
    );
}

#[test]
fn any_body_of_create_proxy_settings_is_created_or_refused_unchanged() {
    require!(BACKEND);
    fuzz_write(
        "/v1/projects/p1/proxy-settings",
        "/v1/projects/p1/proxy-settings?limit=10",
        {
            (".{0,20}", "[a-z]{1,8}", 0u32..5)
                .prop_map(|(description, name, rank)| {
                    json!({"description": description,
                       "backends": [{"name": name, "address": "origin.example:443", "default": true},
                                    {"name": "static", "address": "static.example:443"}],
                       "routes": [{"path": "/assets", "backend_name": "static", "rank": rank.to_string()},
                                  {"path": "/", "backend_name": name, "rank": rank + 5}]})
                })
                .boxed()
        },
        &["description", "backends", "routes", "revision", "is_active"],
        documented::<edgee_api_client::types::ProxySettings>,
    );
}

#[test]
fn any_body_of_update_proxy_settings_is_applied_or_refused_unchanged() {
    require!(BACKEND);
    fuzz_write(
        "/v1/projects/p1/proxy-settings/2",
        "/v1/projects/p1/proxy-settings?limit=10",
        {
            (".{0,20}", any::<bool>())
                .prop_map(|(description, active)| {
                    json!({"description": description, "is_active": active})
                })
                .boxed()
        },
        &["description", "is_active", "backends", "revision"],
        documented::<edgee_api_client::types::ProxySettings>,
    );
}

#[test]
fn any_body_of_create_api_token_is_created_or_refused_unchanged() {
    require!(BACKEND);
    fuzz_write(
        "/v1/api_tokens",
        "/v1/api_tokens?limit=10",
        {
            let later = proxydeck::domain::time::Timestamp::now()
                .plus_seconds(3600)
                .unwrap()
                .to_string();
            let expires = prop_oneof![Just(None), Just(Some(later))];
            ("[A-Za-z0-9 ._-]{1,30}", expires)
                .prop_map(|(name, expires)| match expires {
                    Some(at) => json!({"name": name, "expires_at": at}),
                    None => json!({"name": name}),
                })
                .boxed()
        },
        &["name", "expires_at", "token", "scope"],
        documented::<edgee_api_client::types::ApiToken>,
    );
}
