//! The NDJSON import format of `docs/cli.md`: one object per line, its kind in
//! `object`. This module turns lines into checked records; the store applies
//! them in one transaction.

use std::borrow::Cow;
use std::fmt;
use std::io::BufRead;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::FieldError;
use super::directory::{Organization, User};
use super::domains::DomainLine;
use super::project::Project;
use super::proxy_settings::ProxySettings;

/// Longest line an import accepts.
pub const MAX_LINE_BYTES: usize = 1 << 20;

#[derive(Clone, Debug, PartialEq)]
pub enum ImportRecord {
    Organization(Organization),
    User(User),
    Project(Box<Project>),
    /// `project_id` is always set.
    ProxySettings(ProxySettings),
    Domain(DomainLine),
}

/// A record with the number of the line it came from, or the error that
/// line caused.
pub type ImportItem = Result<(u64, ImportRecord), ImportError>;

/// Items travel from the reader to the store in batches: one hand-off
/// between threads per batch, not per line.
pub type ImportBatch = Vec<ImportItem>;

/// Lines per batch.
const BATCH_LINES: usize = 256;

/// Why an import stopped: the line, and where possible the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ImportError {
    /// 1-based; 0 when no line is at fault (the store failed).
    pub line: u64,
    pub field: Option<String>,
    pub message: String,
}

impl ImportError {
    pub fn at(line: u64, field: Option<String>, message: impl Into<String>) -> Self {
        Self {
            line,
            field,
            message: message.into(),
        }
    }

    pub fn from_field(line: u64, error: FieldError) -> Self {
        let field = (!error.field.is_empty()).then_some(error.field);
        Self::at(line, field, error.message)
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return f.write_str(&self.message);
        }
        match &self.field {
            Some(field) => write!(f, "line {}: field {field}: {}", self.line, self.message),
            None => write!(f, "line {}: {}", self.line, self.message),
        }
    }
}

/// Counts of records applied, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ObjectCounts {
    pub organizations: u64,
    pub users: u64,
    pub projects: u64,
    pub proxy_settings: u64,
    /// Written only when some were: a file without domains is counted as
    /// before they existed.
    #[serde(skip_serializing_if = "is_zero")]
    pub domains: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl ObjectCounts {
    pub fn count(&mut self, record: &ImportRecord) {
        match record {
            ImportRecord::Organization(_) => self.organizations += 1,
            ImportRecord::User(_) => self.users += 1,
            ImportRecord::Project(_) => self.projects += 1,
            ImportRecord::ProxySettings(_) => self.proxy_settings += 1,
            ImportRecord::Domain(_) => self.domains += 1,
        }
    }
}

/// Parses and checks one line (without its line break).
pub fn parse_line(line: &str) -> Result<ImportRecord, FieldError> {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(borrow)]
        object: Option<Cow<'a, str>>,
    }
    let kind: Kind<'_> = serde_json::from_str(line).map_err(|e| {
        FieldError::new(
            "",
            format!("must be one JSON object ({})", plain_message(&e)),
        )
    })?;
    match kind.object.as_deref() {
        Some("organization") => {
            let mut organization: Organization = typed(line)?;
            organization.normalize_and_validate()?;
            Ok(ImportRecord::Organization(organization))
        }
        Some("user") => {
            let mut user: User = typed(line)?;
            user.normalize_and_validate()?;
            Ok(ImportRecord::User(user))
        }
        Some("project") => {
            let mut project: Project = typed(line)?;
            project.normalize_and_validate()?;
            Ok(ImportRecord::Project(Box::new(project)))
        }
        Some("proxy_settings") => {
            let settings: ProxySettings = typed(line)?;
            if settings.project_id.is_none() {
                return Err(FieldError::new("project_id", "is required"));
            }
            settings.validate()?;
            Ok(ImportRecord::ProxySettings(settings))
        }
        Some("domain") => {
            let mut domain: DomainLine = typed(line)?;
            domain.normalize_and_validate()?;
            Ok(ImportRecord::Domain(domain))
        }
        Some(other) => Err(FieldError::new(
            "object",
            format!(
                "unknown kind {other:?}: expected organization, user, project, proxy_settings or domain"
            ),
        )),
        None => Err(FieldError::new("object", "is required")),
    }
}

/// Deserialises `line` as `T`, naming the field at fault.
fn typed<T: DeserializeOwned>(line: &str) -> Result<T, FieldError> {
    let mut deserializer = serde_json::Deserializer::from_str(line);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let message = plain_message(&inner);
        // serde reports a missing member at its parent: name the member.
        let member = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next());
        let field = match (path.as_str(), member) {
            (".", Some(member)) => member.to_owned(),
            (parent, Some(member)) => format!("{parent}.{member}"),
            (".", None) => String::new(),
            (path, None) => path.to_owned(),
        };
        FieldError::new(field, message)
    })
}

/// serde_json's message without "at line 1 column N": a line is parsed
/// alone, so its own position inside the file would mislead.
fn plain_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => format!("{} (column {})", &text[..cut], error.column()),
        None => text,
    }
}

