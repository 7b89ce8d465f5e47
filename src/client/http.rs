//! The client's HTTP calls to the API, which every client command and
//! `follow` stand on: a request (method, path, query, JSON body, headers)
//! sent with the token and tried again on 429 and 503; a success answer's
//! body and ETag; a page of a listing; a stream of Server-Sent Events
//! ([`EventStream`]); an error answer in one sentence ([`Refused`]). It
//! knows no command, so that each command can use it alike.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use time::OffsetDateTime;

use super::connection::Target;
use super::sse::EventStream;
use crate::domain::pagination::{DEFAULT_LIMIT, MAX_LIMIT};
use crate::output::printable;

/// A page of any listing. The token listing has no `has_more`/`last_key`:
/// a full page may be followed by more, keyed by its last item's id.
#[derive(Deserialize)]
pub struct Page {
    pub data: Vec<Box<RawValue>>,
    #[serde(default)]
    has_more: Option<bool>,
    #[serde(default)]
    last_key: Option<String>,
}

impl Page {
    /// The items, parsed.
    pub fn items(&self) -> anyhow::Result<Vec<Value>> {
        self.data
            .iter()
            .map(|item| serde_json::from_str(item.get()))
            .collect::<Result<_, _>>()
            .context("the server's answer is not a listing")
    }

    /// The start key of the next page, if there may be one. The token
    /// listing says nothing: a full page may have more after its last item.
    pub fn next_key(&self, limit: Option<u32>) -> Option<String> {
        match self.has_more {
            Some(more) => self.last_key.clone().filter(|_| more),
            None if self.data.len() == limit.unwrap_or(DEFAULT_LIMIT) as usize => self
                .data
                .last()
                .and_then(|last| serde_json::from_str::<Value>(last.get()).ok())
                .and_then(|last| last["id"].as_str().map(str::to_owned)),
            None => None,
        }
    }
}

/// An error answer of the API, in one sentence: its message, and the
/// members its `params` name when the message does not already say them;
/// printable (the server's text may hold control characters).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    status: StatusCode,
    message: String,
    /// The first parameter the error names, if any.
    param: Option<String>,
    /// Its `code`, when it has one (`rollout_in_progress`...).
    code: Option<String>,
}

impl Refused {
    fn from_answer(status: StatusCode, body: &[u8]) -> Self {
        let error = serde_json::from_slice::<Value>(body).unwrap_or_default();
        let said = |member: &Value| member.as_str().map(str::to_owned);
        let message = said(&error["error"]["message"])
            .unwrap_or_else(|| format!("the server answered {status}"));
        let params: Vec<(String, String)> = error["error"]["params"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|param| Some((said(&param["param"])?, said(&param["message"])?)))
            .collect();
        let message = printable(&sentence(&message, &params)).into_owned();
        Self {
            status,
            message,
            param: params.into_iter().next().map(|(param, _)| param),
            code: said(&error["error"]["code"]),
        }
    }

    /// The error's `code`, which tells apart refusals of one status.
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// A 404: an unknown path, or a project unknown or not visible.
    pub fn is_not_found(&self) -> bool {
        self.status == StatusCode::NOT_FOUND
    }

    /// A 400 naming the path's `id`: no id could look like that.
    pub fn is_malformed_id(&self) -> bool {
        self.status == StatusCode::BAD_REQUEST && self.param.as_deref() == Some("id")
    }

    /// The `start_key` named no item of the list.
    pub fn is_unknown_start_key(&self) -> bool {
        self.status == StatusCode::BAD_REQUEST && self.param.as_deref() == Some("start_key")
    }

    /// The token did not authenticate.
    pub fn is_authentication(&self) -> bool {
        self.status == StatusCode::UNAUTHORIZED
    }

    /// A refusal the same request will meet again (a 4xx but 408 and 429):
    /// no use trying again.
    pub fn is_permanent(&self) -> bool {
        self.status.is_client_error()
            && !matches!(
                self.status,
                StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_MANY_REQUESTS
            )
    }

    /// The error body an event stream ends with (its `error` event).
    pub fn from_event(data: &str) -> Self {
        let status = match serde_json::from_str::<Value>(data).unwrap_or_default()["error"]["type"]
            .as_str()
        {
            Some("authentication_error") => StatusCode::UNAUTHORIZED,
            Some("not_found_error") => StatusCode::NOT_FOUND,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self::from_answer(status, data.as_bytes())
    }
}

/// `message` followed by each of `params` it does not already hold, as
/// `MEMBER RULE`; the API's "; see params" gives way to them.
fn sentence(message: &str, params: &[(String, String)]) -> String {
    let text = message.strip_suffix("; see params").unwrap_or(message);
    let details: Vec<String> = params
        .iter()
        .map(|(param, rule)| format!("{param} {rule}"))
        .filter(|detail| !text.contains(detail.as_str()))
        .collect();
    if details.is_empty() {
        text.to_owned()
    } else {
        format!("{text}: {}", details.join("; "))
    }
}

/// The path segments of `/v1/PARTS...`.
pub fn v1(parts: &[&str]) -> Vec<String> {
    std::iter::once("v1")
        .chain(parts.iter().copied())
        .map(str::to_owned)
        .collect()
}

/// A request to the API: its method, path segments, query, JSON body and
/// headers.
pub struct Request<'a> {
    method: reqwest::Method,
    segments: &'a [String],
    query: &'a [(&'a str, String)],
    body: Option<Value>,
    headers: Vec<(&'static str, String)>,
}

