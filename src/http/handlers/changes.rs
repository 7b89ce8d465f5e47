//! The change feed: `GET /v1/changes` (`docs/feed.md`). With `Accept:
//! text/event-stream`, a stream of Server-Sent Events (followChanges);
//! otherwise one JSON answer, after up to `wait` for a change (the long
//! poll, listChanges). Both read through `feed.rs`; who may see a change
//! is decided as for the listings (the caller's organizations).

use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::header::{ACCEPT, AUTHORIZATION};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use tokio::time::Instant;

use crate::auth::AuthError;
use crate::auth::Principal;
use crate::domain::access::{self, Action, Facts, Refusal};
use crate::domain::change::Cursor;
use crate::domain::ids;
use crate::feed::{Follower, Next};
use crate::http::caller::Caller;
use crate::http::error::{ApiError, Throttle};
use crate::http::query::QueryParams;
use crate::http::respond::json_body;
use crate::http::routes::{Routes, authenticated};
use crate::http::state::AppState;
use crate::quotas::{FOLLOW_RETRY_AFTER_SECONDS, FollowSlot};
use crate::store::operations::changes::ChangeScope;

/// Changes one JSON answer holds by default, and at most.
const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 1000;
/// The long poll's wait when none is named, and the longest one.
const DEFAULT_WAIT: Duration = Duration::ZERO;
const MAX_WAIT: Duration = Duration::from_secs(60);
/// A stream asks its client to wait this long before reconnecting, plus
/// up to [`RETRY_JITTER_MS`] at random: a restart does not bring every
/// follower back in the same instant.
const RETRY_BASE_MS: u64 = 1000;
const RETRY_JITTER_MS: u64 = 4000;
/// How often a stream checks its token again, at least: a token revoked
/// or expired (or a membership changed) ends or narrows the stream within
/// the token cache's lifetime and a quarter of it.
const MIN_TOKEN_CHECK: Duration = Duration::from_millis(250);

pub fn routes(state: &AppState) -> Routes {
    Routes::new().route("/v1/changes", authenticated(get(changes), state))
}

/// `GET /v1/changes`
async fn changes(
    State(app): State<AppState>,
    Caller(caller): Caller,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let stream = wants_event_stream(&headers);
    let allowed: &[&'static str] = match stream {
        true => &["organization_id", "project_id", "after"],
        false => &["organization_id", "project_id", "after", "wait", "limit"],
    };
    let params = QueryParams::parse(query.as_deref(), allowed)?;
    let mut scope = ChangeScope {
        visible_to: Some(caller.organizations.clone()),
        ..ChangeScope::default()
    };
    if let Some(raw) = params.get("organization_id") {
        let id = ids::parse_organization_id(raw)
            .ok_or_else(|| ApiError::invalid("organization_id", ids::ORGANIZATION_ID_RULE))?;
        // An organization that does not exist and one the caller is not
        // in give the same answer.
        let standing = caller.organizations.standing_toward(&id);
        let number = access::decide(Action::ReadProjects, Facts::live(standing))
            .and_then(|()| caller.organizations.number_of(&id).ok_or(Refusal::NotFound))
            .map_err(|_| ApiError::NotFound("no such organization".into()))?;
        scope.organization = Some(number);
    }
    if let Some(raw) = params.get("project_id") {
        if !ids::is_valid_id(raw) {
            return Err(ApiError::invalid("project_id", ids::ID_RULE));
        }
        scope.project_id = Some(raw.to_owned());
    }
    let after = after(&params, &headers)?;
    if stream {
        // Counted from before the store is read to the stream's end: one
        // caller holds at most its share of the instance.
        let slot = follow_slot(&app, &caller)?;
        let follower = app.feed.follow(scope, after).await?;
        let authorization = headers.get(AUTHORIZATION).cloned();
        return Ok(event_stream(app, follower, authorization, slot));
    }
    let limit = params.limit(DEFAULT_LIMIT, MAX_LIMIT)? as usize;
    let wait = match params.get("wait") {
        None => DEFAULT_WAIT,
        Some(text) => parse_wait(text).ok_or_else(|| {
            ApiError::invalid(
                "wait",
                "must be a duration from 0s to 60s, such as 30s or 500ms (no leading zero)",
            )
        })?,
    };
    // Answered before the request's time runs out.
    let wait = wait.min(app.feed.options().longest_poll);
    // A poll that waits holds its place as a stream does; one that does
    // not is an ordinary read (the rate limit's).
    let _slot = match wait.is_zero() {
        true => None,
        false => Some(follow_slot(&app, &caller)?),
    };
    let read = app.feed.poll(scope, after, limit, wait).await?;
    let body = json!({
        "object": "changes",
        "data": read.changes,
        "cursor": read.through,
        "has_more": read.more,
        "reset": read.reset,
    });
    Ok(json_body(StatusCode::OK, body.to_string().into()))
}

