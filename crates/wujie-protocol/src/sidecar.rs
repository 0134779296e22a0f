//! The sidecar contract: JSON-RPC 2.0 over the sidecar's stdin/stdout, one JSON object per line.
//!
//! | method   | params                 | result                               |
//! |----------|------------------------|--------------------------------------|
//! | `ping`   | —                      | `{ok, session_id, cli_version?}`     |
//! | `prompt` | `{text, session_id?}`  | `{ok, session_id, reply}`            |
//! | `state`  | —                      | `{ok, session_id, messages}`         |
//! | `close`  | —                      | `{ok}`                               |
//!
//! `prompt` must report `session_id` so that the caller can assert the session did not drift.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC 2.0 request written to the sidecar.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request<'a> {
    pub jsonrpc: &'static str,
    pub id: u64,
    pub method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl<'a> Request<'a> {
    pub fn new(id: u64, method: &'a str, params: Option<Value>) -> Self {
        Self {
            jsonrpc: "2.0",
            id,
            method,
            params,
        }
    }

    /// The request as one line of JSON, newline included.
    pub fn to_line(&self) -> String {
        // Serialising a struct of strings, integers and a `Value` cannot fail.
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}

/// A JSON-RPC 2.0 error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// One line the sidecar wrote to stdout, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to request `id`.
    Response {
        id: u64,
        outcome: Result<Value, RpcError>,
    },
    /// A JSON-RPC notification (no id): progress the caller may log and otherwise ignore.
    Notification { method: String },
}

/// Why a stdout line is not part of the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("sidecar wrote a line that is not JSON: {0}")]
    NotJson(String),
    #[error("sidecar wrote JSON that is not a JSON-RPC 2.0 response or notification: {0}")]
    NotJsonRpc(String),
}

#[derive(Deserialize)]
struct RawIncoming {
    jsonrpc: Option<String>,
    id: Option<Value>,
    method: Option<String>,
    result: Option<Value>,
    error: Option<RpcError>,
}

/// Classifies one stdout line (without its newline).
pub fn parse_line(line: &str) -> Result<Incoming, LineError> {
    let shorten = |s: &str| s.chars().take(200).collect::<String>();
    let raw: RawIncoming =
        serde_json::from_str(line).map_err(|_| LineError::NotJson(shorten(line)))?;
    if raw.jsonrpc.as_deref() != Some("2.0") {
        return Err(LineError::NotJsonRpc(shorten(line)));
    }
    match (raw.id, raw.method) {
        (Some(Value::Number(id)), None) => {
            let id = id
                .as_u64()
                .ok_or_else(|| LineError::NotJsonRpc(shorten(line)))?;
            let outcome = match (raw.result, raw.error) {
                (_, Some(error)) => Err(error),
                (Some(result), None) => Ok(result),
                (None, None) => return Err(LineError::NotJsonRpc(shorten(line))),
            };
            Ok(Incoming::Response { id, outcome })
        }
        (None, Some(method)) => Ok(Incoming::Notification { method }),
        _ => Err(LineError::NotJsonRpc(shorten(line))),
    }
}

/// Why a result does not have the shape its method promises.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResultError {
    #[error("`{method}` result is not the contract's shape ({detail}): {shown}")]
    Shape {
        method: &'static str,
        detail: String,
        shown: String,
    },
    #[error("`{method}` answered ok=false: {message}")]
    NotOk {
        method: &'static str,
        message: String,
    },
}

/// `ping` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PingResult {
    pub ok: bool,
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_version: Option<String>,
}

/// `prompt` result. `session_id` is required: without it drift cannot be checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptResult {
    pub ok: bool,
    pub session_id: String,
    pub reply: String,
}

/// `state` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateResult {
    pub ok: bool,
    pub session_id: Option<String>,
    pub messages: Vec<Value>,
}

/// `close` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseResult {
    pub ok: bool,
}

