//! The OpenAPI document (`GET /openapi.json`) is true to the service: it is
//! valid OpenAPI 3.1, every real response validates against it, every
//! error the service answers is documented for its operation, and its
//! objects have exactly the members the Rust types write.

use std::collections::BTreeSet;

use proxydeck::domain::api_token::{ApiToken, ApiTokenTag};
use proxydeck::domain::directory::{
    OrganizationObject, OrganizationTag, OrganizationType, Role, UserTag, UserWithRoles,
};
use proxydeck::domain::pagination::{
    DEFAULT_LIMIT, DEFAULT_PROXY_SETTINGS_LIMIT, Direction, MAX_LIMIT,
};
use proxydeck::domain::project::{
    Continent, HttpMethod, LogSeverity, Project, ProjectType, RateKey, RateWindow, SdkPosition,
};
use proxydeck::domain::proxy_settings::ProxySettings;
use proxydeck::domain::time::Timestamp;
use proxydeck::http::openapi::DOCUMENT;
use proxydeck::rate_limit::Policy;
use proxydeck::store::StoreOptions;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::openapi_contract::{Contract, Shapes, escape, variants_of};

const PROJECTS: &str = "/v1/projects";
const API_TOKENS: &str = "/v1/api_tokens";
const PROXY_SETTINGS: &str = "/v1/projects/{id}/proxy-settings";
const ME: &str = "/v1/users/me";
const ORGANIZATIONS: &str = "/v1/organizations";
const ORGANIZATION: &str = "/v1/organizations/{id}";
const MY_ORGANIZATION: &str = "/v1/organizations/me";

fn contract() -> Contract {
    Contract::parse(DOCUMENT)
}

// ===== The document itself =====

#[tokio::test]
async fn the_document_is_served_without_a_token_and_cacheable() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let url = app.url("/openapi.json");
    for token in [None, Some("not-a-token")] {
        let mut request = app.client.get(&url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let headers = response.headers().clone();
        assert_eq!(headers["content-type"], "application/json");
        assert_eq!(headers["cache-control"], "public, max-age=300");
        assert!(headers["etag"].to_str().unwrap().starts_with("W/\""));
        assert_eq!(response.text().await.unwrap(), DOCUMENT);
    }

    let head = app.client.head(&url).send().await.unwrap();
    assert_eq!(head.status(), 200);
    let etag = head.headers()["etag"].clone();
    assert_eq!(head.headers()["content-type"], "application/json");
    assert!(head.text().await.unwrap().is_empty());

    // A client holding the document revalidates it for nothing.
    let revalidate = |tag: &str| {
        app.client
            .get(&url)
            .header("if-none-match", tag.to_owned())
            .send()
    };
    let again = revalidate(etag.to_str().unwrap()).await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()["etag"], etag);
    assert!(again.text().await.unwrap().is_empty());
    let stale = revalidate("W/\"an-old-one\"").await.unwrap();
    assert_eq!(stale.status(), 200);

    for method in [Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS] {
        let response = app
            .client
            .request(method.clone(), &url)
            .send()
            .await
            .unwrap();
        assert_eq!(response.headers()["allow"], "GET,HEAD", "{method}");
        let (status, body) = json_of(response).await;
        assert_eq!(status, 405, "{method}");
        assert_eq!(assert_error_shape(&body), "invalid_request_error");
    }
}

