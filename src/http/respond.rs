//! How answers are written: JSON with the service's caching headers, the
//! list envelopes around a page of items that are JSON already (never
//! parsed again, never copied again), and entity tags.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};

use crate::domain::pagination::{Direction, PageRequest};
use crate::http::conditional;
use crate::store::JsonPage;
use crate::store::operations::write_request::ObjectAnswer;

fn tagged(mut response: Response, tag: HeaderValue) -> Response {
    response.headers_mut().insert(header::ETAG, tag);
    response
}

/// The list envelope around a page of items read by name (a project's
/// edges, its domains): `last_key`, when given, is the name to pass as
/// `start_key` for the next page.
pub fn named_list_response<T: serde::Serialize>(
    url: &str,
    data: &[T],
    has_more: bool,
    last_key: Option<&str>,
) -> Response {
    let mut body =
        serde_json::json!({"object": "list", "url": url, "has_more": has_more, "data": data});
    if let Some(last_key) = last_key {
        body["last_key"] = serde_json::json!(last_key);
    }
    json_body(StatusCode::OK, body.to_string().into())
}

/// The list envelope (`object`, `url`, `has_more`, `last_key`, `data`)
/// around a page of items that are JSON already, as the store keeps them.
/// The items go out as they came from the store, between a head and a
/// tail written here: never parsed again, never copied again.
pub fn list_response(url: &str, page: JsonPage) -> Response {
    let mut head = Vec::with_capacity(96 + url.len());
    head.extend_from_slice(br#"{"object":"list","url":"#);
    push_json_string(&mut head, url);
    head.extend_from_slice(if page.has_more {
        br#","has_more":true"#
    } else {
        br#","has_more":false"#
    });
    if let Some(key) = &page.last_key {
        head.extend_from_slice(br#","last_key":"#);
        push_json_string(&mut head, key);
    }
    head.extend_from_slice(br#","data":["#);
    page_response(head, page)
}

/// A read-only object's answer (the caller, an organization): 200, its
/// JSON, and a strong entity tag of that JSON (docs/management.md,
/// "Concurrency"), which changes with every change of the object. Objects
/// the API writes carry their stored version instead (`respond::object_response`),
/// which `If-Match` compares.
pub fn content_tagged_response(object: &impl serde::Serialize) -> Response {
    let body = serde_json::to_vec(object).expect("our objects serialise");
    let tag = conditional::content_tag(&body);
    tagged(json_body(StatusCode::OK, Body::from(body)), tag)
}

/// The api_token list body: it echoes the request's `limit`, `start_key`
/// (absent when none was given) and `order_direction` around the page's
/// items, instead of an envelope.
pub fn token_list_response(request: &PageRequest, page: JsonPage) -> Response {
    let mut head = Vec::with_capacity(96);
    head.extend_from_slice(br#"{"limit":"#);
    head.extend_from_slice(request.limit.to_string().as_bytes());
    if let Some(key) = &request.start_key {
        head.extend_from_slice(br#","start_key":"#);
        push_json_string(&mut head, key);
    }
    head.extend_from_slice(match request.direction {
        Direction::Asc => br#","order_direction":"ASC","data":["#,
        Direction::Desc => br#","order_direction":"DESC","data":["#,
    });
    page_response(head, page)
}

/// A listing's answer: 200, `head`, the page's items (as they came from the
/// store: never parsed again, never copied again) and `]}`, with the
/// answer's entity tag.
fn page_response(head: Vec<u8>, page: JsonPage) -> Response {
    const TAIL: &[u8] = b"]}";
    // The items' digest stands for them: hashed once per page, not once
    // per answer.
    let tag = conditional::entity_tag(&[&head, &page.digest.to_le_bytes(), TAIL]);
    let chunks = [Bytes::from(head), page.joined, Bytes::from_static(TAIL)];
    tagged(
        json_body(StatusCode::OK, Body::new(Chunks(chunks.into()))),
        tag,
    )
}

/// A body of a few chunks sent one after the other, its exact length
/// announced.
struct Chunks(VecDeque<Bytes>);

impl HttpBody for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.iter().map(|chunk| chunk.len() as u64).sum())
    }
}

fn push_json_string(body: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(body, text).expect("writing a string to memory cannot fail");
}

/// A JSON answer. Answers are never stored by shared caches.
pub fn json_body(status: StatusCode, body: Body) -> Response {
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, no-cache"),
            ),
        ],
        body,
    )
        .into_response()
}

/// A single-object answer: 200, its JSON, its strong `ETag`.
pub fn object_response(answer: ObjectAnswer) -> Response {
    let mut response = json_body(StatusCode::OK, answer.body.into());
    response
        .headers_mut()
        .insert(header::ETAG, strong_tag(answer.version));
    response
}

/// The strong entity tag of an object at `version`: `"v7"`.
pub fn strong_tag(version: i64) -> HeaderValue {
    HeaderValue::from_str(&format!("\"v{version}\"")).expect("digits make a header value")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::JsonPageWriter;
    use serde_json::{Value, json};

    async fn body_of(response: Response) -> Value {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn the_hand_written_envelope_is_the_envelope() {
        let mut page = JsonPageWriter::default();
        page.has_more = true;
        for item in [r#"{"a":1}"#, r#"{"b":"\u00e9\"x"}"#] {
            page.push_ready("k\"1", item.as_bytes());
        }
        let response = list_response("/v1/p\"q", page.finish());
        assert_eq!(
            body_of(response).await,
            json!({"object": "list", "url": "/v1/p\"q", "has_more": true, "last_key": "k\"1",
                   "data": [{"a": 1}, {"b": "é\"x"}]})
        );
        let empty = list_response("/v1/projects", JsonPage::default());
        assert_eq!(
            body_of(empty).await,
            json!({"object": "list", "url": "/v1/projects", "has_more": false, "data": []})
        );
    }

    #[tokio::test]
    async fn the_hand_written_token_list_is_the_token_list() {
        let mut page = JsonPageWriter::default();
        page.push_ready("t1", br#"{"id":"t1"}"#);
        let request = PageRequest {
            start_key: Some("t\"0".into()),
            direction: Direction::Asc,
            limit: 7,
        };
        assert_eq!(
            body_of(token_list_response(&request, page.finish())).await,
            json!({"limit": 7, "start_key": "t\"0", "order_direction": "ASC", "data": [{"id": "t1"}]})
        );
        let first = PageRequest {
            start_key: None,
            direction: Direction::Desc,
            limit: 20,
        };
        assert_eq!(
            body_of(token_list_response(&first, JsonPage::default())).await,
            json!({"limit": 20, "order_direction": "DESC", "data": []})
        );
    }
}
