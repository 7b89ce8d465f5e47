//! Requests of the management API's tests: any method, headers and JSON
//! body; the answer's status, JSON and `ETag`.

use reqwest::header::{CONTENT_TYPE, ETAG};
use serde_json::Value;

use super::{TestApp, assert_error_shape, json_of};

pub async fn send(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Value, Option<String>) {
    let mut all = headers.to_vec();
    if body.is_some() {
        all.push((CONTENT_TYPE.as_str(), "application/json"));
    }
    let body = body.map(|b| b.to_string().into_bytes());
    send_bytes(app, method, path, token, &all, body).await
}

/// [`send`] with the body's bytes as they are, and only the given headers
/// (`Content-Type` included).
pub async fn send_bytes(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> (u16, Value, Option<String>) {
    let mut request = app.client.request(method, app.url(path)).bearer_auth(token);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = request.send().await.expect("answered");
    let tag = response
        .headers()
        .get(ETAG)
        .map(|v| v.to_str().unwrap().to_owned());
    let (status, body) = json_of(response).await;
    if !status.is_success() {
        assert_error_shape(&body);
    }
    (status.as_u16(), body, tag)
}

/// The members a 400 names.
pub fn params(body: &Value) -> Vec<String> {
    body["error"]["params"]
        .as_array()
        .unwrap_or_else(|| panic!("no params: {body}"))
        .iter()
        .map(|p| p["param"].as_str().unwrap().to_owned())
        .collect()
}

/// The generated client of the public document, calling `app` with `token`.
pub fn generated_client(app: &TestApp, token: &str) -> edgee_api_client::Client {
    edgee_api_client::new()
        .baseurl(app.url(""))
        .api_token(token.to_owned())
        .connect()
}

/// The newest audit records (at most 10), of one object when given.
pub async fn audit_of(
    app: &TestApp,
    object_id: Option<&str>,
) -> Vec<proxydeck::store::operator::audit::AuditRecord> {
    app.store
        .run(proxydeck::store::operator::audit::AuditQuery {
            object_id: object_id.map(str::to_owned),
            limit: 10,
            ..Default::default()
        })
        .await
        .expect("the audit reads")
}
