//! The HTTP layer: routes, the error body, request limits, logging and
//! metrics. [`server`] runs the router on sockets.

mod api_tokens;
mod body;
mod body_framing;
mod caller;
mod client_stream;
mod conditional;
mod directory;
pub mod error;
mod listings;
mod observe;
pub mod openapi;
mod operations;
mod projects;
mod proxy_settings;
mod query;
mod schema;
pub mod server;
mod unread_body;
mod writes;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use tower_http::compression::predicate::SizeAbove;
use tower_http::compression::{CompressionLayer, CompressionLevel};

use crate::auth::Authenticator;
use crate::console;
use crate::domain::pagination::{Direction, PageRequest};
use crate::store::{JsonPage, Store};
pub use caller::Metering;
pub(crate) use conditional::content_tag;
use error::ApiError;
use http_body::{Frame, SizeHint};
pub use operations::MetricsRoute;

/// What every handler can reach. Cloned for every request (by each
/// extractor and middleware that takes it), so it is one reference count.
#[derive(Clone)]
pub struct AppState(Arc<Services>);

pub struct Services {
    pub store: Arc<Store>,
    pub auth: Arc<Authenticator>,
    /// Per-token rate limits; `None` when they are off.
    pub metering: Option<Arc<Metering>>,
    /// Failed authentications per client address; `None` when unlimited.
    pub failures: Option<Arc<crate::rate_limit::failures::FailureLimiter>>,
    /// The trusted proxy's header naming the client's address, if any.
    pub client_address_header: Option<axum::http::HeaderName>,
}

impl AppState {
    pub fn new(services: Services) -> Self {
        Self(Arc::new(services))
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

/// Limits checked on every request before routing.
#[derive(Clone, Debug)]
pub struct RequestLimits {
    /// Longest request target (path and query), in bytes: beyond, 414.
    pub max_uri_bytes: usize,
    /// Largest header section, in bytes: beyond, 431.
    pub max_header_bytes: usize,
    /// Longest a request may take to answer: beyond, 503.
    pub timeout: Duration,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            max_uri_bytes: 8 * 1024,
            max_header_bytes: 16 * 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Responses smaller than this are sent uncompressed: compressing them
/// costs more than it saves.
const COMPRESS_ABOVE_BYTES: u64 = 1024;

/// The public router: the API, `/openapi.json`, the health endpoints,
/// `/metrics` unless `metrics` excludes it, and the web console when
/// `console` is on (`--console`).
pub fn router(
    state: AppState,
    limits: RequestLimits,
    metrics: MetricsRoute,
    console: bool,
) -> Router {
    let listing = |route| listing(route, &state);
    let mut routes = Router::new()
        .route(
            "/v1/projects",
            listing(get(listings::projects).post(projects::create)),
        )
        .route(
            "/v1/projects/{id}",
            listing(
                get(projects::get)
                    .merge(post(projects::update))
                    .delete(projects::delete),
            ),
        )
        .route(
            "/v1/api_tokens",
            listing(get(listings::api_tokens).post(api_tokens::create)),
        )
        .route(
            "/v1/api_tokens/{id}",
            listing(get(api_tokens::get).delete(api_tokens::delete)),
        )
        .route(
            "/v1/projects/{id}/proxy-settings",
            listing(get(listings::proxy_settings).post(proxy_settings::create)),
        )
        .route(
            "/v1/projects/{id}/proxy-settings/{revision}",
            listing(post(proxy_settings::update)),
        )
        .route("/v1/users/me", listing(get(directory::me)))
        .route("/v1/organizations", listing(get(directory::organizations)))
        .route(
            "/v1/organizations/me",
            listing(get(directory::my_organization)),
        )
        .route(
            "/v1/organizations/{id}",
            listing(get(directory::organization)),
        )
        .merge(operations::routes(metrics))
        .route("/openapi.json", get_only(get(openapi::document)));
    if console {
        routes = routes
            .route(console::PATH, get_only(get(console::page)))
            .route("/console/", get_only(get(console::page)))
            .route("/console/{name}", get_only(get(console::asset)));
    }
    let routes = routes.fallback(not_found).with_state(state);
    with_middleware(routes, limits)
}

/// The operator's endpoints alone, for `--admin-listen`.
pub fn admin_router(state: AppState, limits: RequestLimits) -> Router {
    let routes = operations::routes(MetricsRoute::Included)
        .fallback(not_found)
        .with_state(state);
    with_middleware(routes, limits)
}

/// The layers every request goes through, outermost first: request id,
/// log line and metrics; `Connection: close` after a body left unread;
/// limits; compression; conditional requests.
/// Public so that the benchmark's ceiling server runs the very same stack.
/// Installs the process's metrics recorder the first time.
pub fn with_middleware(routes: Router, limits: RequestLimits) -> Router {
    crate::metrics::install();
    routes
        .layer(middleware::from_fn(conditional::answer_not_modified))
        .layer(
            CompressionLayer::new()
                .quality(CompressionLevel::Fastest)
                .compress_when(SizeAbove::new(COMPRESS_ABOVE_BYTES)),
        )
        .layer(middleware::from_fn_with_state(limits, enforce_limits))
        .layer(middleware::from_fn(unread_body::close_after_unread_body))
        .layer(middleware::from_fn(observe::observe))
}

/// A listing (or an operation of the management API) answers its methods
/// (GET and HEAD, and those `route` adds) to an authenticated caller
/// within its rate limit; any other method is a 405 with `Allow`, before
/// authentication.
fn listing(route: MethodRouter<AppState>, state: &AppState) -> MethodRouter<AppState> {
    get_only(route.route_layer(middleware::from_fn_with_state(
        state.clone(),
        caller::authenticate,
    )))
}

/// A route that answers its methods; anything else is a 405 with `Allow`.
fn get_only(route: MethodRouter<AppState>) -> MethodRouter<AppState> {
    route.fallback(|| async { ApiError::MethodNotAllowed })
}

async fn not_found() -> ApiError {
    ApiError::NotFound(
        "no such route; see /v1/projects, /v1/projects/{id}, /v1/api_tokens, /v1/projects/{id}/proxy-settings, /v1/users/me and /v1/organizations; the console is at /console"
            .into(),
    )
}

fn tagged(mut response: Response, tag: HeaderValue) -> Response {
    response.headers_mut().insert(header::ETAG, tag);
    response
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
/// JSON, and a strong entity tag of that JSON (management.md,
/// "Concurrency"), which changes with every change of the object. Objects
/// the API writes carry their stored version instead (`writes::object_response`),
/// which `If-Match` compares.
pub fn content_tagged_response(object: &impl serde::Serialize) -> Result<Response, ApiError> {
    let body = serde_json::to_vec(object).map_err(|_| ApiError::Internal)?;
    let tag = conditional::content_tag(&body);
    Ok(tagged(json_body(StatusCode::OK, Body::from(body)), tag))
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
fn json_body(status: StatusCode, body: Body) -> Response {
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

async fn enforce_limits(
    State(limits): State<RequestLimits>,
    request: Request,
    next: Next,
) -> Response {
    let uri_bytes = request
        .uri()
        .path_and_query()
        .map_or(0, |pq| pq.as_str().len());
    if uri_bytes > limits.max_uri_bytes {
        return ApiError::UriTooLong.into_response();
    }
    let header_bytes: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if header_bytes > limits.max_header_bytes {
        return ApiError::HeadersTooLarge.into_response();
    }
    match tokio::time::timeout(limits.timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(
                timeout = ?limits.timeout,
                request_id = observe::current_request_id(),
                "request timed out"
            );
            ApiError::Unavailable.into_response()
        }
    }
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
