//! Control frames the parent CLI writes to an adapter's stdin (seed: "v2 原生 handoff"): an
//! ASCII Record Separator, `WUJIE `, one line of JSON and `'\n'`, mixed into the adapter's
//! ordinary terminal input. The parent encodes them with [`HandoffDecision::encode_frame`];
//! adapters strip them out of their input with [`ControlFrameSplitter`].

use serde::Serialize;

use crate::event::{
    FieldError, HandoffMode, ObjectError, parse_json_object, quote, take_nonempty_str,
    take_opt_bool, take_opt_str,
};

pub const CONTROL_FRAME_PREFIX: &[u8] = b"\x1eWUJIE ";

/// Longest frame payload accepted. Real frames are a few hundred bytes; a longer "frame" is
/// not one, and the cap keeps an adapter from holding back its input while waiting for a `'\n'`.
pub const MAX_CONTROL_FRAME_BYTES: usize = 64 * 1024;

/// The parent's answer to an adapter's `handoff_ready`: whether to go on with the native action
/// and, when accepted, the issue and run it is now bound to. `error` is already redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffDecision {
    pub request_id: String,
    pub accepted: bool,
    pub mode: Option<HandoffMode>,
    pub issue_id: Option<String>,
    pub issue_key: Option<String>,
    pub run_id: Option<String>,
    pub error: Option<String>,
}

/// The wire form of a decision; field order is the order written, `event` first.
#[derive(Serialize)]
struct WireDecision<'a> {
    event: &'static str,
    request_id: &'a str,
    accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<HandoffMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    issue_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    issue_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

const DECISION_EVENT: &str = "handoff_decision";

impl HandoffDecision {
    /// The complete frame: prefix, one line of JSON (JSON escapes every control character inside
    /// strings, so it cannot contain a raw `'\n'` or Record Separator) and `'\n'`.
    pub fn encode_frame(&self) -> Vec<u8> {
        let wire = WireDecision {
            event: DECISION_EVENT,
            request_id: &self.request_id,
            accepted: self.accepted,
            mode: self.mode,
            issue_id: self.issue_id.as_deref(),
            issue_key: self.issue_key.as_deref(),
            run_id: self.run_id.as_deref(),
            error: self.error.as_deref(),
        };
        let mut frame = CONTROL_FRAME_PREFIX.to_vec();
        serde_json::to_writer(&mut frame, &wire)
            .expect("a struct of strings and booleans always serialises to JSON");
        frame.push(b'\n');
        frame
    }

    /// Parses the JSON payload of a frame (the bytes between the prefix and the `'\n'`).
    pub fn parse_payload(json: &[u8]) -> Result<HandoffDecision, ControlFrameError> {
        let mut object = parse_json_object(json)?;
        match take_opt_str(&mut object, "event")?.as_deref() {
            None => return Err(FieldError::Missing { field: "event" }.into()),
            Some(DECISION_EVENT) => {}
            Some(other) => return Err(ControlFrameError::UnknownEvent(quote(other))),
        }
        let request_id = take_nonempty_str(&mut object, "request_id")?;
        let accepted = take_opt_bool(&mut object, "accepted")?
            .ok_or(FieldError::Missing { field: "accepted" })?;
        let mode = match take_opt_str(&mut object, "mode")? {
            None => None,
            Some(name) => Some(
                HandoffMode::from_name(&name)
                    .ok_or_else(|| ControlFrameError::UnknownHandoffMode(quote(&name)))?,
            ),
        };
        Ok(HandoffDecision {
            request_id,
            accepted,
            mode,
            issue_id: take_opt_str(&mut object, "issue_id")?,
            issue_key: take_opt_str(&mut object, "issue_key")?,
            run_id: take_opt_str(&mut object, "run_id")?,
            error: take_opt_str(&mut object, "error")?,
        })
    }
}

/// Why a control frame could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlFrameError {
    #[error("control frame: invalid UTF-8 at byte offset {valid_up_to}")]
    InvalidUtf8 { valid_up_to: usize },
    #[error("control frame: not JSON ({0})")]
    NotJson(String),
    #[error("control frame: expected a JSON object, found {found}")]
    NotObject { found: &'static str },
    #[error("control frame: unknown event {0:?}: expected \"handoff_decision\"")]
    UnknownEvent(String),
    #[error("control frame: missing field `{field}`")]
    MissingField { field: &'static str },
    #[error("control frame: field `{field}` must be {expected}, found {found}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    #[error("control frame: field `{field}` must not be empty")]
    EmptyField { field: &'static str },
    #[error(
        "control frame: unknown handoff mode {0:?}: expected \"current_context\" or \"native_clear\""
    )]
    UnknownHandoffMode(String),
    #[error(
        "control frame longer than {limit} bytes without a '\\n'; its bytes were dropped and what follows is read as ordinary input"
    )]
    TooLong { limit: usize },
    #[error("control frame cut off by the end of input before its '\\n'")]
    Unterminated,
}

impl From<FieldError> for ControlFrameError {
    fn from(e: FieldError) -> Self {
        match e {
            FieldError::Missing { field } => ControlFrameError::MissingField { field },
            FieldError::WrongType {
                field,
                expected,
                found,
            } => ControlFrameError::WrongType {
                field,
                expected,
                found,
            },
            FieldError::Empty { field } => ControlFrameError::EmptyField { field },
        }
    }
}

