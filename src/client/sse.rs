//! The client's one reader of Server-Sent Events (the change feed's
//! `text/event-stream`, `docs/feed.md`): the events of a response's body,
//! one at a time as they come, read as EventSource reads them.

use anyhow::Context as _;

/// A stream of Server-Sent Events, read as they come.
pub struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

/// One event of the stream.
pub struct Event {
    /// `event:`; `message` when the event names none.
    pub name: String,
    /// `id:`, when it has one.
    pub id: Option<String>,
    /// Its `data:` lines, joined by newlines.
    pub data: String,
}

impl EventStream {
    /// The events of `response`'s body (`text/event-stream`).
    pub(super) fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event; `None` when the stream ends.
    pub async fn next(&mut self) -> anyhow::Result<Option<Event>> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = parse_event(&frame) {
                    return Ok(Some(event));
                }
                continue;
            }
            match self.response.chunk().await.context("the stream broke")? {
                Some(bytes) => self
                    .buffer
                    .push_str(std::str::from_utf8(&bytes).context("the stream is not UTF-8")?),
                None => return Ok(None),
            }
        }
    }
}

fn parse_event(frame: &str) -> Option<Event> {
    let mut event = Event {
        name: "message".into(),
        id: None,
        data: String::new(),
    };
    let mut any = false;
    for line in frame.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event.name = value.to_owned(),
            "id" => event.id = Some(value.to_owned()),
            "data" => {
                if any && !event.data.is_empty() {
                    event.data.push('\n');
                }
                event.data.push_str(value);
            }
            _ => continue,
        }
        any = true;
    }
    any.then_some(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_as_eventsource_reads_them() {
        let event = parse_event("event: change\nid: 7\ndata: {\"a\":1}\n\n").unwrap();
        assert_eq!(
            (event.name.as_str(), event.id.as_deref()),
            ("change", Some("7"))
        );
        assert_eq!(event.data, "{\"a\":1}");
        assert!(parse_event(": a comment\n\n").is_none());
        let retry = parse_event("retry: 1000\n\n");
        assert!(retry.is_none());
    }
}