/// The official OpenAPI 3.1 schema (`fixtures/openapi-3.1.schema.json`,
/// 2022-10-07, as schemathesis 4.32.5 ships it) accepts the document, every
/// reference resolves, and every schema in it is a valid draft 2020-12
/// schema that compiles.
#[test]
fn the_document_is_valid_openapi_3_1() {
    let contract = contract();
    let version = contract.doc["openapi"].as_str().unwrap();
    assert!(version.starts_with("3.1."), "{version}");

    let oas: Value =
        serde_json::from_str(include_str!("fixtures/openapi-3.1.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&oas).expect("the OpenAPI schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&contract.doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));

    for target in contract.references() {
        assert!(target.starts_with("#/"), "only local references: {target}");
        contract.at(&target);
    }

    let mut schemas: Vec<String> = contract.doc["components"]["schemas"]
        .as_object()
        .unwrap()
        .keys()
        .map(|name| format!("/components/schemas/{name}"))
        .collect();
    for path in [PROJECTS, API_TOKENS, PROXY_SETTINGS] {
        let operation = contract.operation(path);
        for status in contract.statuses(&operation) {
            let response = contract.response(&operation, status).unwrap();
            // A 304 has no body, so no schema.
            if status != 304 {
                schemas.push(contract.json_schema_of(&response));
            }
        }
        for parameter in contract.parameters(&operation) {
            schemas.push(format!("{parameter}/schema"));
        }
        // Each `{name}` of the path template is a required path parameter.
        let templated: BTreeSet<&str> = path
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        let in_path: BTreeSet<&str> = contract
            .parameters(&operation)
            .iter()
            .map(|pointer| contract.at(pointer))
            .filter(|parameter| parameter["in"] == "path")
            .inspect(|parameter| assert_eq!(parameter["required"], true, "{path}"))
            .map(|parameter| parameter["name"].as_str().unwrap())
            .collect();
        assert_eq!(templated, in_path, "{path}");
    }
    for pointer in schemas {
        jsonschema::draft202012::meta::validate(contract.at(&pointer))
            .unwrap_or_else(|e| panic!("{pointer} is not a draft 2020-12 schema: {e}"));
        contract.validator(&pointer);
    }

    // Every operation needs the bearer token, and the scheme says so.
    assert_eq!(contract.doc["security"], json!([{"bearerAuth": []}]));
    assert_eq!(
        contract.doc["components"]["securitySchemes"]["bearerAuth"]["scheme"],
        "bearer"
    );
}

/// Page sizes and directions in the document are the service's own.
#[test]
fn the_documented_parameters_are_the_services_rules() {
    let contract = contract();
    let limit = |path: &str| {
        let parameter = contract.parameter(&contract.operation(path), "limit");
        contract.at(&format!("{parameter}/schema")).clone()
    };
    for (path, default) in [
        (PROJECTS, DEFAULT_LIMIT),
        (API_TOKENS, DEFAULT_LIMIT),
        (PROXY_SETTINGS, DEFAULT_PROXY_SETTINGS_LIMIT),
    ] {
        let schema = limit(path);
        assert_eq!(schema["minimum"], 1, "{path}");
        assert_eq!(schema["maximum"], MAX_LIMIT, "{path}");
        assert_eq!(schema["default"], default, "{path}");
    }
    let directions = contract.enum_at("/components/schemas/OrderDirection");
    for direction in [Direction::Asc, Direction::Desc] {
        let written = serde_json::to_value(direction).unwrap();
        assert!(directions.contains(written.as_str().unwrap()));
    }
    for text in &directions {
        assert!(Direction::parse(text).is_some(), "{text}");
    }
    assert_eq!(
        contract.at("/components/schemas/OrderDirection/default"),
        &serde_json::to_value(Direction::default()).unwrap()
    );
}