impl From<ObjectError> for ControlFrameError {
    fn from(e: ObjectError) -> Self {
        match e {
            ObjectError::InvalidUtf8 { valid_up_to } => {
                ControlFrameError::InvalidUtf8 { valid_up_to }
            }
            ObjectError::NotJson(message) => ControlFrameError::NotJson(message),
            ObjectError::NotObject { found } => ControlFrameError::NotObject { found },
            ObjectError::TooDeep => {
                ControlFrameError::NotJson("nested deeper than a JSON parser goes".to_owned())
            }
        }
    }
}

/// A piece of an adapter's stdin: ordinary input to pass on, or a control frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdinChunk {
    Input(Vec<u8>),
    Frame(Result<HandoffDecision, ControlFrameError>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SplitState {
    /// Ordinary input.
    Input,
    /// This many leading bytes of the prefix (at least the Record Separator) were seen and held
    /// back; whether they are a frame is not clear yet.
    Prefix(usize),
    /// Inside a frame, collecting its payload up to `'\n'`.
    Frame,
}

/// Strips control frames out of an adapter's stdin, for any chunking of the bytes. Ordinary
/// bytes come out unchanged and in order; a Record Separator not followed by `WUJIE ` is
/// ordinary input and is passed on as soon as that is certain.
#[derive(Debug)]
pub struct ControlFrameSplitter {
    state: SplitState,
    payload: Vec<u8>,
}

impl Default for ControlFrameSplitter {
    fn default() -> Self {
        Self::new()
    }
}

impl ControlFrameSplitter {
    pub fn new() -> Self {
        ControlFrameSplitter {
            state: SplitState::Input,
            payload: Vec::new(),
        }
    }

    /// Feeds the next stdin bytes. Ordinary input is returned at once, except a possible start
    /// of the prefix at the very end, which is held until the next bytes decide it.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<StdinChunk> {
        let mut out = Vec::new();
        let mut input = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match self.state {
                SplitState::Input => {
                    let rest = &bytes[i..];
                    match rest.iter().position(|&b| b == CONTROL_FRAME_PREFIX[0]) {
                        Some(at) => {
                            input.extend_from_slice(&rest[..at]);
                            self.state = SplitState::Prefix(1);
                            i += at + 1;
                        }
                        None => {
                            input.extend_from_slice(rest);
                            i = bytes.len();
                        }
                    }
                }
                SplitState::Prefix(matched) => {
                    if CONTROL_FRAME_PREFIX.get(matched) == Some(&bytes[i]) {
                        i += 1;
                        self.state = if matched + 1 == CONTROL_FRAME_PREFIX.len() {
                            self.payload.clear();
                            SplitState::Frame
                        } else {
                            SplitState::Prefix(matched + 1)
                        };
                    } else {
                        // Not a frame: the held bytes are input; this byte is looked at again,
                        // as it may itself start a frame.
                        input.extend_from_slice(&CONTROL_FRAME_PREFIX[..matched]);
                        self.state = SplitState::Input;
                    }
                }
                SplitState::Frame => {
                    let rest = &bytes[i..];
                    let room = MAX_CONTROL_FRAME_BYTES - self.payload.len();
                    match rest.iter().take(room + 1).position(|&b| b == b'\n') {
                        Some(at) => {
                            self.payload.extend_from_slice(&rest[..at]);
                            i += at + 1;
                            let payload = self.payload.strip_suffix(b"\r").unwrap_or(&self.payload);
                            let decision = HandoffDecision::parse_payload(payload);
                            flush_input(&mut input, &mut out);
                            out.push(StdinChunk::Frame(decision));
                            self.payload.clear();
                            self.state = SplitState::Input;
                        }
                        None if rest.len() > room => {
                            // Over the cap: give up on this frame and read on as input.
                            i += room;
                            flush_input(&mut input, &mut out);
                            out.push(StdinChunk::Frame(Err(ControlFrameError::TooLong {
                                limit: MAX_CONTROL_FRAME_BYTES,
                            })));
                            self.payload.clear();
                            self.state = SplitState::Input;
                        }
                        None => {
                            self.payload.extend_from_slice(rest);
                            i = bytes.len();
                        }
                    }
                }
            }
        }
        flush_input(&mut input, &mut out);
        out
    }

    /// Ends the input: held prefix bytes are ordinary input; an unfinished frame is an error.
    pub fn finish(&mut self) -> Vec<StdinChunk> {
        let state = std::mem::replace(&mut self.state, SplitState::Input);
        self.payload.clear();
        match state {
            SplitState::Input => Vec::new(),
            SplitState::Prefix(matched) => {
                vec![StdinChunk::Input(CONTROL_FRAME_PREFIX[..matched].to_vec())]
            }
            SplitState::Frame => vec![StdinChunk::Frame(Err(ControlFrameError::Unterminated))],
        }
    }
}

fn flush_input(input: &mut Vec<u8>, out: &mut Vec<StdinChunk>) {
    if !input.is_empty() {
        out.push(StdinChunk::Input(std::mem::take(input)));
    }
}
