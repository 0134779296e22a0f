//! Reading a stream of server-sent events (`text/event-stream`, as the HTML standard defines
//! it), incrementally: any chunking of the same bytes gives the same events, and memory stays
//! within the longest event allowed. Wujie's own live feeds and opencode's `/event` stream are
//! both read with it.
//!
//! What the standard says and this follows: lines end with CRLF, LF or a lone CR; a leading
//! byte order mark is skipped; a line starting with `:` is a comment; `field: value` loses one
//! space after the colon; a blank line dispatches the event, unless it had no `data`; `data`
//! lines are joined with LF; the event name is `message` unless `event` named another; the
//! last `id` without a NUL stays the id of the events after it; an event the stream ends in
//! the middle of is not dispatched; text is UTF-8, invalid sequences read as U+FFFD. The
//! `retry` field (a reconnection delay) is not read.

/// The byte order mark a stream may start with.
const BOM: &[u8] = "\u{feff}".as_bytes();

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, `message` when the event named none.
    pub name: String,
    /// The `data` lines, joined with `'\n'`.
    pub data: String,
    /// The last `id` the stream gave, with this event or before it (empty when none): what a
    /// reconnect sends as `Last-Event-ID` to resume after this event.
    pub id: String,
}

/// What the decoder hands over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    Event(SseEvent),
    /// An event longer than the limit: reported once, as soon as that is certain; its bytes
    /// are dropped up to the blank line that ends it.
    TooLong,
}

/// The incremental reader; see the module comment.
#[derive(Debug)]
pub struct SseDecoder {
    max_event_bytes: usize,
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF opening the next one belongs to that line end.
    after_cr: bool,
    /// No line has ended yet (a byte order mark may open the first).
    first_line: bool,
    /// The current event passed the limit and was reported; skip to its blank line.
    skipping: bool,
    /// While skipping: the current line had bytes, so its end is not the event's end.
    skipped_bytes: bool,
    name: String,
    data: String,
    last_id: String,
}

