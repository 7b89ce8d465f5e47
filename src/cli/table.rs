//! Aligned plain-text tables for terminals.

use comfy_table::{ContentArrangement, Table, presets};

/// Columns separated by spaces, no borders, no wrapping.
pub fn render(headers: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(headers.to_vec())
        .add_rows(rows);
    // The preset pads every cell with a space: drop the one before the
    // first column and those after the last.
    table
        .lines()
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A JSON value as a table cell: strings without quotes, absent as `-`.
pub fn cell(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "-".into(),
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
