//! Property: any data set, any page size, either order and any filter
//! paginate to exactly the full ordered list. Each case loads an arbitrary
//! data set through the real store (import, token creation, revocation,
//! project deletion), walks every listing over HTTP with `start_key` set to
//! the previous `last_key`, and checks every page against the list worked
//! out here from the data set by the rules of `docs/decisions.md` section 2:
//! projects and tokens by `created_at` then `id`, proxy settings by
//! `revision`; newest first by default.
//!
//! Callers are in one organization or several, or in hundreds (an agency,
//! a support account), densely or sparsely: the stores read those pages in
//! other ways (the order of every project, or organization by
//! organization), and each must give exactly the list.
//!
//! Cases share one server; each works in organizations, users and ids of
//! its own, so other cases' data is always there to be left out.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};

use proptest::prelude::*;
use proxydeck::domain::time::Timestamp;
use proxydeck::store::NewToken;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

/// Organizations holding most of a case's projects (the others are mostly
/// empty, as most of a big caller's are).
const BUSY_ORGANIZATIONS: usize = 6;
/// Token names, several tokens sharing each; `ci ` differs from `ci`.
const NAMES: [&str; 3] = ["ci", "deploy bot", "ci "];
/// Creation instants (milliseconds after a fixed instant): few, so that
/// many items share one and the order falls to their ids.
const CREATED_MS: [i64; 5] = [0, 1, 999, 1_000, 86_400_000];

#[derive(Clone, Debug)]
struct Walk {
    /// `None`: the listing's default.
    limit: Option<u32>,
    /// `None`: the default, `DESC`.
    ascending: Option<bool>,
    /// An organization (projects) or a name (tokens; `NAMES.len()` is a
    /// name no token has).
    filter: Option<usize>,
}

#[derive(Clone, Debug)]
struct ProjectSpec {
    organization: usize,
    created_ms: i64,
    deleted: bool,
    /// Revision numbers, with gaps.
    revisions: BTreeSet<u32>,
    /// Whether the newest revision is the active one.
    active: bool,
    walk: Walk,
}

#[derive(Clone, Debug)]
struct TokenSpec {
    /// The caller's, or another user's.
    mine: bool,
    name: usize,
    created_ms: i64,
    revoked: bool,
    expired: bool,
}

#[derive(Clone, Debug)]
struct DataSet {
    /// Which of the case's organizations the caller is in (at least one).
    member_of: Vec<bool>,
    /// By id.
    projects: BTreeMap<String, ProjectSpec>,
    /// By id. The caller calls with a token of its own, not in this map.
    tokens: BTreeMap<String, TokenSpec>,
    /// The caller's own token: its name and creation instant.
    caller_token: (usize, i64),
    project_walks: Vec<Walk>,
    token_walks: Vec<Walk>,
}

fn walk(filters: usize) -> impl Strategy<Value = Walk> {
    (
        proptest::option::weighted(0.8, 1..=100u32),
        proptest::option::weighted(0.8, any::<bool>()),
        proptest::option::weighted(0.4, 0..filters),
    )
        .prop_map(|(limit, ascending, filter)| Walk {
            limit,
            ascending,
            filter,
        })
}

/// Page sizes small against the data, to make many pages, and any size.
fn walks(filters: usize) -> impl Strategy<Value = Vec<Walk>> {
    let small = (1..=4u32, any::<bool>()).prop_map(|(limit, ascending)| Walk {
        limit: Some(limit),
        ascending: Some(ascending),
        filter: None,
    });
    (small, proptest::collection::vec(walk(filters), 1..=3)).prop_map(|(small, mut others)| {
        others.push(small);
        others
    })
}

fn created() -> impl Strategy<Value = i64> {
    proptest::sample::select(CREATED_MS.to_vec())
}

fn id() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{1,6}"
}

fn data_set() -> impl Strategy<Value = DataSet> {
    // A few organizations, a dozen, or hundreds.
    let organizations = prop_oneof![3 => 1..=4usize, 2 => 5..=12usize, 1 => 100..=300usize];
    organizations.prop_flat_map(data_set_of)
}