/// A place among the follows the caller's token and user may hold open
/// (`--feed-follows-per-token`, `--feed-follows-per-user`), or 429.
fn follow_slot(app: &AppState, caller: &Principal) -> Result<FollowSlot, ApiError> {
    app.follows
        .open(&caller.token_id, &caller.user_id)
        .map_err(|refusal| ApiError::RateLimited {
            retry_after_seconds: FOLLOW_RETRY_AFTER_SECONDS,
            by: Throttle::Follows(refusal),
        })
}

/// Whether the client asks for a stream: `text/event-stream` among its
/// `Accept` values (EventSource sends exactly that).
fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|media| {
            let media = media.split(';').next().unwrap_or_default().trim();
            media.eq_ignore_ascii_case("text/event-stream")
        })
}

/// Where to start: `Last-Event-ID` (what a reconnecting EventSource
/// sends, newer than the `after` of the URL it reconnects to), else
/// `after`, else now.
fn after(params: &QueryParams, headers: &HeaderMap) -> Result<Option<Cursor>, ApiError> {
    const RULE: &str = "must be a cursor the feed gave (its digits, as given)";
    if let Some(value) = headers.get("last-event-id") {
        let text = value
            .to_str()
            .map_err(|_| ApiError::InvalidHeader {
                header: "Last-Event-ID",
                rule: RULE.into(),
            })?
            .trim();
        // EventSource sends an empty one when the stream gave no id yet.
        if !text.is_empty() {
            return Cursor::parse(text)
                .map(Some)
                .ok_or_else(|| ApiError::InvalidHeader {
                    header: "Last-Event-ID",
                    rule: RULE.into(),
                });
        }
    }
    params
        .get("after")
        .map(|text| Cursor::parse(text).ok_or_else(|| ApiError::invalid("after", RULE)))
        .transpose()
}

/// `30s`, `500ms` or `0` (seconds): decimal digits without leading
/// zeros, at most [`MAX_WAIT`].
fn parse_wait(text: &str) -> Option<Duration> {
    let (digits, unit) = match text.strip_suffix("ms") {
        Some(digits) => (digits, 1),
        None => (text.strip_suffix('s').unwrap_or(text), 1000),
    };
    let canonical = !digits.is_empty()
        && digits.len() <= 6
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !canonical {
        return None;
    }
    let wait = Duration::from_millis(digits.parse::<u64>().ok()? * unit);
    (wait <= MAX_WAIT).then_some(wait)
}

/// The stream's state between two events.
struct Stream {
    app: AppState,
    follower: Follower,
    authorization: Option<HeaderValue>,
    started: bool,
    ended: bool,
    heartbeat_at: Instant,
    token_check_at: Instant,
    /// Its place among the caller's follows, given back when the stream
    /// ends or its client goes (the body is dropped).
    _slot: FollowSlot,
}

fn event_stream(
    app: AppState,
    follower: Follower,
    authorization: Option<HeaderValue>,
    slot: FollowSlot,
) -> Response {
    let now = Instant::now();
    let state = Stream {
        _slot: slot,
        heartbeat_at: now + app.feed.options().heartbeat,
        token_check_at: now + token_check_interval(&app),
        app,
        follower,
        authorization,
        started: false,
        ended: false,
    };
    let events = futures_util::stream::unfold(state, |mut state| async move {
        let event = state.next_event().await?;
        Some((Ok::<_, std::convert::Infallible>(event), state))
    });
    let mut response = Sse::new(events).into_response();
    // Proxies that buffer answers (nginx) pass this one on as it comes.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn token_check_interval(app: &AppState) -> Duration {
    (app.auth.cache_ttl() / 4).max(MIN_TOKEN_CHECK)
}

