//! Text from the server (or the store, or a file) as a terminal shows it:
//! never raw where a person reads it, so that no character of it moves
//! the cursor, writes the window's title or reorders what is read.

use std::borrow::Cow;

/// Whether `c` may act on a terminal rather than show: a control
/// character (C0 with newline and tab, DEL, C1: cursor moves, a window
/// title, a clipboard write), a bidirectional control (it reorders what a
/// person reads), or a line or paragraph separator.
fn acts(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// Text from the server as the client shows it to people (tables, the
/// text of an object, diffs, summaries, error messages), on a terminal
/// or piped alike: each character that [`acts`] written as Rust writes it
/// (`\n`, `\t`, `\u{1b}`, `\u{202e}`), the rest as sent. JSON output does
/// not go through it: see [`printable_json`].
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) {
            shown.extend(c.escape_debug());
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// JSON text for a terminal: each character that [`acts`] and that a
/// JSON writer may leave raw in a string (DEL and beyond) written as a
/// JSON escape (`\u202e`): the same JSON value, shown safely. The ASCII
/// controls are left: JSON text holds them only as its own whitespace
/// (a string holds them escaped) or as the colours put in it.
pub(super) fn printable_json(text: &str) -> Cow<'_, str> {
    let raw = |c: char| acts(c) && c >= '\u{7f}';
    if !text.chars().any(raw) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if raw(c) {
            shown.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}
