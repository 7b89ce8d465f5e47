//! The store: one interface ([`Store`]) that every backend implements, the
//! queries and results it speaks in, and [`open`], which picks the backend
//! from the database URL.

pub mod cache;
pub mod outage;
mod postgres;
mod sql;
mod sqlite;
pub mod writes;

pub use self::sqlite::FILE_CHECK_INTERVAL;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::clock::Clock;
use crate::domain::FieldError;
use crate::domain::access::TokenState;
use crate::domain::api_token::{ApiToken, TokenRecord};
use crate::domain::directory::{
    Organization, OrganizationObject, OrganizationType, User, UserWithRoles,
};
use crate::domain::ids;
use crate::domain::import::{ImportBatch, ImportError, ObjectCounts};
use crate::domain::organization_set::OrganizationSet;
use crate::domain::pagination::PageRequest;
use crate::domain::time::Timestamp;
use crate::domain::token::{self, TokenDigest};
use crate::domain::url_password;

pub use cache::Caches;
pub use postgres::{PostgresSettings, SslMode};
pub use sql::SqlStore;
pub use sql::project_writes::ProjectRead;
pub use sql::proxy_settings_writes::SettingsChange;
pub use sql::token_writes::TokenRead;
use writes::{AuditQuery, AuditRecord, ObjectAnswer, WriteRequest};

/// Everything the service keeps, behind one interface. Methods that list
/// return one page; methods that write are all-or-nothing.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Succeeds when the store answers reads.
    async fn ping(&self) -> Result<(), StoreError>;

    /// The token whose SHA-256 digest is `digest`, revoked ones included.
    async fn find_token(&self, digest: TokenDigest) -> Result<Option<TokenGrant>, StoreError>;
    /// Moves `last_used_at` forward (never backwards) for each token.
    async fn record_token_uses(&self, uses: Vec<TokenUse>) -> Result<(), StoreError>;

    /// A page of a listing ([`Listing`]).
    async fn list(&self, listing: Listing) -> Result<JsonPage, StoreError>;

    /// The user as getMe answers it; `None` when there is no such user.
    async fn user_with_roles(&self, user_id: &str) -> Result<Option<UserWithRoles>, StoreError>;
    /// The organization `which` names, when `user_id` is one of its
    /// members; `None` otherwise, whether it exists or not.
    async fn member_organization(
        &self,
        user_id: &str,
        which: WhichOrganization,
    ) -> Result<Option<OrganizationObject>, StoreError>;
    /// A page of a user's organizations, each an organization object, by
    /// `created_at` then `id`. Read at once from the store (no cache):
    /// memberships change only by the operator's commands.
    async fn organizations_of(&self, query: OrganizationsQuery) -> Result<JsonPage, StoreError>;

    async fn create_organization(
        &self,
        organization: Organization,
    ) -> Result<Organization, StoreError>;
    async fn create_user(&self, user: User) -> Result<User, StoreError>;
    async fn create_token(&self, token: NewToken) -> Result<ApiToken, StoreError>;
    /// Revokes a token; revoking twice is not an error.
    async fn revoke_token(&self, token_id: &str) -> Result<(), StoreError>;
    /// Removes a project from every listing. Its id stays known, so a walk
    /// whose `start_key` names it goes on from where it stood.
    async fn delete_project(&self, project_id: &str) -> Result<(), StoreError>;
    /// getProject: one project the caller can see, with its version.
    async fn get_project(&self, read: ProjectRead) -> Result<ObjectAnswer, StoreError>;
    /// createProject: `project` is checked already and has its new id. With
    /// an idempotency key, the key's first answer may come instead.
    async fn create_project(
        &self,
        request: WriteRequest,
        project: crate::domain::project::Project,
    ) -> Result<ObjectAnswer, StoreError>;
    /// updateProject: sets `members` (checked against the operation's
    /// schema already; `null` puts a member back to its default).
    async fn update_project(
        &self,
        request: WriteRequest,
        project_id: String,
        members: serde_json::Map<String, serde_json::Value>,
    ) -> Result<ObjectAnswer, StoreError>;
    /// deleteProject, as [`Store::delete_project`] does, for a caller.
    async fn remove_project(
        &self,
        request: WriteRequest,
        project_id: String,
    ) -> Result<ObjectAnswer, StoreError>;
    /// getApiToken: one of the caller's tokens, not revoked, its hint in
    /// `token`.
    async fn get_api_token(&self, read: TokenRead) -> Result<ObjectAnswer, StoreError>;
    /// createApiToken: stores `token` (its digest and hint; the secret is
    /// the caller's to show) and answers it with its hint in `token`.
    async fn create_api_token(
        &self,
        request: WriteRequest,
        token: NewToken,
    ) -> Result<ObjectAnswer, StoreError>;
    /// deleteApiToken: revokes one of the caller's tokens.
    async fn delete_api_token(
        &self,
        request: WriteRequest,
        token_id: String,
    ) -> Result<ObjectAnswer, StoreError>;
    /// createProjectProxySettings: `settings` is checked already; its
    /// revision number and activity are decided here.
    async fn create_proxy_settings(
        &self,
        request: WriteRequest,
        project_id: String,
        settings: crate::domain::proxy_settings::ProxySettings,
    ) -> Result<ObjectAnswer, StoreError>;
    /// updateProjectProxySettings: a revision's description and activity.
    async fn update_proxy_settings(
        &self,
        request: WriteRequest,
        project_id: String,
        revision: u32,
        change: SettingsChange,
    ) -> Result<ObjectAnswer, StoreError>;
    /// The audit log, newest first.
    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditRecord>, StoreError>;

    /// Applies import records in one transaction: all of them, or none.
    async fn import(
        &self,
        records: mpsc::Receiver<ImportBatch>,
    ) -> Result<ObjectCounts, ImportError>;

    /// How many objects of each kind an export would write now.
    async fn count_objects(&self) -> Result<ObjectCounts, StoreError>;
    /// Sends the whole store, tokens excepted, as lines of the import
    /// format (without line breaks), from one snapshot: organizations,
    /// users, projects, proxy settings, each in creation order. Stops early,
    /// without error, when `lines` is closed.
    async fn export(&self, lines: mpsc::Sender<String>) -> Result<ObjectCounts, StoreError>;
    /// Every organization, in creation order.
    async fn list_organizations(&self) -> Result<Vec<Organization>, StoreError>;
    /// Every user with its organizations, in creation order.
    async fn list_users(&self) -> Result<Vec<User>, StoreError>;
    /// Every token of a user, revoked ones included, in creation order.
    async fn list_user_tokens(&self, user_id: &str) -> Result<Vec<TokenRecord>, StoreError>;

    /// How the store's connection pools are used at this moment, for the
    /// metrics: cheap, never waits. Empty when the backend cannot say.
    fn pool_use(&self) -> Vec<PoolUse> {
        Vec::new()
    }
}