impl Stream {
    /// The next event to send; `None` ends the stream.
    async fn next_event(&mut self) -> Option<Event> {
        if self.ended {
            return None;
        }
        if !self.started {
            self.started = true;
            let jitter = rand::random_range(0..=RETRY_JITTER_MS);
            let retry = Duration::from_millis(RETRY_BASE_MS + jitter);
            return Some(
                Event::default()
                    .retry(retry)
                    .comment("proxydeck change feed"),
            );
        }
        loop {
            let deadline = self.heartbeat_at.min(self.token_check_at);
            let next = match self.follower.next(deadline).await {
                Ok(next) => next,
                Err(error) => return Some(self.end_with(error.into())),
            };
            match next {
                Next::Change(change) => {
                    self.heartbeat_at = Instant::now() + self.app.feed.options().heartbeat;
                    let data = serde_json::to_string(&change).unwrap_or_default();
                    let id = change.cursor.to_string();
                    return Some(Event::default().event("change").id(id).data(data));
                }
                Next::Reset(cursor) => {
                    let data = json!({"object": "reset", "cursor": cursor}).to_string();
                    let event = Event::default().event("reset");
                    return Some(event.id(cursor.to_string()).data(data));
                }
                Next::Closed => return None,
                Next::Quiet => {}
            }
            let now = Instant::now();
            if now >= self.token_check_at {
                if let Some(refused) = self.check_token().await {
                    return Some(self.end_with(refused));
                }
                self.token_check_at = now + token_check_interval(&self.app);
            }
            if now >= self.heartbeat_at {
                self.heartbeat_at = now + self.app.feed.options().heartbeat;
                let cursor = self.follower.cursor();
                let data = json!({"object": "heartbeat", "cursor": cursor}).to_string();
                let event = Event::default().event("heartbeat");
                return Some(event.id(cursor.to_string()).data(data));
            }
        }
    }

    /// The token again: `Some` refusal when it no longer authenticates
    /// (the stream ends); its organizations as they are now otherwise. A
    /// store that does not answer keeps the stream as it was.
    async fn check_token(&mut self) -> Option<ApiError> {
        let authorization = self.authorization.as_ref().map(HeaderValue::as_bytes);
        match self.app.auth.authenticate(authorization, || Ok(())).await {
            Ok(principal) => {
                self.follower.set_visible(principal.organizations.clone());
                None
            }
            Err(AuthError::Store(_)) => None,
            Err(refused) => Some(refused.into()),
        }
    }

    /// An `error` event with the error's body, the stream's last.
    fn end_with(&mut self, error: ApiError) -> Event {
        self.ended = true;
        Event::default()
            .event("error")
            .data(String::from_utf8_lossy(&error.body()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits() {
        assert_eq!(parse_wait("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_wait("30"), Some(Duration::from_secs(30)));
        assert_eq!(parse_wait("0"), Some(Duration::ZERO));
        assert_eq!(parse_wait("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_wait("60s"), Some(MAX_WAIT));
        assert_eq!(parse_wait("60000ms"), Some(MAX_WAIT));
        for bad in [
            "", "s", "ms", "61s", "-1s", "1.5s", "1m", "9999999s", " 1s", "030s", "00", "60001ms",
        ] {
            assert_eq!(parse_wait(bad), None, "{bad}");
        }
    }

    #[test]
    fn event_stream_is_asked_for_by_its_media_type() {
        let asks = |accept: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(ACCEPT, HeaderValue::from_str(accept).unwrap());
            wants_event_stream(&headers)
        };
        assert!(asks("text/event-stream"));
        assert!(asks("application/json, Text/Event-Stream;q=0.5"));
        assert!(!asks("application/json"));
        assert!(!asks("*/*"));
    }
}