impl<'a> Request<'a> {
    pub fn new(method: reqwest::Method, segments: &'a [String]) -> Self {
        Self {
            method,
            segments,
            query: &[],
            body: None,
            headers: Vec::new(),
        }
    }

    pub fn query(self, query: &'a [(&'a str, String)]) -> Self {
        Self { query, ..self }
    }

    pub fn body(self, body: Value) -> Self {
        Self {
            body: Some(body),
            ..self
        }
    }

    pub fn header(mut self, name: &'static str, value: Option<String>) -> Self {
        self.headers.extend(value.map(|value| (name, value)));
        self
    }
}

/// A success answer: its body and `ETag`.
pub struct Answer {
    pub body: bytes::Bytes,
    pub etag: Option<String>,
}

/// Times a request answered 429 or 503 is tried again.
const RETRIES: u32 = 5;
/// The longest wait between two tries, whatever `Retry-After` says.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

pub struct ApiClient {
    http: reqwest::Client,
    /// For streams: no bound on the whole exchange, one on each read.
    streams: reqwest::Client,
    base: url::Url,
    token: String,
}

impl ApiClient {
    pub fn new(target: &Target) -> anyhow::Result<Self> {
        // TLS for https:// URLs; installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = url::Url::parse(&target.url)
            .map_err(|_| anyhow!("--url {:?} is not a URL", target.url))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            bail!("--url must be an http:// or https:// URL");
        }
        let user_agent = concat!("proxydeck/", env!("CARGO_PKG_VERSION"));
        let http = reqwest::Client::builder()
            .user_agent(user_agent)
            .timeout(Duration::from_secs(60))
            .build()
            .context("cannot set up the HTTP client")?;
        // A stream is silent at most a heartbeat (15 s by default): three
        // of them without a byte is a connection gone.
        let streams = reqwest::Client::builder()
            .user_agent(user_agent)
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(45))
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Self {
            http,
            streams,
            base,
            token: target.token.clone(),
        })
    }

    /// One page of a listing (see [`ApiClient::send`]).
    pub async fn page(
        &self,
        segments: &[String],
        query: &[(&str, String)],
    ) -> anyhow::Result<Page> {
        let answer = self
            .send(Request::new(reqwest::Method::GET, segments).query(query))
            .await?;
        serde_json::from_slice(&answer.body).context("the server's answer is not a listing")
    }

    /// Walks a listing from its start, the most items a page may hold at a
    /// time, handing each page's items to `visit` until it answers
    /// `Break`: what it broke with, or `None` when the list ended first.
    pub async fn walk<T>(
        &self,
        segments: &[String],
        query: &[(&str, String)],
        mut visit: impl FnMut(Vec<Value>) -> ControlFlow<T>,
    ) -> anyhow::Result<Option<T>> {
        let mut start_key: Option<String> = None;
        loop {
            let mut page_query = query.to_vec();
            page_query.push(("limit", MAX_LIMIT.to_string()));
            page_query.extend(start_key.take().map(|key| ("start_key", key)));
            let page = self.page(segments, &page_query).await?;
            if let ControlFlow::Break(found) = visit(page.items()?) {
                return Ok(Some(found));
            }
            match page.next_key(Some(MAX_LIMIT)) {
                Some(key) => start_key = Some(key),
                None => return Ok(None),
            }
        }
    }

    /// A stream of Server-Sent Events (`GET` with `Accept:
    /// text/event-stream`), read event by event as they come; an error
    /// answer becomes [`Refused`].
    pub async fn stream(
        &self,
        segments: &[String],
        query: &[(&str, String)],
    ) -> anyhow::Result<EventStream> {
        let url = self.url(segments, query)?;
        let response = self
            .streams
            .get(url)
            .bearer_auth(&self.token)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|error| self.unreachable(&error))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.bytes().await.unwrap_or_default();
            return Err(Refused::from_answer(status, &body).into());
        }
        Ok(EventStream::new(response))
    }

    fn url(&self, segments: &[String], query: &[(&str, String)]) -> anyhow::Result<url::Url> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| anyhow!("--url cannot take a path"))?
            .pop_if_empty()
            .extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        Ok(url)
    }

    /// One exchange; an error answer becomes [`Refused`]. A 429 or 503 is
    /// tried again after the time its `Retry-After` gives, [`RETRIES`]
    /// times at most, unless that time is over [`LONGEST_WAIT`] (then its
    /// refusal, which says when to retry, is the answer), with the very same
    /// request: the same body and headers, an `Idempotency-Key` included,
    /// so a retried create cannot create twice.
    pub async fn send(&self, request: Request<'_>) -> anyhow::Result<Answer> {
        let url = self.url(request.segments, request.query)?;
        let mut builder = self.http.request(request.method, url);
        // No token: a request anyone may send (acceptInvitation's).
        if !self.token.is_empty() {
            builder = builder.bearer_auth(&self.token);
        }
        let mut builder = builder.header("api-version", "1");
        for (name, value) in request.headers {
            builder = builder.header(name, value);
        }
        if let Some(body) = request.body {
            builder = builder
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(&body)?);
        }
        let built = builder.build().context("cannot make the request")?;
        let mut tries = 0;
        loop {
            let attempt = built
                .try_clone()
                .expect("a request with an in-memory body clones");
            let response = self
                .http
                .execute(attempt)
                .await
                .map_err(|error| self.unreachable(&error))?;
            let status = response.status();
            let wait = retry_after(response.headers());
            let etag = response
                .headers()
                .get(reqwest::header::ETAG)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let body = response
                .bytes()
                .await
                .map_err(|error| self.unreachable(&error))?;
            // A wait longer than any we make (an hourly quota's) is not
            // waited out: the refusal says when to try again.
            if matches!(
                status,
                StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
            ) && tries < RETRIES
                && wait.is_none_or(|wait| wait <= LONGEST_WAIT)
            {
                tries += 1;
                let wait = wait.unwrap_or(Duration::from_secs(1)).min(LONGEST_WAIT);
                if std::io::stderr().is_terminal() {
                    eprintln!(
                        "the server answered {status}; trying again in {} s ({tries} of {RETRIES})",
                        wait.as_secs_f64().ceil()
                    );
                }
                tokio::time::sleep(wait).await;
                continue;
            }
            if !status.is_success() {
                let mut refused = Refused::from_answer(status, &body);
                if let Some(wait) = wait.filter(|_| status == StatusCode::TOO_MANY_REQUESTS)
                    && !refused.message.contains("retry")
                {
                    refused.message = format!("{}; retry in {} s", refused.message, wait.as_secs());
                }
                return Err(refused.into());
            }
            return Ok(Answer { body, etag });
        }
    }

    /// A failed exchange in one sentence: what went wrong, not the HTTP
    /// library's chain of causes.
    fn unreachable(&self, error: &reqwest::Error) -> anyhow::Error {
        let base = self.base.as_str().trim_end_matches('/');
        let reason = failure_reason(error);
        anyhow!(
            "cannot reach {base} ({reason}); is proxydeck running there? Set --url or PROXYDECK_URL"
        )
    }
}

