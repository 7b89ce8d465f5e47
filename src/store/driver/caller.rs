//! Whose request the store's work is for. The HTTP layer runs each
//! authenticated request inside [`for_caller`]; a driver that reads from
//! copies of the database (PostgreSQL's replicas, `postgres/replicas.rs`)
//! keeps each caller's last write so that the caller's next reads see it.

use std::future::Future;
use std::sync::Arc;

tokio::task_local! {
    static CALLER: Arc<str>;
}

/// Runs `work` as the request of the user `user_id`.
pub async fn for_caller<F: Future>(user_id: Arc<str>, work: F) -> F::Output {
    CALLER.scope(user_id, work).await
}

/// The user whose request runs now, if any (not in a background task, an
/// operator's command, or work moved to a task of its own).
pub(crate) fn current() -> Option<Arc<str>> {
    CALLER.try_with(Arc::clone).ok()
}
