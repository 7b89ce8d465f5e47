//! An answer given before the request's body was read to its end (a 401,
//! a 404, a 413...) leaves the rest of that body on the connection, where
//! the next request cannot be found; hyper then closes the connection
//! after the answer. The answer says so with `Connection: close`, so that a
//! client that reuses connections opens a new one instead of sending its
//! next request into one being closed (reqwest then fails it with an
//! incomplete message).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Body as HttpBody, Frame, SizeHint};

/// The middleware: requests without a body (every listing) go through
/// untouched.
pub async fn close_after_unread_body(request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let finished = Arc::new(AtomicBool::new(false));
    let watched = Arc::clone(&finished);
    let request = request.map(|body| {
        Body::new(Watched {
            body,
            finished: watched,
        })
    });
    let mut response = next.run(request).await;
    if !finished.load(Ordering::Acquire) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that notes when it has been read to its end.
struct Watched {
    body: Body,
    finished: Arc<AtomicBool>,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.body.is_end_stream() {
            self.finished.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