/// Each documented object has exactly the members the Rust type writes,
/// required exactly when always written, and each documented enum has
/// exactly the values the Rust enum reads and writes. A field added to a
/// type and not to the document fails here.
#[test]
fn documented_members_are_the_ones_the_types_write() {
    let contract = contract();
    let mut shapes = Shapes::default();
    let mut check = |schema: &str, written: Value| {
        let pointer = format!("/components/schemas/{schema}");
        contract.assert_valid(&pointer, &written, schema);
        shapes.record(&contract, &pointer, &written);
    };
    for project in rich_projects() {
        let mut project: Project = serde_json::from_value(project).unwrap();
        project.normalize_and_validate().unwrap();
        check("Project", serde_json::to_value(&project).unwrap());
    }
    let at = Timestamp::parse("2026-03-01T00:00:00Z").unwrap();
    for (last_used_at, expires_at) in [(None, None), (Some(at), Some(at))] {
        let token = ApiToken {
            object: ApiTokenTag::Tag,
            id: "t1".into(),
            user_id: "u1".into(),
            name: "ci".into(),
            from_browser: false,
            last_used_at,
            expires_at,
            created_at: at,
            updated_at: at,
            token: "pxd_****abcd".into(),
        };
        check("ApiToken", serde_json::to_value(&token).unwrap());
    }
    for settings in rich_settings("p-full") {
        let settings: ProxySettings = serde_json::from_value(settings).unwrap();
        settings.validate().unwrap();
        let mut written = serde_json::to_value(&settings).unwrap();
        // Only the import format carries it; listings never do.
        written.as_object_mut().unwrap().remove("project_id");
        check("ProxySettings", written);
    }
    for kind in OrganizationType::ALL {
        let organization = OrganizationObject {
            object: OrganizationTag::Tag,
            id: org_id(1),
            name: "Acme".into(),
            slug: "acme".into(),
            kind,
            created_at: at,
            updated_at: at,
        };
        check("Organization", serde_json::to_value(&organization).unwrap());
    }
    for role in Role::ALL {
        let user = UserWithRoles {
            object: UserTag::Tag,
            id: "u1".into(),
            email: "u1@example.com".into(),
            name: "u1".into(),
            role,
            roles: Role::ALL
                .into_iter()
                .enumerate()
                .map(|(n, role)| (org_id(n as u32), role))
                .collect(),
            created_at: at,
            updated_at: at,
        };
        check("UserWithRoles", serde_json::to_value(&user).unwrap());
    }
    let differences = shapes.differences(&contract, &[]);
    assert!(differences.is_empty(), "{}", differences.join("\n"));

    let enum_is = |pointer: &str, variants: BTreeSet<String>| {
        let pointer = format!("/components/schemas/{pointer}");
        assert_eq!(contract.enum_at(&pointer), variants, "{pointer}");
    };
    enum_is("Project/properties/type", variants_of::<ProjectType>());
    enum_is("OrganizationType", variants_of::<OrganizationType>());
    enum_is("UserWithRoles/properties/role", variants_of::<Role>());
    enum_is(
        "UserWithRoles/properties/roles/additionalProperties",
        variants_of::<Role>(),
    );
    enum_is(
        "Project/properties/log_severity",
        variants_of::<LogSeverity>(),
    );
    enum_is(
        "Project/properties/inject_sdk_position",
        variants_of::<SdkPosition>(),
    );
    enum_is(
        "RateLimitRule/properties/window",
        variants_of::<RateWindow>(),
    );
    enum_is(
        "RateLimitRule/properties/key/items",
        variants_of::<RateKey>(),
    );
    enum_is(
        "RateConditions/properties/method/items",
        variants_of::<HttpMethod>(),
    );
    enum_is(
        "RateConditions/properties/continent/items",
        variants_of::<Continent>(),
    );
}

// ===== Real responses =====

