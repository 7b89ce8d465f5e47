//! The schema migrations of both dialects: the same change has the same
//! version, and the same name, in migrations/sqlite and migrations/postgres.

use std::path::Path;

use refinery::Migration;

/// The migrations of `dialect` (`sqlite`, `postgres`), read from their
/// folder as refinery embeds them (version, name, checksum), by version.
pub fn files(dialect: &str) -> Vec<Migration> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(dialect);
    let mut files: Vec<Migration> = std::fs::read_dir(&folder)
        .expect("the migrations folder")
        .map(|entry| {
            let path = entry.expect("a folder entry").path();
            assert_eq!(path.extension(), Some("sql".as_ref()), "{}", path.display());
            let stem = path.file_stem().and_then(|stem| stem.to_str()).unwrap();
            let sql = std::fs::read_to_string(&path).expect("the migration reads");
            Migration::unapplied(stem, &sql).expect("a refinery migration name")
        })
        .collect();
    files.sort();
    files
}

/// Versions and names, by version.
fn numbering(dialect: &str) -> Vec<(i32, String)> {
    files(dialect)
        .iter()
        .map(|file| (file.version(), file.name().to_owned()))
        .collect()
}

#[test]
fn both_dialects_give_each_migration_the_same_version_and_name() {
    let sqlite = numbering("sqlite");
    assert_eq!(numbering("postgres"), sqlite);
    let versions: Vec<i32> = sqlite.iter().map(|(version, _)| *version).collect();
    let count = versions.len() as i32;
    assert_eq!(
        versions,
        (1..=count).collect::<Vec<_>>(),
        "no version skipped"
    );
}