/// Reads NDJSON from `reader` on a thread of its own and sends the checked
/// records, or the first error, into the returned channel, in batches.
/// Blank lines are skipped. Reading stops at the first error.
pub fn read_records(reader: impl BufRead + Send + 'static) -> mpsc::Receiver<ImportBatch> {
    let (sender, receiver) = mpsc::channel(8);
    std::thread::spawn(move || read_into(reader, &sender));
    receiver
}

fn read_into(mut reader: impl BufRead, sender: &mpsc::Sender<ImportBatch>) {
    let mut batch = Vec::with_capacity(BATCH_LINES);
    let mut buffer = Vec::with_capacity(4096);
    let mut line_number = 0u64;
    loop {
        buffer.clear();
        line_number += 1;
        let read = std::io::Read::take(&mut reader, MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buffer);
        let item = match read {
            Ok(0) => break,
            Err(e) => Err(ImportError::at(
                line_number,
                None,
                format!("cannot read: {e}"),
            )),
            Ok(_) if buffer.len() > MAX_LINE_BYTES => Err(ImportError::at(
                line_number,
                None,
                format!("is longer than {MAX_LINE_BYTES} bytes"),
            )),
            Ok(_) => match std::str::from_utf8(&buffer) {
                Err(_) => Err(ImportError::at(line_number, None, "is not valid UTF-8")),
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => parse_line(text.trim_end_matches(['\n', '\r']))
                    .map(|record| (line_number, record))
                    .map_err(|e| ImportError::from_field(line_number, e)),
            },
        };
        let stop = item.is_err();
        batch.push(item);
        if stop {
            break;
        }
        if batch.len() == BATCH_LINES {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_LINES));
            if sender.blocking_send(full).is_err() {
                return;
            }
        }
    }
    if !batch.is_empty() {
        let _ = sender.blocking_send(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORG: &str = "0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f";

    #[test]
    fn dispatches_on_object() {
        let line = format!(r#"{{"object":"organization","id":"{ORG}","name":"Acme"}}"#);
        assert!(matches!(
            parse_line(&line),
            Ok(ImportRecord::Organization(_))
        ));
        let line = format!(r#"{{"object":"project","id":"p1","organization_id":"{ORG}"}}"#);
        assert!(matches!(parse_line(&line), Ok(ImportRecord::Project(_))));
        let line = r#"{"object":"proxy_settings","project_id":"p1","revision":1}"#;
        assert!(matches!(
            parse_line(line),
            Ok(ImportRecord::ProxySettings(_))
        ));
    }

    #[test]
    fn errors_name_the_field() {
        let field = |line: &str| parse_line(line).unwrap_err().field;
        assert_eq!(field(r#"{"id":"x"}"#), "object");
        assert_eq!(field(r#"{"object":"widget"}"#), "object");
        assert_eq!(
            field(r#"{"object":"project","id":"p1"}"#),
            "organization_id"
        );
        assert_eq!(
            field(&format!(
                r#"{{"object":"project","id":"p1","organization_id":"{ORG}","colour":1}}"#
            )),
            "colour"
        );
        assert_eq!(
            field(&format!(
                r#"{{"object":"project","id":"p1","organization_id":"{ORG}","override_cache":[{{"path":"/","ttl":"x"}}]}}"#
            )),
            "override_cache[0].ttl"
        );
        assert_eq!(
            field(&format!(
                r#"{{"object":"project","id":"p1","organization_id":"{ORG}","override_cache":[{{"ttl":1}}]}}"#
            )),
            "override_cache[0].path"
        );
        assert_eq!(
            field(r#"{"object":"proxy_settings","revision":1}"#),
            "project_id"
        );
        assert_eq!(field("not json"), "");
        assert_eq!(field("[1]"), "");
    }

    #[test]
    fn messages_do_not_pretend_the_line_is_line_one() {
        let message = parse_line(r#"{"object":"project","id":5}"#)
            .unwrap_err()
            .message;
        assert!(!message.contains("line 1"), "{message}");
        assert!(message.contains("column"), "{message}");
    }

    #[tokio::test]
    async fn reader_numbers_lines_skips_blanks_and_stops_at_the_first_error() {
        let input = format!(
            "{{\"object\":\"organization\",\"id\":\"{ORG}\",\"name\":\"A\"}}\n\n   \nbroken\n{{\"object\":\"organization\",\"id\":\"{ORG}\",\"name\":\"B\"}}\n"
        );
        let mut records = read_records(std::io::Cursor::new(input.into_bytes()));
        let mut batch = records.recv().await.unwrap().into_iter();
        let first = batch.next().unwrap().unwrap();
        assert_eq!(first.0, 1);
        let error = batch.next().unwrap().unwrap_err();
        assert_eq!(error.line, 4);
        assert!(batch.next().is_none());
        assert!(records.recv().await.is_none());
    }

    #[tokio::test]
    async fn overlong_lines_are_refused() {
        let input = format!("{}\n", "x".repeat(MAX_LINE_BYTES + 10));
        let mut records = read_records(std::io::Cursor::new(input.into_bytes()));
        let error = records.recv().await.unwrap().remove(0).unwrap_err();
        assert_eq!(error.line, 1);
        assert!(error.message.contains("longer than"));
    }
}
