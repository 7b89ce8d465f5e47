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
//! [`PAGE_MEMORY_TTL`], and all of them whenever a shared connection is made
//! anew (the server may have been replaced by another whose transaction
//! ids restarted). Forgetting begins a new [`Era`]; a page recalled in one
//! era is used only if the statement that needed it ended in the same era,
//! since the statement may have gone out on the new connection.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::domain::pagination::PageRequest;
use crate::store::cache::{PAGE_MEMORY_BYTES, PAGE_MEMORY_TTL, SeenKeys};
use crate::store::error::StoreError;
use crate::store::listing::ListingKey;
use crate::store::page::{JsonPage, JsonPageWriter};
use crate::store::sql::db::{Db, Param};
use crate::store::sql::keyset::{StartKeys, keyset_select};

/// One organization's page of projects through `memory`: `None` when it is
/// to be read the plain way (a key seen for the first time, or a page
/// recalled before a reconnection).
pub(super) async fn read(
    db: &mut dyn Db,
    memory: &PageMemory,
    key: &ListingKey,
    organization: i64,
    page: &PageRequest,
) -> Option<Result<JsonPage, StoreError>> {
    let Recall::Again {
        page: previous,
        era,
    } = memory.recall(key)
    else {
        return None;
    };
    remembering_page(db, memory, key.clone(), &previous, era, organization, page)
        .await
        .transpose()
}

/// One organization's page of projects, as `listings::one_organization_page`
/// reads it, on a store that remembers the pages it received: the
/// statement also takes the ids and row versions of the rows this page had
/// last time (`previous`, recalled in `era`), and gives no body for a row
/// still at its remembered version. `None` when a connection was made anew
/// meanwhile: the answer may have come from another server than the
/// remembered rows, so neither is used.
async fn remembering_page(
    db: &mut dyn Db,
    memory: &PageMemory,
    key: ListingKey,
    previous: &RememberedPage,
    era: Era,
    organization: i64,
    page: &PageRequest,
) -> Result<Option<JsonPage>, StoreError> {
    let sql = keyset_select(
        "SELECT created_at, id, xmin::text, \
         CASE WHEN (?2::text[])[array_position(?1::text[], id)] = xmin::text THEN NULL ELSE body END \
         FROM projects WHERE deleted_at IS NULL AND organization_number = ?3",
        3,
        &["created_at", "id"],
        StartKeys::Selected {
            subquery: "SELECT created_at, id FROM projects WHERE id = ?4 AND organization_number = ?3",
            binds: 1,
        },
        page,
    );
    let (ids, versions): (Vec<&str>, Vec<&str>) =
        (0..previous.len()).map(|index| previous.row(index)).unzip();
    let mut params = vec![
        Param::TextList(&ids),
        Param::TextList(&versions),
        Param::Int(organization),
    ];
    params.extend(page.start_key.as_deref().map(Param::Text));
    params.push(Param::Int(page.fetch_count() as i64));

    /// Where a received row is: a remembered one (its index), or a new one
    /// (its id, version and body, in `fresh`).
    enum Source {
        Remembered(usize),
        Fresh(RowSpans),
    }
    let mut out = JsonPageWriter::default();
    let mut sources = Vec::with_capacity(page.fetch_count());
    let mut fresh = String::new();
    db.query(sql, &params, &mut |row| {
        let position = sources.len();
        let (id, version) = (row.str(1)?, row.str(2)?);
        let source = if row.is_null(3)? {
            let index = previous.find(position, id, version).ok_or_else(|| {
                StoreError::Internal(format!(
                    "PostgreSQL left out the body of project {id}, which was not remembered"
                ))
            })?;
            Source::Remembered(index)
        } else {
            if fresh.is_empty() {
                // Rows of a list are alike in size: room for the rest at once.
                fresh.reserve(2048 * (page.fetch_count() - position));
            }
            let id = append(&mut fresh, id);
            let version = append(&mut fresh, version);
            let start = fresh.len();
            row.append_text(3, &mut fresh)?;
            Source::Fresh([id, version, start..fresh.len()])
        };
        if out.count < page.limit as usize {
            let body = match &source {
                Source::Remembered(index) => previous.body(*index),
                Source::Fresh([_, _, body]) => &fresh[body.clone()],
            };
            out.push_ready(id, body.as_bytes());
            out.reserve_rest(page.limit as usize);
        } else {
            out.has_more = true;
        }
        sources.push(source);
        Ok(true)
    })
    .await?;
    if memory.era() != era {
        return Ok(None);
    }
    let from_memory = sources
        .iter()
        .filter(|source| matches!(source, Source::Remembered(_)))
        .count();
    crate::metrics::page_bodies(from_memory as u64, (sources.len() - from_memory) as u64);
    // Nothing to remember when every row is the one remembered at its
    // place: the memory holds this page already.
    let as_remembered = sources.len() == previous.len()
        && sources
            .iter()
            .enumerate()
            .all(|(position, source)| matches!(source, Source::Remembered(i) if *i == position));
    if !as_remembered {
        // The new rows are in `fresh` already: the remembered ones join them.
        let spans = sources
            .into_iter()
            .map(|source| match source {
                Source::Fresh(spans) => spans,
                Source::Remembered(index) => {
                    let (id, version) = previous.row(index);
                    [id, version, previous.body(index)].map(|part| append(&mut fresh, part))
                }
            })
            .collect();
        memory.remember(key, RememberedPage::new(fresh, spans), era);
    }
    Ok(Some(out.finish()))
}

