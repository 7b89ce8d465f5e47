//! What the server does to every client connection's stream, below hyper:
//!
//! - **A write deadline.** A client that sends requests but stops reading
//!   the answers would otherwise hold its connection (and its place under
//!   `--max-connections`) for ever, since hyper bounds the time to read a
//!   request head but not the time to write an answer. When a write or
//!   flush has waited `--write-timeout` without the socket taking a byte,
//!   it fails with `TimedOut`, and hyper closes the connection. What such a
//!   connection holds meanwhile is bounded too: hyper reads no further
//!   request while an answer is unwritten, so at most one answer waits in
//!   the process, besides the kernel's socket buffers.
//! - **`Connection: close` while draining.** From shutdown on, every
//!   answer's head gets `connection: close` here, below hyper: the client
//!   learns to send no more, while hyper still reads and answers what it
//!   sent already (a `Connection: close` set on the response would make
//!   hyper close after it, losing requests pipelined behind it). Reads are
//!   counted meanwhile: the server waits for its clients to go quiet.
//! - **JSON bodies on hyper's own answers** (`docs/decisions.md` section 3). A
//!   request hyper cannot parse (a malformed request line or header, a
//!   head over the connection's limit) never reaches the router: hyper
//!   answers 400 or 431 itself, with an empty body, and closes. It has no
//!   hook for that answer, so it is rewritten on its way out: a head
//!   starting `HTTP/1.1 4` that holds hyper's own `connection: close` and
//!   `content-length: 0` (the router's errors always have a body) gets the
//!   JSON body of the same status, its `content-type` and length. Any
//!   other write passes through untouched, after one prefix check.
//! - **Idle keep-alive connections wait longer than a request head
//!   may take.** hyper has one timer for reading a request head, and it
//!   starts the moment the connection waits for a request: alone, it would
//!   close a kept-alive connection idle for `--header-read-timeout` (10 s),
//!   before the load balancer in front, which keeps its own about 60 s and
//!   may send a request just as the server closes. So the stream counts
//!   the reads that bring bytes, and the connection's hyper timer
//!   ([`HeadTimer`]) reads the count: the first request head must be
//!   complete within `--header-read-timeout` of connecting (a connection
//!   that never sends a byte is closed then, as before); after an answer,
//!   the wait for the next request's first byte is bounded by
//!   `--idle-timeout` instead, and the header-read timeout runs from that
//!   byte until the head is complete.
//! - **Chunked bodies announced beyond the body limit** fail the read
//!   that follows their chunk-size line, which the body extractor answers
//!   with a 413 at once (`body_framing.rs`).

use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::body_framing::Framing;
use crate::http::error::ApiError;

/// What hyper's canned error answers say right after their status line.
const HYPERS_OWN: &[u8] = b"\r\nconnection: close\r\ncontent-length: 0\r\n";
/// Longer writes are not a bare head (hyper's are about 100 bytes).
const LONGEST_BARE_HEAD: usize = 512;

pub struct ClientStream<S> {
    inner: S,
    write_timeout: Duration,
    /// Armed when a write or flush first waits; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
    /// A rewritten answer and how much of it the socket took.
    pending: Option<(Vec<u8>, usize)>,
    /// The server's shutdown, shared by its connections.
    drain: Arc<Drain>,
    /// Reads that brought bytes, shared with the connection's
    /// [`HeadTimer`].
    arrivals: Arc<AtomicU64>,
    /// The requests' framing, followed to tell a chunked body announced
    /// beyond the limit; `refused` once one was.
    framing: Framing,
    refused: bool,
}

/// A listener's shutdown as its connections see it: whether it began
/// (then answers say `Connection: close`), and how many reads brought
/// bytes since, so that the server can tell when clients went quiet.
#[derive(Default)]
pub struct Drain {
    began: AtomicBool,
    reads: AtomicU64,
}

impl Drain {
    pub fn begin(&self) {
        self.began.store(true, Ordering::Relaxed);
    }

    fn began(&self) -> bool {
        self.began.load(Ordering::Relaxed)
    }