/// Why a request failed, in a few words: a TLS failure, else what the
/// socket said.
fn failure_reason(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "no answer in time".into();
    }
    // Every cause; an I/O error hides the error it wraps from `source()`.
    let mut causes: Vec<&(dyn std::error::Error + 'static)> = Vec::new();
    let mut next: Vec<&(dyn std::error::Error + 'static)> = vec![error];
    while let Some(now) = next.pop() {
        causes.push(now);
        next.extend(now.source());
        if let Some(inner) = now
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            next.push(inner);
        }
    }
    let tls = causes
        .iter()
        .find_map(|cause| cause.downcast_ref::<rustls::Error>())
        .map(|error| format!("TLS: {error}"));
    let socket = causes
        .iter()
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
        .find_map(|io| match io.kind() {
            std::io::ErrorKind::ConnectionRefused => Some("connection refused"),
            std::io::ErrorKind::ConnectionReset => Some("connection reset"),
            std::io::ErrorKind::ConnectionAborted => Some("connection aborted"),
            std::io::ErrorKind::TimedOut => Some("timed out"),
            std::io::ErrorKind::UnexpectedEof => Some("the connection closed early"),
            _ if io.to_string().contains("lookup") => Some("cannot resolve the host"),
            _ => None,
        })
        .map(str::to_owned);
    tls.or(socket).unwrap_or_else(|| {
        if error.is_connect() {
            "cannot connect".into()
        } else {
            "the exchange failed".into()
        }
    })
}

/// `Retry-After`: whole seconds, or an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = OffsetDateTime::parse(text, &time::format_description::well_known::Rfc2822).ok()?;
    let left = at - OffsetDateTime::now_utc();
    Some(left.try_into().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_error_message_is_printable() {
        let body = serde_json::json!({"error": {
            "message": "bad \u{1b}]0;title\u{7} value; see params",
            "params": [{"param": "name", "message": "must not \u{202e}reverse"}],
        }});
        let refused = Refused::from_answer(StatusCode::BAD_REQUEST, body.to_string().as_bytes());
        assert_eq!(
            refused.to_string(),
            r"bad \u{1b}]0;title\u{7} value: name must not \u{202e}reverse"
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(reqwest::header::RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }
}
