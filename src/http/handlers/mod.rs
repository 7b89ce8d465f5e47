//! The API, by resource: each file holds one resource's operations and
//! its `routes()` (docs/architecture.md, "How to add a listing").

pub mod api_tokens;
pub mod changes;
pub mod domains;
pub mod edges;
pub mod invitations;
pub mod members;
pub mod organizations;
pub mod projects;
pub mod proxy_settings;
pub mod rollouts;
pub mod users;
