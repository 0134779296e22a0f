//! opencode's own record of a turn's model requests, for the usage its ACP answers leave out.
//!
//! `opencode acp` answers each prompt with the usage of the turn's last model request only,
//! and its `usage_update` notifications carry the context's size and the session's cost, not
//! tokens: a turn that ran a tool (two requests, or more) was under-counted. opencode records
//! every request on an assistant message of its own, with its model and tokens, and `opencode
//! acp` serves that record on the same local HTTP server its terminal UI runs (`--port`). So
//! for `opencode acp` the provider chooses the port, and after each turn reads the session's
//! messages there: one usage per assistant message answering the turn's prompt.

use std::time::Duration;

use serde_json::Value;
use wujie_protocol::event::Usage;

use crate::opencode::{
    first_positional, free_port, request_usage, server_address, with_server_auth,
};

/// How long reading the record may take before the turn's usage falls back to the answer's.
const READ_LIMIT: Duration = Duration::from_secs(5);

/// opencode's server for an `opencode acp` agent command.
pub struct OpencodeRecord {
    server: String,
    client: reqwest::Client,
}

/// `command` as the provider runs it, and opencode's record when the command is `opencode
/// acp` (its server on a port the provider chose, or on the user's own `--port`). Where the
/// record cannot be read (`--port 0`), why: usage then counts what the answers say.
pub fn plan(command: &[String]) -> (Vec<String>, Result<Option<OpencodeRecord>, String>) {
    let mut command = command.to_vec();
    if !is_opencode_acp(&command) {
        return (command, Ok(None));
    }
    let mut args = command.split_off(1);
    let server = match free_port() {
        Ok(port) => server_address(&mut args, port).map_err(|_| {
            "its --port is 0 or not a port number, so where its server listens is unknown; drop --port, or give a port number".to_owned()
        }),
        Err(e) => Err(format!("no port is free for its server: {e}")),
    };
    command.extend(args);
    let record = server.and_then(|server| {
        reqwest::Client::builder()
            .no_proxy()
            .build()
            .map(|client| Some(OpencodeRecord { server, client }))
            .map_err(|e| format!("no HTTP client: {e}"))
    });
    (command, record)
}

/// `opencode … acp …`: the program is opencode and its command is `acp`.
fn is_opencode_acp(command: &[String]) -> bool {
    let Some((program, args)) = command.split_first() else {
        return false;
    };
    std::path::Path::new(program)
        .file_name()
        .is_some_and(|name| name == "opencode")
        && first_positional(args) == Some("acp")
}

impl OpencodeRecord {
    /// The usage of each model request that answered the session's last prompt, as opencode
    /// recorded it (its `provider` left for the mapper, which names the agent).
    pub async fn turn_usage(&self, session_id: &str) -> Result<Vec<Usage>, String> {
        let url = format!("{}/session/{session_id}/message", self.server);
        let read = async {
            let response = with_server_auth(self.client.get(&url))
                .send()
                .await
                .map_err(|e| format!("opencode's server at {} did not answer: {e}", self.server))?;
            if !response.status().is_success() {
                return Err(format!(
                    "opencode's server at {} answered {} for the session's messages",
                    self.server,
                    response.status()
                ));
            }
            response
                .json::<Value>()
                .await
                .map_err(|e| format!("opencode's server sent messages that are not JSON: {e}"))
        };
        let messages = tokio::time::timeout(READ_LIMIT, read).await.map_err(|_| {
            format!(
                "opencode's server at {} did not answer in time",
                self.server
            )
        })??;
        turn_usage_in(&messages)
    }
}