/// How one pool of store connections is used at a moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolUse {
    /// Which pool: `reader` or `writer` on SQLite; `shared` or `exclusive`
    /// on PostgreSQL.
    pub pool: &'static str,
    /// Most connections the pool keeps.
    pub max_size: usize,
    pub idle: usize,
    pub in_use: usize,
    /// Requests waiting for a connection, when the pool can tell.
    pub waiting: Option<usize>,
}

/// How a store fails.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached or is not answering in time. The message
    /// is for the server's log only: it never holds SQL or secrets.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Refused without trying: the database is known to be down, and the
    /// outage is logged where it is tracked (`outage`), not per request.
    #[error("store unavailable: the database is down")]
    Down,
    /// Anything else that should not happen. Log only, like `Unavailable`.
    #[error("store fault: {0}")]
    Internal(String),
    /// `start_key` never named an item of the list as the caller sees it.
    #[error("start_key does not name an item of this list")]
    UnknownStartKey,
    #[error("no {kind} with id {id}")]
    NotFound { kind: &'static str, id: String },
    /// The write would break a uniqueness rule.
    #[error("{0}")]
    Conflict(String),
    /// The write names something that does not exist or breaks a rule.
    #[error("{0}")]
    Invalid(FieldError),
    /// The caller's token no longer authenticates anyone (found by a
    /// write, which reads its token in its own transaction).
    #[error("{}", .0.refusal())]
    TokenRefused(TokenState),
    /// The caller may see the object but not make this change.
    #[error("{0}")]
    Forbidden(String),
    /// `If-Match` does not match the object's version.
    #[error("the object's version does not match If-Match")]
    PreconditionFailed,
    /// The idempotency key was used with another body.
    #[error("the idempotency key was used with another request body")]
    IdempotencyKeyReused,
    /// The write met a concurrent one and should be tried once more (two
    /// requests with one idempotency key).
    #[error("the write met a concurrent one")]
    Retry,
}