/// Every listing, on data that sets and leaves unset every optional
/// member and holds every enum value, answers bodies that validate against
/// the documented 200 schema, and together they show every documented
/// member and enum value: the document promises nothing the service does
/// not write.
#[tokio::test]
async fn every_listing_answer_validates_and_covers_the_document() {
    let contract = contract();
    let app = TestApp::spawn(Backend::Sqlite).await;
    let mut lines = vec![
        org(1),
        org(2),
        json!({"object": "organization", "id": org_id(3), "name": "Home", "type": "perso"}),
        json!({"object": "user", "id": "u1", "email": "u1@example.com",
               "roles": {org_id(1): "admin", org_id(2): "editor", org_id(3): "member"}}),
    ];
    lines.extend(rich_projects());
    lines.push(project("p-empty", 2, 500));
    lines.extend(rich_settings("p-full"));
    app.seed(lines).await;
    let (_, token) = app.token_with("u1", "caller", None).await;
    let later = Timestamp::now().plus_seconds(86_400);
    let (expiring, _) = app.token_with("u1", "expiring", later).await;
    assert_eq!(app.get(API_TOKENS, &token).await.status(), 200);
    wait_for_last_used_at(&app, &token).await;

    let org2 = org_id(2);
    let expiring_id = expiring.id;
    let requests = [
        (PROJECTS, "/v1/projects".to_owned()),
        (
            PROJECTS,
            "/v1/projects?order_direction=ASC&limit=2&start_key=p-plain".into(),
        ),
        (
            PROJECTS,
            format!("/v1/projects?organization_id={org2}&order_direction=DESC&limit=100"),
        ),
        (
            PROJECTS,
            format!("/v1/projects?organization_id={org2}&order_direction=ASC&start_key=p-empty"),
        ),
        (API_TOKENS, "/v1/api_tokens".into()),
        (
            API_TOKENS,
            format!(
                "/v1/api_tokens?name=expiring&limit=1&order_direction=ASC&start_key={expiring_id}"
            ),
        ),
        (API_TOKENS, "/v1/api_tokens?name=expiring&limit=1".into()),
        (PROXY_SETTINGS, "/v1/projects/p-full/proxy-settings".into()),
        (
            PROXY_SETTINGS,
            "/v1/projects/p-full/proxy-settings?limit=1&order_direction=ASC&start_key=1".into(),
        ),
        (PROXY_SETTINGS, "/v1/projects/p-empty/proxy-settings".into()),
        (ME, ME.into()),
        (ORGANIZATIONS, ORGANIZATIONS.into()),
        (
            ORGANIZATIONS,
            format!(
                "/v1/organizations?type=pro&limit=1&order_direction=ASC&start_key={}",
                org_id(1)
            ),
        ),
        (ORGANIZATIONS, "/v1/organizations?type=perso".into()),
        (
            ORGANIZATIONS,
            format!("/v1/organizations?type=perso&start_key={}", org_id(3)),
        ),
        (ORGANIZATION, format!("/v1/organizations/{}", org_id(2))),
        (MY_ORGANIZATION, MY_ORGANIZATION.into()),
    ];
    // Every documented query parameter is used (and so accepted) above.
    for path in [PROJECTS, API_TOKENS, PROXY_SETTINGS, ORGANIZATIONS] {
        let used: BTreeSet<String> = requests
            .iter()
            .filter(|(operation, _)| *operation == path)
            .filter_map(|(_, request)| request.split_once('?'))
            .flat_map(|(_, query)| form_urlencoded_names(query))
            .collect();
        assert_eq!(
            used,
            contract.query_parameters(&contract.operation(path)),
            "{path}"
        );
    }
    let mut shapes = Shapes::default();
    for (path, request) in requests {
        let (status, body) = app.get_json(&request, &token).await;
        assert_eq!(status, 200, "{request}: {body}");
        let operation = contract.operation(path);
        let schema = contract.json_schema_of(&contract.response(&operation, 200).unwrap());
        contract.assert_valid(&schema, &body, &request);
        shapes.record(&contract, &schema, &body);
    }

    // getMe's `role` is one role, organization 1's: admin (the types'
    // check above covers every value).
    let differences = shapes.differences(
        &contract,
        &[
            "/components/schemas/UserWithRoles/properties/role = member",
            "/components/schemas/UserWithRoles/properties/role = editor",
        ],
    );
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    let every_resource: BTreeSet<String> = contract.doc["components"]["schemas"]
        .as_object()
        .unwrap()
        .iter()
        // Request bodies are no answer; the write operations' own answers
        // are checked by `token_and_proxy_settings_answers_validate` and
        // the project write tests.
        .filter(|(name, schema)| {
            schema.get("properties").is_some()
                && !name.contains("Error")
                && !name.ends_with("Input")
                && !["DeletedProject", "CreatedApiToken", "DeletedApiToken"]
                    .contains(&name.as_str())
        })
        .map(|(name, _)| format!("/components/schemas/{name}"))
        .collect();
    let reached: BTreeSet<String> = shapes.objects().into_iter().map(str::to_owned).collect();
    assert_eq!(
        every_resource.difference(&reached).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "object schemas no answer reached"
    );
}

fn form_urlencoded_names(query: &str) -> impl Iterator<Item = String> + '_ {
    query
        .split('&')
        .filter_map(|pair| pair.split('=').next())
        .map(str::to_owned)
}

/// `last_used_at` is written, as the flusher does shortly after use.
async fn wait_for_last_used_at(app: &TestApp, token: &str) {
    app.flush_token_uses().await;
    let (_, body) = app.get_json("/v1/api_tokens?name=caller", token).await;
    assert!(body["data"][0].get("last_used_at").is_some(), "{body}");
}

// ===== Errors =====

