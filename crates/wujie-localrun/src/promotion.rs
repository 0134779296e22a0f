//! What a failed promotion tells the adapter and the user. The draft and the request that
//! creates the issue are `wujie_protocol::promotion`'s, shared with the web UI; the promotion
//! state machine of a session (native handoff, `/wujiecreateissue`) is `discuss`'s.

use wujie_client::ClientError;

/// An error an adapter may see: what failed, never a token, a URL or internals.
pub fn redacted(error: &ClientError) -> String {
    match error.status().map(|s| s.as_u16()) {
        Some(409) => "the discussion was already turned into an issue".to_owned(),
        Some(401) | Some(403) => "the Wujie server refused the request (not authorized)".to_owned(),
        Some(code) => format!("the Wujie server could not create the issue (HTTP {code})"),
        None => "the Wujie server could not be reached".to_owned(),
    }
}
