//! Conditional requests: every listing carries an `ETag` made from its
//! body, and a request whose `If-None-Match` holds that tag is answered
//! 304 Not Modified, without a body. A dashboard that polls a listing
//! then receives a few headers instead of the page, and nothing is
//! compressed for it.
//!
//! The tag is weak (`W/"…"`): it names the JSON content, while the
//! compression layer may send that content in several encodings. It is
//! XXH3-64 of the body's bytes (twox-hash, which picks AVX2 at run time
//! where the CPU has it: about a microsecond for a full page); weak
//! comparison (RFC 9110, section 8.8.3.2) is what
//! `If-None-Match` uses anyway. A page of stored items is tagged by its
//! envelope and the XXH3-64 of its items, computed once when the page is
//! read: a page answered again from memory is not hashed again.

use std::hash::Hasher as _;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::header::{CACHE_CONTROL, ETAG, IF_NONE_MATCH, VARY};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use twox_hash::XxHash3_64;

/// The weak entity tag of a body made of `chunks`, in order.
pub(super) fn entity_tag(chunks: &[&[u8]]) -> HeaderValue {
    let mut hasher = XxHash3_64::new();
    for chunk in chunks {
        hasher.write(chunk);
    }
    let tag = format!("W/\"{:016x}\"", hasher.finish());
    HeaderValue::from_maybe_shared(Bytes::from(tag)).expect("hex digits are a valid header value")
}

/// The strong entity tag of one object's JSON `body`. Strong, unlike a
/// listing's: an object's version is its exact JSON (a few hundred bytes,
/// sent uncompressed; when compressed, `Vary` and the encoding tell the
/// copies apart to caches).
pub(crate) fn content_tag(body: &[u8]) -> HeaderValue {
    let tag = format!("\"{:016x}\"", XxHash3_64::oneshot(body));
    HeaderValue::from_maybe_shared(Bytes::from(tag)).expect("hex digits are a valid header value")
}

/// Turns a 200 whose `ETag` the caller already holds into a 304. Runs
/// inside the compression layer, so a 304 is never compressed.
pub(super) async fn answer_not_modified(request: Request, next: Next) -> Response {
    // A write's answer is never replaced: it reports what was done.
    if !matches!(request.method(), &Method::GET | &Method::HEAD) {
        return next.run(request).await;
    }
    // Almost always empty, and then nothing is allocated.
    let held: Vec<HeaderValue> = request
        .headers()
        .get_all(IF_NONE_MATCH)
        .iter()
        .cloned()
        .collect();
    let response = next.run(request).await;
    if held.is_empty() || response.status() != StatusCode::OK {
        return response;
    }
    let Some(current) = response.headers().get(ETAG) else {
        return response;
    };
    if !held
        .iter()
        .any(|list| list_matches(list.as_bytes(), current.as_bytes()))
    {
        return response;
    }
    let mut not_modified = Response::new(Body::empty());
    *not_modified.status_mut() = StatusCode::NOT_MODIFIED;
    // RFC 9110, section 15.4.5: the headers a 200 would have carried that
    // describe caching.
    for name in [ETAG, CACHE_CONTROL, VARY] {
        for value in response.headers().get_all(&name) {
            not_modified.headers_mut().append(&name, value.clone());
        }
    }
    not_modified
}

/// Whether an `If-None-Match` value (`*`, or tags separated by commas)
/// matches `current` by weak comparison. Our tags never hold a comma, so a
/// tag of someone else's that does cannot match by being split.
fn list_matches(list: &[u8], current: &[u8]) -> bool {
    let current = opaque(current);
    list.split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .any(|tag| tag == b"*" || opaque(tag) == current)
}

/// A tag without its weakness mark.
fn opaque(tag: &[u8]) -> &[u8] {
    tag.strip_prefix(b"W/").unwrap_or(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_weak_and_follow_the_bytes_not_the_chunking() {
        let whole = entity_tag(&[b"{\"data\":[1,2]}"]);
        assert_eq!(whole, entity_tag(&[b"{\"data\":[", b"1,2", b"]}"]));
        assert_ne!(whole, entity_tag(&[b"{\"data\":[1,3]}"]));
        let text = whole.to_str().unwrap();
        assert!(
            text.starts_with("W/\"") && text.ends_with('"') && text.len() == 20,
            "{text}"
        );
    }

    /// Tags are the standard XXH3-64 (seed 0), whichever vector unit
    /// computed them: a tag a client holds stays good across releases and
    /// machines. References from the `xxhash` Python package.
    #[test]
    fn tags_are_standard_xxh3() {
        let large: Vec<u8> = (0..34_249u32).map(|i| ((i * 31 + 7) % 251) as u8).collect();
        for (chunks, reference) in [
            (vec![&b""[..]], "2d06800538d394c2"),
            (vec![&b"{\"data\":[1,2]}"[..]], "4b8558addab7948c"),
            (vec![&large[..1000], &large[1000..]], "f42f15c552678f11"),
        ] {
            assert_eq!(
                entity_tag(&chunks).to_str().unwrap(),
                format!("W/\"{reference}\"")
            );
        }
    }

    #[test]
    fn if_none_match_uses_weak_comparison() {
        let current = br#"W/"00ff""#;
        for matching in [
            &br#"W/"00ff""#[..],
            br#""00ff""#,
            b"*",
            br#""aa", W/"00ff""#,
            br#"W/"aa",W/"00ff" , "bb""#,
        ] {
            assert!(
                list_matches(matching, current),
                "{}",
                String::from_utf8_lossy(matching)
            );
        }
        for other in [
            &br#"W/"00fe""#[..],
            br#""00FF""#,
            b"",
            br#"W/"00ff"x"#,
            b"00ff",
        ] {
            assert!(
                !list_matches(other, current),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }
}