/// What every result promises beyond its JSON shape.
trait Contract {
    fn ok(&self) -> bool;
    /// Brings the result to its normal form, or says how it breaks the contract.
    fn settle(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// A blank session id says nothing: for `ping` and `state` it means "not known yet", as
/// `null` does.
fn blank_is_unknown(id: &mut Option<String>) {
    if id.as_deref().is_some_and(|s| s.trim().is_empty()) {
        *id = None;
    }
}

impl Contract for PingResult {
    fn ok(&self) -> bool {
        self.ok
    }
    fn settle(&mut self) -> Result<(), String> {
        blank_is_unknown(&mut self.session_id);
        Ok(())
    }
}
impl Contract for PromptResult {
    fn ok(&self) -> bool {
        self.ok
    }
    /// `prompt` must name the session it ran in: a blank id would let the next turn's session
    /// be adopted as if it were the first one's.
    fn settle(&mut self) -> Result<(), String> {
        if self.session_id.trim().is_empty() {
            return Err(format!(
                "session_id is {:?}: `prompt` must report the session it ran in (the backend's \
                 real id, or the label it was given until that is known)",
                self.session_id
            ));
        }
        Ok(())
    }
}
impl Contract for StateResult {
    fn ok(&self) -> bool {
        self.ok
    }
    fn settle(&mut self) -> Result<(), String> {
        blank_is_unknown(&mut self.session_id);
        Ok(())
    }
}
impl Contract for CloseResult {
    fn ok(&self) -> bool {
        self.ok
    }
}

fn decode<T: for<'de> Deserialize<'de> + Contract>(
    method: &'static str,
    value: Value,
) -> Result<T, ResultError> {
    let shown = value.to_string().chars().take(300).collect::<String>();
    if value.get("ok") == Some(&Value::Bool(false)) {
        let message = match value.get("error") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => shown,
        };
        return Err(ResultError::NotOk { method, message });
    }
    let mut decoded: T = serde_json::from_value(value).map_err(|e| ResultError::Shape {
        method,
        detail: e.to_string(),
        shown: shown.clone(),
    })?;
    if !decoded.ok() {
        return Err(ResultError::NotOk {
            method,
            message: shown,
        });
    }
    decoded.settle().map_err(|detail| ResultError::Shape {
        method,
        detail,
        shown,
    })?;
    Ok(decoded)
}

pub fn decode_ping(value: Value) -> Result<PingResult, ResultError> {
    decode("ping", value)
}
pub fn decode_prompt(value: Value) -> Result<PromptResult, ResultError> {
    decode("prompt", value)
}
pub fn decode_state(value: Value) -> Result<StateResult, ResultError> {
    decode("state", value)
}
pub fn decode_close(value: Value) -> Result<CloseResult, ResultError> {
    decode("close", value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_is_one_line() {
        let line = Request::new(7, "prompt", Some(json!({"text": "a\nb"}))).to_line();
        assert_eq!(line.matches('\n').count(), 1);
        assert_eq!(
            serde_json::from_str::<Value>(line.trim_end()).unwrap(),
            json!({"jsonrpc": "2.0", "id": 7, "method": "prompt", "params": {"text": "a\nb"}})
        );
        assert!(!Request::new(1, "ping", None).to_line().contains("params"));
    }

    #[test]
    fn classifies_lines() {
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","id":3,"result":{"ok":true}}"#).unwrap(),
            Incoming::Response {
                id: 3,
                outcome: Ok(json!({"ok": true}))
            }
        );
        let err =
            parse_line(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"nope"}}"#);
        assert!(matches!(
            err,
            Ok(Incoming::Response {
                id: 4,
                outcome: Err(RpcError { code: -32601, .. })
            })
        ));
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","method":"log","params":{}}"#).unwrap(),
            Incoming::Notification {
                method: "log".into()
            }
        );
        for bad in [
            "hello",
            "{}",
            r#"{"jsonrpc":"1.0","id":1,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":"x","result":1}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":-1,"result":1}"#,
        ] {
            assert!(parse_line(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn blank_session_ids_are_unknown_or_refused() {
        for blank in ["", "  ", "\t\n"] {
            assert!(matches!(
                decode_prompt(json!({"ok": true, "session_id": blank, "reply": "r"})),
                Err(ResultError::Shape {
                    method: "prompt",
                    ..
                })
            ));
            let ping = decode_ping(json!({"ok": true, "session_id": blank})).unwrap();
            assert_eq!(ping.session_id, None);
            let state = decode_state(json!({"ok": true, "session_id": blank, "messages": []}));
            assert_eq!(state.unwrap().session_id, None);
        }
    }

    #[test]
    fn prompt_result_requires_session_id() {
        assert!(decode_prompt(json!({"ok": true, "session_id": "s", "reply": "r"})).is_ok());
        assert!(matches!(
            decode_prompt(json!({"ok": true, "reply": "r"})),
            Err(ResultError::Shape {
                method: "prompt",
                ..
            })
        ));
        assert_eq!(
            decode_prompt(json!({"ok": false, "error": "boom"})),
            Err(ResultError::NotOk {
                method: "prompt",
                message: "boom".into()
            })
        );
    }

    #[test]
    fn ping_state_close_shapes() {
        let ping =
            decode_ping(json!({"ok": true, "session_id": null, "cli_version": "1"})).unwrap();
        assert_eq!(ping.cli_version.as_deref(), Some("1"));
        let state =
            decode_state(json!({"ok": true, "session_id": "s", "messages": [1, 2]})).unwrap();
        assert_eq!(state.messages.len(), 2);
        assert!(decode_close(json!({"ok": true})).is_ok());
        assert!(decode_close(json!("ok")).is_err());
    }

    proptest::proptest! {
        #[test]
        fn parse_line_never_panics(line in "\\PC*") {
            let _ = parse_line(&line);
        }

        #[test]
        fn responses_round_trip(id in 0u64..u64::MAX, text in "\\PC*") {
            let line = json!({"jsonrpc": "2.0", "id": id, "result": {"reply": text}}).to_string();
            proptest::prop_assert_eq!(
                parse_line(&line).unwrap(),
                Incoming::Response { id, outcome: Ok(json!({"reply": text})) }
            );
        }
    }
}