fn data_set_of(organizations: usize) -> impl Strategy<Value = DataSet> {
    let organization = prop_oneof![
        7 => 0..organizations.min(BUSY_ORGANIZATIONS),
        3 => 0..organizations,
    ];
    let project = (
        organization,
        created(),
        proptest::bool::weighted(0.2),
        proptest::collection::btree_set(1..=40u32, 0..=8),
        any::<bool>(),
        walk(1),
    )
        .prop_map(
            |(organization, created_ms, deleted, revisions, active, walk)| ProjectSpec {
                organization,
                created_ms,
                deleted,
                revisions,
                active,
                walk,
            },
        );
    let token = (
        proptest::bool::weighted(0.7),
        0..NAMES.len(),
        created(),
        proptest::bool::weighted(0.2),
        proptest::bool::weighted(0.2),
    )
        .prop_map(|(mine, name, created_ms, revoked, expired)| TokenSpec {
            mine,
            name,
            created_ms,
            revoked,
            expired,
        });
    // In few of the organizations, about half, or nearly all.
    let member_of = prop_oneof![Just(0.15), Just(0.5), Just(0.95)].prop_flat_map(move |share| {
        proptest::collection::vec(proptest::bool::weighted(share), organizations)
    });
    (
        member_of,
        0..organizations,
        proptest::collection::btree_map(id(), project, 0..=40),
        proptest::collection::btree_map(id(), token, 0..=30),
        (0..NAMES.len(), created()),
        walks(organizations),
        walks(NAMES.len() + 1),
    )
        .prop_map(
            |(
                mut member_of,
                surely,
                projects,
                tokens,
                caller_token,
                project_walks,
                token_walks,
            )| {
                member_of[surely] = true;
                DataSet {
                    member_of,
                    projects,
                    tokens,
                    caller_token,
                    project_walks,
                    token_walks,
                }
            },
        )
}

/// A case's own organizations, users and ids.
struct Namespace {
    case: u32,
    first_organization: u32,
}

impl Namespace {
    fn next(organizations: usize) -> Self {
        static CASES: AtomicU32 = AtomicU32::new(0);
        static ORGANIZATIONS: AtomicU32 = AtomicU32::new(1);
        Self {
            case: CASES.fetch_add(1, Ordering::Relaxed),
            first_organization: ORGANIZATIONS.fetch_add(organizations as u32, Ordering::Relaxed),
        }
    }

    fn organization(&self, index: usize) -> String {
        org_id(self.first_organization + index as u32)
    }

    fn caller(&self) -> String {
        format!("caller{}", self.case)
    }

    fn other_user(&self) -> String {
        format!("other{}", self.case)
    }

    /// The full id of a generated id; the prefix is the same for every id
    /// of the case, so it does not change their order.
    fn id(&self, id: &str) -> String {
        format!("c{}-{id}", self.case)
    }
}

fn timestamp(created_ms: i64) -> Timestamp {
    let base = Timestamp::parse("2026-03-01T00:00:00Z")
        .unwrap()
        .as_millis();
    Timestamp::from_millis(base + created_ms).unwrap()
}

