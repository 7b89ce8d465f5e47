//! The read path's caches, each a module of its own, used by the store's
//! reader (`store/engine/reader.rs`) as the store's dialect and `--caches` say
//! (`store::open`). Caches are accelerators, not the design: every listing
//! is a bounded keyset read that is fast on its own, and each cache can be
//! switched off without changing an answer. None of them ever answers a
//! page older than a write that completed before the request began on this
//! instance: each module says why. Each one earned its place on a
//! realistic scenario (docs/choices.md, "Caches").

pub mod recent_pages;
pub mod shared_reads;