/// Every error status the service answers, on each operation: the status
/// is documented for that operation, the body validates against the
/// documented schema, and the documented headers (`WWW-Authenticate`,
/// `Allow`, `Retry-After`) are there and valid. And the reverse: every
/// documented status is answered by one of these requests.
#[tokio::test]
async fn every_error_is_documented_and_validates() {
    let contract = contract();
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![
        org(1),
        org(2),
        org(3),
        user("u1", &[1, 2]),
        project("p1", 1, 0),
        project("p2", 2, 1),
        project("p3", 3, 2),
        settings("p1", 1, true),
    ])
    .await;
    let token = app.token("u1").await;
    let client = &app.client;
    let get = |path: &str| client.get(app.url(path)).bearer_auth(&token);
    let long_uri = |path: &str| get(&format!("{path}?name={}", "n".repeat(9 * 1024)));
    let big_headers = |path: &str| get(path).header("x-filler", "x".repeat(17 * 1024));
    let other_org = org_id(3);
    let ps = "/v1/projects/p1/proxy-settings";
    let one_per_listing = [
        (PROJECTS, PROJECTS),
        (API_TOKENS, API_TOKENS),
        (PROXY_SETTINGS, ps),
    ];
    let cases = [
        (PROJECTS, 400, get("/v1/projects?limit=0")),
        (PROJECTS, 400, get("/v1/projects?start_key=nowhere")),
        (PROJECTS, 401, client.get(app.url(PROJECTS))),
        (
            PROJECTS,
            404,
            get(&format!("/v1/projects?organization_id={other_org}")),
        ),
        (PROJECTS, 405, client.put(app.url(PROJECTS))),
        (PROJECTS, 414, long_uri(PROJECTS)),
        (PROJECTS, 431, big_headers(PROJECTS)),
        (API_TOKENS, 400, get("/v1/api_tokens?order_direction=up")),
        (
            API_TOKENS,
            401,
            client.get(app.url(API_TOKENS)).bearer_auth("pxd_nope"),
        ),
        (API_TOKENS, 405, client.delete(app.url(API_TOKENS))),
        (API_TOKENS, 414, long_uri(API_TOKENS)),
        (API_TOKENS, 431, big_headers(API_TOKENS)),
        (PROXY_SETTINGS, 400, get(&format!("{ps}?start_key=01"))),
        (
            PROXY_SETTINGS,
            400,
            get("/v1/projects/not.an.id/proxy-settings"),
        ),
        (
            PROXY_SETTINGS,
            401,
            client.get(app.url(ps)).bearer_auth("x".repeat(42)),
        ),
        (PROXY_SETTINGS, 404, get("/v1/projects/p3/proxy-settings")),
        (PROXY_SETTINGS, 405, client.put(app.url(ps))),
        (PROXY_SETTINGS, 414, long_uri(ps)),
        (PROXY_SETTINGS, 431, big_headers(ps)),
    ];
    let mut checks = ErrorChecks::new(&contract);
    for (operation, status, request) in cases {
        checks.check(operation, status, request).await;
    }

    // 500: stored values out of their range, a column renamed by hand
    // (faults the service never makes itself), one per listing.
    let (broken, _) = app.token_with("u1", "broken", None).await;
    app.data.execute(&format!(
        "ALTER TABLE projects RENAME COLUMN body TO body_renamed_by_hand;
         UPDATE proxy_settings SET revision = 5000000000 WHERE project_id = 'p1';
         UPDATE api_tokens SET updated_at = 999999999999999999 WHERE id = '{}';",
        broken.id
    ));
    for (operation, path) in one_per_listing {
        checks.check(operation, 500, get(path)).await;
    }

    // 503: the store is gone.
    let outage = TestApp::spawn_impatient().await;
    outage
        .seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let outage_token = outage.token("u1").await;
    outage.take_store_away();
    for (operation, path) in one_per_listing {
        let request = outage
            .client
            .get(outage.url(path))
            .bearer_auth(&outage_token);
        checks.check(operation, 503, request).await;
    }

    // 429: a token over its rate (one request at once, one a minute).
    let mut options = test_options();
    options.rate_limit.policy = Some(Policy::new(1.0 / 60.0, Some(1)).unwrap());
    let limited = TestApp::spawn_with(Backend::Sqlite, options, StoreOptions::default()).await;
    limited
        .seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    for (operation, path) in one_per_listing {
        // A token per listing: each gets its one request, then a 429.
        let (_, secret) = limited.token_with("u1", operation, None).await;
        let request = || limited.client.get(limited.url(path)).bearer_auth(&secret);
        assert_eq!(request().send().await.unwrap().status(), 200, "{path}");
        checks.check(operation, 429, request()).await;
    }

    checks.assert_complete(&contract);
}

/// Checks error answers against the document and remembers what they
/// covered.
struct ErrorChecks<'a> {
    contract: &'a Contract,
    shapes: Shapes,
    answered: BTreeSet<(&'static str, u16)>,
}

impl<'a> ErrorChecks<'a> {
    fn new(contract: &'a Contract) -> Self {
        Self {
            contract,
            shapes: Shapes::default(),
            answered: BTreeSet::new(),
        }
    }

    /// Sends `request`, which must get `status` from `operation`.
    async fn check(
        &mut self,
        operation: &'static str,
        status: u16,
        request: reqwest::RequestBuilder,
    ) {
        let contract = self.contract;
        let what = format!("{status} {operation}");
        let response = request.send().await.expect("an answer");
        let headers = response.headers().clone();
        let (answered, body) = json_of(response).await;
        assert_eq!(answered.as_u16(), status, "{what}: {body}");
        let documented = contract
            .response(&contract.operation(operation), status)
            .unwrap_or_else(|| panic!("{what} is not documented"));
        let schema = contract.json_schema_of(&documented);
        contract.assert_valid(&schema, &body, &what);
        self.shapes.record(contract, &schema, &body);
        assert_documented_headers(contract, &documented, &headers, &what);
        self.answered.insert((operation, status));
    }

