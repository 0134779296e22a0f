//! Turning decoded adapter lines into ingest items with stable idempotency keys.

use wujie_protocol::api::IngestItem;
use wujie_protocol::event::{DecodedLine, Event};

/// `source` of the items the reporter keys itself (usage, native session ids).
pub const REPORTER_SOURCE: &str = "wujie-reporter";

/// The items a line becomes. Messages keep the adapter's own (source, source_key). Usage carries
/// no key, so it gets one from the target id and the line's ordinal in the adapter's stdout:
/// stable across retries of the same run, so a re-sent batch never counts tokens twice.
/// `handoff_ready` is a request to the parent, not something to store. The line is taken by
/// value: its events move into the items, none is copied.
pub fn items_for_line(target_id: &str, line: DecodedLine) -> Vec<IngestItem> {
    let line_no = line.line_no;
    line.events
        .into_iter()
        .filter_map(|event| {
            let (source, source_key) = match &event {
                Event::Message(m) => (m.source.clone(), m.source_key.clone()),
                Event::Usage(_) => (
                    REPORTER_SOURCE.to_owned(),
                    format!("usage:{target_id}:line:{line_no}"),
                ),
                Event::Session { session_id } => {
                    (REPORTER_SOURCE.to_owned(), format!("session:{session_id}"))
                }
                // No adapter line parses as code changes: `wujie run` makes and keys them.
                Event::HandoffReady { .. } | Event::GitChanges(_) => return None,
            };
            Some(IngestItem {
                source,
                source_key,
                event,
            })
        })
        .collect()
}
