//! The operator's operations (`proxydeck admin ...`, `migrate`, the
//! store's opening): the directory's writes, import and export, the audit
//! log, and the rewrite of stored bodies of an older shape. Unbounded in
//! time, unlike a request's. Each command's operation is named in the
//! metrics for its command (`admin project delete`: `admin_project_delete`).

pub mod admin;
pub mod audit;
pub mod export;
pub mod health;
pub mod import;
pub mod shapes;
