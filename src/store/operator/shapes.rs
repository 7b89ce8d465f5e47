//! Stored bodies follow the domain types (docs/choices.md, "Adding a
//! member to the project object").
//!
//! Projects and proxy-settings revisions are stored as the JSON their
//! listings show. Each kind's shape is derived from its schema in the
//! served document (`http/openapi.json`, which
//! `openapi::types::documented_members_are_the_ones_the_types_write` holds
//! to the types): the structure only (members, their types and nesting,
//! the schemas they refer to), not the words or the limits. When the
//! derived shape differs from the one recorded in `stored_shapes`, the
//! store reads each body of that kind through its domain type (whose serde
//! defaults fill what older bodies lack) and writes back those that
//! change, a batch per transaction, then records the new shape. Nobody
//! raises a number by hand; no SQL is written per field or per backend. A
//! body that changes gets a new version (its `ETag`), since its JSON did
//! change; the read path sees the rewrite as any write.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use crate::domain::project::Project;
use crate::domain::proxy_settings::ProxySettings;
use crate::store::engine::operation::operation;
use crate::store::error::StoreError;
use crate::store::sql::db::{Db, Param, query_all, query_opt, to_json, transaction};

/// The served document, whose schemas the stored shapes are derived from.
const DOCUMENT: &str = include_str!("../../http/openapi.json");

/// Bodies rewritten per transaction: a bounded lock, whatever the store.
const BATCH: i64 = 500;

/// A kind of stored body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    Project,
    ProxySettings,
}

/// A body's place in its table: a project's id, or a revision's project
/// and number (a project's second part is always 0).
type Key = (String, i64);

impl Body {
    pub const ALL: [Body; 2] = [Body::Project, Body::ProxySettings];

    /// Its name in `stored_shapes`.
    fn kind(self) -> &'static str {
        match self {
            Body::Project => "project",
            Body::ProxySettings => "proxy_settings",
        }
    }

    /// Its schema in the served document.
    fn schema(self) -> &'static str {
        match self {
            Body::Project => "Project",
            Body::ProxySettings => "ProxySettings",
        }
    }

    /// The shape of the bodies this code writes.
    pub fn shape(self) -> i64 {
        static SHAPES: LazyLock<[i64; 2]> = LazyLock::new(|| {
            let document: Value = serde_json::from_str(DOCUMENT).expect("the document is JSON");
            Body::ALL.map(|body| shape_of(&document, body.schema()))
        });
        SHAPES[self as usize]
    }

    /// The batch of bodies after `after` (from the first when `None`).
    async fn batch(
        self,
        db: &mut dyn Db,
        after: Option<&Key>,
    ) -> Result<Vec<(Key, String)>, StoreError> {
        let (sql, params) = match (self, after) {
            (Body::Project, None) => (
                "SELECT id, CAST(0 AS BIGINT), body FROM projects ORDER BY id",
                vec![],
            ),
            (Body::Project, Some((id, _))) => (
                "SELECT id, CAST(0 AS BIGINT), body FROM projects WHERE id > ?1 ORDER BY id",
                vec![Param::Text(id)],
            ),
            (Body::ProxySettings, None) => (
                "SELECT project_id, revision, body FROM proxy_settings
                  ORDER BY project_id, revision",
                vec![],
            ),
            (Body::ProxySettings, Some((project, revision))) => (
                "SELECT project_id, revision, body FROM proxy_settings
                  WHERE (project_id, revision) > (?1, ?2) ORDER BY project_id, revision",
                vec![Param::Text(project), Param::Int(*revision)],
            ),
        };
        query_all(db, &format!("{sql} LIMIT {BATCH}"), &params, |row| {
            Ok(((row.text(0)?, row.int(1)?), row.text(2)?))
        })
        .await
    }

    /// The body read through its domain type and written again.
    fn rewritten(self, key: &Key, body: &str) -> Result<String, StoreError> {
        let unreadable = |e: serde_json::Error| {
            StoreError::Internal(format!("{} {key:?} is stored unreadable: {e}", self.kind()))
        };
        match self {
            Body::Project => to_json(&serde_json::from_str::<Project>(body).map_err(unreadable)?),
            Body::ProxySettings => {
                to_json(&serde_json::from_str::<ProxySettings>(body).map_err(unreadable)?)
            }
        }
    }

    async fn save(
        self,
        db: &mut dyn Db,
        (id, revision): &Key,
        body: &str,
    ) -> Result<(), StoreError> {
        match self {
            Body::Project => {
                db.execute(
                    "UPDATE projects SET body = ?2, version = version + 1 WHERE id = ?1",
                    &[Param::Text(id), Param::Text(body)],
                )
                .await?
            }
            Body::ProxySettings => {
                db.execute(
                    "UPDATE proxy_settings SET body = ?3, version = version + 1
                      WHERE project_id = ?1 AND revision = ?2",
                    &[Param::Text(id), Param::Int(*revision), Param::Text(body)],
                )
                .await?
            }
        };
        Ok(())
    }
}

/// Rewrites the bodies of another shape than this code's; answers how many
/// changed. Safe to run again after a crash half-way, and by several
/// instances at once: a body already of the new shape is left as it is.
#[derive(Clone, Copy, Debug)]
pub struct UpgradeStoredBodies;