    fn assert_complete(&self, contract: &Contract) {
        let differences = self.shapes.differences(
            contract,
            // Answered by no listing, only by writes: their answers are
            // checked by `token_and_proxy_settings_answers_validate` (403,
            // 412) and project_writes.rs (409 codes).
            &[
                "/components/schemas/ErrorDetail/properties/type = forbidden_error",
                "/components/schemas/ErrorDetail/properties/type = conflict_error",
                "/components/schemas/ErrorDetail/properties/code = precondition_failed",
                "/components/schemas/ErrorDetail/properties/code = idempotency_key_reused",
            ],
        );
        assert!(differences.is_empty(), "{}", differences.join("\n"));
        let reached = self.shapes.objects();
        for schema in ["Error", "ErrorDetail", "ParamError"] {
            assert!(reached.contains(format!("/components/schemas/{schema}").as_str()));
        }
        for operation in [PROJECTS, API_TOKENS, PROXY_SETTINGS] {
            let documented = contract.statuses(&contract.operation(operation));
            for status in documented {
                // 200 and 304: `every_listing_answer_validates_and_covers_the_document`
                // and `conditional_answers_are_documented`.
                let answered =
                    [200, 304].contains(&status) || self.answered.contains(&(operation, status));
                assert!(
                    answered,
                    "{operation} documents {status}, no case answered it"
                );
            }
        }
    }
}

// ===== Fixtures =====

/// Projects that together set and leave unset every optional member, and
/// hold every value of every enum.
fn rich_projects() -> Vec<Value> {
    let mut full = project("p-full", 1, 100);
    let every_name_condition =
        json!({"present": ["a"], "absent": ["b"], "values": {"c": [1, {"d": null}]}});
    full.as_object_mut().unwrap().extend(
        json!({
            "description": "every member set", "type": "mcp",
            "avatar_url": "https://avatars.example/p.png",
            "external_project_url": "https://shop.example", "log_severity": "DEBUG",
            "edgee_behind_proxy_cache": true, "force_https": false, "cache": true,
            "override_cache": [{"path": "/static", "regex": true, "ttl": 60, "swr": 5,
                "pass": true, "rank": 1, "conditions": {
                    "request_cookies": every_name_condition,
                    "request_headers": every_name_condition,
                    "request_query_params": every_name_condition,
                    "response_headers": every_name_condition,
                    "request_methods": ["GET"], "response_status": [200]}},
                {"path": "/"}],
            "override_cache_enabled": true, "cookie_name": "_pd", "cookie_domain": ".shop.example",
            "proxy_only": true, "proxy_only_path_regex": "^/api", "inject_sdk": true,
            "inject_sdk_position": "prepend", "cookieless": true,
            "autocapture": {"pageview": true, "spa_pageview": true, "engagement": true,
                "click": true, "form": true, "scroll": true},
            "enforce_no_store_policy": true, "trusted_ips": ["10.0.0.0/8"],
            "password_protection": true, "blocked_ips": ["2001:db8::1"],
            "cookie_whitelist": ["session"],
            "forwarded_headers": [{"name": "X-Env", "value": "production"}],
            "rate_limiting_enabled": true,
            "rate_limiting": [
                {"rank": 1, "limit": 10, "window": "1s", "block_duration": 30, "key": ["ip", "ua"],
                 "conditions": {"path": "/login", "regex": false,
                    "method": ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE"],
                    "continent": ["AF", "AN", "AS", "EU", "NA", "OC", "SA"], "country": ["FR"]}},
                {"rank": 2, "limit": 100, "window": "60s"},
            ],
        })
        .as_object()
        .unwrap()
        .clone(),
    );
    let mut ai = project("p-ai", 1, 200);
    ai.as_object_mut().unwrap().extend(
        json!({"type": "ai_analytics", "log_severity": "WARNING",
               "rate_limiting": [{"rank": 1, "limit": 5}]})
        .as_object()
        .unwrap()
        .clone(),
    );
    let mut error = project("p-error", 2, 300);
    error["log_severity"] = json!("ERROR");
    vec![full, project("p-plain", 1, 0), ai, error]
}