impl SseDecoder {
    /// A reader that refuses an event whose `data`, `event` and unfinished line together come
    /// to more than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> SseDecoder {
        SseDecoder {
            max_event_bytes,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            skipping: false,
            skipped_bytes: false,
            name: String::new(),
            data: String::new(),
            last_id: String::new(),
        }
    }

    /// The events (and refusals) of every event the chunk completes, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseItem> {
        let mut out = Vec::new();
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            rest = rest.strip_prefix(b"\n").unwrap_or(rest);
        }
        while !rest.is_empty() {
            let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.keep(rest, &mut out);
                break;
            };
            let (line, terminator, after) = match rest.split_at_checked(end) {
                Some((line, [terminator, after @ ..])) => (line, *terminator, after),
                _ => break,
            };
            if self.line.is_empty() && !self.skipping {
                // A whole line inside the chunk: read in place, without a copy.
                self.end_line(line, &mut out);
            } else {
                self.keep(line, &mut out);
                let line = std::mem::take(&mut self.line);
                self.end_line(&line, &mut out);
                // Keep the allocation for the next line.
                self.line = line;
                self.line.clear();
            }
            rest = after;
            if terminator == b'\r' {
                match rest.strip_prefix(b"\n") {
                    Some(after_lf) => rest = after_lf,
                    None => self.after_cr = rest.is_empty(),
                }
            }
        }
        out
    }

    /// Bytes of the current line that has not ended yet.
    fn keep(&mut self, bytes: &[u8], out: &mut Vec<SseItem>) {
        if self.skipping {
            self.skipped_bytes |= !bytes.is_empty();
            return;
        }
        let held = self.line.len() + self.data.len() + self.name.len();
        if held.saturating_add(bytes.len()) > self.max_event_bytes {
            self.refuse(out);
            self.skipped_bytes = true;
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    fn refuse(&mut self, out: &mut Vec<SseItem>) {
        self.skipping = true;
        self.line.clear();
        self.data.clear();
        self.name.clear();
        out.push(SseItem::TooLong);
    }

    /// A line ended (its terminator not included).
    fn end_line(&mut self, line: &[u8], out: &mut Vec<SseItem>) {
        // The same bound as `keep` puts on a line that arrives in pieces, so that where the
        // chunks end changes nothing.
        if !self.skipping && self.data.len() + self.name.len() + line.len() > self.max_event_bytes {
            self.first_line = false;
            return self.refuse(out);
        }
        let line = if std::mem::take(&mut self.first_line) {
            line.strip_prefix(BOM).unwrap_or(line)
        } else {
            line
        };
        if self.skipping {
            // A line whose bytes were all dropped may still be the blank line ending the event.
            let blank = line.is_empty() && !std::mem::take(&mut self.skipped_bytes);
            self.skipped_bytes = false;
            if blank {
                self.skipping = false;
            }
            return;
        }
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line.first() == Some(&b':') {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => match line.split_at_checked(colon) {
                Some((field, [_, value @ ..])) => {
                    (field, value.strip_prefix(b" ").unwrap_or(value))
                }
                _ => (line, &b""[..]),
            },
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.name = value.into_owned(),
            b"data" => {
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"id" if !value.contains('\0') => self.last_id = value.into_owned(),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        let name = std::mem::take(&mut self.name);
        let mut data = std::mem::take(&mut self.data);
        if data.pop().is_none() {
            return;
        }
        out.push(SseItem::Event(SseEvent {
            name: if name.is_empty() {
                "message".to_owned()
            } else {
                name
            },
            data,
            id: self.last_id.clone(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(stream: &[u8]) -> Vec<SseItem> {
        SseDecoder::new(1024).feed(stream)
    }

    fn event(name: &str, data: &str, id: &str) -> SseItem {
        SseItem::Event(SseEvent {
            name: name.to_owned(),
            data: data.to_owned(),
            id: id.to_owned(),
        })
    }

    #[test]
    fn fields_lines_and_dispatch_as_the_standard_says() {
        let stream = b"\xef\xbb\xbf: hello\nevent: issue\nid: 1.2\ndata: {\"a\":\ndata:1}\n\n\
            data\n\ndata:  two spaces\r\n\r\nid\rdata: after an empty id\r\revent: nothing\n\n";
        assert_eq!(
            events(stream),
            [
                event("issue", "{\"a\":\n1}", "1.2"),
                event("message", "", "1.2"),
                event("message", " two spaces", "1.2"),
                event("message", "after an empty id", ""),
            ]
        );
    }

    #[test]
    fn an_id_with_a_nul_is_ignored_and_an_unfinished_event_is_not_dispatched() {
        assert_eq!(
            events(b"id: 7\ndata: a\n\nid: 8\0\ndata: b\n\ndata: c\n"),
            [event("message", "a", "7"), event("message", "b", "7")]
        );
    }

    #[test]
    fn a_bom_counts_only_at_the_start() {
        assert_eq!(
            events(b"data: x\n\n\xef\xbb\xbfdata: y\n\n"),
            [event("message", "x", "")]
        );
    }

    #[test]
    fn invalid_utf8_reads_as_replacement_characters() {
        assert_eq!(
            events(b"data: a\xffb\n\n"),
            [event("message", "a\u{fffd}b", "")]
        );
    }

    #[test]
    fn a_lone_cr_at_a_chunk_end_and_the_lf_after_it_end_one_line() {
        let mut decoder = SseDecoder::new(1024);
        let mut out = decoder.feed(b"data: a\r");
        out.extend(decoder.feed(b""));
        out.extend(decoder.feed(b"\ndata: b\r"));
        out.extend(decoder.feed(b"\r"));
        assert_eq!(out, [event("message", "a\nb", "")]);
    }

    #[test]
    fn an_event_over_the_limit_is_refused_once_and_the_next_one_read() {
        let long = format!("data: {}\n", "x".repeat(40));
        let stream = format!("{long}{long}{long}\ndata: ok\n\n");
        let mut decoder = SseDecoder::new(64);
        assert_eq!(
            decoder.feed(stream.as_bytes()),
            [SseItem::TooLong, event("message", "ok", "")]
        );
        let mut decoder = SseDecoder::new(64);
        let mut out = Vec::new();
        for byte in stream.as_bytes().chunks(1) {
            out.extend(decoder.feed(byte));
        }
        assert_eq!(out, [SseItem::TooLong, event("message", "ok", "")]);
    }
}
