//! The one set of size limits of the event protocol. The reader applies them to every stdout
//! line, and the server derives its own from them, so an event the reader accepted is never
//! refused by a server running with the default limits.

use serde_json::Value;

use crate::event::{Event, Message};

/// Largest event, measured as its JSON encoding ([`encoded_len`]), that the reader accepts and
/// the server stores. Message content is taken as is, so the limit is generous; it exists so a
/// runaway adapter cannot fill the database or the reader's memory.
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Longest stdout line. A line carries one event (and at most a usage beside it); the reader
/// buffers a line up to this length before it can parse it.
pub const MAX_LINE_BYTES: usize = MAX_EVENT_BYTES;

/// Deepest nesting of objects and arrays in an event line, the line's own object counting as
/// level 1 (a `tool_use` input object is level 2). Agents' tool inputs stay far below it.
pub const MAX_EVENT_DEPTH: usize = 64;

/// Levels an ingest request adds around each event: the body object, its `items` array and
/// the item object.
pub const BATCH_WRAPPER_DEPTH: usize = 3;

/// The deepest JSON serde_json parses (its recursion limit of 128 is reached at 128 levels).
pub const JSON_PARSER_MAX_DEPTH: usize = 127;

/// Largest ingest request body the server reads. One item holds its event and its keys once
/// more, so a single item of the largest event always fits.
pub const MAX_BATCH_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Longest issue title, in bytes of UTF-8 (a title is one line a list shows).
pub const MAX_TITLE_BYTES: usize = 1024;
/// Longest issue description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 1024 * 1024;
/// Longest comment a person writes, in bytes (an agent's final answer is bounded by
/// [`MAX_EVENT_BYTES`] instead).
pub const MAX_COMMENT_BYTES: usize = 1024 * 1024;
/// Longest name of a token, in bytes.
pub const MAX_TOKEN_NAME_BYTES: usize = 256;
/// Largest token count of one usage event, per field: far above any model's context, and low
/// enough that the sums of millions of them stay within a signed 64-bit integer.
pub const MAX_USAGE_TOKENS: u64 = 1 << 40;

/// `text`, named `what`, is within `max` bytes; else why not, in words a user can act on.
pub fn check_text_len(what: &str, text: &str, max: usize) -> Result<(), String> {
    if text.len() <= max {
        return Ok(());
    }
    Err(format!(
        "the {what} is {} bytes, over the limit of {max} bytes; shorten it",
        text.len()
    ))
}

const _: () = assert!(MAX_EVENT_DEPTH + BATCH_WRAPPER_DEPTH <= JSON_PARSER_MAX_DEPTH);
const _: () = assert!(MAX_BATCH_BODY_BYTES >= 3 * MAX_EVENT_BYTES);

/// Length of the event's JSON encoding, the size every limit on events is measured in.
pub fn encoded_len(event: &Event) -> usize {
    json_len(event)
}

/// Length of the JSON encoding of `value`, counted without writing it anywhere.
pub fn json_len(value: &impl serde::Serialize) -> usize {
    let mut counter = ByteCounter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        // The API's types hold only strings, integers and JSON values, which always serialise;
        // should that ever change, a value that cannot be encoded is treated as too large.
        Err(_) => usize::MAX,
    }
}

/// Most bytes an event's encoding adds to a JSON text it was decoded from, as long as no number
/// in its `input` decoded as floating point: an `event` tag a stdout line leaves implicit and the
/// usage fields a text may leave out. Its strings encode no longer than a text must write them
/// (JSON escapes only what a text must escape too), its integers the same, and whitespace,
/// nulls and unknown fields are dropped. A float can grow without such a bound (`1e15` is
/// written `1000000000000000.0`).
pub const ENCODING_GROWTH_BOUND: usize = 128;

/// Whether the event's encoding is at most `limit` bytes, given the length of the JSON text it
/// was decoded from (a stdout line, or its text in an ingest request): that length settles it
/// when it leaves room for [`ENCODING_GROWTH_BOUND`], so that only an event close to the limit,
/// or one holding a float, is encoded again to be measured. `Err` carries the encoded size.
pub fn check_encoded_len(event: &Event, text_len: usize, limit: usize) -> Result<(), usize> {
    if !holds_float(event) && text_len.saturating_add(ENCODING_GROWTH_BOUND) <= limit {
        return Ok(());
    }
    match encoded_len(event) {
        size if size <= limit => Ok(()),
        size => Err(size),
    }
}

/// Whether a number in the event's `input` decoded as floating point (serde_json does so for a
/// fraction, an exponent, `-0` and integers beyond 64 bits). Iterative, like [`value_depth`].
fn holds_float(event: &Event) -> bool {
    let Event::Message(Message {
        input: Some(input), ..
    }) = event
    else {
        return false;
    };
    let mut stack: Vec<&Value> = input.values().collect();
    while let Some(value) = stack.pop() {
        match value {
            Value::Number(n) if n.is_f64() => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    false
}

/// Nesting depth of the event's JSON encoding (its own object is level 1).
pub fn event_depth(event: &Event) -> usize {
    match event {
        Event::Message(message) => match &message.input {
            Some(input) => 2 + input.values().map(value_depth).max().unwrap_or(0),
            None => 1,
        },
        Event::Usage(_) | Event::Session { .. } | Event::HandoffReady { .. } => 1,
        // Its object, `files`, a file, its `patch`.
        Event::GitChanges(_) => 4,
    }
}

/// Nesting depth of a JSON value: 0 for a scalar, 1 for a flat object or array. Iterative, so
/// no input can exhaust the stack.
pub fn value_depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, above)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        let level = above + 1;
        deepest = deepest.max(level);
        stack.extend(children.map(|child| (child, level)));
    }
    deepest
}

struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_objects_and_arrays() {
        let v: Value = serde_json::from_str(r#"{"a":[1,{"b":{}}],"c":2}"#).unwrap();
        assert_eq!(value_depth(&v), 4);
        assert_eq!(value_depth(&Value::Null), 0);
        assert_eq!(value_depth(&serde_json::json!([])), 1);
    }

    #[test]
    fn an_event_is_as_deep_as_its_encoding() {
        let line = br#"{"type":"tool_use","tool":"t","input":{"a":{"b":[1]}},"source":"s","source_key":"k"}"#;
        let events = crate::event::parse_line(line, 1).unwrap();
        let encoded: Value = serde_json::to_value(&events[0]).unwrap();
        assert_eq!(event_depth(&events[0]), value_depth(&encoded));
        assert_eq!(event_depth(&events[0]), 4);
        assert_eq!(
            encoded_len(&events[0]),
            serde_json::to_vec(&events[0]).unwrap().len()
        );
    }
}
