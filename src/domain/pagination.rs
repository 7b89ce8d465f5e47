//! Keyset pagination (`docs/decisions.md` section 2): a page is "the next `limit`
//! items strictly after the item named by `start_key`, in the chosen order".
//! Stores fetch one item more than asked to learn `has_more` without a count.

use serde::Serialize;

pub const MAX_LIMIT: u32 = 100;
/// Default page size of `/v1/projects` and `/v1/api_tokens`.
pub const DEFAULT_LIMIT: u32 = 20;
/// Default page size of `/v1/projects/{id}/proxy-settings`.
pub const DEFAULT_PROXY_SETTINGS_LIMIT: u32 = 100;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_words_are_exact() {
        assert_eq!(Direction::parse("ASC"), Some(Direction::Asc));
        assert_eq!(Direction::parse("DESC"), Some(Direction::Desc));
        assert_eq!(Direction::parse("asc"), None);
        assert_eq!(Direction::default(), Direction::Desc);
    }
}