/// A token as authentication needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenGrant {
    pub token_id: String,
    pub user_id: String,
    /// The user's organizations.
    pub organizations: OrganizationSet,
    pub expires_at: Option<Timestamp>,
    pub revoked: bool,
    pub last_used_at: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenUse {
    pub token_id: String,
    pub used_at: Timestamp,
}

/// A token to store. The secret itself is not here: only its digest and
/// hint.
#[derive(Clone, Debug)]
pub struct NewToken {
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub from_browser: bool,
    pub digest: TokenDigest,
    pub hint: String,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
}

impl NewToken {
    /// A fresh token for `user_id`: the record to store, and the secret,
    /// which is shown once to its owner and never stored.
    pub fn mint(user_id: String, name: String, expires_at: Option<Timestamp>) -> (Self, String) {
        let secret = token::generate();
        let token = Self {
            id: ids::new_id(),
            user_id,
            name,
            from_browser: false,
            digest: token::digest(&secret),
            hint: token::hint(&secret),
            created_at: Timestamp::now(),
            expires_at,
        };
        (token, secret)
    }
}

/// A read of one page of a listing: everything that decides its answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Listing {
    /// Projects of `organizations`, by `created_at` then `id`.
    Projects(ProjectsQuery),
    /// A user's tokens that are not revoked, by `created_at` then `id`; each
    /// item is an api_token object with its hint in `token`.
    ApiTokens(ApiTokensQuery),
    /// Revisions of a project visible to the caller, by `revision`;
    /// [`StoreError::NotFound`] when the project is unknown or invisible.
    ProxySettings(ProxySettingsQuery),
}

impl Listing {
    /// The store operation's name, as metrics know it.
    pub fn operation(&self) -> &'static str {
        match self {
            Self::Projects(_) => "list_projects",
            Self::ApiTokens(_) => "list_api_tokens",
            Self::ProxySettings(_) => "list_proxy_settings",
        }
    }
}

/// A [`Listing`] with its hash, computed once per request: the key every
/// cache of the read path knows the read by.
#[derive(Clone, Debug)]
pub struct ListingKey {
    listing: Listing,
    hash: u64,
}

impl ListingKey {
    pub fn new(listing: Listing) -> Self {
        use std::hash::{Hash, Hasher};
        let mut hasher = twox_hash::XxHash3_64::default();
        listing.hash(&mut hasher);
        Self {
            hash: hasher.finish(),
            listing,
        }
    }

    pub fn listing(&self) -> &Listing {
        &self.listing
    }

    /// A 64-bit digest of everything in the read.
    pub fn digest(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
impl ListingKey {
    /// A key of its own for each `name` (a user's first page of tokens),
    /// for tests of caches, which never look inside a key.
    pub(crate) fn example(name: &str) -> Self {
        Self::new(Listing::ApiTokens(ApiTokensQuery {
            user_id: name.into(),
            name: None,
            page: PageRequest {
                start_key: None,
                direction: Default::default(),
                limit: 20,
            },
        }))
    }
}

impl PartialEq for ListingKey {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.listing == other.listing
    }
}

impl Eq for ListingKey {}

impl std::hash::Hash for ListingKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProjectsQuery {
    /// The organizations whose projects make the list; already narrowed to
    /// those the caller belongs to.
    pub organizations: OrganizationSet,
    pub page: PageRequest,
}

/// Which of a user's organizations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WhichOrganization {
    /// The one with this id (a normalised organization id).
    Id(String),
    /// The oldest membership's: by the membership's age, then the
    /// organization's `created_at`, then its id.
    Oldest,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrganizationsQuery {
    pub user_id: String,
    /// Only organizations of this type.
    pub kind: Option<OrganizationType>,
    pub page: PageRequest,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ApiTokensQuery {
    pub user_id: String,
    /// Exact match on the token's name.
    pub name: Option<String>,
    pub page: PageRequest,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProxySettingsQuery {
    pub project_id: String,
    /// The caller's organizations: the project must belong to one of them.
    pub visible_to: OrganizationSet,
    pub page: PageRequest,
}

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

/// Knobs shared by the backends.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// SQLite: reader connections; PostgreSQL: all connections (split by
    /// `postgres::connection_split`).
    pub pool_size: u32,
    /// How long a query may wait for the store (a connection, a lock)
    /// before it fails as unavailable.
    pub timeout: Duration,
    /// Which caches of the read path are on.
    pub caches: Caches,
    /// Where the store's file checks read the time (tests move their own).
    pub clock: Clock,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            pool_size: 4,
            timeout: Duration::from_secs(2),
            caches: Caches::ALL,
            clock: Clock::system(),
        }
    }
}

