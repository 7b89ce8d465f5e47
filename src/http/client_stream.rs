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
//! - **JSON bodies on hyper's own answers** (`decisions.md` section 3). A
//!   request hyper cannot parse (a malformed request line or header, a
//!   head over the connection's limit) never reaches the router: hyper
//!   answers 400 or 431 itself, with an empty body, and closes. It has no
//!   hook for that answer, so it is rewritten on its way out: a head
//!   starting `HTTP/1.1 4` that holds hyper's own `connection: close` and
//!   `content-length: 0` (the router's errors always have a body) gets the
//!   JSON body of the same status, its `content-type` and length. Any
//!   other write passes through untouched, after one prefix check.

use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::error::ApiError;

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
        }
    }
}

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
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if self.drain.began() && buf.filled().len() > before {
            self.drain.reads.fetch_add(1, Ordering::Relaxed);
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
