//! The operator's operations (`proxydeck admin ...`, `migrate`, the
//! store's opening): the directory's writes, import and export, the audit
//! log, and the rewrite of stored bodies of an older shape. Unbounded in
//! time, unlike a request's.

pub mod audit;
pub mod directory;
pub mod export;
pub mod health;
pub mod import;
pub mod shapes;