operation!(UpgradeStoredBodies => upgrade, OperatorWrite, "upgrade_stored_bodies" -> u64);

async fn upgrade(db: &mut dyn Db, _: &UpgradeStoredBodies) -> Result<u64, StoreError> {
    let mut changed = 0;
    for body in Body::ALL {
        changed += upgrade_kind(db, body).await?;
    }
    Ok(changed)
}

async fn upgrade_kind(db: &mut dyn Db, body: Body) -> Result<u64, StoreError> {
    let stored = query_opt(
        db,
        "SELECT version FROM stored_shapes WHERE kind = ?1",
        &[Param::Text(body.kind())],
        |row| row.int(0),
    )
    .await?;
    if stored == Some(body.shape()) {
        return Ok(0);
    }
    let mut changed = 0;
    let mut after: Option<Key> = None;
    loop {
        let (last, rewritten) = transaction!(db, begin_write, {
            let rows = body.batch(db, after.as_ref()).await?;
            let mut rewritten = 0;
            for (key, stored_body) in &rows {
                let upgraded = body.rewritten(key, stored_body)?;
                if &upgraded != stored_body {
                    body.save(db, key, &upgraded).await?;
                    rewritten += 1;
                }
            }
            Ok((rows.last().map(|(key, _)| key.clone()), rewritten))
        })?;
        changed += rewritten;
        match last {
            Some(key) => after = Some(key),
            None => break,
        }
    }
    transaction!(db, begin_write, {
        db.execute(
            "INSERT INTO stored_shapes (kind, version) VALUES (?1, ?2)
             ON CONFLICT (kind) DO UPDATE SET version = excluded.version",
            &[Param::Text(body.kind()), Param::Int(body.shape())],
        )
        .await
    })?;
    Ok(changed)
}

/// The shape of schema `name` of `document`: a digest of its structure
/// (members, types, items, references followed), words and limits left
/// out, so that only a change a stored body would show changes it.
fn shape_of(document: &Value, name: &str) -> i64 {
    let schemas = &document["components"]["schemas"];
    let structure = structure(schemas, &schemas[name], &mut Vec::new());
    let text = serde_json::to_string(&structure).expect("a value serialises");
    // The digest's bits as a signed number: what an INTEGER column keeps.
    twox_hash::XxHash3_64::oneshot(text.as_bytes()) as i64
}

/// The part of a schema that decides how its JSON is written: these
/// keywords only, references replaced by what they name (once per path).
fn structure(schemas: &Value, schema: &Value, seen: &mut Vec<String>) -> Value {
    const KEPT: [&str; 10] = [
        "type",
        "properties",
        "items",
        "additionalProperties",
        "required",
        "enum",
        "const",
        "oneOf",
        "anyOf",
        "allOf",
    ];
    match schema {
        Value::Object(members) => {
            if let Some(Value::String(reference)) = members.get("$ref") {
                let name = reference.rsplit('/').next().unwrap_or_default().to_owned();
                if seen.contains(&name) {
                    return Value::String(name);
                }
                seen.push(name.clone());
                let named = structure(schemas, &schemas[&name], seen);
                seen.pop();
                return named;
            }
            let mut kept = Map::new();
            for (key, value) in members {
                if KEPT.contains(&key.as_str()) {
                    let value = match (key.as_str(), value) {
                        // Members by name: each one's structure.
                        ("properties", Value::Object(properties)) => Value::Object(
                            properties
                                .iter()
                                .map(|(name, member)| {
                                    (name.clone(), structure(schemas, member, seen))
                                })
                                .collect(),
                        ),
                        _ => structure(schemas, value, seen),
                    };
                    kept.insert(key.clone(), value);
                }
            }
            Value::Object(kept)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| structure(schemas, item, seen))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(member: &Value) -> Value {
        serde_json::json!({"components": {"schemas": {
            "Thing": {"type": "object", "description": "A thing.",
                      "properties": {"name": member, "part": {"$ref": "#/components/schemas/Part"}}},
            "Part": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 9}}}
        }}})
    }

    #[test]
    fn a_shape_follows_the_structure_and_nothing_else() {
        let plain = shape_of(&document(&serde_json::json!({"type": "string"})), "Thing");
        let worded = shape_of(
            &document(
                &serde_json::json!({"type": "string", "description": "Its name.", "maxLength": 9}),
            ),
            "Thing",
        );
        assert_eq!(plain, worded, "words and limits do not change a shape");
        let retyped = shape_of(&document(&serde_json::json!({"type": "integer"})), "Thing");
        assert_ne!(plain, retyped, "a member's type does");
        let mut grown = document(&serde_json::json!({"type": "string"}));
        grown["components"]["schemas"]["Part"]["properties"]["colour"] =
            serde_json::json!({"type": "string"});
        assert_ne!(
            plain,
            shape_of(&grown, "Thing"),
            "a referred schema's member does"
        );
    }

    #[test]
    fn every_kind_has_a_shape_in_the_served_document() {
        let document: Value = serde_json::from_str(DOCUMENT).unwrap();
        for body in Body::ALL {
            assert!(
                document["components"]["schemas"][body.schema()]["properties"].is_object(),
                "{body:?}"
            );
        }
        assert_ne!(Body::Project.shape(), Body::ProxySettings.shape());
    }
}
