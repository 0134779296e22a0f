//! Request and response bodies of the Wujie HTTP API (`/api/v1`). Shared by the server, the typed
//! client and the CLI's `--output json`, so field names here are the stable contract: adding a
//! field is fine, renaming one is not.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::event::{Event, MessageKind, Usage};

/// Prefix of every token Wujie mints, so a leaked one is recognisable. Tokens are stored hashed.
pub const TOKEN_PREFIX: &str = "wjt_";
/// Placeholder injected as `WUJIE_TOKEN` when no token can be issued; the server rejects it.
pub const DISABLED_TOKEN: &str = "wjt_disabled";

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workspace {
    pub id: String,
    pub name: String,
    pub key_prefix: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateIssue {
    /// At most 1,024 bytes of UTF-8, after trimming.
    pub title: String,
    /// At most 1 MiB of UTF-8.
    #[serde(default)]
    pub description: String,
    /// Set when the issue is promoted from a discussion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discussion_id: Option<String>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueStatus {
    Open,
    /// A run was started on it.
    InProgress,
    /// Closed as completed.
    Done,
    /// Closed without being completed (not planned, duplicate, …).
    Closed,
}

impl IssueStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            IssueStatus::Open => "open",
            IssueStatus::InProgress => "in_progress",
            IssueStatus::Done => "done",
            IssueStatus::Closed => "closed",
        }
    }

    pub fn from_name(name: &str) -> Option<IssueStatus> {
        Some(match name {
            "open" => IssueStatus::Open,
            "in_progress" => IssueStatus::InProgress,
            "done" => IssueStatus::Done,
            "closed" => IssueStatus::Closed,
            _ => return None,
        })
    }
}

/// One row of `GET /issues`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueSummary {
    pub id: String,
    pub key: String,
    pub title: String,
    pub status: IssueStatus,
    pub created_at: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorKind {
    User,
    Agent,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: String,
    pub author_kind: AuthorKind,
    pub body: String,
    /// The local run the comment came from, when an adapter reported it.
    pub run_id: Option<String>,
    pub created_at: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

/// How a failed run failed, where its error text alone would not say what the run still takes.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Failed by the stale-run rule: its reporter stopped sending heartbeats. No end: a paused
    /// reporter may still deliver the events it read, and its next heartbeat or its own
    /// finish replaces this failure.
    Stale,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Stale => "stale",
        }
    }

    pub fn from_name(name: &str) -> Option<FailureKind> {
        match name {
            "stale" => Some(FailureKind::Stale),
            _ => None,
        }
    }
}

/// A message as stored on a run, in arrival order.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMessage {
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub kind: MessageKind,
    pub content: Option<String>,
    pub tool: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub input: Option<Map<String, Value>>,
    pub output: Option<String>,
    pub source: String,
    pub source_key: String,
    pub created_at: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub id: String,
    pub issue_id: String,
    pub issue_key: String,
    pub provider: String,
    pub cwd: String,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    /// Set on a failed run only when the failure is not its end: `stale` when the stale-run
    /// rule failed it, and its reporter may still deliver, revive or finish it. Null otherwise.
    #[serde(default)]
    pub failure_kind: Option<FailureKind>,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// The run's messages in arrival order: all of them, or when they are more than one
    /// answer holds (`messages_complete` false), only the latest ones.
    pub messages: Vec<RunMessage>,
    /// False when earlier messages were left out of `messages` to keep the answer within its
    /// byte budget: read the whole transcript with `GET /runs/{id}/messages`, page by page.
    #[serde(default = "all_messages")]
    pub messages_complete: bool,
    /// When messages were left out: the position (`seq`) of the first one in `messages`; the
    /// ones left out are those before it. Null when `messages_complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_before: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub usage: Vec<Usage>,
    /// What the run changed in the code, as of its latest snapshot; null when it did not run
    /// in a git work tree (or git was missing).
    #[serde(default)]
    pub git: Option<crate::git::RunGit>,
    /// Set once someone asked for the run to be cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<CancelRequest>,
}

/// An answer written before runs said whether their messages are complete held them all.
fn all_messages() -> bool {
    true
}

