//! The declarative script: which answer the mock gives to which request.
//!
//! A script is an ordered list of turns. For every model request the mock looks at the request's
//! *latest input* (see [`LatestInput`]) and answers with the first turn whose `when` holds.
//! Matching is stateless, so a retried request gets the same answer and the order in which an
//! agent sends side requests does not matter.
//!
//! ```json
//! {
//!   "turns": [
//!     { "when": { "user_contains": "say hello" },
//!       "reply": { "tool_calls": [ { "tool": ["bash", "shell"], "arguments": { "command": "echo hello" } } ] } },
//!     { "when": { "tool_result_contains": "hello" },
//!       "reply": { "text": "done", "usage": { "input_tokens": 20, "output_tokens": 2 } } }
//!   ]
//! }
//! ```
//!
//! A script without turns answers every request with the text `pong`.

use serde::{Deserialize, Serialize};

/// Model id the mock reports when the script names none.
pub const DEFAULT_MODEL: &str = "mock-model";

/// A whole script. `Script::default()` answers `pong` to everything.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Model ids listed by `GET /v1/models`; defaults to [`DEFAULT_MODEL`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// Tried in order; the first turn whose `when` holds answers.
    #[serde(default)]
    pub turns: Vec<Turn>,
}

/// One scripted answer and the condition for giving it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default)]
    pub when: When,
    pub reply: Reply,
}

/// Conditions on a request; all given ones must hold. An empty `when` matches every request.
///
/// `user_*` conditions hold only when the latest input is user text, and `tool_result_*` only
/// when it is a tool result: so a turn that calls a tool is not matched again by the request
/// that carries that tool's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct When {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_equals: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_result_contains: Option<String>,
    /// The request's `model` field, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// What the assistant answers: thinking, then text, then tool calls, each optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallSpec>,
    /// Token counts reported for this answer; defaults to 10 input / 1 output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// A tool call to make. `tool` is one name or a list of candidates: the first candidate (in the
/// list's order, compared case-insensitively) that the request offers is called, under the
/// spelling the agent offered. If none is offered the request is answered with a 400 error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    pub tool: ToolNames,
    #[serde(default = "empty_object")]
    pub arguments: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

/// One tool name or an ordered list of candidate names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolNames {
    One(String),
    AnyOf(Vec<String>),
}

impl ToolNames {
    pub fn candidates(&self) -> &[String] {
        match self {
            ToolNames::One(name) => std::slice::from_ref(name),
            ToolNames::AnyOf(names) => names,
        }
    }
}

/// Fixed token counts reported for an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input_tokens: 10,
            output_tokens: 1,
        }
    }
}

/// The part of a request that turns are matched against, the same for every wire API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "text", rename_all = "snake_case")]
pub enum LatestInput {
    /// The conversation ends with a user message: its text parts, joined by newlines.
    UserText(String),
    /// The conversation ends with tool results: their text, joined by newlines.
    ToolResult(String),
    /// No user message or tool result was found.
    Nothing,
}

/// A tool as offered in a request: its name and, for the Responses API, its `type`
/// (`function`, `custom`, ...), which decides the shape of the call item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OfferedTool {
    pub name: String,
    pub kind: String,
}

/// A tool call resolved against the offered tools, ready to be rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedToolCall {
    pub tool: OfferedTool,
    pub arguments: serde_json::Value,
}

/// A fully resolved answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub thinking: Option<String>,
    pub text: Option<String>,
    pub tool_calls: Vec<ResolvedToolCall>,
    pub usage: Usage,
}

/// Why no answer could be given; rendered as a 400 JSON error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NoAnswer {
    #[error(
        "no scripted turn matches the request (latest input: {latest:?}, model: {model:?}); turns available: {turns}"
    )]
    NoTurnMatches {
        latest: LatestInput,
        model: Option<String>,
        turns: String,
    },
    #[error("turn {turn} wants to call one of {wanted:?}, but the request offers only {offered:?}")]
    ToolNotOffered {
        turn: usize,
        wanted: Vec<String>,
        offered: Vec<String>,
    },
}

impl When {
    fn holds(&self, latest: &LatestInput, model: Option<&str>) -> bool {
        let user = match latest {
            LatestInput::UserText(t) => Some(t.as_str()),
            _ => None,
        };
        let tool = match latest {
            LatestInput::ToolResult(t) => Some(t.as_str()),
            _ => None,
        };
        let model_ok = self.model.as_deref().is_none_or(|want| model == Some(want));
        let contains_ok = self
            .user_contains
            .as_deref()
            .is_none_or(|want| user.is_some_and(|t| t.contains(want)));
        let equals_ok = self
            .user_equals
            .as_deref()
            .is_none_or(|want| user.map(str::trim) == Some(want.trim()));
        let tool_ok = self
            .tool_result_contains
            .as_deref()
            .is_none_or(|want| tool.is_some_and(|t| t.contains(want)));
        model_ok && contains_ok && equals_ok && tool_ok
    }
}

impl Script {
    /// Parses a script from JSON text.
    pub fn from_json(text: &str) -> Result<Script, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The model ids to list.
    pub fn model_ids(&self) -> Vec<String> {
        if self.models.is_empty() {
            vec![DEFAULT_MODEL.to_string()]
        } else {
            self.models.clone()
        }
    }

