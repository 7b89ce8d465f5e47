//! The organizations a caller belongs to: what it may see.
//!
//! Stores give every organization a small integer number besides its UUID
//! (assigned once, never reused). A set knows both, so that a listing can
//! test "is this project's organization one of the caller's" with integers:
//! a binary search, or one bit of a [`Bitmap`] that a single statement
//! takes as a parameter, whatever the number of organizations.
//!
//! A user's set is stored whole with the user, as one text (its
//! [summary](OrganizationSet::summary), `number:id` entries joined by
//! commas): authenticating a caller in a thousand organizations reads one
//! row, and the set is made from that text without one allocation per
//! organization.

use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use twox_hash::XxHash3_64;

use super::access::Standing;

fn standing(member: bool) -> Standing {
    if member {
        Standing::Member(None)
    } else {
        Standing::Stranger
    }
}

/// Widest range of numbers a set gives a bitmap for: 16 KiB as a statement
/// parameter at most. A set spread wider (a few organizations among a
/// million) has no bitmap; its listings read organization by organization.
pub const MAX_BITMAP_BITS: i64 = 1 << 17;

/// An immutable set of organizations, cheap to clone (shared).
#[derive(Clone)]
pub struct OrganizationSet(Arc<Members>);

struct Members {
    /// The summary: `number:id` entries, by id, joined by commas.
    text: String,
    /// Each organization: where its id is in `text`, and its number; by id
    /// (`OrganizationSet::by_id`).
    by_id: OnceLock<Vec<(Range<u32>, i64)>>,
    /// The numbers, ascending.
    numbers: Vec<i64>,
    /// Of the numbers: the set's part of a listing's key.
    hash: u64,
    bitmap: Option<Bitmap>,
}

/// Numbers `base`, `base + 1`, ... as bits, least significant bit of each
/// byte first (PostgreSQL's `get_bit` order): bit `n - base` is set when
/// number `n` is in the set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bitmap {
    pub base: i64,
    pub bits: Vec<u8>,
}

impl Bitmap {
    /// The bitmap of `numbers`, in any order, repeats allowed.
    fn of_unsorted(numbers: &[i64]) -> Option<Self> {
        let first = *numbers.iter().min()?;
        let last = *numbers.iter().max()?;
        if last - first >= MAX_BITMAP_BITS {
            return None;
        }
        let mut bits = vec![0u8; ((last - first) / 8 + 1) as usize];
        for n in numbers {
            let bit = (n - first) as usize;
            bits[bit / 8] |= 1 << (bit % 8);
        }
        Some(Self { base: first, bits })
    }

    /// The numbers set, ascending.
    fn numbers(&self) -> Vec<i64> {
        let count = self.bits.iter().map(|b| b.count_ones() as usize).sum();
        let mut numbers = Vec::with_capacity(count);
        for (index, &byte) in self.bits.iter().enumerate() {
            let mut rest = byte;
            while rest != 0 {
                let bit = rest.trailing_zeros() as i64;
                numbers.push(self.base + index as i64 * 8 + bit);
                rest &= rest - 1;
            }
        }
        numbers
    }

    /// Whether number `n` is set: what a statement asks of each entry.
    pub fn contains(&self, n: i64) -> bool {
        let bit = n - self.base;
        bit >= 0
            && self
                .bits
                .get(bit as usize / 8)
                .is_some_and(|byte| byte >> (bit % 8) & 1 == 1)
    }

    /// The highest bit index a statement may test (`n - base` within
    /// `0..=last_bit`).
    pub fn last_bit(&self) -> i64 {
        self.bits.len() as i64 * 8 - 1
    }
}

/// Where each entry of a summary is (none in an empty one).
fn entries(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let ends = memchr::memchr_iter(b',', text.as_bytes()).chain([text.len()]);
    let mut start = 0;
    ends.take_while(move |_| !text.is_empty()).map(move |end| {
        let entry = start..end;
        start = end + 1;
        entry
    })
}

/// The number of a summary entry `number:id` (the id not empty).
fn entry_number(entry: &str) -> Option<i64> {
    let (number, id) = entry.split_once(':')?;
    if id.is_empty() {
        return None;
    }
    number.parse().ok()
}

