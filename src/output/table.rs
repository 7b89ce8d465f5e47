//! Aligned plain-text tables for terminals, fitted to a width when there
//! is one: the least useful columns go first, then long cells end in `…`;
//! a row never wraps. Every cell is shown [`printable`]: a table's text
//! comes from the server or the store.

use std::io::IsTerminal;

use comfy_table::{ContentArrangement, Table, presets};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use unicode_width::UnicodeWidthStr;

use super::escapes::printable;

/// Columns separated by spaces, no borders, no wrapping.
pub fn render(headers: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    lay_out(headers, rows.into_iter().map(printable_row))
}

/// Each cell of `row`, [`printable`].
fn printable_row(row: Vec<String>) -> Vec<String> {
    row.into_iter()
        .map(|cell| printable(&cell).into_owned())
        .collect()
}

/// [`render`] of cells already printable.
fn lay_out(headers: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
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

/// Spaces between two columns, as [`render`] lays them out.
const GAP: usize = 2;
/// What ends a cell cut short.
const ELLIPSIS: &str = "…";

/// A column of a table that fits a width.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub header: &'static str,
    /// When the table is too wide, columns with a rank go, lowest first;
    /// `None`: the column stays.
    pub drop_rank: Option<u8>,
    /// The narrowest its cells may be cut to (never below its header);
    /// `None`: never cut.
    pub shrink_to: Option<usize>,
}

impl Column {
    /// A column that stays whole.
    pub const fn kept(header: &'static str) -> Self {
        Self {
            header,
            drop_rank: None,
            shrink_to: None,
        }
    }

    /// A column that goes, by `rank`, when the table is too wide.
    pub const fn dropped(header: &'static str, rank: u8) -> Self {
        Self {
            header,
            drop_rank: Some(rank),
            shrink_to: None,
        }
    }

    /// A column whose cells may be cut down to `width`.
    pub const fn cut(header: &'static str, width: usize) -> Self {
        Self {
            header,
            drop_rank: None,
            shrink_to: Some(width),
        }
    }

    fn narrowest(&self, natural: usize) -> usize {
        match self.shrink_to {
            Some(width) => natural.min(width.max(self.header.width())),
            None => natural,
        }
    }
}

/// The width tables must fit on stdout: the terminal's when it is one
/// (`COLUMNS`, then 80, when it does not say), else `COLUMNS` when set,
/// else none.
pub fn stdout_width() -> Option<usize> {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
        .filter(|&width| width > 0);
    if std::io::stdout().is_terminal() {
        let terminal = terminal_size::terminal_size_of(std::io::stdout())
            .map(|(width, _)| usize::from(width.0))
            .filter(|&width| width > 0);
        Some(terminal.or(columns).unwrap_or(80))
    } else {
        columns
    }
}