/// Two revisions: one backend with every optional string set, one with
/// none.
fn rich_settings(project_id: &str) -> Vec<Value> {
    let mut first = settings(project_id, 1, false);
    first["backends"] = json!([
        {"name": "origin", "address": "origin.example:443", "enable_ssl": true,
         "check_certificate": "origin.example", "ca_certificate": "-----BEGIN CERTIFICATE-----",
         "sni_hostname": "origin.example", "default": true, "override_host": "shop.example"},
        {"name": "static", "address": "static.example:80"}
    ]);
    first["routes"] = json!([
        {"path": "^/eu/", "regex": true, "backend_name": "origin", "rank": "-1",
         "continent": ["EU"], "region": ["IDF"], "country": ["FR"]},
    ]);
    vec![first, settings(project_id, 2, true)]
}

/// The headers `response` (a response's pointer) documents are valid in
/// `headers`, and the required ones are there.
fn assert_documented_headers(
    contract: &Contract,
    response: &str,
    headers: &reqwest::header::HeaderMap,
    what: &str,
) {
    let Some(documented) = contract.at(response).get("headers") else {
        return;
    };
    for name in documented.as_object().unwrap().keys() {
        let pointer = format!("{response}/headers/{name}");
        let required = contract.at(&contract.resolve_pointer(&pointer))["required"] == true;
        match headers.get(name.as_str()) {
            Some(value) => contract.assert_header_valid(
                &pointer,
                value.to_str().unwrap(),
                &format!("{what}: {name}"),
            ),
            None => assert!(!required, "{what}: no {name} header"),
        }
    }
}

// ===== Conditional requests =====

/// Every listing's 200 carries the documented `ETag`, `X-Request-Id` and
/// `RateLimit-*` headers; sending its `ETag` back as the documented
/// `If-None-Match` gets the documented 304, without a body.
#[tokio::test]
async fn conditional_answers_are_documented() {
    let contract = contract();
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![
        org(1),
        user("u1", &[1]),
        project("p1", 1, 0),
        settings("p1", 1, true),
    ])
    .await;
    // The token list shows `last_used_at`: written once before the first
    // tag is taken, so that a flush between the two requests cannot change
    // the list (it changed in one loaded run).
    let (_, token) = app.token_with("u1", "caller", None).await;
    assert_eq!(app.get(API_TOKENS, &token).await.status(), 200);
    wait_for_last_used_at(&app, &token).await;
    for (operation, path) in [
        (PROJECTS, PROJECTS),
        (API_TOKENS, API_TOKENS),
        (PROXY_SETTINGS, "/v1/projects/p1/proxy-settings"),
        (ME, ME),
        (ORGANIZATIONS, ORGANIZATIONS),
        (MY_ORGANIZATION, MY_ORGANIZATION),
        (ORGANIZATION, &format!("/v1/organizations/{}", org_id(1))),
    ] {
        let op = contract.operation(operation);
        let parameters: Vec<Value> = contract
            .parameters(&op)
            .iter()
            .map(|pointer| contract.at(pointer)["name"].clone())
            .collect();
        for header in ["If-None-Match", "X-Request-Id"] {
            assert!(parameters.contains(&json!(header)), "{operation}: {header}");
        }
        let get = || app.client.get(app.url(path)).bearer_auth(&token);
        let first = get()
            .header("x-request-id", "trace-1")
            .send()
            .await
            .unwrap();
        assert_eq!(first.status(), 200);
        let ok = contract.response(&op, 200).unwrap();
        for header in ["etag", "x-request-id", "ratelimit-remaining"] {
            assert!(
                first.headers().contains_key(header),
                "{operation}: {header}"
            );
        }
        assert_documented_headers(&contract, &ok, first.headers(), &format!("200 {operation}"));
        let etag = first.headers()["etag"].clone();

        let again = get()
            .header("if-none-match", etag.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{operation}");
        let not_modified = contract
            .response(&op, 304)
            .unwrap_or_else(|| panic!("{operation} does not document 304"));
        assert_eq!(again.headers()["etag"], etag);
        assert_documented_headers(
            &contract,
            &not_modified,
            again.headers(),
            &format!("304 {operation}"),
        );
        assert!(
            again.bytes().await.unwrap().is_empty(),
            "{operation}: a 304 has no body"
        );
    }
}

// ===== Token and proxy-settings operations =====

