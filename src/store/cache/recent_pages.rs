//! Pages answered again from memory while nothing committed to the
//! database: a store whose driver can tell, without a read transaction,
//! that no transaction committed since a moment ([`CommitMark`]; SQLite,
//! `sqlite/commit_watch.rs`) keeps the pages it read with the mark taken
//! just before the read. A page whose mark is still the database's is the
//! page a read would give now.
//!
//! Taken before the read, the mark is never newer than the page: a commit
//! during the read changes the mark, and the page is read again next time.
//! A write that completed before a request began moved the mark before the
//! request took its own, so the request never gets a page from before it.
//!
//! A mark never comes back: when it moves, every page kept is of no more
//! use, and all are let go at once. Under a steady stream of writes the
//! memory holds only what was read since the last commit, not 32 MiB of
//! pages that can never be answered again.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::store::driver::CommitMark;
use crate::store::error::StoreError;
use crate::store::listing::ListingKey;
use crate::store::page::JsonPage;

/// Where a database's commits are now; `None` when it cannot be told at
/// the moment (then pages are read).
pub type CommitMarks = Arc<dyn Fn() -> Option<CommitMark> + Send + Sync>;

/// The pages of one store.
pub struct RecentPages {
    pages: moka::sync::Cache<ListingKey, Arc<MarkedPage>>,
    seen: Arc<SeenKeys>,
    marks: CommitMarks,
    /// The newest mark seen ([`NO_MARK`] before the first): the pages kept
    /// are of it.
    current: AtomicI64,
}

/// What `current` holds before any mark was seen.
const NO_MARK: i64 = i64::MIN;

struct MarkedPage {
    mark: CommitMark,
    page: JsonPage,
}

/// What the memory holds for a key.
enum Recalled {
    /// The page, still current.
    Current(JsonPage),
    /// Not seen lately: read the page, and do not keep it.
    FirstSighting,
    /// Seen before: read the page and keep it.
    Again,
}

impl RecentPages {
    pub fn new(marks: CommitMarks) -> Self {
        let pages = moka::sync::Cache::builder()
            .max_capacity(MEMORY_BYTES)
            .weigher(|_: &ListingKey, marked: &Arc<MarkedPage>| {
                let bytes = marked.page.joined.len() + 256;
                u32::try_from(bytes).unwrap_or(u32::MAX)
            })
            .time_to_live(MEMORY_TTL)
            .build();
        Self {
            pages,
            seen: Arc::default(),
            marks,
            current: AtomicI64::new(NO_MARK),
        }
    }

    /// Lets every page go when the database moved past the mark they were
    /// kept with.
    fn moved_to(&self, now: CommitMark) {
        // Two requests with different marks may both let the pages go: no
        // harm, and a page is answered only when its own mark is `now`.
        if self.current.load(Ordering::Relaxed) != now.version() {
            let before = self.current.swap(now.version(), Ordering::Relaxed);
            if before != now.version() && before != NO_MARK {
                self.pages.invalidate_all();
            }
        }
    }

