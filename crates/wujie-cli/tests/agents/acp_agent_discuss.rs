//! `wujie discuss -- acp -- grok agent stdio` on a real PTY: a discussion with a real agent over
//! the Agent Client Protocol, promoted with `/wujie`, goes on as the new issue's run in the same
//! agent session. Grok Build answers from the mock model server (`pong` to every request).
//!
//! A test fails when its agent is not installed, saying to run `scripts/agents/install NAME`,
//! unless `WUJIE_SKIP_AGENTS` lists the agent (or says `all`).

use wujie_mockllm::Script;
use wujie_mockllm::agents::{Agent, agents_dir};
use wujie_testkit::run_output::messages_of;
use wujie_testkit::term::Term;
use wujie_testkit::{Env, WUJIE};

#[test]
fn a_discussion_with_grok_over_acp_becomes_an_issue_and_goes_on_in_the_same_session() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = runtime
        .block_on(Agent::Grok.require_mock(Script::default()))
        .unwrap_or_else(|error| panic!("{error}"))
    else {
        return;
    };
    let acp = home.acp().expect("grok speaks ACP");
    let env = Env::new();
    // The agent runs in its own home and work directory, found on its own PATH.
    let path = format!(
        "PATH={}:{}",
        agents_dir().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut args: Vec<String> = ["discuss", "--", "acp", "--allow", "once", "--", "env"]
        .map(str::to_owned)
        .to_vec();
    args.push(format!("HOME={}", home.home().display()));
    args.push(path);
    args.extend(home.envs().iter().map(|(k, v)| format!("{k}={v}")));
    args.extend(["sh", "-c", "cd \"$0\" && exec \"$@\""].map(str::to_owned));
    args.push(home.workdir().display().to_string());
    args.push(acp.get_program().to_str().expect("utf-8 path").to_owned());
    args.extend(
        acp.get_args()
            .map(|a| a.to_str().expect("utf-8 argument").to_owned()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let mut term = Term::spawn(&env, WUJIE, &args);
    term.wait_text("Ctrl+D ends");
    term.say("plan the storage layer", "pong");
    term.create_issue_from_menu("WUJ-1");
    term.send(b"go ahead");
    term.wait_text("> go ahead");
    term.send(b"\r");
    term.wait_for("the second answer", |s| s.matches("pong").count() >= 2);
    term.send(b"\x04");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}\n{}", term.contents());
    runtime.block_on(mock.shutdown());

    let discussions = env.json(&["discussion", "list"]);
    assert_eq!(discussions.as_array().unwrap().len(), 1, "{discussions:#}");
    assert_eq!(discussions[0]["status"], "promoted");
    let shown = env.json(&["discussion", "show", discussions[0]["id"].as_str().unwrap()]);
    let said: Vec<(&str, &str)> = shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "user_input" || e["type"] == "final")
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["content"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [("user_input", "plan the storage layer"), ("final", "pong")],
        "{shown:#}"
    );

    let issue = env.issue("WUJ-1");
    assert_eq!(issue["title"], "plan the storage layer", "{issue:#}");
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "acp", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    let inputs = messages_of(run, "user_input");
    assert_eq!(inputs.len(), 1, "{run:#}");
    assert_eq!(inputs[0]["content"], "go ahead", "{run:#}");
    let finals = messages_of(run, "final");
    assert_eq!(finals.len(), 1, "{run:#}");
    assert_eq!(finals[0]["content"], "pong", "{run:#}");
    // The run is the discussion's agent session, going on.
    let session = |key: &str| key.split(":turn:").next().unwrap_or_default().to_owned();
    assert_eq!(
        session(inputs[0]["source_key"].as_str().unwrap()),
        session(shown["entries"][0]["source_key"].as_str().unwrap()),
        "{run:#}\n{shown:#}"
    );
    assert!(!run["usage"].as_array().unwrap().is_empty(), "{run:#}");
}
