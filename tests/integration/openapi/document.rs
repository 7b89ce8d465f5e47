//! The document itself: served to anyone, cacheable and revalidated;
//! valid OpenAPI 3.1 with valid schemas; its parameters the service's rules.

use proxydeck::domain::pagination::{
    DEFAULT_LIMIT, DEFAULT_PROXY_SETTINGS_LIMIT, Direction, MAX_LIMIT,
};
use reqwest::StatusCode;

use super::*;

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
        serde_json::from_str(include_str!("../fixtures/openapi-3.1.schema.json")).unwrap();
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
