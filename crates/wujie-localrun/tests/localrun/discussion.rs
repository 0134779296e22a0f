//! Whole discussions, as `wujie discuss` runs them, against the profile's embedded server: a v2
//! adapter (an `sh` script on pipes) plans, its entries are kept or filtered, its native
//! handoff is accepted (the discussion becomes an issue and a run, and what follows goes to the
//! run) or declined (the discussion stays open, and a later session with its native id resumes
//! it).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wujie_builtins::BUILTINS;
use wujie_client::ClientError;
use wujie_delivery::reporter::ReporterNotice;
use wujie_localrun::LocalRunError;
use wujie_localrun::connection::Connection;
use wujie_localrun::discuss::{ConfirmMode, DiscussOutcome, DiscussRequest, discuss};
use wujie_localrun::install::install;
use wujie_localrun::registry::Provider;
use wujie_protocol::api::{DiscussionStatus, RunStatus};
use wujie_protocol::control::{CONTROL_FRAME_PREFIX, HandoffDecision};
use wujie_protocol::event::{HandoffMode, MessageKind};
use wujie_store::outbox::Outbox;

use super::{Home, V1, V2};

/// Plans in a discussion (one line of each kind the server keeps or filters), asks to hand the
/// plan off, writes the answer it gets on stdin to `decision`, then works on. Its environment
/// goes to `env`. Given an argument (a native session id, as a resume passes it), it says one
/// thing more before the handoff, keyed by its pid.
const PLANNER: &str = r##"#!/bin/sh
env > env
say() { printf '%s\n' "$1"; }
say '{"event":"session","session_id":"native-7"}'
say '{"event":"message","type":"user_input","content":"How should we store the data?","source":"planner","source_key":"t1:user"}'
say '{"event":"message","type":"thinking","content":"weighing the options","source":"planner","source_key":"t1:thinking"}'
say '{"event":"message","type":"question","content":"SQLite or PostgreSQL?","source":"planner","source_key":"t1:question"}'
say '{"event":"message","type":"user_input","content":"SQLite","source":"planner","source_key":"t2:user"}'
say '{"event":"message","type":"tool_use","tool":"read","input":{"path":"README"},"source":"planner","source_key":"t2:tool"}'
say '{"event":"message","type":"plan","content":"# Use SQLite for storage\n\n- one file per profile","source":"planner","source_key":"t2:plan"}'
say '{"usage":{"provider":"planner","model":"m","input_tokens":12,"output_tokens":34}}'
say '{"event":"message","type":"final","content":"Plan ready.","source":"planner","source_key":"t2:final"}'
if [ -n "$1" ]; then
  say "{\"event\":\"message\",\"type\":\"user_input\",\"content\":\"once more\",\"source\":\"planner\",\"source_key\":\"again:$$\"}"
fi
say '{"event":"handoff_ready","request_id":"handoff-1","mode":"current_context"}'
IFS= read -r decision
printf '%s\n' "$decision" > decision
say '{"event":"message","type":"text","content":"working on it","source":"planner","source_key":"t3:text"}'
say '{"event":"message","type":"final","content":"Done.","source":"planner","source_key":"t3:final"}'
"##;

/// What the discussion keeps of the planner's first session, in order.
fn planned() -> Vec<(MessageKind, String)> {
    [
        (MessageKind::UserInput, "How should we store the data?"),
        (MessageKind::Question, "SQLite or PostgreSQL?"),
        (MessageKind::UserInput, "SQLite"),
        (
            MessageKind::Plan,
            "# Use SQLite for storage\n\n- one file per profile",
        ),
        (MessageKind::Final, "Plan ready."),
    ]
    .into_iter()
    .map(|(kind, content)| (kind, content.to_owned()))
    .collect()
}

/// Events the reporter could not deliver, as the user would have been told of them.
#[derive(Default)]
struct Told {
    refused: Mutex<Vec<String>>,
}

impl ReporterNotice for Told {
    fn refused(&self, item: &str, reason: &str) {
        self.refused
            .lock()
            .unwrap()
            .push(format!("{item}: {reason}"));
    }

    fn retrying(&self, _error: &ClientError, _pending: i64) {}
}