    /// The page kept under `key` if nothing committed since it was read
    /// (the database is at `now`); notes that `key` was asked for.
    fn recall(&self, key: &ListingKey, now: CommitMark) -> Recalled {
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
}

impl RecentPages {
    /// The page `key` names: the one kept, when nothing committed since it
    /// was read; else read by `next` (and kept from its key's second
    /// sighting on).
    pub fn read<F>(
        &self,
        key: ListingKey,
        next: impl FnOnce(ListingKey) -> F,
    ) -> BoxFuture<'static, Result<JsonPage, StoreError>>
    where
        F: Future<Output = Result<JsonPage, StoreError>> + Send + 'static,
    {
        // The mark first: a commit during the read then moves it, and the
        // page kept with it is never taken for a newer one.
        let Some(mark) = (self.marks)() else {
            return Box::pin(next(key));
        };
        self.moved_to(mark);
        match self.recall(&key, mark) {
            Recalled::Current(page) => {
                crate::metrics::page_bodies(page.count as u64, 0);
                Box::pin(std::future::ready(Ok(page)))
            }
            Recalled::FirstSighting => Box::pin(next(key)),
            Recalled::Again => {
                let (pages, read) = (self.pages.clone(), next(key.clone()));
                Box::pin(async move {
                    let page = read.await?;
                    crate::metrics::page_bodies(0, page.count as u64);
                    pages.insert(
                        key,
                        Arc::new(MarkedPage {
                            mark,
                            page: page.clone(),
                        }),
                    );
                    Ok(page)
                })
            }
        }
    }
}

/// How much the memory keeps, at most (least recently used pages go
/// first).
const MEMORY_BYTES: u64 = 32 * 1024 * 1024;

/// How long the memory keeps a page after it was last read.
const MEMORY_TTL: Duration = Duration::from_secs(300);

/// Keys seen lately, as digests in a table of this many slots (a key's
/// digest picks its slot; a newer key takes the slot over).
const SEEN_SLOTS: usize = 1 << 16;

/// The keys of pages asked for lately: a page is worth remembering from its
/// key's second sighting on (a client walking a long list once would pay
/// the copies for nothing).
struct SeenKeys {
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
    fn seen_again(&self, key: &ListingKey) -> bool {
        let digest = key.digest();
        let slot = &self.slots[digest as usize % SEEN_SLOTS];
        slot.swap(digest, Ordering::Relaxed) == digest
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::store::page::JsonPageWriter;

    /// A "store" that answers a page holding the number of reads so far.
    type Store = Arc<std::sync::atomic::AtomicUsize>;

    /// A memory whose database is at the mark the test sets.
    fn memory() -> (Arc<Mutex<CommitMark>>, RecentPages, Store) {
        let now = Arc::new(Mutex::new(CommitMark::new(1)));
        let marks: CommitMarks = {
            let now = now.clone();
            Arc::new(move || Some(*now.lock().unwrap()))
        };
        (now, RecentPages::new(marks), Store::default())
    }

    async fn read(memory: &RecentPages, store: &Store, user: &str) -> String {
        let read = |_| {
            let n = store.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let mut page = JsonPageWriter::default();
            page.push_ready(&n.to_string(), b"{}");
            std::future::ready(Ok(page.finish()))
        };
        let page = memory.read(ListingKey::example(user), read).await.unwrap();
        page.last_key.unwrap()
    }

    #[tokio::test]
    async fn a_page_is_answered_again_until_the_mark_moves() {
        let (now, memory, store) = memory();
        assert_eq!(
            read(&memory, &store, "u").await,
            "1",
            "first sighting: read"
        );
        assert_eq!(
            read(&memory, &store, "u").await,
            "2",
            "second: read and kept"
        );
        assert_eq!(
            read(&memory, &store, "u").await,
            "2",
            "kept while nothing commits"
        );
        assert_eq!(read(&memory, &store, "other").await, "3", "another key");
        *now.lock().unwrap() = CommitMark::new(2);
        assert_eq!(
            read(&memory, &store, "u").await,
            "4",
            "a commit: read again"
        );
        assert_eq!(read(&memory, &store, "u").await, "4");
        // The page of "other" was let go with the commit: read, then kept.
        assert_eq!(read(&memory, &store, "other").await, "5");
        assert_eq!(read(&memory, &store, "other").await, "5");
    }

    #[tokio::test]
    async fn a_commit_lets_every_page_go() {
        let (now, memory, store) = memory();
        for user in ["a", "b", "c"] {
            read(&memory, &store, user).await;
            read(&memory, &store, user).await;
        }
        memory.pages.run_pending_tasks();
        assert_eq!(memory.pages.entry_count(), 3);
        *now.lock().unwrap() = CommitMark::new(2);
        read(&memory, &store, "a").await;
        memory.pages.run_pending_tasks();
        assert_eq!(
            memory.pages.entry_count(),
            1,
            "only the page read after the commit"
        );
    }
}
