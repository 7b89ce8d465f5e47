//! The world of the change feed's, the edges' and `follow`'s tests (one
//! fixture: two organizations apart), the writes they follow, and a
//! client of the feed's event stream, as EventSource reads it: `event`,
//! `id`, `data` and `retry` fields, frames ending in a blank line,
//! comments ignored.

use std::time::Duration;

use proxydeck::app::ServiceOptions;
use reqwest::Method;
use serde_json::{Value, json};

use super::{
    Backend, TestApp, org, project, revision_body, send, suite_store_options, test_options, user,
};

/// Organizations 1 (user u1, project p1) and 3 (u3, p3), apart, served
/// on `backend`; answers the service and the tokens of u1 and u3.
pub async fn two_organizations(backend: Backend) -> (TestApp, String, String) {
    two_organizations_with(backend, test_options()).await
}

/// [`two_organizations`] on a service started with `options`.
pub async fn two_organizations_with(
    backend: Backend,
    options: ServiceOptions,
) -> (TestApp, String, String) {
    let app = TestApp::spawn_with(backend, options, suite_store_options()).await;
    app.seed(vec![
        org(1),
        org(3),
        user("u1", &[1]),
        user("u3", &[3]),
        project("p1", 1, 0),
        project("p3", 3, 0),
    ])
    .await;
    let (u1, u3) = (app.token("u1").await, app.token("u3").await);
    (app, u1, u3)
}

/// `GET /v1/changes{query}` as JSON: the 200 answer.
pub async fn poll(app: &TestApp, token: &str, query: &str) -> Value {
    let (status, body) = app.get_json(&format!("/v1/changes{query}"), token).await;
    assert_eq!(status, 200, "{query}: {body}");
    assert_eq!(body["object"], "changes", "{body}");
    body
}

/// Where the feed stands now, as a new follower starts.
pub async fn head(app: &TestApp, token: &str) -> String {
    poll(app, token, "").await["cursor"]
        .as_str()
        .expect("a cursor")
        .to_owned()
}

/// A write that must succeed (200); answers its body.
pub async fn write(
    app: &TestApp,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let (status, answer, _) = send(app, method, path, token, &[], body.as_ref()).await;
    assert_eq!(status, 200, "{path}: {answer}");
    answer
}

/// Sets `project`'s description (a `project.updated` change).
pub async fn describe(app: &TestApp, token: &str, project: &str, description: &str) {
    let path = format!("/v1/projects/{project}");
    let body = json!({"description": description});
    write(app, token, Method::POST, &path, Some(body)).await;
}

/// Creates a revision of `project` described so (a project's first is
/// active, later ones are not).
pub async fn create_revision(app: &TestApp, token: &str, project: &str, description: &str) {
    let path = format!("/v1/projects/{project}/proxy-settings");
    let body = revision_body(description, "origin.example:443");
    write(app, token, Method::POST, &path, Some(body)).await;
}

/// Makes `revision` of `project` the active one.
pub async fn activate(app: &TestApp, token: &str, project: &str, revision: u32) {
    let path = format!("/v1/projects/{project}/proxy-settings/{revision}");
    let body = json!({"is_active": true});
    write(app, token, Method::POST, &path, Some(body)).await;
}

/// One event of a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEvent {
    pub event: String,
    pub id: Option<String>,
    pub data: String,
    pub retry: Option<u64>,
}

impl StreamEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {}", self.data))
    }
}

pub struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

/// How long a test waits for the next event before it fails.
const PATIENCE: Duration = Duration::from_secs(10);

impl EventStream {
    /// `GET /v1/changes{query}` as a stream; panics unless it is one.
    pub async fn open(
        app: &TestApp,
        query: &str,
        token: &str,
        last_event_id: Option<&str>,
    ) -> Self {
        let response = Self::request(app, query, token, last_event_id).await;
        assert_eq!(response.status(), 200, "{query}");
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "{query}"
        );
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The answer to a stream's request, whatever it is.
    pub async fn request(
        app: &TestApp,
        query: &str,
        token: &str,
        last_event_id: Option<&str>,
    ) -> reqwest::Response {
        let mut request = app
            .client
            .get(app.url(&format!("/v1/changes{query}")))
            .bearer_auth(token)
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        request.send().await.expect("the stream is answered")
    }

    /// The next frame with a field, `None` when the stream ends.
    pub async fn next(&mut self) -> Option<StreamEvent> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = parse(&frame) {
                    return Some(event);
                }
                continue;
            }
            let chunk = tokio::time::timeout(PATIENCE, self.response.chunk())
                .await
                .expect("the stream sends within 10 s")
                .expect("the stream reads");
            match chunk {
                Some(bytes) => self.buffer.push_str(std::str::from_utf8(&bytes).unwrap()),
                None => return None,
            }
        }
    }

    /// The next `change` or `reset` event (heartbeats are skipped).
    pub async fn next_change(&mut self) -> StreamEvent {
        loop {
            let event = self.next().await.expect("the stream goes on");
            if event.event != "heartbeat" && event.retry.is_none() {
                return event;
            }
        }
    }
}

fn parse(frame: &str) -> Option<StreamEvent> {
    let mut event = StreamEvent {
        event: "message".into(),
        id: None,
        data: String::new(),
        retry: None,
    };
    let mut any = false;
    for line in frame.lines() {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        any = true;
        match field {
            "event" => event.event = value.into(),
            "id" => event.id = Some(value.into()),
            "data" => {
                if !event.data.is_empty() {
                    event.data.push('\n');
                }
                event.data.push_str(value);
            }
            "retry" => event.retry = Some(value.parse().expect("retry is a number")),
            other => panic!("unknown field {other:?} in {frame:?}"),
        }
    }
    any.then_some(event)
}