/// The planner, installed as `wujie local-run provider install` does and resolved by name.
fn planner(home: &Home) -> Provider {
    let source = home.path("src-planner");
    let capabilities = serde_json::json!({"native_plan_handoff": true});
    home.plugin_at(&source, "planner", V2, capabilities, PLANNER);
    install(&home.profile, BUILTINS, &source).unwrap();
    home.registry().resolve("planner").unwrap()
}

struct Session<'a> {
    home: &'a Home,
    conn: Connection,
    provider: Provider,
    work: std::path::PathBuf,
}

impl<'a> Session<'a> {
    async fn new(home: &'a Home) -> Session<'a> {
        let provider = planner(home);
        let conn = Connection::embedded(&home.profile).await.unwrap();
        let work = home.path("work");
        Session {
            home,
            conn,
            provider,
            work,
        }
    }

    /// `wujie discuss -- planner ARGS` with `--confirm CONFIRM`, its input not a terminal.
    async fn discuss(
        &self,
        args: &[&str],
        confirm: ConfirmMode,
    ) -> Result<DiscussOutcome, LocalRunError> {
        let outbox = Outbox::open(&self.home.profile.outbox_path())
            .await
            .unwrap();
        let command = self
            .provider
            .adapter_command(Path::new("wujie"), None)
            .unwrap();
        let told = Arc::new(Told::default());
        let outcome = discuss(
            &self.conn,
            outbox,
            &self.provider,
            command,
            DiscussRequest {
                provider_arg: "planner".to_owned(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
                cwd: self.work.clone(),
                resume: None,
                confirm,
                stdin_is_terminal: false,
                drain_timeout: Duration::from_secs(10),
            },
            told.clone(),
        )
        .await;
        assert_eq!(*told.refused.lock().unwrap(), Vec::<String>::new());
        outcome
    }

    /// The `WUJIE_*` variables the adapter saw last.
    fn adapter_env(&self) -> BTreeMap<String, String> {
        std::fs::read_to_string(self.work.join("env"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .filter(|(name, _)| name.starts_with("WUJIE_"))
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect()
    }

    /// The control frame the adapter read on its stdin last.
    fn decision(&self) -> HandoffDecision {
        let line = std::fs::read(self.work.join("decision")).unwrap();
        let payload = line
            .strip_prefix(CONTROL_FRAME_PREFIX)
            .and_then(|frame| frame.strip_suffix(b"\n"))
            .unwrap_or_else(|| panic!("not a control frame: {line:?}"));
        HandoffDecision::parse_payload(payload).unwrap()
    }

    async fn entries(&self, discussion_id: &str) -> Vec<(MessageKind, String)> {
        let discussion = self
            .conn
            .client
            .get_discussion(discussion_id)
            .await
            .unwrap();
        discussion
            .entries
            .into_iter()
            .map(|e| (e.kind, e.content))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_handoff_makes_the_discussion_an_issue_whose_run_gets_the_rest() {
    let home = Home::new();
    let session = Session::new(&home).await;
    let outcome = session.discuss(&[], ConfirmMode::Accept).await.unwrap();
    assert!(!outcome.resumed && !outcome.cancelled);
    assert_eq!(outcome.exit_code, 0);
    assert_eq!(outcome.summary.pending, 0);
    let promoted = outcome
        .promoted
        .as_ref()
        .expect("the discussion was promoted");
    assert_eq!(promoted.status, RunStatus::Succeeded);

    // The adapter reported into the discussion, bound to nothing else.
    let env = session.adapter_env();
    assert_eq!(
        env.get("WUJIE_LOCALRUN_SESSION_ID"),
        Some(&outcome.discussion_id)
    );
    assert_eq!(env.get("WUJIE_RUN_ID"), None);
    assert_eq!(env.get("WUJIE_ISSUE_ID"), None);
    assert_eq!(env["WUJIE_LOCALRUN_PROVIDER_PROTOCOL"], V2);
    assert_eq!(env["WUJIE_SERVER_URL"], session.conn.url);

    // Kept: what the user and the agent said, the plan and the final; filtered: thinking and
    // tool calls. What came after the handoff is not the discussion's.
    let client = &session.conn.client;
    let discussion = client.get_discussion(&outcome.discussion_id).await.unwrap();
    assert_eq!(discussion.status, DiscussionStatus::Promoted);
    assert_eq!(discussion.issue_key.as_deref(), Some(&*promoted.issue_key));
    assert_eq!(discussion.native_session_ids, ["native-7"]);
    assert_eq!(discussion.usage.len(), 1);
    assert_eq!(discussion.usage[0].input_tokens, 12);
    assert_eq!(session.entries(&outcome.discussion_id).await, planned());

    // The issue is the plan.
    let issue = client.get_issue(&promoted.issue_key).await.unwrap();
    assert_eq!(issue.title, "Use SQLite for storage");
    assert!(
        issue
            .description
            .starts_with("# Use SQLite for storage\n\n- one file per profile"),
        "{}",
        issue.description
    );
    assert!(
        issue.description.contains(&format!(
            "Promoted from discussion {} (planner)",
            outcome.discussion_id
        )),
        "{}",
        issue.description
    );

    // The adapter was told where it continues, and did.
    assert_eq!(
        session.decision(),
        HandoffDecision {
            request_id: "handoff-1".to_owned(),
            accepted: true,
            mode: Some(HandoffMode::CurrentContext),
            issue_id: Some(issue.id.clone()),
            issue_key: Some(promoted.issue_key.clone()),
            run_id: Some(promoted.run_id.clone()),
            error: None,
        }
    );
    let run = client.get_run(&promoted.run_id).await.unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
    assert_eq!(run.exit_code, Some(0));
    let messages: Vec<_> = run
        .messages
        .iter()
        .map(|m| (m.kind, m.content.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        messages,
        [
            (MessageKind::Text, "working on it".to_owned()),
            (MessageKind::Final, "Done.".to_owned())
        ]
    );

    // A promoted discussion is not resumed: its issue is where the work goes on.
    let err = session
        .discuss(&["native-7"], ConfirmMode::Accept)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LocalRunError::DiscussionPromoted { issue_key, .. } if *issue_key == promoted.issue_key),
        "{err:?}"
    );
    session.conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_handoff_leaves_the_discussion_open_for_its_native_session_to_resume() {
    let home = Home::new();
    let session = Session::new(&home).await;
    let first = session.discuss(&[], ConfirmMode::Reject).await.unwrap();
    assert!(first.promoted.is_none());
    assert_eq!(first.exit_code, 0);

    assert_eq!(
        session.decision(),
        HandoffDecision {
            request_id: "handoff-1".to_owned(),
            accepted: false,
            mode: Some(HandoffMode::CurrentContext),
            issue_id: None,
            issue_key: None,
            run_id: None,
            error: Some("declined (--confirm reject)".to_owned()),
        }
    );
    // The work after the handoff stays in the discussion (its final; the text is filtered).
    let mut expected = planned();
    expected.push((MessageKind::Final, "Done.".to_owned()));
    assert_eq!(session.entries(&first.discussion_id).await, expected);
    let discussion = session
        .conn
        .client
        .get_discussion(&first.discussion_id)
        .await
        .unwrap();
    assert_eq!(discussion.status, DiscussionStatus::Open);

    // The native session id among the arguments finds the open discussion. The session says
    // everything again: only what is new is stored.
    let resumed = session
        .discuss(&["native-7"], ConfirmMode::Reject)
        .await
        .unwrap();
    assert!(resumed.resumed);
    assert_eq!(resumed.discussion_id, first.discussion_id);
    assert_eq!(
        session.adapter_env().get("WUJIE_LOCALRUN_SESSION_ID"),
        Some(&first.discussion_id)
    );
    expected.push((MessageKind::UserInput, "once more".to_owned()));
    assert_eq!(session.entries(&first.discussion_id).await, expected);
    let discussion = session
        .conn
        .client
        .get_discussion(&first.discussion_id)
        .await
        .unwrap();
    assert_eq!(discussion.native_session_ids, ["native-7"]);
    assert_eq!(discussion.usage.len(), 1, "usage counted twice");
    session.conn.close().await;
}

#[tokio::test]
async fn a_provider_of_the_first_protocol_cannot_discuss() {
    let home = Home::new();
    let source = home.plugin("issuefirst");
    install(&home.profile, BUILTINS, &source).unwrap();
    let provider = home.registry().resolve("issuefirst").unwrap();
    assert_eq!(provider.manifest.protocol.as_str(), V1);
    let err = wujie_localrun::discuss::require_v2(&provider).unwrap_err();
    assert!(
        matches!(&err, LocalRunError::IssueFirstProvider(name) if name == "issuefirst"),
        "{err:?}"
    );
}