/// `GET /runs/{id}/messages`: one page of a run's transcript, in arrival order.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMessagePage {
    /// Messages after the `after` asked for, as many as fit in `max_bytes` (one message bigger
    /// than that comes alone).
    pub messages: Vec<RunMessage>,
    /// The position (`seq`) of the page's last message: the `after` of the next page. The
    /// `after` asked for when the page is empty.
    pub next_after: i64,
    /// Whether messages after this page were stored when it was read.
    pub more: bool,
}

/// `GET /issues/{key}` and the body of `wujie issue show --output json`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssueDetail {
    pub id: String,
    pub key: String,
    pub title: String,
    pub description: String,
    pub status: IssueStatus,
    pub created_at: String,
    pub discussion_id: Option<String>,
    pub comments: Vec<Comment>,
    pub runs: Vec<Run>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateRun {
    pub provider: String,
    pub cwd: String,
    /// The job attempt this run is for, when a worker started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<crate::jobs::JobAttempt>,
}

/// Answer to `POST /issues/{key}/runs`: the run and its run-scoped token (shown only here).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedRun {
    pub run: Run,
    pub token: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishRun {
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
}

/// Answer to `POST /runs/{id}/finish`: the recorded outcome, without the run's (possibly very
/// long) transcript.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishedRun {
    pub id: String,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    pub ended_at: Option<String>,
}

/// One event to ingest, keyed for idempotency. For messages `source`/`source_key` are the
/// adapter's own; for usage (which carries none) the reporter assigns a stable key.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestItem {
    pub source: String,
    pub source_key: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub event: Event,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestBatch {
    pub items: Vec<IngestItem>,
}

/// An item to store, with what is known of its event's size as JSON. A plain [`IngestItem`]
/// knows nothing (its event is measured by encoding it); one a server read from a request
/// ([`ReceivedItem`]) knows the length of its event's text there.
pub trait IngestInput {
    fn item(&self) -> &IngestItem;
    /// Length of a JSON text the event was decoded from, if any.
    fn event_text_len(&self) -> Option<usize>;
}

impl IngestInput for IngestItem {
    fn item(&self) -> &IngestItem {
        self
    }

    fn event_text_len(&self) -> Option<usize> {
        None
    }
}

/// An [`IngestBatch`] as a server reads it from a request body: the same JSON, each event
/// decoded and the length of its text kept, so that the size limit is checked from the request
/// instead of by encoding every event again ([`crate::limits::check_encoded_len`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReceivedBatch {
    pub items: Vec<ReceivedItem>,
}

/// One item of a [`ReceivedBatch`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedItem {
    pub item: IngestItem,
    pub event_text_len: usize,
}

impl IngestInput for ReceivedItem {
    fn item(&self) -> &IngestItem {
        &self.item
    }

    fn event_text_len(&self) -> Option<usize> {
        Some(self.event_text_len)
    }
}

impl<'de> Deserialize<'de> for ReceivedItem {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            source: String,
            source_key: String,
            event: ReceivedEvent,
        }
        let wire = Wire::deserialize(deserializer)?;
        Ok(ReceivedItem {
            item: IngestItem {
                source: wire.source,
                source_key: wire.source_key,
                event: wire.event.event,
            },
            event_text_len: wire.event.text_len,
        })
    }
}

/// An event decoded from its own text, taken whole from the request (serde_json's `RawValue`).
struct ReceivedEvent {
    event: Event,
    text_len: usize,
}

impl<'de> Deserialize<'de> for ReceivedEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        let event = decode_at_batch_depth(text.get()).map_err(|e| {
            // The request's deserializer adds its own position (where the event ends in the
            // body); the one inside the event's text would only mislead next to it.
            let message = e.to_string();
            let inner_position = format!(" at line {} column {}", e.line(), e.column());
            let message = message.strip_suffix(&inner_position).unwrap_or(&message);
            <D::Error as serde::de::Error>::custom(message)
        })?;
        Ok(ReceivedEvent {
            event,
            text_len: text.get().len(),
        })
    }
}

