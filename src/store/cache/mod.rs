//! The read path's caches, behind one seam.
//!
//! Caches are accelerators, not the design: every listing is a bounded
//! keyset read that is fast on its own, and each cache can be switched off
//! (`--caches`, [`Caches`]) without changing an answer. None of them ever
//! answers a page older than a write that completed before the request
//! began on this instance: each module says why.
//!
//! A listing read goes through the caches that are on, outermost first,
//! down to the store's own statements: each is a [`ReadCache`] that answers
//! a [`ListingKey`] itself or asks the next one ([`Reader`]). The key is
//! typed and hashed once per request. A cache is a module of its own and
//! one line in [`Caches::layers`]; PostgreSQL's page memory, which changes
//! the statement itself, lives with the PostgreSQL driver
//! (`store/postgres/page_memory.rs`), and the token cache with
//! authentication (`auth.rs`).

pub mod recent_pages;
pub mod shared_reads;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::store::error::StoreError;
use crate::store::listing::ListingKey;
use crate::store::page::JsonPage;
use recent_pages::{CommitMarks, RecentPages};
use shared_reads::SharedReads;

/// What answers a listing read: a cache, or the store's statements.
pub type Reader =
    Arc<dyn Fn(ListingKey) -> BoxFuture<'static, Result<JsonPage, StoreError>> + Send + Sync>;

/// A cache of the read path.
pub trait ReadCache: Send + Sync + 'static {
    /// The page `key` names: from this cache, or from `next`.
    fn read(
        &self,
        key: ListingKey,
        next: &Reader,
    ) -> BoxFuture<'static, Result<JsonPage, StoreError>>;
}

/// `store` behind `caches`, the first one outermost.
pub fn chain(caches: Vec<Arc<dyn ReadCache>>, store: Reader) -> Reader {
    caches.into_iter().rev().fold(store, |next, cache| {
        Arc::new(move |key| cache.read(key, &next))
    })
}

/// Which caches are on (`--caches`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caches {
    /// Authenticated tokens, for `--token-cache-ttl` (`auth.rs`).
    pub token: bool,
    /// Identical reads at the same time share one statement.
    pub shared_reads: bool,
    /// SQLite: pages answered again while nothing committed.
    pub recent_pages: bool,
    /// PostgreSQL: bodies of a page read again are not sent again.
    pub page_memory: bool,
}

/// The names `--caches` takes, in [`Caches`]' order.
pub const CACHE_NAMES: [&str; 4] = ["token", "shared-reads", "recent-pages", "page-memory"];

impl Caches {
    pub const ALL: Self = Self {
        token: true,
        shared_reads: true,
        recent_pages: true,
        page_memory: true,
    };
    pub const NONE: Self = Self {
        token: false,
        shared_reads: false,
        recent_pages: false,
        page_memory: false,
    };

    /// `all`, `none`, or a comma-separated list of [`CACHE_NAMES`]: those
    /// on, the others off.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "all" => return Ok(Self::ALL),
            "none" => return Ok(Self::NONE),
            _ => {}
        }
        let mut caches = Self::NONE;
        for name in text.split(',').map(str::trim) {
            let flag = match name {
                "token" => &mut caches.token,
                "shared-reads" => &mut caches.shared_reads,
                "recent-pages" => &mut caches.recent_pages,
                "page-memory" => &mut caches.page_memory,
                _ => {
                    return Err(format!(
                        "unknown cache {name:?}: write all, none, or a comma-separated list of {}",
                        CACHE_NAMES.join(", ")
                    ));
                }
            };
            *flag = true;
        }
        Ok(caches)
    }

    /// The store's caches that are on, outermost first, for a store whose
    /// commits can be watched with `commit_marks` (SQLite) or not, and
    /// whose reads wait `timeout` at most.
    pub(crate) fn layers(
        &self,
        commit_marks: Option<CommitMarks>,
        timeout: Duration,
    ) -> Vec<Arc<dyn ReadCache>> {
        let mut layers: Vec<Arc<dyn ReadCache>> = Vec::new();
        if let (true, Some(marks)) = (self.recent_pages, commit_marks) {
            layers.push(Arc::new(RecentPages::new(marks)));
        }
        if self.shared_reads {
            layers.push(Arc::new(SharedReads::new(timeout)));
        }
        layers
    }
}

impl std::fmt::Display for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = [
            self.token,
            self.shared_reads,
            self.recent_pages,
            self.page_memory,
        ];
        match on {
            [true, true, true, true] => f.write_str("all"),
            [false, false, false, false] => f.write_str("none"),
            _ => {
                let names: Vec<&str> = CACHE_NAMES
                    .iter()
                    .zip(on)
                    .filter_map(|(name, on)| on.then_some(*name))
                    .collect();
                f.write_str(&names.join(","))
            }
        }
    }
}

/// How much a page memory keeps, at most (least recently used pages go
/// first): SQLite's recent pages and PostgreSQL's page memory alike.
pub const PAGE_MEMORY_BYTES: u64 = 32 * 1024 * 1024;

/// How long a page memory keeps a page after it was last read.
pub const PAGE_MEMORY_TTL: Duration = Duration::from_secs(300);

/// Keys seen lately, as digests in a table of this many slots (a key's
/// digest picks its slot; a newer key takes the slot over).
const SEEN_SLOTS: usize = 1 << 16;

/// The keys of pages asked for lately: a page is worth remembering from its
/// key's second sighting on (a client walking a long list once would pay
/// the copies for nothing).
pub struct SeenKeys {
    slots: Box<[AtomicU64]>,
}

impl Default for SeenKeys {
    fn default() -> Self {
        Self {
            slots: (0..SEEN_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl SeenKeys {
    /// Notes `key`; answers whether it was seen lately.
    pub fn seen_again(&self, key: &ListingKey) -> bool {
        let digest = key.digest();
        let slot = &self.slots[digest as usize % SEEN_SLOTS];
        slot.swap(digest, Ordering::Relaxed) == digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_are_named_all_none_or_listed() {
        assert_eq!(Caches::parse("all"), Ok(Caches::ALL));
        assert_eq!(Caches::parse("none"), Ok(Caches::NONE));
        let some = Caches::parse("token, page-memory").unwrap();
        assert_eq!(
            some,
            Caches {
                token: true,
                page_memory: true,
                ..Caches::NONE
            }
        );
        assert_eq!(some.to_string(), "token,page-memory");
        assert_eq!(Caches::ALL.to_string(), "all");
        assert_eq!(Caches::NONE.to_string(), "none");
        let refused = Caches::parse("tokens").unwrap_err();
        assert!(
            refused.contains("\"tokens\"") && refused.contains("shared-reads"),
            "{refused}"
        );
        assert!(Caches::parse("").is_err());
    }
}
