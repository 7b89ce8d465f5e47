//! A client of the change feed's event stream, as EventSource reads it:
//! `event`, `id`, `data` and `retry` fields, frames ending in a blank line,
//! comments ignored.

use std::time::Duration;

use serde_json::Value;

use super::TestApp;

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
