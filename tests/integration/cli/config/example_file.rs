//! The example configuration file names every setting at its default.

use super::*;

fn example_file() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/proxydeck.toml"
    ))
}

/// `examples/proxydeck.toml` shows every setting at its default: as it
/// is, `config check` passes it with every value a default; with every
/// setting uncommented, it passes too, with the same values.
#[test]
fn the_example_file_names_every_setting_at_its_default() {
    let sandbox = Sandbox::new();
    let example = std::fs::read_to_string(example_file()).expect("the example file");
    let as_is = check_json(
        &sandbox,
        &["--config", &example_file().display().to_string()],
        &[],
    );
    let uncommented: String = example
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(setting) if is_setting(setting) && !stays_commented(setting) => {
                format!("{setting}\n")
            }
            _ => format!("{line}\n"),
        })
        .collect();
    let file = write_file(&sandbox, "uncommented.toml", &uncommented);
    let all_set = check_json(&sandbox, &["--config", &file.display().to_string()], &[]);
    let settings = as_is["settings"].as_object().unwrap();
    assert_eq!(settings.len(), 48, "{as_is}");
    for (name, setting) in settings {
        assert!(
            example.contains(&format!("\n# {name} = ")),
            "{name} is not in the example file"
        );
        let from_file = &all_set["settings"][name];
        if stays_commented(&format!("{name} = ")) {
            assert_eq!(from_file["source"], json!("unset"), "{name}: {all_set}");
            continue;
        }
        assert_eq!(from_file["source"], json!("file"), "{name}: {all_set}");
        match setting["source"].as_str().unwrap() {
            "default" => assert_eq!(from_file["value"], setting["value"], "{name}"),
            "unset" => {}
            other => panic!("{name} comes from {other} in the example file as it is"),
        }
    }
}

/// Settings the test leaves commented out: password files need a file
/// that exists and (the database's) a postgres:// URL; the direct URL
/// needs a pooler in front of a postgres:// database, replicas a
/// postgres:// database, and the replicas' Redis replicas.
fn stays_commented(setting: &str) -> bool {
    setting.contains("-password-file = ")
        || [
            "database-direct-url = ",
            "database-replica = ",
            "replica-positions-redis = ",
            // Sending needs a sender and a public URL, set together.
            "smtp-url = ",
            "smtp-from = ",
            "public-url = ",
        ]
        .iter()
        .any(|name| setting.starts_with(name))
}

/// Whether a comment of the example file is a setting: `name = value`.
fn is_setting(comment: &str) -> bool {
    comment.split_once(" = ").is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '-')
    })
}
