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

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::{PAGE_MEMORY_BYTES, PAGE_MEMORY_TTL, ReadCache, Reader, SeenKeys};
use crate::store::error::StoreError;
use crate::store::listing::ListingKey;
use crate::store::page::JsonPage;

/// The state of a database's commits at one moment: equal marks, no
/// commit in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitMark([u32; 12]);

impl CommitMark {
    pub fn new(words: [u32; 12]) -> Self {
        Self(words)
    }
}

/// Where a database's commits are now; `None` when it cannot be told at
/// the moment (then pages are read).
pub type CommitMarks = Arc<dyn Fn() -> Option<CommitMark> + Send + Sync>;

/// The pages of one store.
pub struct RecentPages {
    pages: moka::sync::Cache<ListingKey, Arc<MarkedPage>>,
    seen: Arc<SeenKeys>,
    marks: CommitMarks,
    /// The newest mark seen: the pages kept are of it.
    current: std::sync::Mutex<Option<CommitMark>>,
}

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
            .max_capacity(PAGE_MEMORY_BYTES)
            .weigher(|_: &ListingKey, marked: &Arc<MarkedPage>| {
                let bytes = marked.page.joined.len() + 256;
                u32::try_from(bytes).unwrap_or(u32::MAX)
            })
            .time_to_live(PAGE_MEMORY_TTL)
            .build();
        Self {
            pages,
            seen: Arc::default(),
            marks,
            current: std::sync::Mutex::new(None),
        }
    }

    /// Lets every page go when the database moved past the mark they were
    /// kept with.
    fn moved_to(&self, now: CommitMark) {
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *current != Some(now) {
            if current.is_some() {
                self.pages.invalidate_all();
            }
            *current = Some(now);
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

impl ReadCache for RecentPages {
    fn read(
        &self,
        key: ListingKey,
        next: &Reader,
    ) -> BoxFuture<'static, Result<JsonPage, StoreError>> {
        // The mark first: a commit during the read then moves it, and the
        // page kept with it is never taken for a newer one.
        let Some(mark) = (self.marks)() else {
            return next(key);
        };
        self.moved_to(mark);
        match self.recall(&key, mark) {
            Recalled::Current(page) => {
                crate::metrics::page_bodies(page.count as u64, 0);
                Box::pin(std::future::ready(Ok(page)))
            }
            Recalled::FirstSighting => next(key),
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::store::page::JsonPageWriter;

    /// A memory whose database is at the mark the test sets, over a
    /// "store" that answers a page holding the number of reads so far.
    fn memory() -> (Arc<Mutex<CommitMark>>, RecentPages, Reader) {
        let now = Arc::new(Mutex::new(CommitMark::new([1; 12])));
        let marks: CommitMarks = {
            let now = now.clone();
            Arc::new(move || Some(*now.lock().unwrap()))
        };
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let store: Reader = Arc::new(move |_| {
            let n = reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let mut page = JsonPageWriter::default();
            page.push_ready(&n.to_string(), b"{}");
            Box::pin(std::future::ready(Ok(page.finish())))
        });
        (now, RecentPages::new(marks), store)
    }

    async fn read(memory: &RecentPages, store: &Reader, user: &str) -> String {
        let page = memory.read(ListingKey::example(user), store).await.unwrap();
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
        *now.lock().unwrap() = CommitMark::new([2; 12]);
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
        *now.lock().unwrap() = CommitMark::new([2; 12]);
        read(&memory, &store, "a").await;
        memory.pages.run_pending_tasks();
        assert_eq!(
            memory.pages.entry_count(),
            1,
            "only the page read after the commit"
        );
    }
}
