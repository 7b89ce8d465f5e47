//! Pages of projects a PostgreSQL store has already received, so that the
//! database sends again only the bodies that changed.
//!
//! A first page of projects is 21 rows of about 1.7 KB each. Producing and
//! sending those 34 KB is most of PostgreSQL's work for the page, and
//! receiving them a good part of proxydeck's (bench/RESULTS.md). The page
//! statement therefore sends, with its arguments, the ids and row versions
//! (`xmin`, the transaction that wrote the row) of the rows this page
//! returned last time, and PostgreSQL answers `NULL` instead of the body of
//! every row whose version is still the one remembered. The rows, their
//! order and their versions always come from the statement itself, one
//! snapshot: a change made anywhere, by any instance or by hand, is seen at
//! once, as without the memory. Only an unchanged body is taken from here.
//!
//! Remembering costs copies and a cache insertion, which a page read once
//! (a client walking a long list) would pay for nothing: a page is read
//! the plain way the first time its key is seen, and remembered from the
//! second time on.
//!
//! A row version names one committed state of a row only while transaction
//! ids do not wrap around (about four billion transactions) and while the
//! server is the same. Pages are therefore forgotten after
//! [`REMEMBER_FOR`], and all of them whenever a shared connection is made
//! anew (the server may have been replaced by another whose transaction
//! ids restarted). Forgetting begins a new [`Era`]; a page recalled in one
//! era is used only if the statement that needed it ended in the same era,
//! since the statement may have gone out on the new connection.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use twox_hash::XxHash3_64;

use crate::store::ProjectsQuery;

/// How much body text is remembered, at most (least recently used pages go
/// first).
pub const CAPACITY_BYTES: u64 = 32 * 1024 * 1024;

/// How long a page is remembered after it was last received.
pub const REMEMBER_FOR: Duration = Duration::from_secs(300);

/// Keys seen lately, as hashes in a table of this many slots (a key's hash
/// picks its slot; a newer key takes the slot over).
const SEEN_SLOTS: usize = 1 << 16;

/// The keys of pages asked for lately: a page is worth remembering from
/// its key's second sighting on (a client walking a long list once would
/// pay the copies for nothing).
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
    pub fn seen_again(&self, key: &str) -> bool {
        let hash = XxHash3_64::oneshot(key.as_bytes());
        let slot = &self.slots[hash as usize % SEEN_SLOTS];
        slot.swap(hash, Ordering::Relaxed) == hash
    }
}

/// The key of a page of projects in a memory: everything that decides its
/// content. Debug quotes the texts: no two queries share a key by accident.
pub fn page_key(query: &ProjectsQuery) -> String {
    let page = &query.page;
    format!(
        "{:?}",
        (
            &query.organizations,
            &page.start_key,
            page.direction,
            page.limit
        )
    )
}

/// Appends `part` to `text`; answers where it is.
pub fn append(text: &mut String, part: &str) -> Range<usize> {
    let start = text.len();
    text.push_str(part);
    start..text.len()
}

/// The memory of one store.
pub struct PageMemory {
    pages: moka::sync::Cache<String, Arc<RememberedPage>>,
    seen: SeenKeys,
    /// How many times every page was forgotten.
    era: AtomicU64,
}

/// The time between two forgettings of every page: pages and answers of
/// one era came from the same connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Era(u64);

/// What the memory holds for a page's key.
pub enum Recall {
    /// The key was not seen lately: read the page the plain way.
    FirstSighting,
    /// The key was seen before: the rows remembered (none yet, maybe), to
    /// be used only while the memory is still in `era`.
    Again { page: Arc<RememberedPage>, era: Era },
}

/// A page's rows as last received: each row's id, version and body, all
/// in one text (two allocations a page, whatever its length).
#[derive(Default)]
pub struct RememberedPage {
    text: String,
    rows: Vec<RowSpans>,
    /// When the read that received it began.
    era: Era,
}

/// Where a row's id, version and body are in a page's text.
pub type RowSpans = [Range<usize>; 3];