/// The usage of each assistant message that answers the last user message of `messages`
/// (opencode's `[{info, parts}]`), in order, with no provider; requests that counted no tokens
/// are left out.
pub fn turn_usage_in(messages: &Value) -> Result<Vec<Usage>, String> {
    let infos: Vec<&serde_json::Map<String, Value>> = messages
        .as_array()
        .ok_or("opencode's record of the session is not a list of messages")?
        .iter()
        .filter_map(|m| m.get("info").and_then(Value::as_object))
        .collect();
    fn role(info: &serde_json::Map<String, Value>) -> Option<&str> {
        info.get("role").and_then(Value::as_str)
    }
    let prompt = infos
        .iter()
        .rev()
        .find(|info| role(info) == Some("user"))
        .and_then(|info| info.get("id").and_then(Value::as_str))
        .ok_or("opencode's record of the session holds no prompt")?;
    Ok(infos
        .iter()
        .filter(|info| {
            role(info) == Some("assistant")
                && info.get("parentID").and_then(Value::as_str) == Some(prompt)
        })
        .filter_map(|info| {
            let tokens = info.get("tokens").and_then(Value::as_object)?;
            let model = info
                .get("modelID")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            let usage = request_usage(tokens, String::new(), model.to_owned());
            (usage.input_tokens + usage.output_tokens > 0).then_some(usage)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn assistant(id: &str, parent: &str, input: u64, output: u64) -> Value {
        json!({"info": {
            "id": id, "role": "assistant", "parentID": parent, "modelID": "m1",
            "providerID": "p", "tokens": {"input": input, "output": output, "reasoning": 1,
            "cache": {"read": 3, "write": 0}}
        }, "parts": []})
    }

    fn user(id: &str) -> Value {
        json!({"info": {"id": id, "role": "user"}, "parts": []})
    }

    #[test]
    fn each_request_answering_the_last_prompt_counts_and_earlier_turns_do_not() {
        let messages = json!([
            user("u1"),
            assistant("a1", "u1", 100, 100),
            user("u2"),
            assistant("a2", "u2", 10, 1),
            assistant("a3", "u2", 20, 2),
            // A request that ended before the model counted anything.
            json!({"info": {"id": "a4", "role": "assistant", "parentID": "u2",
                            "tokens": {"input": 0, "output": 0}}}),
        ]);
        let usage = turn_usage_in(&messages).expect("usage");
        let counts: Vec<_> = usage
            .iter()
            .map(|u| {
                (
                    u.model.as_str(),
                    u.input_tokens,
                    u.output_tokens,
                    u.cache_read_tokens,
                )
            })
            .collect();
        assert_eq!(counts, [("m1", 10, 2, 3), ("m1", 20, 3, 3)]);
    }

    #[test]
    fn a_record_without_a_prompt_or_not_a_list_says_so() {
        let no_prompt = turn_usage_in(&json!([assistant("a", "u", 1, 1)]));
        assert_eq!(
            no_prompt,
            Err("opencode's record of the session holds no prompt".to_owned())
        );
        assert!(turn_usage_in(&json!({"error": "x"})).is_err());
    }

    /// A record whose server answers each request with `response` once.
    async fn record_answering(response: &'static str) -> OpencodeRecord {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let server = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request).await;
                let _ = stream.write_all(response.as_bytes()).await;
            }
        });
        OpencodeRecord {
            server,
            client: reqwest::Client::new(),
        }
    }

    #[tokio::test]
    async fn a_record_that_cannot_be_read_says_why() {
        let refused = record_answering(
            "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        )
        .await;
        let why = refused.turn_usage("ses_1").await.unwrap_err();
        assert!(why.contains("answered 404 Not Found"), "{why}");
        let garbled = record_answering(
            "HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\n{x]",
        )
        .await;
        let why = garbled.turn_usage("ses_1").await.unwrap_err();
        assert!(why.contains("not JSON"), "{why}");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let gone = OpencodeRecord {
            server: format!("http://{}", listener.local_addr().expect("address")),
            client: reqwest::Client::new(),
        };
        drop(listener);
        let why = gone.turn_usage("ses_1").await.unwrap_err();
        assert!(why.contains("did not answer"), "{why}");
    }

    #[test]
    fn only_opencode_acp_is_given_a_port_and_a_given_port_is_kept() {
        let args = |list: &[&str]| list.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let (command, record) = plan(&args(&["/bin/opencode", "acp"]));
        assert_eq!(
            &command[..3],
            &args(&["/bin/opencode", "acp", "--port"])[..]
        );
        assert!(matches!(record, Ok(Some(_))));
        let (command, record) = plan(&args(&["opencode", "acp", "--port", "4100"]));
        assert_eq!(command, args(&["opencode", "acp", "--port", "4100"]));
        assert_eq!(
            record.expect("a record").expect("opencode").server,
            "http://127.0.0.1:4100"
        );
        let (command, record) = plan(&args(&["opencode", "acp", "--port", "0"]));
        assert_eq!(command, args(&["opencode", "acp", "--port", "0"]));
        assert!(record.is_err_and(|why| why.contains("port")));
        for other in [
            &["gemini", "--acp"][..],
            &["hermes", "acp"],
            &["opencode", "run"],
        ] {
            let (command, record) = plan(&args(other));
            assert_eq!(command, args(other));
            assert!(matches!(record, Ok(None)));
        }
    }
}
