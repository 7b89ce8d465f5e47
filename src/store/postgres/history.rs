//! A migration history recorded before PostgreSQL's versions were numbered
//! as SQLite's, renumbered to today's files before refinery reads it.
//!
//! SQLite's V4 (projects stored by organization) had no PostgreSQL
//! counterpart, so PostgreSQL numbered SQLite's V5-V8 as V4-V7, and both
//! had V9. PostgreSQL's files now carry SQLite's numbers, with a V4 that
//! changes nothing. A database migrated by an earlier binary records
//! `4 membership_roles` .. `7 stored_shapes` (and maybe 9), which refinery
//! would refuse (version 4 diverges, 8 is missing): the same changes are
//! moved up one version, with the checksums of today's files (refinery's
//! checksum covers the name, the version and the SQL, and only the version
//! changed), and version 4 is recorded as applied. The schema itself is
//! not touched. The earlier checksums are computed from today's V5-V8,
//! whose SQL is the earlier V4-V7's byte for byte: never edit those files.

use anyhow::Context as _;
use refinery::Migration;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio_postgres::Client;

/// The versions an earlier binary recorded for today's V5-V8, with their
/// names, from the top: each moves up one.
const MOVED: [(i32, &str); 4] = [
    (7, "stored_shapes"),
    (6, "writes"),
    (5, "directory"),
    (4, "membership_roles"),
];

/// Today's version that changes nothing on PostgreSQL (SQLite's V4).
const NO_OP: (i32, &str) = (4, "projects_by_organization");

/// Renumbers the history in one transaction when it has the earlier
/// layout: version 4 is `membership_roles` and the versions from 4 to 8
/// are exactly what an earlier binary recorded (names, and checksums of
/// the same SQL under the earlier versions). Any other history is left as
/// it is, for refinery to judge. True when it renumbered.
pub(super) async fn renumber(client: &mut Client, files: &[Migration]) -> anyhow::Result<bool> {
    let transaction = client
        .transaction()
        .await
        .context("cannot read the migration history")?;
    let exists: bool = transaction
        .query_one(
            "SELECT to_regclass('refinery_schema_history') IS NOT NULL",
            &[],
        )
        .await
        .context("cannot read the migration history")?
        .get(0);
    if !exists {
        return Ok(false);
    }
    let recorded: Vec<(i32, String, String)> = transaction
        .query(
            "SELECT version, name, checksum FROM refinery_schema_history
              WHERE version BETWEEN 4 AND 8 ORDER BY version",
            &[],
        )
        .await
        .context("cannot read the migration history")?
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    if !recorded
        .first()
        .is_some_and(|(version, name, _)| *version == 4 && name == "membership_roles")
    {
        return Ok(false);
    }
    let earlier: Vec<(i32, &str, u64)> = MOVED
        .iter()
        .rev()
        .map(|&(version, name)| {
            let file = file(files, version + 1, name)?;
            let sql = file.sql().unwrap_or_default();
            let checksum = Migration::unapplied(&format!("V{version}__{name}"), sql)?.checksum();
            Ok((version, name, checksum))
        })
        .collect::<anyhow::Result<_>>()?;
    let as_recorded = recorded.len() <= earlier.len()
        && recorded.iter().zip(&earlier).all(
            |((version, name, checksum), (old_version, old_name, old_checksum))| {
                version == old_version
                    && name == old_name
                    && checksum.parse::<u64>().ok() == Some(*old_checksum)
            },
        );
    if !as_recorded {
        tracing::warn!(
            "the migration history's version 4 is membership_roles, as before PostgreSQL's \
             versions were numbered as SQLite's, but the rest differs from what was recorded \
             then: not renumbered"
        );
        return Ok(false);
    }
    for (version, name) in MOVED {
        let file = file(files, version + 1, name)?;
        transaction
            .execute(
                "UPDATE refinery_schema_history SET version = $1, checksum = $2
                  WHERE version = $3",
                &[&file.version(), &file.checksum().to_string(), &version],
            )
            .await
            .context("cannot renumber the migration history")?;
    }
    let no_op = file(files, NO_OP.0, NO_OP.1)?;
    let now = OffsetDateTime::now_utc().format(&Rfc3339)?;
    transaction
        .execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
             VALUES ($1, $2, $3, $4)",
            &[
                &no_op.version(),
                &no_op.name(),
                &now,
                &no_op.checksum().to_string(),
            ],
        )
        .await
        .context("cannot renumber the migration history")?;
    transaction
        .commit()
        .await
        .context("cannot renumber the migration history")?;
    tracing::info!(
        moved = recorded.len(),
        "renumbered the migration history as SQLite's: versions 4-7 are now 5-8 \
         (same changes), version 4 (SQLite's projects by organization) recorded as applied"
    );
    Ok(true)
}

/// Today's embedded migration `version` named `name`.
fn file<'a>(files: &'a [Migration], version: i32, name: &str) -> anyhow::Result<&'a Migration> {
    files
        .iter()
        .find(|file| file.version() == version && file.name() == name)
        .with_context(|| format!("migration V{version}__{name} is not embedded"))
}
