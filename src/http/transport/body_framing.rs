//! Request bodies announced beyond the limit, told below hyper.
//!
//! The body extractor (`body.rs`) refuses a `Content-Length` over
//! [`MAX_BODY_BYTES`] before it reads a byte. A chunked body announces its
//! size a chunk at a time, in size lines that hyper reads and keeps to
//! itself: a client announcing a chunk of 2 MiB (or of 2^64 - 1 bytes)
//! and then sending nothing held its request until the request timeout
//! (30 s), the extractor waiting for bytes that never came. So each
//! connection's stream (`client_stream.rs`) follows the framing of the
//! requests it reads: heads, `Content-Length` bodies, chunk-size lines,
//! chunk data, trailers. Once the chunks of one body add up past the
//! limit, the stream's next read fails; hyper hands that error to the
//! request's body, which the extractor answers with a 413 at once, and the
//! connection closes after the answer (the rest of the body cannot be told
//! from a next request).
//!
//! Anything it does not follow as hyper does (a head hyper refuses anyway,
//! a `Transfer-Encoding` other than chunked, an upgrade or `CONNECT`, a
//! line longer than hyper takes) ends the watch for the rest of the
//! connection: it can miss a refusal, never make one up.

use crate::http::body::MAX_BODY_BYTES;

/// Longer lines are more than hyper takes (its head limit is 64 KiB, a
/// chunk's extensions 16 KiB): such a connection is not followed.
const LONGEST_LINE: usize = 64 * 1024;

/// Where one connection's request bytes are, in the framing of HTTP/1.1.
#[derive(Default)]
pub struct Framing {
    state: State,
    /// The line being read (a head's, a chunk size's, a trailer's), up to
    /// its line feed.
    line: Vec<u8>,
    head: Head,
    /// What the chunks of the body being read announced so far.
    announced: u64,
}

/// What a request head said of its body.
#[derive(Default)]
struct Head {
    request_line: bool,
    http_11: bool,
    /// Whether the last `Transfer-Encoding` ends in `chunked`, when there
    /// is one (it then decides, as in hyper, whatever `Content-Length`
    /// says).
    chunked: Option<bool>,
    length: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Head,
    /// Bytes of a `Content-Length` body still to come.
    Length(u64),
    ChunkSize,
    /// Bytes of a chunk still to come.
    ChunkData(u64),
    /// Bytes of the CRLF after a chunk's data seen (0 or 1).
    ChunkEnd(u8),
    Trailers,
    /// The body announced more than the limit: every read fails from now on.
    Refused,
    /// Not followed any further.
    Lost,
}

