//! What the store's SQL is written with: the interface every driver
//! implements ([`db::Db`]), what the dialects cannot share
//! ([`dialect::Dialect`]), and the keyset pages every listing reads.

pub mod db;
pub mod dialect;
pub mod keyset;