impl RememberedPage {
    /// A page of rows whose parts are at `rows` in `text`.
    pub fn new(text: String, rows: Vec<RowSpans>) -> Self {
        Self {
            text,
            rows,
            era: Era::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Row `index`'s id and version.
    pub fn row(&self, index: usize) -> (&str, &str) {
        let [id, version, _] = &self.rows[index];
        (&self.text[id.clone()], &self.text[version.clone()])
    }

    pub fn body(&self, index: usize) -> &str {
        &self.text[self.rows[index][2].clone()]
    }

    /// The index of row `id` at `version`; `position` is where it was
    /// last time (rows seldom move, so that is looked at first).
    pub fn find(&self, position: usize, id: &str, version: &str) -> Option<usize> {
        let matches = |index: &usize| self.row(*index) == (id, version);
        Some(position)
            .filter(|p| *p < self.len())
            .filter(matches)
            .or_else(|| (0..self.len()).find(matches))
    }

    /// The memory a page takes (its weight against [`CAPACITY_BYTES`]).
    fn bytes(&self) -> usize {
        self.text.capacity() + self.rows.capacity() * std::mem::size_of::<RowSpans>() + 64
    }
}

impl Default for PageMemory {
    fn default() -> Self {
        Self::new(CAPACITY_BYTES, REMEMBER_FOR)
    }
}

impl PageMemory {
    pub fn new(capacity_bytes: u64, remember_for: Duration) -> Self {
        let pages = moka::sync::Cache::builder()
            .max_capacity(capacity_bytes)
            .weigher(|key: &String, page: &Arc<RememberedPage>| {
                u32::try_from(key.len() + page.bytes()).unwrap_or(u32::MAX)
            })
            .time_to_live(remember_for)
            .build();
        Self {
            pages,
            seen: SeenKeys::default(),
            era: AtomicU64::new(0),
        }
    }

    /// What is remembered under `key`; notes that it was asked for.
    pub fn recall(&self, key: &str) -> Recall {
        // The era first: a page forgotten after this read is then caught
        // by the era check after the statement.
        let era = self.era();
        // A page of an earlier era may still be found: one stored just
        // after the forgetting, by a read that began before it.
        if let Some(page) = self.pages.get(key).filter(|page| page.era == era) {
            return Recall::Again { page, era };
        }
        if self.seen.seen_again(key) {
            Recall::Again {
                page: Arc::default(),
                era,
            }
        } else {
            Recall::FirstSighting
        }
    }

    pub fn era(&self) -> Era {
        Era(self.era.load(Ordering::SeqCst))
    }

    /// Remembers `page`, received by a read that began in `era`.
    pub fn remember(&self, key: String, mut page: RememberedPage, era: Era) {
        page.era = era;
        self.pages.insert(key, Arc::new(page));
    }

    /// Forgets every page and begins a new era: the server may not be the
    /// one that sent them. Called before the new connection is used.
    pub fn forget_all(&self) {
        self.era.fetch_add(1, Ordering::SeqCst);
        self.pages.invalidate_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(rows: &[(&str, &str, &str)]) -> RememberedPage {
        let mut text = String::new();
        let spans = rows
            .iter()
            .map(|(id, version, body)| [id, version, body].map(|part| append(&mut text, part)))
            .collect();
        RememberedPage::new(text, spans)
    }

    #[test]
    fn a_row_is_found_by_id_and_version_wherever_it_moved() {
        let page = page(&[("a", "7", "{\"a\":1}"), ("b", "9", "{\"b\":1}")]);
        assert_eq!(page.find(0, "a", "7"), Some(0));
        assert_eq!(page.find(0, "b", "9"), Some(1), "moved");
        assert_eq!(page.find(5, "b", "9"), Some(1), "past the end");
        assert_eq!(page.find(1, "b", "10"), None, "another version");
        assert_eq!(page.find(0, "c", "7"), None, "another row");
        assert_eq!((page.row(1), page.body(1)), (("b", "9"), "{\"b\":1}"));
        assert_eq!(page.body(0), "{\"a\":1}");
    }

    /// The ids of the rows remembered under `key`; `None` on a first
    /// sighting.
    fn recalled(memory: &PageMemory, key: &str) -> Option<Vec<String>> {
        match memory.recall(key) {
            Recall::FirstSighting => None,
            Recall::Again { page, .. } => {
                Some((0..page.len()).map(|i| page.row(i).0.into()).collect())
            }
        }
    }

    fn one_row() -> RememberedPage {
        page(&[("a", "1", "{}")])
    }

    #[test]
    fn a_key_is_worth_remembering_from_its_second_sighting() {
        let memory = PageMemory::default();
        assert_eq!(recalled(&memory, "k"), None);
        assert_eq!(recalled(&memory, "k"), Some(vec![]));
        assert_eq!(recalled(&memory, "other"), None);
        assert_eq!(recalled(&memory, "k"), Some(vec![]));
    }

    #[test]
    fn pages_are_recalled_until_forgotten() {
        let memory = PageMemory::default();
        memory.remember("k".into(), one_row(), memory.era());
        assert_eq!(recalled(&memory, "k"), Some(vec!["a".into()]));
        let era = memory.era();
        memory.forget_all();
        assert_eq!(recalled(&memory, "k"), None);
        assert_ne!(memory.era(), era, "forgetting begins a new era");
        // Stored after the forgetting by a read of the era before: ignored.
        memory.remember("k".into(), one_row(), era);
        assert_eq!(recalled(&memory, "k"), Some(vec![]));
    }

    #[test]
    fn pages_past_their_time_are_not_recalled() {
        let memory = PageMemory::new(CAPACITY_BYTES, Duration::from_millis(50));
        memory.remember("k".into(), one_row(), memory.era());
        assert_eq!(recalled(&memory, "k"), Some(vec!["a".into()]));
        std::thread::sleep(Duration::from_millis(120));
        assert_eq!(recalled(&memory, "k"), None);
    }
}
