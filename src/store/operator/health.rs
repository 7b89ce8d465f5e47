//! Whether the store answers: the readiness probe's question.

use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::sql::db::{Db, exists};

/// Succeeds when the store answers reads.
#[derive(Clone, Copy, Debug)]
pub struct Ping;

operation!(Ping => ping, FreshRead, "ping" -> ());

async fn ping(db: &mut dyn Db, _: &Ping) -> Result<(), StoreError> {
    exists(db, "SELECT 1", &[]).await.map(drop)
}
