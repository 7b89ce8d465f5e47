//! What authentication reads and writes: a token found by its digest with
//! its user's organizations, and the tokens' use (`last_used_at`), written
//! in batches.

use crate::domain::organization_set::OrganizationSet;
use crate::domain::token::TokenDigest;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::sql::db::{Db, Param, query_opt, transaction};
use crate::store::sql::keyset::timestamp_opt;
use crate::store::tokens::{TokenGrant, TokenUse};

/// The token whose digest is `digest`, with its user's organizations: one
/// row (one statement, no transaction), the organizations as the user's
/// summary of them, whatever their number.
/// The token whose SHA-256 digest is `digest`, revoked ones included.
#[derive(Clone, Debug)]
pub struct FindToken(pub TokenDigest);

operation!(FindToken => find_token, FreshRead, "find_token" -> Option<TokenGrant>);

async fn find_token(
    db: &mut dyn Db,
    FindToken(digest): &FindToken,
) -> Result<Option<TokenGrant>, StoreError> {
    query_opt(
        db,
        "SELECT t.id, t.user_id, t.expires_at, t.revoked_at IS NOT NULL, t.last_used_at,
                u.memberships
         FROM api_tokens t JOIN users u ON u.id = t.user_id
         WHERE t.digest = ?1",
        &[Param::Bytes(&digest.0)],
        |row| {
            let organizations = OrganizationSet::from_summary(row.text(5)?).map_err(|why| {
                StoreError::Internal(format!("user {}: {why}", row.str(1).unwrap_or("?")))
            })?;
            Ok(TokenGrant {
                token_id: row.text(0)?,
                user_id: row.text(1)?,
                organizations,
                expires_at: timestamp_opt(row, 2)?,
                revoked: row.boolean(3)?,
                last_used_at: timestamp_opt(row, 4)?,
            })
        },
    )
    .await
}

/// Moves `last_used_at` forward (never backwards) for each token.
#[derive(Clone, Debug)]
pub struct RecordTokenUses(pub Vec<TokenUse>);

operation!(RecordTokenUses => record_token_uses, Write, "record_token_uses" -> ());

async fn record_token_uses(
    db: &mut dyn Db,
    RecordTokenUses(uses): &RecordTokenUses,
) -> Result<(), StoreError> {
    // Rows are locked in one order, by token id, whatever order the uses
    // came in: instances flushing the same tokens at once then wait for
    // each other instead of deadlocking (PostgreSQL's 40P01).
    let mut ordered: Vec<&TokenUse> = uses.iter().collect();
    ordered.sort_by(|a, b| a.token_id.cmp(&b.token_id));
    transaction!(db, begin_write, {
        for used in ordered {
            // Never backwards: several instances may report the same token.
            db.execute(
                "UPDATE api_tokens SET last_used_at = ?2
                 WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)",
                &[
                    Param::Text(&used.token_id),
                    Param::Int(used.used_at.as_millis()),
                ],
            )
            .await?;
        }
        Ok(())
    })
}
