//! A page of a listing as the store answers it: the items' JSON texts,
//! joined, with what the envelope needs (`has_more`, the last key) and a
//! digest for the page's entity tag.

use bytes::Bytes;

/// One page of a listing whose items are stored as the JSON the listing
/// shows: their texts, in page order, joined by commas, ready to go
/// between `[` and `]` as they are (never parsed again, never rearranged).
/// Cloning it shares the text: a page kept in memory, or answering several
/// requests, is not copied for each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonPage {
    /// The items' JSON objects (UTF-8), separated by commas.
    pub joined: Bytes,
    /// XXH3-64 of `joined`: the items' part of the page's entity tag,
    /// computed once however often the page is answered.
    pub digest: u64,
    pub count: usize,
    /// The key of the last item (an id, or a revision number).
    pub last_key: Option<String>,
    pub has_more: bool,
}

impl Default for JsonPage {
    /// No items.
    fn default() -> Self {
        JsonPageWriter::default().finish()
    }
}

/// A [`JsonPage`] being written, item after item.
#[derive(Default)]
pub struct JsonPageWriter {
    joined: Vec<u8>,
    pub count: usize,
    last_key: Option<String>,
    pub has_more: bool,
}

impl JsonPageWriter {
    /// Appends an item: `key` writes its key (into a buffer reused from
    /// item to item), `item` its JSON.
    pub fn push<E>(
        &mut self,
        key: impl FnOnce(&mut String) -> Result<(), E>,
        item: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.count > 0 {
            self.joined.push(b',');
        }
        item(&mut self.joined)?;
        let last_key = self.last_key.get_or_insert_with(String::new);
        last_key.clear();
        key(last_key)?;
        self.count += 1;
        Ok(())
    }

    /// Appends an item whose key and JSON are at hand.
    pub fn push_ready(&mut self, key: &str, item: &[u8]) {
        self.push::<std::convert::Infallible>(
            |last_key| {
                last_key.push_str(key);
                Ok(())
            },
            |joined| {
                joined.extend_from_slice(item);
                Ok(())
            },
        )
        .unwrap_or_else(|never| match never {});
    }

    /// After a page's first item: items of a list are alike in size, so
    /// room for all `limit` at once rather than growing (and copying) the
    /// text item by item.
    pub fn reserve_rest(&mut self, limit: usize) {
        if self.count == 1 {
            let room = (self.joined.len() + 1) * limit.saturating_sub(1);
            self.joined.reserve(room);
        }
    }

    pub fn finish(mut self) -> JsonPage {
        // Room was made for a full page: a short one (the last of a list,
        // a filtered one) gives back what it did not use, since a page may
        // be kept in memory, weighed by its length.
        if self.joined.capacity() > self.joined.len() + self.joined.len() / 8 + 256 {
            self.joined.shrink_to_fit();
        }
        JsonPage {
            digest: twox_hash::XxHash3_64::oneshot(&self.joined),
            joined: Bytes::from(self.joined),
            count: self.count,
            last_key: self.last_key,
            has_more: self.has_more,
        }
    }
}
