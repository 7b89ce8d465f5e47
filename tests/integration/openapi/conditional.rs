//! Conditional requests: the documented headers, `If-None-Match` and 304.

use super::*;

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