    /// Reads that brought bytes since the drain began.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

impl<S> ClientStream<S> {
    pub fn new(inner: S, write_timeout: Duration, drain: Arc<Drain>) -> Self {
        Self {
            inner,
            write_timeout,
            stalled: None,
            pending: None,
            drain,
            arrivals: Arc::default(),
            framing: Framing::default(),
            refused: false,
        }
    }

    /// hyper's timer for this stream's connection, which keeps it
    /// `idle_timeout` between requests.
    pub fn head_timer(&self, idle_timeout: Duration) -> HeadTimer {
        HeadTimer {
            arrivals: self.arrivals.clone(),
            idle_timeout,
        }
    }
}

/// The timer of one connection's hyper HTTP/1 connection, whose only use
/// of a timer is the header-read timeout: hyper asks it for one sleep per
/// request head, from when it waits for the head until the head is
/// complete (then the sleep is dropped), and polls the sleep whenever a
/// read leaves the head incomplete. The first head's sleep is hyper's
/// own deadline. A later head's sleep ends `idle_timeout` after it was
/// asked for, unless a byte comes first: from the first poll that sees
/// bytes read since (right after that read), it ends the header-read
/// timeout later. (A head begun in the same read as the request before
/// it, and left incomplete, is timed from its next byte.)
#[derive(Clone)]
pub struct HeadTimer {
    arrivals: Arc<AtomicU64>,
    idle_timeout: Duration,
}

/// `now + duration`, or a time beyond any server's life when that
/// overflows (tokio does the same for its own sleeps).
fn after(now: Instant, duration: Duration) -> Instant {
    now.checked_add(duration)
        .unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 86_400))
}

impl hyper::rt::Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(after(Instant::now(), duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        let now = Instant::now();
        let seen = self.arrivals.load(Ordering::Relaxed);
        let (until, head_time) = if seen == 0 {
            // Nothing read yet: the connection's first head.
            (deadline, None)
        } else {
            let head_time = deadline.saturating_duration_since(now);
            (after(now, self.idle_timeout), Some(head_time))
        };
        Box::pin(HeadDeadline {
            arrivals: self.arrivals.clone(),
            seen,
            head_time,
            sleep: Box::pin(tokio::time::sleep_until(until.into())),
        })
    }
}

/// One request head's deadline (`HeadTimer`).
struct HeadDeadline {
    arrivals: Arc<AtomicU64>,
    /// The connection's reads when the wait began.
    seen: u64,
    /// While no byte of the head has come: how long the head may take
    /// from its first byte on.
    head_time: Option<Duration>,
    sleep: Pin<Box<Sleep>>,
}

impl std::future::Future for HeadDeadline {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(head_time) = self.head_time
            && self.arrivals.load(Ordering::Relaxed) != self.seen
        {
            self.head_time = None;
            let until = after(Instant::now(), head_time);
            self.sleep.as_mut().reset(until.into());
        }
        self.sleep.as_mut().poll(cx)
    }
}

impl hyper::rt::Sleep for HeadDeadline {}

/// `head` (an answer's first bytes, starting with its status line) saying
/// `connection: close`, when it does not already.
fn closing(head: &[u8]) -> Option<Vec<u8>> {
    let line_end = memchr::memmem::find(head, b"\r\n")? + 2;
    let head_end = memchr::memmem::find(head, b"\r\n\r\n").unwrap_or(head.len());
    if memchr::memmem::find(&head[..head_end], b"\r\nconnection: close\r\n").is_some() {
        return None;
    }
    let mut answer = Vec::with_capacity(head.len() + 19);
    answer.extend_from_slice(&head[..line_end]);
    answer.extend_from_slice(b"connection: close\r\n");
    answer.extend_from_slice(&head[line_end..]);
    Some(answer)
}

/// `head` with a JSON body, when it is one of hyper's bare error answers.
fn rewritten(head: &[u8]) -> Option<Vec<u8>> {
    if head.len() > LONGEST_BARE_HEAD
        || !head.starts_with(b"HTTP/1.1 4")
        || !head.ends_with(b"\r\n\r\n")
    {
        return None;
    }
    let error = match head.get(9..12)? {
        b"400" => ApiError::MalformedRequest,
        b"414" => ApiError::UriTooLong,
        b"431" => ApiError::HeadersTooLarge,
        _ => return None,
    };
    let at = memchr::memmem::find(head, HYPERS_OWN)?;
    let body = error.body();
    let mut answer = Vec::with_capacity(head.len() + body.len() + 96);
    answer.extend_from_slice(&head[..at]);
    answer.extend_from_slice(b"\r\nconnection: close\r\ncontent-type: application/json\r\n");
    answer.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    answer.extend_from_slice(&head[at + HYPERS_OWN.len()..]);
    answer.extend_from_slice(&body);
    Some(answer)
}

