use serde_json::Value;
use wujie_protocol::api::{AuthorKind, CreateComment, IngestBatch, IssueStatus};
use wujie_protocol::event::{Event, Message, MessageKind};

use super::harness::{Harness, message, status_of, usage};

#[tokio::test]
async fn issue_keys_follow_a_sequence_and_resolve_by_key_or_id() {
    let h = Harness::start().await;
    let ws = h.admin.workspace().await.expect("workspace");
    assert_eq!((ws.name.as_str(), ws.key_prefix.as_str()), ("Wujie", "WUJ"));

    let keys: Vec<String> = {
        let mut keys = Vec::new();
        for t in ["one", "two", "three"] {
            keys.push(h.issue(t).await.key);
        }
        keys
    };
    assert_eq!(keys, ["WUJ-1", "WUJ-2", "WUJ-3"]);

    let list = h.admin.list_issues().await.expect("list");
    let listed: Vec<&str> = list.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(listed, ["WUJ-3", "WUJ-2", "WUJ-1"]);
    assert!(list.iter().all(|i| i.status == IssueStatus::Open));

    let by_lower = h.admin.get_issue("wuj-2").await.expect("by key");
    assert_eq!(by_lower.title, "two");
    let by_id = h.admin.get_issue(&by_lower.id).await.expect("by id");
    assert_eq!(by_id.key, "WUJ-2");

    let missing = h.admin.get_issue("WUJ-99").await.expect_err("missing");
    assert_eq!(status_of(&missing), 404);
    assert!(missing.to_string().contains("WUJ-99"), "{missing}");
    h.stop().await;
}

#[tokio::test]
async fn issue_detail_has_comments_runs_messages_and_usage() {
    let h = Harness::start().await;
    let issue = h.issue("shape").await;
    h.admin
        .add_comment(
            &issue.key,
            &CreateComment {
                body: "hello from a person".into(),
            },
        )
        .await
        .expect("comment");
    let run = h.run_on(&issue.key).await;
    let mut tool = message(MessageKind::ToolUse, "k3", "");
    if let Event::Message(Message {
        content,
        tool: t,
        input,
        ..
    }) = &mut tool.event
    {
        *content = None;
        *t = Some("bash".into());
        *input = Some(serde_json::from_str(r#"{"command":"ls"}"#).expect("json"));
    }
    let batch = IngestBatch {
        items: vec![
            message(MessageKind::UserInput, "k1", "please fix it"),
            message(MessageKind::Thinking, "k2", "hmm"),
            tool,
            message(MessageKind::Final, "k4", "fixed"),
            usage("u1", 100),
        ],
    };
    h.admin
        .ingest_run_events(&run.run.id, &batch)
        .await
        .expect("ingest");

    let raw: Value = reqwest::Client::new()
        .get(format!("{}/api/v1/issues/{}", h.url(), issue.key))
        .bearer_auth(&h.admin_token)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&raw),
        [
            "comments",
            "created_at",
            "description",
            "discussion_id",
            "id",
            "key",
            "runs",
            "status",
            "title"
        ]
    );
    assert_eq!(raw["key"], "WUJ-1");
    assert_eq!(raw["status"], "in_progress");
    let r = &raw["runs"][0];
    assert_eq!(
        keys(r),
        [
            "cwd",
            "ended_at",
            "error",
            "exit_code",
            "failure_kind",
            "git",
            "id",
            "issue_id",
            "issue_key",
            "messages",
            "messages_complete",
            "provider",
            "started_at",
            "status",
            "usage"
        ]
    );
    assert_eq!(r["status"], "running");
    let types: Vec<&str> = r["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["type"].as_str().expect("type"))
        .collect();
    assert_eq!(types, ["user_input", "thinking", "tool_use", "final"]);
    assert_eq!(r["messages"][2]["input"]["command"], "ls");
    assert_eq!(r["messages"][2]["tool"], "bash");
    assert_eq!(r["usage"][0]["input_tokens"], 100);
    assert_eq!(r["usage"][0]["model"], "demo");

    let detail = h.admin.get_issue(&issue.key).await.expect("detail");
    let comments: Vec<(AuthorKind, &str, Option<&str>)> = detail
        .comments
        .iter()
        .map(|c| (c.author_kind, c.body.as_str(), c.run_id.as_deref()))
        .collect();
    assert_eq!(
        comments,
        [
            (AuthorKind::User, "hello from a person", None),
            (AuthorKind::User, "please fix it", Some(run.run.id.as_str())),
            (AuthorKind::Agent, "fixed", Some(run.run.id.as_str())),
        ]
    );
    h.stop().await;
}

#[tokio::test]
async fn unknown_routes_and_bad_bodies_answer_with_api_errors() {
    let h = Harness::start().await;
    let http = reqwest::Client::new();
    let resp = http
        .post(format!("{}/api/v1/issues", h.url()))
        .bearer_auth(&h.admin_token)
        .header("content-type", "application/json")
        .body(r#"{"nope":1}"#)
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 422);
    let body: Value = resp.json().await.expect("json");
    assert!(
        body["error"].as_str().expect("error").contains("title"),
        "{body}"
    );

    let resp = http
        .get(format!("{}/api/v1/nothing", h.url()))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 404);
    let body: Value = resp.json().await.expect("json");
    assert!(body["error"].is_string());
    h.stop().await;
}

/// The whole OpenAPI document, pinned: a route, parameter or schema that changes shows up in
/// review as a change of `snapshots/…openapi_document.snap`.
#[tokio::test]
async fn openapi_document() {
    let h = Harness::start().await;
    let doc: Value = reqwest::get(format!("{}/api/v1/openapi.json", h.url()))
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    h.stop().await;
    // Sorted, so that the order in which the document lists its maps cannot move the snapshot.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("openapi_document", doc);
    });
}

/// A 5 MB title made every listing of issues slow for everyone: it is refused, with the limit.
#[tokio::test]
async fn a_title_over_the_limit_is_refused_with_the_limit_named() {
    let h = Harness::start().await;
    let huge = wujie_protocol::api::CreateIssue {
        title: "t".repeat(5 * 1024 * 1024),
        description: String::new(),
        discussion_id: None,
    };
    let err = h.admin.create_issue(&huge).await.expect_err("refused");
    let wujie_client::ClientError::Status {
        status, message, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*status, reqwest::StatusCode::BAD_REQUEST);
    assert!(
        message.contains("title") && message.contains("over the limit of 1024 bytes"),
        "{message}"
    );
    h.stop().await;
}
