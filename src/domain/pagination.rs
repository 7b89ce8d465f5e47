//! Keyset pagination (`decisions.md` section 2): a page is "the next `limit`
//! items strictly after the item named by `start_key`, in the chosen order".
//! Stores fetch one item more than asked to learn `has_more` without a count.

use std::cmp::Ordering;

use serde::Serialize;

pub const MAX_LIMIT: u32 = 100;
/// Default page size of `/v1/projects` and `/v1/api_tokens`.
pub const DEFAULT_LIMIT: u32 = 20;
/// Default page size of `/v1/projects/{id}/proxy-settings`.
pub const DEFAULT_PROXY_SETTINGS_LIMIT: u32 = 100;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Direction {
    #[serde(rename = "ASC")]
    Asc,
    /// Newest first: the interface's default.
    #[default]
    #[serde(rename = "DESC")]
    Desc,
}

impl Direction {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ASC" => Some(Self::Asc),
            "DESC" => Some(Self::Desc),
            _ => None,
        }
    }
}

/// What a caller asked of one list: where to start, which way, how many.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// The key of the last item of the previous page, as the caller sent it.
    pub start_key: Option<String>,
    pub direction: Direction,
    /// 1 to [`MAX_LIMIT`].
    pub limit: u32,
}

impl PageRequest {
    /// How many rows a store reads: one more than the page, to learn
    /// `has_more`.
    pub fn fetch_count(&self) -> usize {
        self.limit as usize + 1
    }
}

/// One page of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub has_more: bool,
}

impl<T> Page<T> {
    /// Builds the page from rows read with [`PageRequest::fetch_count`].
    pub fn from_overfetch(mut rows: Vec<T>, request: &PageRequest) -> Self {
        let limit = request.limit as usize;
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        Self {
            items: rows,
            has_more,
        }
    }
}

/// Merges lists, each already in the request's direction (one per
/// organization, say), into the first `request.fetch_count()` items
/// overall. `ascending` compares two items in ascending order.
pub fn merge_ordered<T>(
    mut lists: Vec<Vec<T>>,
    request: &PageRequest,
    ascending: impl Fn(&T, &T) -> Ordering,
) -> Vec<T> {
    if lists.len() == 1 {
        return lists.pop().unwrap_or_default();
    }
    let mut merged: Vec<T> = lists.into_iter().flatten().collect();
    match request.direction {
        Direction::Asc => merged.sort_by(&ascending),
        Direction::Desc => merged.sort_by(|a, b| ascending(b, a)),
    }
    merged.truncate(request.fetch_count());
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(limit: u32, direction: Direction) -> PageRequest {
        PageRequest {
            start_key: None,
            direction,
            limit,
        }
    }

    #[test]
    fn overfetch_decides_has_more() {
        let r = request(2, Direction::Desc);
        assert_eq!(
            Page::from_overfetch(vec![1, 2, 3], &r),
            Page {
                items: vec![1, 2],
                has_more: true
            }
        );
        assert_eq!(
            Page::from_overfetch(vec![1, 2], &r),
            Page {
                items: vec![1, 2],
                has_more: false
            }
        );
        assert!(!Page::<i32>::from_overfetch(vec![], &r).has_more);
    }

    #[test]
    fn merge_keeps_order_and_fetch_count() {
        let lists = vec![vec![9, 5, 1], vec![8, 7, 2]];
        assert_eq!(
            merge_ordered(lists, &request(2, Direction::Desc), Ord::cmp),
            vec![9, 8, 7]
        );
        let lists = vec![vec![1, 5, 9], vec![2, 7, 8]];
        assert_eq!(
            merge_ordered(lists, &request(3, Direction::Asc), Ord::cmp),
            vec![1, 2, 5, 7]
        );
    }

    #[test]
    fn direction_words_are_exact() {
        assert_eq!(Direction::parse("ASC"), Some(Direction::Asc));
        assert_eq!(Direction::parse("DESC"), Some(Direction::Desc));
        assert_eq!(Direction::parse("asc"), None);
        assert_eq!(Direction::default(), Direction::Desc);
    }
}
