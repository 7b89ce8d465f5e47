//! The operations the API's requests run, by resource, in the SQL both
//! dialects share: the listings' pages and each resource's reads and
//! writes (each named in the metrics for the `operationId` it serves),
//! with what every write brings (`write_request.rs`) and the steps every
//! write takes (`write_steps.rs`: who may write, `If-Match`, idempotency,
//! the audit). The operator's operations are in `operator/`.

pub mod api_tokens;
pub mod auth;
mod by_name;
pub mod changes;
pub mod domains;
pub mod edges;
pub mod invitations;
pub mod members;
pub mod memberships;
pub mod organizations;
pub mod projects;
pub mod proxy_settings;
mod readable;
pub(crate) mod rollout_rows;
pub mod rollouts;
pub mod users;
pub mod write_request;
pub mod write_steps;

use crate::store::error::StoreError;
use crate::store::listing::{Listing, ListingKey};
use crate::store::page::JsonPage;
use crate::store::sql::db::Db;
use crate::store::sql::dialect::Dialect;

/// A page of any listing: the end of the read path.
pub(crate) async fn read_page(
    db: &mut dyn Db,
    dialect: Dialect,
    key: &ListingKey,
) -> Result<JsonPage, StoreError> {
    match key.listing() {
        Listing::Projects(query) => projects::page(db, dialect, query).await,
        Listing::ApiTokens(query) => api_tokens::page(db, query).await,
        Listing::ProxySettings(query) => proxy_settings::page(db, query).await,
        Listing::Organizations(query) => memberships::page(db, query).await,
        Listing::Members(query) => members::page(db, query).await,
    }
}