/// Decodes an event's text nested as deep as a batch nests it, so that the parser's nesting
/// limit falls where it does for the whole body (taking the text whole does not count levels).
fn decode_at_batch_depth(text: &str) -> Result<Event, serde_json::Error> {
    use crate::limits::{BATCH_WRAPPER_DEPTH as DEPTH, JSON_PARSER_MAX_DEPTH};
    // A text is nested at most as deep as it has opening brackets: most cannot reach the limit.
    let opening = text.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    if opening + DEPTH <= JSON_PARSER_MAX_DEPTH {
        return serde_json::from_str(text);
    }
    let mut nested = String::with_capacity(text.len() + 2 * DEPTH);
    nested.push_str(&"[".repeat(DEPTH));
    nested.push_str(text);
    nested.push_str(&"]".repeat(DEPTH));
    let [[[event]]]: [[[Event; 1]; 1]; 1] = serde_json::from_str(&nested)?;
    Ok(event)
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IngestOutcome {
    /// Stored now.
    Stored,
    /// Already stored earlier under the same (source, source_key): success, nothing changed.
    Duplicate,
    /// Accepted but not kept by this target (e.g. `thinking` in a discussion): success.
    Filtered,
    /// Refused for good (the reason says why); the other items of the batch are unaffected.
    Rejected,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngestItemResult {
    pub outcome: IngestOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Answer to an ingest: one result per item, in order. All accepted items of a batch are
/// committed in one transaction.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngestResult {
    pub results: Vec<IngestItemResult>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateComment {
    /// At most 1 MiB of UTF-8.
    pub body: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateToken {
    /// Who or what the token is for (a person, a laptop); shown by `GET /tokens`. At most 256
    /// bytes of UTF-8.
    pub name: String,
    /// The token stops working this many seconds after it is minted; never when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_secs: Option<u64>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedToken {
    pub id: String,
    pub name: String,
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// Whether a user token still works.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenStatus {
    Active,
    Expired,
    Revoked,
}

/// A user token as `GET /tokens` lists it: never its secret (only its hash is stored).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    pub created_at: String,
    /// When a request last used it (to the minute); never when absent.
    pub last_used_at: Option<String>,
    pub expires_at: Option<String>,
    pub status: TokenStatus,
}

/// Error body of every non-2xx answer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    pub error: String,
}

// ---- discussions (protocol v2) ----

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscussionStatus {
    Open,
    Promoted,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateDiscussion {
    pub provider: String,
    pub cwd: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscussionEntry {
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub kind: MessageKind,
    pub content: String,
    pub source: String,
    pub source_key: String,
    pub created_at: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Discussion {
    pub id: String,
    pub status: DiscussionStatus,
    pub provider: String,
    pub cwd: String,
    pub issue_id: Option<String>,
    pub issue_key: Option<String>,
    pub native_session_ids: Vec<String>,
    /// In order. `GET /discussions/{id}` answers a page of them (its `after` and `max_bytes`);
    /// other answers hold them all.
    pub entries: Vec<DiscussionEntry>,
    /// The position of the last entry in `entries`: the `after` of the next page. The `after`
    /// asked for when there is none.
    #[serde(default)]
    pub next_after: i64,
    /// Whether entries after `entries` were stored when it was read.
    #[serde(default)]
    pub more: bool,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub usage: Vec<Usage>,
    pub created_at: String,
}

/// Answer to `POST /discussions`: the discussion and its discussion-scoped token.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedDiscussion {
    pub discussion: Discussion,
    pub token: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromoteDiscussion {
    /// At most 1,024 bytes of UTF-8, as an issue's title.
    pub title: String,
    /// At most 1 MiB of UTF-8, as an issue's description.
    pub description: String,
    pub provider: String,
    pub cwd: String,
    /// No agent goes on with the work on the promotion's run (`wujie discussion promote`, the
    /// web UI): the run is recorded as succeeded in the same transaction, so that it never
    /// waits for the stale-run rule. Absent, it keeps running for the agent that promoted.
    #[serde(default)]
    pub end_run: bool,
}

/// Answer to `POST /discussions/{id}/promote`: issue, run and the run-scoped token.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Promoted {
    pub issue: IssueDetail,
    pub run: Run,
    pub token: String,
}

// ---- issue lifecycle and live feeds ----

/// Query of `GET /issues`: all filters are optional and combine.
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueQuery {
    /// Only issues with this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<IssueStatus>,
    /// Text searched (case-insensitively) in titles, descriptions and comments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<String>,
    /// At most this many issues, newest first (default and maximum: [`MAX_ISSUE_LIST`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// Most issues one `GET /issues` answers with.
pub const MAX_ISSUE_LIST: u32 = 1000;

/// Body of `PATCH /issues/{key}`: the fields to change; absent ones stay as they are.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditIssue {
    /// At most 1,024 bytes of UTF-8, after trimming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// At most 1 MiB of UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Body of `POST /issues/{key}/status`: close (as `done` or `closed`) or reopen (`open`).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetIssueStatus {
    pub status: IssueStatus,
}

/// One row of `GET /issues/{key}/runs`: a run without its transcript.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: String,
    pub issue_key: String,
    pub provider: String,
    pub cwd: String,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    /// Set on a failed run only when the failure is not its end, as on a run.
    #[serde(default)]
    pub failure_kind: Option<FailureKind>,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// Messages stored on the run so far.
    pub message_count: u64,
}

/// Who made a change: a user, or an agent through the run it reported from.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Author {
    pub kind: AuthorKind,
    /// The run an agent (or a user typing into a run) wrote from.
    pub run_id: Option<String>,
}

/// What changed on an issue (the `change` of an [`IssueEvent`]).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum IssueChange {
    Created {
        title: String,
    },
    Edited {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    Status {
        status: IssueStatus,
    },
    Comment {
        comment: Comment,
    },
    RunStarted {
        run_id: String,
        provider: String,
    },
    RunFinished {
        run_id: String,
        status: RunStatus,
        exit_code: Option<i32>,
        error: Option<String>,
    },
    Usage {
        run_id: String,
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        usage: Usage,
    },
    /// Someone asked for the run to be cancelled (the event's `by` says who); the run's end
    /// follows once its reporter stopped the agent.
    CancelRequested {
        run_id: String,
    },
    /// A snapshot of the run's code was stored: the run's changes (`GET /runs/{id}/git`) are
    /// now as of it.
    CodeChanged {
        run_id: String,
        /// The snapshot's place in the run (0 at its start).
        snapshot: u32,
        /// Files changed from the run's start to this snapshot.
        files: u32,
    },
}

/// One change to an issue, in the order the store recorded it: the `data` of an `issue` event
/// on both live feeds.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssueEvent {
    /// Position in the store's activity log (grows with every change).
    pub seq: i64,
    pub issue_id: String,
    pub issue_key: String,
    pub author: Author,
    /// The name of the user token whose request made the change; absent for changes the
    /// server made itself (failing a silent run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    pub change: IssueChange,
    pub created_at: String,
}

/// A message stored on one of the issue's runs: the `data` of a `message` event on the issue
/// feed, in arrival order.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMessageEvent {
    /// Position in the store's message log (grows with every stored message).
    pub seq: i64,
    pub run_id: String,
    pub message: RunMessage,
}