impl OrganizationSet {
    /// The set of `members`: each organization's id and number.
    pub fn new(mut members: Vec<(String, i64)>) -> Self {
        members.sort_unstable();
        members.dedup();
        let mut text = String::with_capacity(members.len() * 48);
        for (i, (id, number)) in members.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&format!("{number}:{id}"));
        }
        Self::from_summary(text).expect("a summary written here reads back")
    }

    /// The set a [summary](Self::summary) describes; an error says what is
    /// wrong with a text that is not one.
    pub fn from_summary(text: String) -> Result<Self, String> {
        // One pass over the bytes: authenticating a caller in a thousand
        // organizations reads this whole text on every request the token
        // cache does not answer. The index by id is made only when asked.
        let mut numbers = Vec::with_capacity(text.len() / 40 + 1);
        for entry in entries(&text) {
            let entry = &text[entry];
            numbers.push(
                entry_number(entry)
                    .ok_or_else(|| format!("summary entry {entry:?} is not number:id"))?,
            );
        }
        let bitmap = Bitmap::of_unsorted(&numbers);
        match &bitmap {
            // Ascending and distinct, from the bits: no sort.
            Some(bitmap) => numbers = bitmap.numbers(),
            None => {
                numbers.sort_unstable();
                numbers.dedup();
            }
        }
        let mut hasher = XxHash3_64::default();
        numbers.hash(&mut hasher);
        Ok(Self(Arc::new(Members {
            bitmap,
            hash: hasher.finish(),
            text,
            by_id: OnceLock::new(),
            numbers,
        })))
    }

    /// Each organization: where its id is in the summary, and its number;
    /// by id, made at the first look-up by id.
    fn by_id(&self) -> &[(Range<u32>, i64)] {
        self.0.by_id.get_or_init(|| {
            let text = &self.0.text;
            let mut by_id = Vec::with_capacity(self.0.numbers.len());
            for Range { start, end } in entries(text) {
                let entry = &text[start..end];
                if let (Some(number), Some(colon)) = (entry_number(entry), entry.find(':')) {
                    by_id.push((((start + colon + 1) as u32)..(end as u32), number));
                }
            }
            let id_of = |range: &Range<u32>| self.id_in(range);
            if !by_id.is_sorted_by(|a, b| id_of(&a.0) <= id_of(&b.0)) {
                by_id.sort_by(|a, b| id_of(&a.0).cmp(id_of(&b.0)));
            }
            by_id.dedup_by(|a, b| id_of(&a.0) == id_of(&b.0));
            by_id
        })
    }

    /// The set as one text, to store with its user: `number:id` entries
    /// joined by commas (ids are UUIDs: neither a colon nor a comma).
    pub fn summary(&self) -> &str {
        &self.0.text
    }

    pub fn len(&self) -> usize {
        self.0.numbers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.numbers.is_empty()
    }

    /// The organizations' numbers, ascending.
    pub fn numbers(&self) -> &[i64] {
        &self.0.numbers
    }

    /// The id at `range` of the summary.
    fn id_in(&self, range: &Range<u32>) -> &str {
        &self.0.text[range.start as usize..range.end as usize]
    }

    /// The organizations' ids, ascending.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.by_id().iter().map(|(range, _)| self.id_in(range))
    }

    pub fn contains_number(&self, number: i64) -> bool {
        self.0.numbers.binary_search(&number).is_ok()
    }

    /// The number of organization `id`, when it is in the set.
    pub fn number_of(&self, id: &str) -> Option<i64> {
        let by_id = self.by_id();
        let at = by_id
            .binary_search_by(|(range, _)| self.id_in(range).cmp(id))
            .ok()?;
        Some(by_id[at].1)
    }

    pub fn contains_id(&self, id: &str) -> bool {
        self.number_of(id).is_some()
    }

    /// Where a caller in these organizations stands toward what the
    /// organization `id` owns (membership only: the set knows no role).
    pub fn standing_toward(&self, id: &str) -> Standing {
        standing(self.contains_id(id))
    }

    /// [`Self::standing_toward`] the organization numbered `number`.
    pub fn standing_toward_number(&self, number: i64) -> Standing {
        standing(self.contains_number(number))
    }

    /// The set of organization `id` alone, when it is in this set.
    pub fn only(&self, id: &str) -> Option<Self> {
        let number = self.number_of(id)?;
        Some(Self::new(vec![(id.to_owned(), number)]))
    }

    /// The set as one statement parameter, when its numbers are close
    /// enough together ([`MAX_BITMAP_BITS`]).
    pub fn bitmap(&self) -> Option<&Bitmap> {
        self.0.bitmap.as_ref()
    }
}