/// Where the data lives, parsed from `--database`. The text may hold a
/// password: show it through [`url_password::masked`], as `Debug` does.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Self::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&url_password::masked(url))
                .finish(),
        }
    }
}

impl DatabaseUrl {
    pub fn parse(url: &str) -> Result<Self, String> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() || path.contains('?') {
                return Err(format!(
                    "database URL {:?}: write sqlite://PATH, such as sqlite://proxydeck.db or sqlite:///var/lib/proxydeck/data.db",
                    url_password::masked(url)
                ));
            }
            Ok(Self::Sqlite(PathBuf::from(path)))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // Bad settings (TLS ones included) are told at start-up, by name.
            PostgresSettings::from_url(url).map_err(|why| format!("database URL: {why}"))?;
            Ok(Self::Postgres(url.to_owned()))
        } else {
            Err(format!(
                "database URL must start with sqlite:// or postgres://, got {:?}",
                url.split("://").next().unwrap_or_default()
            ))
        }
    }
}

/// Opens the store `url` names, first applying the migrations it lacks,
/// then rewriting bodies of an older shape ([`sql::shapes`]).
pub async fn open(url: &DatabaseUrl, options: &StoreOptions) -> anyhow::Result<Arc<dyn Store>> {
    async fn upgraded<D: sql::Driver>(store: SqlStore<D>) -> anyhow::Result<Arc<dyn Store>> {
        store
            .upgrade_stored_bodies()
            .await
            .map_err(|e| anyhow::anyhow!("cannot rewrite the stored bodies: {e}"))?;
        Ok(Arc::new(store))
    }
    match url {
        DatabaseUrl::Sqlite(path) => {
            upgraded(sqlite::open(path.clone(), options.clone()).await?).await
        }
        DatabaseUrl::Postgres(url) => {
            upgraded(postgres::open(url.clone(), options.clone()).await?).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls() {
        assert_eq!(
            DatabaseUrl::parse("sqlite://proxydeck.db").unwrap(),
            DatabaseUrl::Sqlite("proxydeck.db".into())
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/data.db").unwrap(),
            DatabaseUrl::Sqlite("/var/data.db".into())
        );
        assert!(matches!(
            DatabaseUrl::parse("postgres://u@h/db").unwrap(),
            DatabaseUrl::Postgres(_)
        ));
        let secret = DatabaseUrl::parse("postgres://app:s3cret@db/proxydeck").unwrap();
        assert_eq!(
            format!("{secret:?}"),
            r#"Postgres("postgres://app:****@db/proxydeck")"#
        );
        for bad in [
            "sqlite://",
            "mysql://x",
            "proxydeck.db",
            "sqlite://a.db?mode=ro",
            "postgres://u@db/x?sslmode=verify",
            "postgres://u@db/x?sslmode=verify-full",
        ] {
            assert!(DatabaseUrl::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            DatabaseUrl::parse("postgres://u:s3cret@db/x?sslmode=nope").unwrap_err(),
            r#"database URL: sslmode="nope" is not one of disable, prefer, require, verify-ca, verify-full"#
        );
    }
}
