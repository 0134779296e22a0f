//! The MCP server driven by an MCP client in-process over a duplex pipe. The same server over
//! the stdio of a real process is `wujie mcp`, driven by the CLI's tests (commands/branch_owner).

use std::sync::Arc;

use super::common::TestEnv;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use wujie_commondev::Lifetime;

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> (bool, Value) {
    let Value::Object(arguments) = args else {
        panic!("arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap();
    let text = match result.content.first() {
        Some(ContentBlock::Text(text)) => text.text.clone(),
        other => panic!("{tool} answered {other:?}"),
    };
    (
        result.is_error != Some(true),
        serde_json::from_str(&text).unwrap(),
    )
}

async fn exercise(client: &RunningService<RoleClient, ()>, env: &TestEnv) {
    let info = client.peer_info().expect("server info after initialize");
    let name = info.server_info.as_ref().map(|i| i.name.as_str());
    assert_eq!(name, Some("wujie-commondev"));
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "commondev_branch_close",
            "commondev_branch_list",
            "commondev_branch_open",
            "commondev_branch_prompt",
            "commondev_branch_state"
        ]
    );
    let workdir = env.workdir.display().to_string();
    let (ok, opened) = call(
        client,
        "commondev_branch_open",
        json!({"project": "X", "branch": "feat/a", "agent_cli": "agent", "workdir": workdir, "issue": "WUJ-3"}),
    )
    .await;
    assert!(ok, "{opened}");
    assert_eq!(opened["label"], "br-X-feat-a");
    assert_eq!(opened["issue"], "WUJ-3");
    assert_eq!(opened["live"], true);
    let real = opened["session_id"].as_str().unwrap().to_owned();
    assert!(real.starts_with("alpha_"), "{opened}");

    let (ok, reply) = call(
        client,
        "commondev_branch_prompt",
        json!({"project": "X", "branch": "feat/a", "text": "hi"}),
    )
    .await;
    assert!(ok, "{reply}");
    assert_eq!(reply["reply"], format!("alpha({real}) heard: hi"));
    // Long-lived server: the same sidecar (same pid-derived id) answers the next call.
    let (_, reply) = call(
        client,
        "commondev_branch_prompt",
        json!({"project": "X", "branch": "feat/a", "text": "again"}),
    )
    .await;
    assert_eq!(reply["session_id"], real.as_str());
    let (ok, state) = call(
        client,
        "commondev_branch_state",
        json!({"project": "X", "branch": "feat/a"}),
    )
    .await;
    assert!(ok);
    assert_eq!(state["messages"].as_array().unwrap().len(), 4);
    let (ok, listed) = call(client, "commondev_branch_list", json!({})).await;
    assert!(ok);
    assert_eq!(listed["branches"][0]["label"], "br-X-feat-a");
    let (ok, closed) = call(
        client,
        "commondev_branch_close",
        json!({"project": "X", "branch": "feat/a"}),
    )
    .await;
    assert!(ok);
    assert_eq!(closed["sidecar_closed"], true);

    let (ok, err) = call(
        client,
        "commondev_branch_prompt",
        json!({"project": "X", "branch": "nope", "text": "x"}),
    )
    .await;
    assert!(!ok);
    assert!(
        err["error"].as_str().unwrap().contains("br-X-nope"),
        "{err}"
    );
}

#[tokio::test]
async fn mcp_server_in_process_over_a_duplex_pipe() {
    let env = TestEnv::new();
    env.install("alpha", "agent");
    let sessions = Arc::new(env.sessions(Lifetime::KeepAlive));
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(wujie_commondev::mcp::serve(sessions.clone(), server_side));
    let client = ().serve(client_side).await.unwrap();
    exercise(&client, &env).await;
    // Open a second branch and disconnect: the server closes its sidecar on the way out.
    let workdir = env.workdir.display().to_string();
    let (ok, _) = call(
        &client,
        "commondev_branch_open",
        json!({"project": "X", "branch": "b2", "agent_cli": "agent", "workdir": workdir}),
    )
    .await;
    assert!(ok);
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
    assert!(sessions.list().unwrap().iter().all(|b| !b.live));
}
