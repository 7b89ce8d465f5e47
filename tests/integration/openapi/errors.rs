//! Every error the service answers, against the document.

use proxydeck::rate_limit::Policy;
use proxydeck::store::StoreOptions;

use super::*;

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
            // checked by `writes::token_and_proxy_settings_answers_validate`
            // (403, 412) and project_writes.rs (409 codes); the rollouts'
            // codes by `writes::rollout_answers_validate` and rollouts.rs.
            &[
                "/components/schemas/ErrorDetail/properties/code = rollout_in_progress",
                "/components/schemas/ErrorDetail/properties/code = no_active_revision",
                "/components/schemas/ErrorDetail/properties/code = already_active",
                "/components/schemas/ErrorDetail/properties/code = rollout_ended",
                "/components/schemas/ErrorDetail/properties/code = rollout_not_paused",
                "/components/schemas/ErrorDetail/properties/code = rollout_paused",
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
                // 200 and 304:
                // `listings::every_listing_answer_validates_and_covers_the_document`
                // and `conditional::conditional_answers_are_documented`.
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