impl Framing {
    /// Follows `bytes`, the next ones read from the client; answers whether
    /// the body being read has announced more than the limit (then the
    /// answer stays `true`).
    pub fn follow(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            match self.state {
                State::Refused | State::Lost => break,
                State::Length(left) | State::ChunkData(left) => {
                    let taken = usize::try_from(left).map_or(bytes.len(), |l| l.min(bytes.len()));
                    bytes = &bytes[taken..];
                    let left = left - taken as u64;
                    self.state = match (self.state, left) {
                        (State::Length(_), 0) => State::Head,
                        (State::Length(_), left) => State::Length(left),
                        (_, 0) => State::ChunkEnd(0),
                        (_, left) => State::ChunkData(left),
                    };
                }
                State::ChunkEnd(seen) => {
                    self.state = match (seen, bytes[0]) {
                        (0, b'\r') => State::ChunkEnd(1),
                        (1, b'\n') => State::ChunkSize,
                        _ => State::Lost,
                    };
                    bytes = &bytes[1..];
                }
                State::Head | State::ChunkSize | State::Trailers => {
                    let end = memchr::memchr(b'\n', bytes);
                    let (part, rest) = bytes.split_at(end.map_or(bytes.len(), |end| end + 1));
                    bytes = rest;
                    self.line.extend_from_slice(part);
                    if self.line.len() > LONGEST_LINE {
                        self.state = State::Lost;
                    } else if end.is_some() {
                        let line = std::mem::take(&mut self.line);
                        self.state = self.line_read(&line[..line.len() - 1]);
                    }
                }
            }
        }
        self.state == State::Refused
    }

    /// The state after a whole line (its line feed taken off).
    fn line_read(&mut self, line: &[u8]) -> State {
        match self.state {
            State::Head => self.head_line(line.strip_suffix(b"\r").unwrap_or(line)),
            State::ChunkSize => match line.strip_suffix(b"\r") {
                Some(line) => self.chunk_size(line),
                None => State::Lost,
            },
            // Trailer fields, up to an empty line.
            _ => match line {
                b"\r" => State::Head,
                [.., b'\r'] => State::Trailers,
                _ => State::Lost,
            },
        }
    }

    fn head_line(&mut self, line: &[u8]) -> State {
        let head = &mut self.head;
        if !head.request_line {
            // Empty lines before a request are skipped, as hyper does.
            if line.is_empty() {
                return State::Head;
            }
            let mut parts = line.splitn(3, |&b| b == b' ');
            let (Some(method), Some(_), Some(version)) = (parts.next(), parts.next(), parts.next())
            else {
                return State::Lost;
            };
            head.http_11 = match version {
                b"HTTP/1.1" => true,
                b"HTTP/1.0" => false,
                _ => return State::Lost,
            };
            head.request_line = true;
            return if method == b"CONNECT" {
                State::Lost
            } else {
                State::Head
            };
        }
        if line.is_empty() {
            return self.body();
        }
        let Some(colon) = memchr::memchr(b':', line).filter(|_| !line[0].is_ascii_whitespace())
        else {
            return State::Lost;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if !head.http_11 {
                return State::Lost;
            }
            let last = value.rsplit(|&b| b == b',').next().unwrap_or_default();
            head.chunked = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case(b"content-length") {
            let length = (!value.is_empty() && value.iter().all(u8::is_ascii_digit))
                .then(|| std::str::from_utf8(value).ok()?.parse::<u64>().ok())
                .flatten();
            match (length, head.length) {
                (Some(length), None) => head.length = Some(length),
                (Some(length), Some(before)) if length == before => {}
                _ => return State::Lost,
            }
        } else if name.eq_ignore_ascii_case(b"upgrade") {
            return State::Lost;
        }
        State::Head
    }

    /// The head has ended: where its body is.
    fn body(&mut self) -> State {
        let head = std::mem::take(&mut self.head);
        self.announced = 0;
        match (head.chunked, head.length) {
            (Some(true), _) => State::ChunkSize,
            (Some(false), _) => State::Lost,
            (None, Some(length)) if length > 0 => State::Length(length),
            (None, _) => State::Head,
        }
    }

    /// A chunk-size line (its CRLF taken off): hex digits, then perhaps
    /// spaces and extensions.
    fn chunk_size(&mut self, line: &[u8]) -> State {
        let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits == 0 || !matches!(line.get(digits), None | Some(b' ' | b'\t' | b';')) {
            return State::Lost;
        }
        let size = line[..digits].iter().try_fold(0u64, |size, digit| {
            let value = (*digit as char).to_digit(16).unwrap_or_default();
            size.checked_mul(16)?.checked_add(u64::from(value))
        });
        let Some(size) = size else {
            // Past 2^64 - 1: hyper refuses it too.
            return State::Refused;
        };
        if size == 0 {
            return State::Trailers;
        }
        self.announced = self.announced.saturating_add(size);
        if self.announced > MAX_BODY_BYTES as u64 {
            State::Refused
        } else {
            State::ChunkData(size)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNKED: &str =
        "POST /v1/projects HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";

    /// Whether `bytes` end refused, read all at once and a byte at a time.
    fn refused(bytes: &str) -> bool {
        let whole = Framing::default().follow(bytes.as_bytes());
        let mut framing = Framing::default();
        let bytewise = bytes
            .as_bytes()
            .chunks(1)
            .fold(false, |_, byte| framing.follow(byte));
        assert_eq!(whole, bytewise, "{bytes:?}");
        whole
    }

    fn state_after(bytes: &str) -> State {
        let mut framing = Framing::default();
        framing.follow(bytes.as_bytes());
        framing.state
    }

    #[test]
    fn chunks_announced_past_the_limit_are_refused() {
        let limit = MAX_BODY_BYTES;
        for size in [
            "FFFFFFFFFFFFFFFF".to_owned(),
            "10000000000000000".to_owned(),
            "200000".to_owned(),
            format!("{:x}", limit + 1),
            format!("{:X};ext=1", limit + 1),
            format!("{:x} ", limit + 1),
        ] {
            assert!(refused(&format!("{CHUNKED}{size}\r\n")), "{size}");
        }
        // Adding up: half, then half and one byte.
        let half = limit / 2;
        let body = format!("{half:x}\r\n{}\r\n{:x}\r\n", " ".repeat(half), half + 1);
        assert!(refused(&format!("{CHUNKED}{body}")));
        // Exactly the limit, read to its end, and the next request.
        let body = format!(
            "{half:x}\r\n{}\r\n{half:x}\r\n{}\r\n0\r\n\r\n",
            " ".repeat(half),
            " ".repeat(half)
        );
        assert!(!refused(&format!("{CHUNKED}{body}")));
        assert_eq!(state_after(&format!("{CHUNKED}{body}")), State::Head);
        // A refusal lasts.
        let mut framing = Framing::default();
        assert!(framing.follow(format!("{CHUNKED}200000\r\n").as_bytes()));
        assert!(framing.follow(b"more"));
    }

    #[test]
    fn requests_are_followed_one_after_another() {
        let get = "GET /v1/projects HTTP/1.1\r\nHost: x\r\n\r\n";
        let sized = "POST /v1/projects HTTP/1.1\r\ncontent-length: 7\r\n\r\n{\"a\":1}";
        let with_trailer = format!("{CHUNKED}3\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\n");
        // A body whose bytes look like a chunk-size line is a body.
        let lookalike = "POST /v1/projects HTTP/1.1\r\nContent-Length: 10\r\n\r\n200000\r\n\r\n";
        let later = format!("\r\n{get}{sized}{with_trailer}{lookalike}{get}");
        assert!(!refused(&later));
        assert_eq!(state_after(&later), State::Head);
        assert!(refused(&format!("{later}{CHUNKED}200000\r\n")));
        // Transfer-Encoding decides over Content-Length, in either order.
        let both =
            "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
        assert!(refused(&format!("{both}200000\r\n")));
        // Bare line feeds in a head, as hyper takes them.
        let bare = "POST / HTTP/1.1\nTransfer-Encoding: chunked\n\n";
        assert!(refused(&format!("{bare}200000\r\n")));
    }

    #[test]
    fn what_hyper_would_not_take_is_not_followed() {
        for bytes in [
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n200000\r\n",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n200000\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "POST / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n",
            "CONNECT x:443 HTTP/1.1\r\n\r\n",
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            "POST / HTTP/1.1\r\n folded: x\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nx\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naXY",
        ] {
            assert_eq!(state_after(bytes), State::Lost, "{bytes:?}");
            assert!(
                !refused(&format!("{bytes}{CHUNKED}200000\r\n")),
                "{bytes:?}"
            );
        }
        let long = format!("GET / HTTP/1.1\r\nX-Long: {}", "x".repeat(LONGEST_LINE));
        assert_eq!(state_after(&long), State::Lost);
    }
}