/// Real answers of createApiToken, getApiToken, deleteApiToken,
/// createProjectProxySettings and updateProjectProxySettings, successes
/// and errors, validate against what the document says of each, headers
/// included.
#[tokio::test]
async fn token_and_proxy_settings_answers_validate() {
    let contract = contract();
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.seed(vec![
        org(1),
        user("u1", &[1]),
        user("u2", &[1]),
        project("p1", 1, 0),
    ])
    .await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u2'");
    let token = app.token("u1").await;
    let member = app.token("u2").await;
    let revision = json!({"description": "d",
        "backends": [{"name": "a", "address": "a.example:443", "default": true}],
        "routes": [{"path": "/", "backend_name": "a", "rank": "1"}]});
    let shapes = std::cell::RefCell::new(Shapes::default());
    let check = |method: &str, path: &str, status: u16, answer: (u16, Value, Option<String>)| {
        let operation = format!("/paths/{}/{method}", escape(path));
        let what = format!("{status} {method} {path}");
        assert_eq!(answer.0, status, "{what}: {}", answer.1);
        let documented = contract
            .response(&operation, status)
            .unwrap_or_else(|| panic!("{what} is not documented"));
        let schema = contract.json_schema_of(&documented);
        contract.assert_valid(&schema, &answer.1, &what);
        shapes.borrow_mut().record(&contract, &schema, &answer.1);
        if status == 200 {
            let tag = answer.2.expect("an ETag");
            contract.assert_header_valid(&format!("{documented}/headers/ETag"), &tag, &what);
        }
    };
    let tokens = "/v1/api_tokens";
    let one_token = "/v1/api_tokens/{id}";
    let settings = "/v1/projects/{id}/proxy-settings";
    let one_revision = "/v1/projects/{id}/proxy-settings/{revision}";
    let created = send(
        &app,
        Method::POST,
        tokens,
        &token,
        &[],
        Some(&json!({"name": "n"})),
    )
    .await;
    let id = created.1["id"].as_str().unwrap().to_owned();
    check("post", tokens, 200, created);
    let bad = send(&app, Method::POST, tokens, &token, &[], Some(&json!({}))).await;
    check("post", tokens, 400, bad);
    let path = format!("/v1/api_tokens/{id}");
    check(
        "get",
        one_token,
        200,
        send(&app, Method::GET, &path, &token, &[], None).await,
    );
    check(
        "get",
        one_token,
        404,
        send(&app, Method::GET, &path, &member, &[], None).await,
    );
    check(
        "delete",
        one_token,
        200,
        send(&app, Method::DELETE, &path, &token, &[], None).await,
    );
    check(
        "delete",
        one_token,
        404,
        send(&app, Method::DELETE, &path, &token, &[], None).await,
    );
    let path = "/v1/projects/p1/proxy-settings";
    check(
        "post",
        settings,
        200,
        send(&app, Method::POST, path, &token, &[], Some(&revision)).await,
    );
    check(
        "post",
        settings,
        403,
        send(&app, Method::POST, path, &member, &[], Some(&revision)).await,
    );
    check(
        "post",
        settings,
        400,
        send(&app, Method::POST, path, &token, &[], Some(&json!({}))).await,
    );
    let unknown = "/v1/projects/nope/proxy-settings";
    check(
        "post",
        settings,
        404,
        send(&app, Method::POST, unknown, &token, &[], Some(&revision)).await,
    );
    let active = json!({"is_active": true});
    let path = "/v1/projects/p1/proxy-settings/1";
    check(
        "post",
        one_revision,
        200,
        send(&app, Method::POST, path, &token, &[], Some(&active)).await,
    );
    let stale = [("if-match", "\"v1\"")];
    check(
        "post",
        one_revision,
        412,
        send(&app, Method::POST, path, &token, &stale, Some(&active)).await,
    );
    check(
        "post",
        one_revision,
        403,
        send(&app, Method::POST, path, &member, &[], Some(&active)).await,
    );
    let path = "/v1/projects/p1/proxy-settings/x";
    check(
        "post",
        one_revision,
        400,
        send(&app, Method::POST, path, &token, &[], Some(&active)).await,
    );
    let path = "/v1/projects/p1/proxy-settings/9";
    check(
        "post",
        one_revision,
        404,
        send(&app, Method::POST, path, &token, &[], Some(&active)).await,
    );
    let shapes = shapes.into_inner();
    for reached in [
        "CreatedApiToken",
        "DeletedApiToken",
        "ApiToken",
        "ProxySettings",
    ] {
        let pointer = format!("/components/schemas/{reached}");
        assert!(shapes.objects().contains(pointer.as_str()), "{reached}");
    }
}