/// Loads `data` through the store; answers the caller's secret.
async fn load(app: &TestApp, data: &DataSet, space: &Namespace) -> String {
    let organizations = data.member_of.len();
    let mut lines: Vec<Value> = (0..organizations)
        .map(|i| json!({"object": "organization", "id": space.organization(i), "name": format!("Org {i}")}))
        .collect();
    let user = |id: String, organizations: Vec<String>| json!({"object": "user", "id": id, "email": "someone@example.com", "organizations": organizations});
    let mine = (0..organizations)
        .filter(|i| data.member_of[*i])
        .map(|i| space.organization(i));
    lines.push(user(space.caller(), mine.collect()));
    let all = (0..organizations).map(|i| space.organization(i));
    lines.push(user(space.other_user(), all.collect()));
    for (id, project) in &data.projects {
        let created = timestamp(project.created_ms).to_string();
        lines.push(json!({"object": "project", "id": space.id(id),
            "organization_id": space.organization(project.organization), "slug": id,
            "created_at": created, "updated_at": created}));
        let newest = project.revisions.last();
        for revision in &project.revisions {
            let active = project.active && Some(revision) == newest;
            lines.push(
                json!({"object": "proxy_settings", "project_id": space.id(id),
                "revision": revision, "is_active": active, "backends": [], "routes": []}),
            );
        }
    }
    app.seed(lines).await;
    for (id, project) in &data.projects {
        if project.deleted {
            app.store
                .run(RemoveProject(String::from(&space.id(id))))
                .await
                .unwrap();
        }
    }
    for (id, token) in &data.tokens {
        let owner = if token.mine {
            space.caller()
        } else {
            space.other_user()
        };
        let expires_at = token
            .expired
            .then(|| Timestamp::now().plus_seconds(-60).unwrap());
        let (mut record, _) = NewToken::mint(owner, NAMES[token.name].into(), expires_at);
        record.id = space.id(id);
        record.created_at = timestamp(token.created_ms);
        app.store.run(CreateToken(record)).await.unwrap();
        if token.revoked {
            app.store
                .run(RevokeToken(String::from(&space.id(id))))
                .await
                .unwrap();
        }
    }
    let (name, created_ms) = data.caller_token;
    let (mut record, secret) = NewToken::mint(space.caller(), NAMES[name].into(), None);
    // Longer than any generated id, so it is none of them.
    record.id = space.id("caller-token");
    record.created_at = timestamp(created_ms);
    app.store.run(CreateToken(record)).await.unwrap();
    secret
}

/// Keys in listing order: by (creation, key) ascending, reversed unless
/// `ascending`.
fn ordered<K: Ord>(mut items: Vec<(i64, K)>, walk: &Walk) -> Vec<K> {
    items.sort();
    if !walk.ascending.unwrap_or(false) {
        items.reverse();
    }
    items.into_iter().map(|(_, key)| key).collect()
}