/// Appends `part` to `text`; answers where it is.
fn append(text: &mut String, part: &str) -> Range<usize> {
    let start = text.len();
    text.push_str(part);
    start..text.len()
}

/// The memory of one store.
pub struct PageMemory {
    pages: moka::sync::Cache<ListingKey, Arc<RememberedPage>>,
    seen: SeenKeys,
    /// How many times every page was forgotten.
    era: AtomicU64,
}

/// The time between two forgettings of every page: pages and answers of
/// one era came from the same connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Era(u64);

/// What the memory holds for a page's key.
enum Recall {
    /// The key was not seen lately: read the page the plain way.
    FirstSighting,
    /// The key was seen before: the rows remembered (none yet, maybe), to
    /// be used only while the memory is still in `era`.
    Again { page: Arc<RememberedPage>, era: Era },
}

/// A page's rows as last received: each row's id, version and body, all
/// in one text (two allocations a page, whatever its length).
#[derive(Default)]
struct RememberedPage {
    text: String,
    rows: Vec<RowSpans>,
    /// When the read that received it began.
    era: Era,
}

/// Where a row's id, version and body are in a page's text.
type RowSpans = [Range<usize>; 3];

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
        Self::new(PAGE_MEMORY_BYTES, PAGE_MEMORY_TTL)
    }
}

impl PageMemory {
    pub fn new(capacity_bytes: u64, remember_for: Duration) -> Self {
        let pages = moka::sync::Cache::builder()
            .max_capacity(capacity_bytes)
            .weigher(|_: &ListingKey, page: &Arc<RememberedPage>| {
                u32::try_from(page.bytes() + 128).unwrap_or(u32::MAX)
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
    fn recall(&self, key: &ListingKey) -> Recall {
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

    fn era(&self) -> Era {
        Era(self.era.load(Ordering::SeqCst))
    }

    /// Remembers `page`, received by a read that began in `era`.
    fn remember(&self, key: ListingKey, mut page: RememberedPage, era: Era) {
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

    fn key(name: &str) -> ListingKey {
        ListingKey::example(name)
    }

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
    fn recalled(memory: &PageMemory, name: &str) -> Option<Vec<String>> {
        match memory.recall(&key(name)) {
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
        memory.remember(key("k"), one_row(), memory.era());
        assert_eq!(recalled(&memory, "k"), Some(vec!["a".into()]));
        let era = memory.era();
        memory.forget_all();
        assert_eq!(recalled(&memory, "k"), None);
        assert_ne!(memory.era(), era, "forgetting begins a new era");
        // Stored after the forgetting by a read of the era before: ignored.
        memory.remember(key("k"), one_row(), era);
        assert_eq!(recalled(&memory, "k"), Some(vec![]));
    }

    #[test]
    fn pages_past_their_time_are_not_recalled() {
        let memory = PageMemory::new(PAGE_MEMORY_BYTES, Duration::from_millis(50));
        memory.remember(key("k"), one_row(), memory.era());
        assert_eq!(recalled(&memory, "k"), Some(vec!["a".into()]));
        std::thread::sleep(Duration::from_millis(120));
        assert_eq!(recalled(&memory, "k"), None);
    }
}