/// `rows` under `columns`, fitted to `width` when given: while the table
/// is wider, cells that may be cut are cut (the widest first); when that
/// is not enough the next column by drop rank goes. When nothing is left
/// to drop or cut, lines are cut at the width.
pub fn fit(columns: &[Column], rows: Vec<Vec<String>>, width: Option<usize>) -> String {
    // Measured as shown.
    let rows: Vec<Vec<String>> = rows.into_iter().map(printable_row).collect();
    let Some(width) = width else {
        let headers: Vec<&str> = columns.iter().map(|column| column.header).collect();
        return lay_out(&headers, rows);
    };
    let natural: Vec<usize> = (0..columns.len())
        .map(|i| {
            rows.iter()
                .map(|row| row[i].width())
                .chain([columns[i].header.width()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut shown: Vec<usize> = (0..columns.len()).collect();
    let total = |shown: &[usize], widths: &dyn Fn(usize) -> usize| -> usize {
        shown.iter().map(|&i| widths(i)).sum::<usize>() + GAP * shown.len().saturating_sub(1)
    };
    // Drop columns until the rest fits once cut as far as allowed.
    while total(&shown, &|i| columns[i].narrowest(natural[i])) > width {
        let next = shown
            .iter()
            .enumerate()
            .filter_map(|(at, &i)| columns[i].drop_rank.map(|rank| (rank, at)))
            .min();
        match next {
            Some((_, at)) => {
                shown.remove(at);
            }
            None => break,
        }
    }
    // Cut the widest cuttable column, one character at a time.
    let mut widths: Vec<usize> = natural.clone();
    while total(&shown, &|i| widths[i]) > width {
        let widest = shown
            .iter()
            .copied()
            .filter(|&i| widths[i] > columns[i].narrowest(natural[i]))
            .max_by_key(|&i| (widths[i], std::cmp::Reverse(i)));
        match widest {
            Some(i) => widths[i] -= 1,
            None => break,
        }
    }
    let headers: Vec<&str> = shown.iter().map(|&i| columns[i].header).collect();
    let rows = rows.into_iter().map(|row| {
        shown
            .iter()
            .map(|&i| truncate(&row[i], widths[i]))
            .collect::<Vec<_>>()
    });
    lay_out(&headers, rows)
        .lines()
        .map(|line| truncate(line, width))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` in at most `width` columns, ending in `…` when cut.
pub fn truncate(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let room = width.saturating_sub(ELLIPSIS.width());
    let mut kept = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        kept.push(c);
    }
    if width >= ELLIPSIS.width() {
        kept.push_str(ELLIPSIS);
    }
    kept
}

/// A JSON value as a table cell: strings without quotes, absent as `-`.
pub fn cell(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "-".into(),
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A timestamp as a person reads it, in UTC to the minute
/// (`2026-11-24 10:31`); `absent` when there is none, the text as sent
/// when it is not a timestamp.
pub fn when(value: &serde_json::Value, absent: &str) -> String {
    match value.as_str() {
        None => absent.to_owned(),
        Some(text) => match OffsetDateTime::parse(text, &Rfc3339) {
            Ok(moment) => minute(moment),
            Err(_) => text.to_owned(),
        },
    }
}

/// `moment` in UTC, to the minute.
pub fn minute(moment: OffsetDateTime) -> String {
    moment
        .to_offset(time::UtcOffset::UTC)
        .format(format_description!("[year]-[month]-[day] [hour]:[minute]"))
        .expect("a UTC date formats")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(cells: &[&[&str]]) -> Vec<Vec<String>> {
        cells
            .iter()
            .map(|row| row.iter().map(|cell| (*cell).to_owned()).collect())
            .collect()
    }

    const COLUMNS: [Column; 4] = [
        Column::kept("ID"),
        Column::cut("NAME", 6),
        Column::dropped("KIND", 1),
        Column::dropped("CREATED", 2),
    ];

    fn widest(text: &str) -> usize {
        text.lines().map(UnicodeWidthStr::width).max().unwrap_or(0)
    }

    #[test]
    fn without_a_width_nothing_is_cut() {
        let data = rows(&[&["id-1", "a rather long name", "proxy", "2026-01-05 09:00"]]);
        let text = fit(&COLUMNS, data, None);
        assert_eq!(
            text,
            "ID    NAME                KIND   CREATED\nid-1  a rather long name  proxy  2026-01-05 09:00"
        );
    }

    #[test]
    fn cells_are_cut_then_columns_go_by_rank() {
        let data = rows(&[
            &["id-1", "a rather long name", "proxy", "2026-01-05 09:00"],
            &["id-22", "short", "proxy", "2026-01-06 10:00"],
        ]);
        let fitted = |width: usize| {
            let text = fit(&COLUMNS, data.clone(), Some(width));
            assert!(widest(&text) <= width, "{width}: {text}");
            text
        };
        // Everything fits in 50 columns.
        assert_eq!(fitted(50), fit(&COLUMNS, data.clone(), None));
        assert_eq!(widest(&fitted(50)), 50);
        // Narrower: the name is cut, down to its floor.
        assert_eq!(
            fitted(44),
            "ID     NAME          KIND   CREATED\n\
             id-1   a rather lo…  proxy  2026-01-05 09:00\n\
             id-22  short         proxy  2026-01-06 10:00"
        );
        assert!(fitted(40).contains("a rathe…  proxy"));
        // Then KIND goes first; the name is cut no more than needed.
        assert_eq!(
            fitted(34),
            "ID     NAME       CREATED\n\
             id-1   a rather…  2026-01-05 09:00\n\
             id-22  short      2026-01-06 10:00"
        );
        // Then CREATED goes, and the name has room again.
        assert_eq!(
            fitted(30),
            "ID     NAME\nid-1   a rather long name\nid-22  short"
        );
        assert_eq!(
            fitted(20),
            "ID     NAME\nid-1   a rather lon…\nid-22  short"
        );
        // Too narrow for what must stay: lines are cut, never wrapped.
        assert_eq!(fitted(10), "ID     NA…\nid-1   a …\nid-22  sh…");
    }

    #[test]
    fn truncation_counts_display_columns() {
        assert_eq!(truncate("Ünïcødé", 7), "Ünïcødé");
        assert_eq!(truncate("Ünïcødé", 5), "Ünïc…");
        assert_eq!(truncate("日本語のテキスト", 7), "日本語…");
        assert_eq!(truncate("abc", 0), "");
    }

    #[test]
    fn timestamps_read_in_utc_to_the_minute() {
        let at = |text: &str| when(&serde_json::json!(text), "never");
        assert_eq!(at("2026-11-24T10:31:59.123456Z"), "2026-11-24 10:31");
        assert_eq!(at("2026-11-24T12:31:00+02:00"), "2026-11-24 10:31");
        assert_eq!(at("not a date"), "not a date");
        assert_eq!(when(&serde_json::Value::Null, "never"), "never");
    }
}