impl PartialEq for OrganizationSet {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.hash == other.0.hash && self.0.numbers == other.0.numbers)
    }
}

impl Eq for OrganizationSet {}

/// The hash computed once, when the set was made: a listing's key hashes a
/// caller in a thousand organizations as fast as a caller in one.
impl Hash for OrganizationSet {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}

impl std::fmt::Debug for OrganizationSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.ids()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(numbers: &[i64]) -> OrganizationSet {
        OrganizationSet::new(
            numbers
                .iter()
                .map(|n| (format!("org-{n:04}"), *n))
                .collect(),
        )
    }

    #[test]
    fn members_are_found_by_id_and_by_number() {
        let s = set(&[7, 3, 12]);
        assert_eq!(s.numbers(), &[3, 7, 12]);
        assert_eq!(s.number_of("org-0007"), Some(7));
        assert_eq!(s.number_of("org-0008"), None);
        assert_eq!(s.number_of("org-0000"), None);
        assert_eq!(s.number_of("org-9999"), None);
        assert!(s.contains_number(12) && !s.contains_number(11));
        assert_eq!(s.only("org-0003").unwrap().numbers(), &[3]);
        assert!(s.only("nope").is_none());
        assert_eq!(
            s.ids().collect::<Vec<_>>(),
            ["org-0003", "org-0007", "org-0012"]
        );
    }

    #[test]
    fn a_summary_reads_back_as_the_same_set_in_any_order() {
        let s = set(&[7, 3, 12]);
        assert_eq!(s.summary(), "3:org-0003,7:org-0007,12:org-0012");
        let shuffled =
            OrganizationSet::from_summary("12:org-0012,3:org-0003,7:org-0007".into()).unwrap();
        assert_eq!(shuffled, s);
        assert_eq!(shuffled.number_of("org-0012"), Some(12));
        assert_eq!(
            shuffled.ids().collect::<Vec<_>>(),
            s.ids().collect::<Vec<_>>()
        );
        let empty = OrganizationSet::from_summary(String::new()).unwrap();
        assert!(empty.is_empty() && empty.ids().next().is_none());
        for bad in ["x:org", "org", "1:a,,2:b", "1:a,b", "1:", ","] {
            assert!(OrganizationSet::from_summary(bad.into()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_bitmap_holds_exactly_the_numbers_in_get_bit_order() {
        let s = set(&[5, 6, 13, 21]);
        let bitmap = s.bitmap().unwrap();
        assert_eq!(bitmap.base, 5);
        // Bits 0, 1, 8 and 16: bytes 0b11, 0b1, 0b1.
        assert_eq!(bitmap.bits, vec![0b11, 0b1, 0b1]);
        assert_eq!(bitmap.last_bit(), 23);
        for n in -3..40 {
            assert_eq!(bitmap.contains(n), s.contains_number(n), "{n}");
        }
    }

    #[test]
    fn a_set_spread_too_wide_has_no_bitmap() {
        assert!(set(&[0, MAX_BITMAP_BITS - 1]).bitmap().is_some());
        assert!(set(&[0, MAX_BITMAP_BITS]).bitmap().is_none());
        assert!(set(&[]).bitmap().is_none());
    }

    #[test]
    fn equal_sets_are_equal_and_hash_alike_however_made() {
        let (a, b) = (set(&[1, 2, 3]), set(&[3, 2, 1]));
        assert_eq!(a, b);
        let hash = |s: &OrganizationSet| {
            let mut h = XxHash3_64::default();
            s.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&a), hash(&b));
        assert_ne!(a, set(&[1, 2]));
        assert_ne!(hash(&a), hash(&set(&[1, 2])));
    }
}
