//! Pages of projects answered again from memory while nothing committed
//! to the database: a store whose driver can tell, without a read
//! transaction, that no transaction committed since a moment
//! ([`CommitMark`]; SQLite, `sqlite/commit_watch.rs`) keeps the pages it
//! read with the mark taken just before the read. A page whose mark is
//! still the database's is the page a read would give now.
//!
//! Taken before the read, the mark is never newer than the page: a commit
//! during the read changes the mark, and the page is read again next time.

use std::sync::Arc;

use super::page_memory::{CAPACITY_BYTES, REMEMBER_FOR, SeenKeys};
use crate::store::JsonPage;

/// The state of a database's commits at one moment: equal marks, no
/// commit in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitMark([u32; 12]);

impl CommitMark {
    pub fn new(words: [u32; 12]) -> Self {
        Self(words)
    }
}

/// The pages of one store.
pub struct RecentPages {
    pages: moka::sync::Cache<String, Arc<MarkedPage>>,
    seen: SeenKeys,
}

struct MarkedPage {
    mark: CommitMark,
    page: JsonPage,
}

/// What the memory holds for a query.
pub enum Recalled {
    /// The page, still current.
    Current(JsonPage),
    /// Not seen lately: read the page, and do not keep it.
    FirstSighting,
    /// Seen before: read the page and keep it.
    Again,
}

impl Default for RecentPages {
    fn default() -> Self {
        let pages = moka::sync::Cache::builder()
            .max_capacity(CAPACITY_BYTES)
            .weigher(|key: &String, marked: &Arc<MarkedPage>| {
                let bytes = key.len() + marked.page.joined.len() + 128;
                u32::try_from(bytes).unwrap_or(u32::MAX)
            })
            .time_to_live(REMEMBER_FOR)
            .build();
        Self {
            pages,
            seen: SeenKeys::default(),
        }
    }
}

impl RecentPages {
    /// The page kept under `key` if nothing committed since it was read
    /// (the database is at `now`); notes that `key` was asked for.
    pub fn recall(&self, key: &str, now: CommitMark) -> Recalled {
        if let Some(marked) = self.pages.get(key) {
            if marked.mark == now {
                return Recalled::Current(marked.page.clone());
            }
            return Recalled::Again;
        }
        if self.seen.seen_again(key) {
            Recalled::Again
        } else {
            Recalled::FirstSighting
        }
    }

    /// Keeps `page`, read after the database was at `mark`.
    pub fn remember(&self, key: String, mark: CommitMark, page: JsonPage) {
        self.pages.insert(key, Arc::new(MarkedPage { mark, page }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str) -> JsonPage {
        let mut page = crate::store::JsonPageWriter::default();
        page.push_ready("p1", text.as_bytes());
        page.finish()
    }

    #[test]
    fn a_page_is_current_until_the_mark_moves() {
        let pages = RecentPages::default();
        let (before, after) = (CommitMark::new([1; 12]), CommitMark::new([2; 12]));
        assert!(matches!(pages.recall("k", before), Recalled::FirstSighting));
        assert!(matches!(pages.recall("k", before), Recalled::Again));
        pages.remember("k".into(), before, page("{}"));
        assert!(matches!(pages.recall("k", before), Recalled::Current(p) if p == page("{}")));
        assert!(matches!(pages.recall("k", after), Recalled::Again));
        assert!(matches!(
            pages.recall("other", before),
            Recalled::FirstSighting
        ));
    }
}