/// The query of `walk` (without `start_key`).
fn walk_query(walk: &Walk, filter: Option<(&'static str, String)>) -> Vec<(&'static str, String)> {
    let mut query = Vec::new();
    if let Some(limit) = walk.limit {
        query.push(("limit", limit.to_string()));
    }
    if let Some(ascending) = walk.ascending {
        query.push((
            "order_direction",
            if ascending { "ASC" } else { "DESC" }.into(),
        ));
    }
    query.extend(filter);
    query
}

fn url(path: &str, query: &[(&'static str, String)], start_key: Option<&str>) -> String {
    let mut pairs: Vec<(&str, &str)> = query.iter().map(|(n, v)| (*n, v.as_str())).collect();
    pairs.extend(start_key.map(|key| ("start_key", key)));
    with_query(path, &pairs)
}

/// Walks an envelope listing from its first page to `has_more: false` and
/// checks every page: exactly the next `limit` expected keys, `has_more`
/// and `last_key` exactly right.
async fn walk_envelope(
    app: &TestApp,
    token: &str,
    path: &str,
    query: &[(&'static str, String)],
    limit: usize,
    expected: &[String],
    key_of: impl Fn(&Value) -> String,
) {
    let mut start = 0;
    let mut start_key: Option<String> = None;
    loop {
        let request = url(path, query, start_key.as_deref());
        let (status, body) = app.get_json(&request, token).await;
        assert_eq!(status, 200, "{request}: {body}");
        assert_eq!(body["url"], path);
        let page: Vec<String> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(&key_of)
            .collect();
        let end = (start + limit).min(expected.len());
        assert_eq!(page, expected[start..end], "{request}: page from {start}");
        assert_eq!(
            body["has_more"],
            end < expected.len(),
            "{request}: has_more"
        );
        assert_eq!(
            body.get("last_key").and_then(Value::as_str),
            page.last().map(String::as_str),
            "{request}: last_key"
        );
        if end == expected.len() {
            return;
        }
        start = end;
        start_key = page.last().cloned();
    }
}

/// Walks the token listing as its clients must: with the id of the last
/// item, until a short page.
async fn walk_tokens(
    app: &TestApp,
    token: &str,
    query: &[(&'static str, String)],
    limit: usize,
    direction: &str,
    expected: &[String],
) {
    let mut start = 0;
    let mut start_key: Option<String> = None;
    loop {
        let request = url("/v1/api_tokens", query, start_key.as_deref());
        let (status, body) = app.get_json(&request, token).await;
        assert_eq!(status, 200, "{request}: {body}");
        assert_eq!(body["limit"], limit);
        assert_eq!(body["order_direction"], direction);
        assert_eq!(
            body.get("start_key").and_then(Value::as_str),
            start_key.as_deref()
        );
        let page = ids(&body);
        let end = (start + limit).min(expected.len());
        assert_eq!(page, expected[start..end], "{request}: page from {start}");
        if page.len() < limit {
            return;
        }
        start = end;
        start_key = page.last().cloned();
    }
}

async fn check_walks(app: &TestApp, data: DataSet) -> Result<(), TestCaseError> {
    let space = Namespace::next(data.member_of.len());
    let token = load(app, &data, &space).await;
    let visible = |project: &ProjectSpec| !project.deleted && data.member_of[project.organization];

    for walk in &data.project_walks {
        let filter = walk
            .filter
            .map(|i| ("organization_id", space.organization(i)));
        let query = walk_query(walk, filter);
        if walk.filter.is_some_and(|i| !data.member_of[i]) {
            let (status, body) = app
                .get_json(&url("/v1/projects", &query, None), &token)
                .await;
            assert_eq!(status, 404, "{body}");
            continue;
        }
        let expected = ordered(
            data.projects
                .iter()
                .filter(|(_, p)| visible(p) && walk.filter.is_none_or(|i| p.organization == i))
                .map(|(id, p)| (p.created_ms, space.id(id)))
                .collect(),
            walk,
        );
        let limit = walk.limit.unwrap_or(20) as usize;
        walk_envelope(
            app,
            &token,
            "/v1/projects",
            &query,
            limit,
            &expected,
            |item| item["id"].as_str().unwrap().to_owned(),
        )
        .await;
    }

    for walk in &data.token_walks {
        let name = walk
            .filter
            .map(|i| NAMES.get(i).copied().unwrap_or("nobody"));
        let query = walk_query(walk, name.map(|name| ("name", name.to_owned())));
        let (caller_name, caller_created) = data.caller_token;
        let mut items: Vec<(i64, String)> = data
            .tokens
            .iter()
            .filter(|(_, t)| t.mine && !t.revoked && name.is_none_or(|n| NAMES[t.name] == n))
            .map(|(id, t)| (t.created_ms, space.id(id)))
            .collect();
        if name.is_none_or(|n| NAMES[caller_name] == n) {
            items.push((caller_created, space.id("caller-token")));
        }
        let direction = if walk.ascending == Some(true) {
            "ASC"
        } else {
            "DESC"
        };
        let limit = walk.limit.unwrap_or(20) as usize;
        walk_tokens(app, &token, &query, limit, direction, &ordered(items, walk)).await;
    }

    for (id, project) in &data.projects {
        let path = format!("/v1/projects/{}/proxy-settings", space.id(id));
        let query = walk_query(&project.walk, None);
        if !visible(project) {
            let (status, body) = app.get_json(&url(&path, &query, None), &token).await;
            assert_eq!(status, 404, "{path}: {body}");
            continue;
        }
        let expected = ordered(
            project.revisions.iter().map(|r| (0, *r)).collect(),
            &project.walk,
        );
        let expected: Vec<String> = expected.iter().map(u32::to_string).collect();
        let limit = project.walk.limit.unwrap_or(100) as usize;
        walk_envelope(app, &token, &path, &query, limit, &expected, |item| {
            item["revision"].as_u64().unwrap().to_string()
        })
        .await;
    }
    Ok(())
}

#[test]
fn every_walk_yields_exactly_the_ordered_list() {
    require!(BACKEND);
    let runtime = runtime();
    let app = runtime.block_on(TestApp::spawn(BACKEND));
    check_property(property_cases(32), data_set(), |data| {
        runtime.block_on(check_walks(&app, data))
    });
}