impl<S: AsyncWrite + Unpin> ClientStream<S> {
    /// `poll`'s outcome, with the write deadline kept: cleared when it is
    /// ready, armed (once) and checked while it waits.
    fn bounded<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let limit = self.write_timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        ready!(stalled.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the client took nothing of the answer for the write timeout",
        )))
    }

    /// Writes what is left of a rewritten answer.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((answer, written)) = &mut self.pending {
            if *written == answer.len() {
                self.pending = None;
                break;
            }
            let poll = Pin::new(&mut self.inner).poll_write(cx, &answer[*written..]);
            match ready!(poll)? {
                0 => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                n => *written += n,
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Takes `head` as written when it is rewritten (and starts writing
    /// the rewritten answer); `None` for any other write.
    fn rewrite(&mut self, cx: &mut Context<'_>, head: &[u8]) -> Option<Poll<io::Result<usize>>> {
        let answer = match rewritten(head) {
            Some(answer) => answer,
            None if self.drain.began() && head.starts_with(b"HTTP/1.") => closing(head)?,
            None => return None,
        };
        self.pending = Some((answer, 0));
        Some(match self.drain(cx) {
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            // The rest goes out on the flush that follows.
            _ => Poll::Ready(Ok(head.len())),
        })
    }

    fn write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        if let Some(taken) = self.rewrite(cx, buf) {
            return taken;
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        let first = bufs.iter().find(|buf| !buf.is_empty());
        let total: usize = bufs.iter().map(|buf| buf.len()).sum();
        if first.is_some_and(|buf| buf.starts_with(b"HTTP/1.1 4")) && total <= LONGEST_BARE_HEAD {
            let head: Vec<u8> = bufs.iter().flat_map(|buf| buf.iter().copied()).collect();
            if let Some(taken) = self.rewrite(cx, &head) {
                return taken;
            }
        }
        // While draining, an answer's head (its own slice) says close.
        if let Some(first) = first.filter(|_| self.drain.began())
            && let Some(taken) = self.rewrite(cx, first)
        {
            return taken;
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ClientStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.refused {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a chunked request body announced more than the body limit",
            )));
        }
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.arrivals.fetch_add(1, Ordering::Relaxed);
            if self.drain.began() {
                self.drain.reads.fetch_add(1, Ordering::Relaxed);
            }
            let stream = &mut *self;
            stream.refused = stream.framing.follow(&buf.filled()[before..]);
        }
        poll
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ClientStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = self.write(cx, buf);
        self.bounded(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = self.write_vectored(cx, bufs);
        self.bounded(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = match self.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_flush(cx),
            other => other,
        };
        self.bounded(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = match self.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_shutdown(cx),
            other => other,
        };
        self.bounded(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draining_answer_says_close_once_right_after_its_status_line() {
        let head =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(
            closing(head).unwrap(),
            b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
        );
        let said = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(closing(said), None);
    }

    #[test]
    fn only_hypers_bare_error_heads_are_rewritten() {
        let head = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\ndate: Tue, 24 Nov 2026 08:18:55 GMT\r\n\r\n";
        let answer = String::from_utf8(rewritten(head).unwrap()).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-type: application/json\r\n"), "{head}");
        assert!(
            head.ends_with("date: Tue, 24 Nov 2026 08:18:55 GMT"),
            "{head}"
        );
        assert!(
            head.contains(&format!("content-length: {}\r\n", body.len())),
            "{head}"
        );
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["type"], "invalid_request_error");
        let too_large = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
        assert!(
            String::from_utf8(rewritten(too_large).unwrap())
                .unwrap()
                .contains("headers are too large")
        );
        for other in [
            &b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n"[..],
            b"HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 9\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n{}",
        ] {
            assert_eq!(rewritten(other), None, "{}", String::from_utf8_lossy(other));
        }
    }
}