    /// Chooses the answer for a request, or says why there is none.
    /// Returns the index of the matched turn (None for the built-in `pong`).
    pub fn answer(
        &self,
        latest: &LatestInput,
        model: Option<&str>,
        offered: &[OfferedTool],
    ) -> Result<(Option<usize>, Answer), NoAnswer> {
        if self.turns.is_empty() {
            let answer = Answer {
                thinking: None,
                text: Some("pong".to_string()),
                tool_calls: Vec::new(),
                usage: Usage::default(),
            };
            return Ok((None, answer));
        }
        let Some((index, turn)) = self
            .turns
            .iter()
            .enumerate()
            .find(|(_, t)| t.when.holds(latest, model))
        else {
            let turns = self
                .turns
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    format!(
                        "#{i} {}",
                        serde_json::to_string(&t.when).unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            return Err(NoAnswer::NoTurnMatches {
                latest: latest.clone(),
                model: model.map(str::to_string),
                turns,
            });
        };
        let mut tool_calls = Vec::new();
        for spec in &turn.reply.tool_calls {
            let wanted = spec.tool.candidates();
            let found = wanted
                .iter()
                .find_map(|w| offered.iter().find(|o| o.name.eq_ignore_ascii_case(w)));
            let Some(tool) = found else {
                return Err(NoAnswer::ToolNotOffered {
                    turn: index,
                    wanted: wanted.to_vec(),
                    offered: offered.iter().map(|o| o.name.clone()).collect(),
                });
            };
            tool_calls.push(ResolvedToolCall {
                tool: tool.clone(),
                arguments: spec.arguments.clone(),
            });
        }
        let answer = Answer {
            thinking: turn.reply.thinking.clone(),
            text: turn.reply.text.clone(),
            tool_calls,
            usage: turn.reply.usage.unwrap_or_default(),
        };
        Ok((Some(index), answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> OfferedTool {
        OfferedTool {
            name: name.to_string(),
            kind: "function".to_string(),
        }
    }

    fn script() -> Script {
        Script::from_json(
            r#"{"turns":[
              {"when":{"user_contains":"hello"},"reply":{"tool_calls":[{"tool":["bash","shell"],"arguments":{"command":"echo hello"}}]}},
              {"when":{"tool_result_contains":"hello"},"reply":{"text":"done","usage":{"input_tokens":5,"output_tokens":2}}}
            ]}"#,
        )
        .unwrap()
    }

    #[test]
    fn empty_script_answers_pong() {
        let (turn, answer) = Script::default()
            .answer(&LatestInput::Nothing, None, &[])
            .unwrap();
        assert_eq!(turn, None);
        assert_eq!(answer.text.as_deref(), Some("pong"));
        assert_eq!(
            answer.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 1
            }
        );
    }

    #[test]
    fn user_turn_picks_first_offered_candidate() {
        let offered = [tool("read"), tool("Shell"), tool("bash")];
        let latest = LatestInput::UserText("say hello".into());
        let (turn, answer) = script().answer(&latest, None, &offered).unwrap();
        assert_eq!(turn, Some(0));
        // "bash" comes first in the candidate list, so it wins over the earlier-offered "Shell".
        assert_eq!(answer.tool_calls[0].tool.name, "bash");
        let (_, answer) = script().answer(&latest, None, &[tool("Shell")]).unwrap();
        assert_eq!(answer.tool_calls[0].tool.name, "Shell");
    }

    #[test]
    fn tool_result_does_not_match_user_turn() {
        let latest = LatestInput::ToolResult("hello\n".into());
        let (turn, answer) = script().answer(&latest, None, &[]).unwrap();
        assert_eq!(turn, Some(1));
        assert_eq!(answer.text.as_deref(), Some("done"));
        assert_eq!(answer.usage.output_tokens, 2);
    }

    #[test]
    fn no_match_names_what_was_seen() {
        let err = script()
            .answer(&LatestInput::UserText("bye".into()), Some("m"), &[])
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("bye") && text.contains("user_contains"),
            "{text}"
        );
    }

    #[test]
    fn missing_tool_is_an_error() {
        let latest = LatestInput::UserText("hello".into());
        let err = script().answer(&latest, None, &[tool("read")]).unwrap_err();
        assert!(
            matches!(err, NoAnswer::ToolNotOffered { turn: 0, .. }),
            "{err}"
        );
    }

    #[test]
    fn model_condition_and_exact_text() {
        let s = Script::from_json(
            r#"{"turns":[{"when":{"user_equals":"hi","model":"a"},"reply":{"text":"A"}}]}"#,
        )
        .unwrap();
        assert!(
            s.answer(&LatestInput::UserText(" hi ".into()), Some("a"), &[])
                .is_ok()
        );
        assert!(
            s.answer(&LatestInput::UserText("hi there".into()), Some("a"), &[])
                .is_err()
        );
        assert!(
            s.answer(&LatestInput::UserText("hi".into()), Some("b"), &[])
                .is_err()
        );
    }
}