/// `POST /browser-logins`: a one-time link that logs a browser in as the caller's user token.
/// The link holds a code that works once, for `expires_in_seconds`; never the token.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrowserLogin {
    /// Path and query to open on the server, e.g. `/login?code=…`.
    pub path: String,
    pub expires_in_seconds: u64,
}

// Cancelling a run from anywhere: `POST /runs/{id}/cancel` asks, `GET /runs/{id}/control` is
// what the run's reporter polls to learn of it.

/// Who asked for a run to be cancelled, and when.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    /// The name of the user token that asked; absent when the server no longer knows it.
    pub by: Option<String>,
    pub at: String,
}

impl CancelRequest {
    /// Who asked, in words: the token's name, or "a user".
    pub fn who(&self) -> &str {
        self.by.as_deref().unwrap_or("a user")
    }
}

/// `GET /runs/{id}/control`: what the run's reporter is asked to do while the run runs.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunControl {
    /// Set once someone asked for the run to be cancelled: stop the agent.
    pub cancel: Option<CancelRequest>,
}

/// Answer to `POST /runs/{id}/cancel`, and one entry of `wujie issue cancel --output json`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCancel {
    pub run_id: String,
    pub issue_key: String,
    pub cancel: CancelRequest,
    /// The cancel had been asked for already (this request changed nothing).
    pub already_requested: bool,
}
