//! The behaviour every store backend owes, written against the `Store`
//! trait alone. The module is compiled once per backend (see main.rs); a
//! new backend joins there.

use std::sync::Arc;
use std::time::Duration;

use proxydeck::domain::access::Refusal;
use proxydeck::domain::directory::{Organization, OrganizationTag, Role, User, UserTag};
use proxydeck::domain::import::{ImportBatch, ImportError, ObjectCounts, parse_line};
use proxydeck::domain::organization_set::OrganizationSet;
use proxydeck::domain::pagination::{Direction, PageRequest};
use proxydeck::domain::time::Timestamp;
use proxydeck::domain::token;
use proxydeck::store::{
    ApiTokensQuery, JsonPage, Listing, NewToken, ProjectsQuery, ProxySettingsQuery, Store,
    StoreError, TokenUse,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::BACKEND;
use crate::helpers::*;

fn page(limit: u32, direction: Direction, start_key: Option<&str>) -> PageRequest {
    PageRequest {
        start_key: start_key.map(String::from),
        direction,
        limit,
    }
}

async fn projects_of(
    store: &Store,
    orgs: &[u32],
    request: PageRequest,
) -> Result<Vec<Value>, StoreError> {
    let organizations = organizations(store, orgs).await;
    projects_in(store, &organizations, request).await
}

/// The items of a page of the projects of `organizations`.
async fn projects_in(
    store: &Store,
    organizations: &OrganizationSet,
    request: PageRequest,
) -> Result<Vec<Value>, StoreError> {
    let page = store
        .list(Listing::Projects(ProjectsQuery {
            organizations: organizations.clone(),
            page: request,
        }))
        .await?;
    Ok(items(&page))
}

/// The items of a page of stored JSON, each checked to be one JSON object;
/// their count and last key must agree with them.
fn items(page: &JsonPage) -> Vec<Value> {
    let mut text = b"[".to_vec();
    text.extend_from_slice(&page.joined);
    text.push(b']');
    let items: Vec<Value> = serde_json::from_slice(&text).expect("the items are JSON");
    assert_eq!(items.len(), page.count);
    assert!(items.iter().all(Value::is_object));
    if let Some(last) = items.last() {
        let key = last
            .get("id")
            .cloned()
            .unwrap_or_else(|| json!(last["revision"].to_string()));
        assert_eq!(Some(key.as_str().unwrap()), page.last_key.as_deref());
    }
    items
}

async fn all_projects(store: &Store) -> Vec<Value> {
    projects_of(store, &[1, 2, 3], page(100, Direction::Asc, None))
        .await
        .unwrap()
}

fn base() -> Vec<Value> {
    vec![org(1), org(2), user("u1", &[2, 1])]
}

async fn import_is_all_or_nothing(store: Arc<Store>) {
    let mut lines = base();
    lines.push(project("a", 1, 0));
    lines.push(project("b", 9, 0));
    lines.push(project("c", 1, 0));
    let error = seed(store.as_ref(), lines).await.unwrap_err();
    assert_eq!(error.line, 5);
    assert_eq!(error.field.as_deref(), Some("organization_id"));
    assert!(
        error
            .to_string()
            .starts_with("line 5: field organization_id: "),
        "{error}"
    );
    assert!(
        all_projects(store.as_ref()).await.is_empty(),
        "nothing was written"
    );
    let orgs_written = store
        .run(CreateOrganization(Organization {
            object: OrganizationTag::Tag,
            id: org_id(1),
            name: "again".into(),
            slug: None,
            kind: Default::default(),
            created_at: None,
        }))
        .await;
    assert!(
        orgs_written.is_ok(),
        "organization 1 was not kept from the failed import"
    );
}

async fn import_rules_name_line_and_field(store: Arc<Store>) {
    let cases: Vec<(Vec<Value>, &str)> = vec![
        (vec![user("u9", &[7])], "organizations[0]"),
        (vec![settings("nowhere", 1, true)], "project_id"),
        (
            vec![
                project("p", 1, 0),
                settings("p", 1, true),
                settings("p", 2, true),
            ],
            "is_active",
        ),
    ];
    for (extra, field) in cases {
        let mut lines = base();
        lines.extend(extra);
        let count = lines.len() as u64;
        let error = seed(store.as_ref(), lines).await.unwrap_err();
        assert_eq!(error.line, count, "{error}");
        assert_eq!(error.field.as_deref(), Some(field), "{error}");
    }
    assert!(all_projects(store.as_ref()).await.is_empty());
}

async fn import_twice_changes_nothing(store: Arc<Store>) {
    let mut lines = base();
    // Without timestamps: they default to the time of the first import.
    lines.push(json!({"object": "project", "id": "bare", "organization_id": org_id(1)}));
    lines.push(project("dated", 2, 5));
    lines.push(settings("dated", 1, false));
    lines.push(settings("dated", 2, true));
    // The same project twice in one file, differently: the last line wins,
    // and a second import of the file still changes nothing.
    lines.push(json!({"object": "project", "id": "twice", "organization_id": org_id(1), "description": "first"}));
    lines.push(json!({"object": "project", "id": "twice", "organization_id": org_id(1), "description": "second"}));
    let summary = seed(store.as_ref(), lines.clone()).await.unwrap();
    assert_eq!(
        (
            summary.organizations,
            summary.users,
            summary.projects,
            summary.proxy_settings
        ),
        (2, 1, 4, 2)
    );
    let first = all_projects(store.as_ref()).await;
    let settings_first = settings_json(store.as_ref(), "dated").await;
    let twice = first.iter().find(|p| p["id"] == "twice");
    assert_eq!(twice.map(|p| &p["description"]), Some(&json!("second")));
    // A timestamp written again now would differ.
    a_millisecond_passes().await;
    seed(store.as_ref(), lines).await.unwrap();
    assert_eq!(all_projects(store.as_ref()).await, first);
    assert_eq!(settings_json(store.as_ref(), "dated").await, settings_first);
}

async fn settings_json(store: &Store, project_id: &str) -> Vec<String> {
    store
        .list(Listing::ProxySettings(ProxySettingsQuery {
            project_id: project_id.into(),
            visible_to: organizations(store, &[1, 2]).await,
            page: page(100, Direction::Asc, None),
        }))
        .await
        .map(|page| items(&page).iter().map(Value::to_string).collect())
        .unwrap()
}

async fn import_that_changes_a_project_moves_updated_at(store: Arc<Store>) {
    let mut lines = base();
    lines.push(
        json!({"object": "project", "id": "p", "organization_id": org_id(1), "created_at": at(0)}),
    );
    seed(store.as_ref(), lines).await.unwrap();
    let before = all_projects(store.as_ref()).await.remove(0);
    a_millisecond_passes().await;
    let changed =
        json!({"object": "project", "id": "p", "organization_id": org_id(1), "description": "new"});
    seed(store.as_ref(), vec![changed]).await.unwrap();
    let after = all_projects(store.as_ref()).await.remove(0);
    assert_eq!(
        after["created_at"], before["created_at"],
        "kept when absent"
    );
    assert_eq!(after["description"], "new");
    assert!(
        after["updated_at"].as_str() > before["updated_at"].as_str(),
        "{before} {after}"
    );
}

async fn deleted_projects_leave_listings_but_keep_their_place(store: Arc<Store>) {
    let mut lines = base();
    for i in 0..5 {
        lines.push(project(&format!("p{i}"), 1, i));
    }
    seed(store.as_ref(), lines).await.unwrap();
    store.run(RemoveProject(String::from("p2"))).await.unwrap();
    let ids_of = |items: Vec<Value>| {
        items
            .iter()
            .map(|p| p["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids_of(all_projects(store.as_ref()).await),
        ["p0", "p1", "p3", "p4"]
    );
    let after = projects_of(store.as_ref(), &[1], page(10, Direction::Asc, Some("p2")))
        .await
        .unwrap();
    assert_eq!(ids_of(after), ["p3", "p4"]);
    assert!(matches!(
        store.run(RemoveProject(String::from("p2"))).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.run(RemoveProject(String::from("nope"))).await,
        Err(StoreError::NotFound { .. })
    ));
    // Importing it again brings it back.
    seed(store.as_ref(), vec![project("p2", 1, 2)])
        .await
        .unwrap();
    assert_eq!(all_projects(store.as_ref()).await.len(), 5);
}

/// A page read again is the page as it is now: read repeatedly (which a
/// store may answer partly from what it remembers), then after a change,
/// a deletion and a return, of rows on it and of the row after it.
async fn a_page_read_again_shows_every_change_in_between(store: Arc<Store>) {
    let mut lines = base();
    for i in 0..5 {
        lines.push(project(&format!("p{i}"), 1, i));
    }
    seed(store.as_ref(), lines).await.unwrap();
    let first_page = || projects_of(store.as_ref(), &[1], page(3, Direction::Desc, None));
    let after_p4 = || projects_of(store.as_ref(), &[1], page(2, Direction::Desc, Some("p4")));
    let described = |items: &[Value]| {
        items
            .iter()
            .map(|p| {
                format!(
                    "{}:{}",
                    p["id"].as_str().unwrap(),
                    p["description"].as_str().unwrap()
                )
            })
            .collect::<Vec<_>>()
    };
    let before = first_page().await.unwrap();
    assert_eq!(described(&before), ["p4:", "p3:", "p2:"]);
    for _ in 0..3 {
        assert_eq!(first_page().await.unwrap(), before);
    }
    assert_eq!(described(&after_p4().await.unwrap()), ["p3:", "p2:"]);

    let changed = json!({"object": "project", "id": "p3", "organization_id": org_id(1),
                         "description": "changed"});
    seed(store.as_ref(), vec![changed]).await.unwrap();
    let after_change = first_page().await.unwrap();
    assert_eq!(described(&after_change), ["p4:", "p3:changed", "p2:"]);
    assert_eq!(
        after_change[0], before[0],
        "unchanged rows stay as they were"
    );
    assert_eq!(after_change[2], before[2]);
    assert_eq!(described(&after_p4().await.unwrap()), ["p3:changed", "p2:"]);

    store.run(RemoveProject(String::from("p4"))).await.unwrap();
    assert_eq!(
        described(&first_page().await.unwrap()),
        ["p3:changed", "p2:", "p1:"]
    );
    seed(store.as_ref(), vec![project("p4", 1, 4)])
        .await
        .unwrap();
    assert_eq!(
        described(&first_page().await.unwrap()),
        ["p4:", "p3:changed", "p2:"]
    );
}

async fn keyset_pages_merge_organizations_and_break_ties_by_id(store: Arc<Store>) {
    let mut lines = base();
    for (id, org, second) in [
        ("b", 1, 0),
        ("a", 2, 0),
        ("c", 1, 0),
        ("d", 2, 1),
        ("e", 1, 1),
    ] {
        lines.push(project(id, org, second));
    }
    seed(store.as_ref(), lines).await.unwrap();
    let both = organizations(store.as_ref(), &[1, 2]).await;
    let walk = |direction| {
        let (store, both) = (store.clone(), both.clone());
        async move {
            let mut seen = Vec::new();
            let mut start: Option<String> = None;
            loop {
                let result = store
                    .list(Listing::Projects(ProjectsQuery {
                        organizations: both.clone(),
                        page: page(2, direction, start.as_deref()),
                    }))
                    .await
                    .unwrap();
                seen.extend(
                    items(&result)
                        .iter()
                        .map(|p| p["id"].as_str().unwrap().to_owned()),
                );
                if !result.has_more {
                    return seen;
                }
                start = result.last_key.clone();
            }
        }
    };
    assert_eq!(walk(Direction::Asc).await, ["a", "b", "c", "d", "e"]);
    assert_eq!(walk(Direction::Desc).await, ["e", "d", "c", "b", "a"]);
    let unknown = projects_of(store.as_ref(), &[1], page(2, Direction::Asc, Some("zzz"))).await;
    assert!(matches!(unknown, Err(StoreError::UnknownStartKey)));
    let foreign = projects_of(store.as_ref(), &[1], page(2, Direction::Asc, Some("a"))).await;
    assert!(
        matches!(foreign, Err(StoreError::UnknownStartKey)),
        "a is in org 2"
    );
}

async fn tokens_are_found_by_digest_only(store: Arc<Store>) {
    seed(store.as_ref(), base()).await.unwrap();
    let (token, secret) = mint(store.as_ref(), "u1", "t", None).await;
    let grant = store
        .run(FindToken(token::digest(&secret)))
        .await
        .unwrap()
        .expect("found");
    assert_eq!(grant.token_id, token.id);
    assert_eq!(grant.user_id, "u1");
    assert_eq!(
        grant.organizations.ids().collect::<Vec<_>>(),
        [org_id(1), org_id(2)],
        "sorted"
    );
    // With the numbers the store gave them: one each, never shared.
    let number = |n| grant.organizations.number_of(&org_id(n)).unwrap();
    assert_ne!(number(1), number(2));
    assert!(grant.organizations.contains_number(number(2)));
    assert!(!grant.revoked);
    assert_eq!(grant.last_used_at, None);
    assert!(
        store
            .run(FindToken(token::digest("pxd_other")))
            .await
            .unwrap()
            .is_none()
    );
    store
        .run(RevokeToken(String::from(&token.id)))
        .await
        .unwrap();
    store
        .run(RevokeToken(String::from(&token.id)))
        .await
        .unwrap();
    assert!(
        store
            .run(FindToken(token::digest(&secret)))
            .await
            .unwrap()
            .unwrap()
            .revoked
    );
    assert!(matches!(
        store.run(RevokeToken(String::from("nope"))).await,
        Err(StoreError::NotFound { .. })
    ));
}

async fn last_used_never_goes_backwards(store: Arc<Store>) {
    seed(store.as_ref(), base()).await.unwrap();
    let (token, secret) = mint(store.as_ref(), "u1", "t", None).await;
    let t = |ms| Timestamp::from_millis(ms).unwrap();
    let used = |ms| TokenUse {
        token_id: token.id.clone(),
        used_at: t(ms),
    };
    store
        .run(RecordTokenUses(vec![used(2_000_000)]))
        .await
        .unwrap();
    store
        .run(RecordTokenUses(vec![used(1_000_000)]))
        .await
        .unwrap();
    let grant = store
        .run(FindToken(token::digest(&secret)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(grant.last_used_at, Some(t(2_000_000)));
    store
        .run(RecordTokenUses(vec![
            used(3_000_000),
            TokenUse {
                token_id: "gone".into(),
                used_at: t(1),
            },
        ]))
        .await
        .unwrap();
    let grant = store
        .run(FindToken(token::digest(&secret)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(grant.last_used_at, Some(t(3_000_000)));
}

async fn admin_writes_refuse_conflicts_and_unknown_references(store: Arc<Store>) {
    seed(store.as_ref(), base()).await.unwrap();
    let organization = Organization {
        object: OrganizationTag::Tag,
        id: org_id(1),
        name: "dup".into(),
        slug: None,
        kind: Default::default(),
        created_at: None,
    };
    assert!(matches!(
        store.run(CreateOrganization(organization)).await,
        Err(StoreError::Conflict(_))
    ));
    let stray = User {
        object: UserTag::Tag,
        id: "u2".into(),
        email: "u2@example.com".into(),
        name: None,
        roles: [(org_id(1), Role::Admin), (org_id(5), Role::Member)].into(),
        organizations: None,
        created_at: None,
    };
    match store.run(CreateUser(stray)).await {
        Err(StoreError::Invalid(error)) => assert_eq!(error.field, format!("roles.{}", org_id(5))),
        other => panic!("{other:?}"),
    }
    let (orphan, _) = NewToken::mint("nobody".into(), "t".into(), None);
    assert!(matches!(
        store.run(CreateToken(orphan)).await,
        Err(StoreError::NotFound { kind: "user", .. })
    ));
    let user = User {
        object: UserTag::Tag,
        id: "u1".into(),
        email: "x@example.com".into(),
        name: None,
        roles: [(org_id(1), Role::Admin)].into(),
        organizations: None,
        created_at: None,
    };
    assert!(matches!(
        store.run(CreateUser(user)).await,
        Err(StoreError::Conflict(_))
    ));
}

async fn token_listing_pages_and_filters(store: Arc<Store>) {
    seed(store.as_ref(), base()).await.unwrap();
    let mut made = Vec::new();
    for i in 0..7 {
        made.push(
            mint(
                store.as_ref(),
                "u1",
                if i % 2 == 0 { "even" } else { "odd" },
                None,
            )
            .await
            .0
            .id,
        );
    }
    let list = |name: Option<&str>, request: PageRequest| {
        let store = store.clone();
        let name = name.map(String::from);
        async move {
            store
                .list(Listing::ApiTokens(ApiTokensQuery {
                    user_id: "u1".into(),
                    name,
                    page: request,
                }))
                .await
                .map(|p| {
                    let ids = items(&p)
                        .iter()
                        .map(|t| t["id"].as_str().unwrap().to_owned())
                        .collect::<Vec<_>>();
                    (ids, p.has_more)
                })
        }
    };
    let (first, more) = list(None, page(3, Direction::Asc, None)).await.unwrap();
    assert_eq!(first, made[..3]);
    assert!(more);
    let (rest, more) = list(None, page(10, Direction::Asc, Some(&made[2])))
        .await
        .unwrap();
    assert_eq!(rest, made[3..]);
    assert!(!more);
    let (evens, _) = list(Some("even"), page(10, Direction::Desc, None))
        .await
        .unwrap();
    assert_eq!(
        evens,
        [
            made[6].clone(),
            made[4].clone(),
            made[2].clone(),
            made[0].clone()
        ]
    );
    assert!(matches!(
        list(Some("even"), page(10, Direction::Desc, Some(&made[1]))).await,
        Err(StoreError::UnknownStartKey)
    ));
    assert!(matches!(
        list(None, page(10, Direction::Desc, Some("nope"))).await,
        Err(StoreError::UnknownStartKey)
    ));
}

async fn invisible_projects_have_no_settings(store: Arc<Store>) {
    let mut lines = base();
    lines.push(project("p", 2, 0));
    lines.push(settings("p", 1, true));
    seed(store.as_ref(), lines).await.unwrap();
    let query = |visible_to| {
        Listing::ProxySettings(ProxySettingsQuery {
            project_id: "p".into(),
            visible_to,
            page: page(10, Direction::Desc, None),
        })
    };
    let (two, one) = (
        organizations(store.as_ref(), &[2]).await,
        organizations(store.as_ref(), &[1]).await,
    );
    assert_eq!(store.list(query(two)).await.unwrap().count, 1);
    // The same refusal as for a project that does not exist: the HTTP
    // layer answers both "no such project".
    assert!(matches!(
        store.list(query(one)).await,
        Err(StoreError::Refused {
            refusal: Refusal::NotFound,
            kind: "project"
        })
    ));
}

/// Starts an import of `line` that then holds its write transaction open,
/// waiting for more lines, until the sender it answers is dropped; answers
/// once the import holds the write lock.
async fn hold_a_write(
    data: &TestStore,
    line: Value,
) -> (
    mpsc::Sender<ImportBatch>,
    tokio::task::JoinHandle<Result<ObjectCounts, ImportError>>,
) {
    let (sender, receiver) = mpsc::channel::<ImportBatch>(4);
    let writer = {
        let store = data.store.clone();
        tokio::spawn(async move { Import::outcome(store.run(Import::new(receiver)).await) })
    };
    sender
        .send(vec![Ok((1, parse_line(&line.to_string()).unwrap()))])
        .await
        .unwrap();
    until("the import holds the write lock", || {
        data.projects_write_locked()
    })
    .await;
    (sender, writer)
}

/// A write transaction that stays open does not hold up reads: they answer
/// at once, with the data as it was before the write, while the writer
/// still holds its lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_never_wait_on_a_writer() {
    require!(BACKEND);
    let data = TestStore::new(BACKEND).await;
    let store = data.store.as_ref();
    let mut lines = base();
    lines.push(project("old", 1, 0));
    seed(store, lines).await.unwrap();
    // Made before the write begins: making it is a write.
    let all = organizations(store, &[1, 2, 3]).await;
    let (sender, writer) = hold_a_write(&data, project("new", 1, 1)).await;
    let everything = page(100, Direction::Asc, None);
    let read = tokio::time::timeout(
        Duration::from_millis(500),
        projects_in(store, &all, everything),
    )
    .await
    .expect("a read during a write answers at once")
    .unwrap();
    assert_eq!(read.len(), 1, "the unfinished write is not visible");
    assert!(
        data.projects_write_locked(),
        "the read ran during the write"
    );
    drop(sender);
    writer.await.unwrap().unwrap();
    assert!(!data.projects_write_locked());
    assert_eq!(all_projects(store).await.len(), 2);
}

/// The pools' use, as the metrics show it: sane sizes, and a connection
/// held by an open write transaction counts as in use until it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_use_counts_a_connection_held_by_a_write() {
    require!(BACKEND);
    let data = TestStore::new(BACKEND).await;
    seed(data.store.as_ref(), base()).await.unwrap();
    let in_use = |store: &Store| {
        let pools = store.pool_use();
        assert!(!pools.is_empty(), "the backend reports its pools");
        for pool in &pools {
            assert!(pool.max_size >= 1, "{pool:?}");
            assert!(pool.idle + pool.in_use <= pool.max_size, "{pool:?}");
        }
        pools.iter().map(|pool| pool.in_use).sum::<usize>()
    };
    let (sender, writer) = hold_a_write(&data, project("held", 1, 0)).await;
    let during = in_use(data.store.as_ref());
    drop(sender);
    writer.await.unwrap().unwrap();
    let after = in_use(data.store.as_ref());
    assert!(
        during > after,
        "{during} in use during the write, {after} after"
    );
}

/// One `#[tokio::test]` per contract test, on this module's backend.
macro_rules! contract {
    ($($test:ident),* $(,)?) => {
        mod on_backend {
            use super::super::BACKEND;
            use crate::helpers::{TestStore, require};
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    require!(BACKEND);
                    let store = TestStore::new(BACKEND).await;
                    super::$test(store.store.clone()).await;
                }
            )*
        }
    };
}

contract!(
    import_is_all_or_nothing,
    import_rules_name_line_and_field,
    import_twice_changes_nothing,
    import_that_changes_a_project_moves_updated_at,
    deleted_projects_leave_listings_but_keep_their_place,
    a_page_read_again_shows_every_change_in_between,
    keyset_pages_merge_organizations_and_break_ties_by_id,
    tokens_are_found_by_digest_only,
    last_used_never_goes_backwards,
    admin_writes_refuse_conflicts_and_unknown_references,
    token_listing_pages_and_filters,
    invisible_projects_have_no_settings,
);

/// A project body of an older shape (here: without a member `Project` now
/// has) is rewritten through `Project` when a store opens on it: the
/// member is there with its default, the version (the ETag) moved, the
/// other bodies are untouched, and opening again changes nothing. A
/// revision's body likewise, through `ProxySettings`.
#[tokio::test]
async fn bodies_of_an_older_shape_are_rewritten_when_the_store_opens() {
    require!(BACKEND);
    let app = TestApp::spawn(BACKEND).await;
    app.seed(vec![
        org(1),
        user("u1", &[1]),
        project("p1", 1, 0),
        project("p2", 1, 1),
        settings("p1", 1, true),
    ])
    .await;
    let token = app.token("u1").await;
    let revisions = async |app: &TestApp| {
        let (status, body) = app.get_json("/v1/projects/p1/proxy-settings", &token).await;
        assert_eq!(status, 200, "{body}");
        body["data"][0].to_string()
    };
    let revision = revisions(&app).await;
    assert!(revision.contains(r#""regex":false"#), "{revision}");
    /// getProject's ETag and body.
    async fn read_on(app: &TestApp, token: &str, id: &str) -> (String, String) {
        let response = app.get(&format!("/v1/projects/{id}"), token).await;
        let etag = response.headers()["etag"].to_str().unwrap().to_owned();
        (etag, response.text().await.unwrap())
    }
    let read = |app, id| read_on(app, &token, id);
    let (p1_tag, p1_body) = read(&app, "p1").await;
    let (p2_tag, p2_body) = read(&app, "p2").await;
    assert!(
        p1_body.contains(r#","rate_limiting_enabled":false"#),
        "{p1_body}"
    );

    // As an older build stored it.
    app.data.execute(
        r#"UPDATE projects SET body = REPLACE(body, ',"rate_limiting_enabled":false', '') WHERE id = 'p1';
           UPDATE proxy_settings SET body = REPLACE(body, ',"regex":false', '') WHERE project_id = 'p1';
           UPDATE stored_shapes SET version = 0;"#,
    );
    let (_, old) = read(&app, "p1").await;
    assert!(!old.contains("rate_limiting_enabled"), "{old}");
    assert!(!revisions(&app).await.contains("regex"));

    let reopened = app.another_instance().await;
    let (tag, body) = read(&reopened, "p1").await;
    assert_eq!(body, p1_body);
    assert_ne!(tag, p1_tag, "a rewritten body is a new version");
    assert_eq!(read(&reopened, "p2").await, (p2_tag, p2_body));
    assert_eq!(revisions(&reopened).await, revision);

    let again = reopened.another_instance().await;
    assert_eq!(read(&again, "p1").await, (tag, body));
}
