//! The supervisor with real adapters (`sh` scripts): each runs in a process group of its own
//! with the `WUJIE_*` environment, its stdout is read as NDJSON events, and stopping it, or
//! its exit, takes its whole group.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use nix::unistd::{Pid, getpgid, getpgrp};
use wujie_localrun::registry::Provider;
use wujie_localrun::session::{Binding, StdoutEvents, adapter_env, spawn_spec};
use wujie_localrun::spool::Spool;
use wujie_localrun::supervisor::{Adapter, WUJIE_ENV_VARS};
use wujie_protocol::event::{DecodedLine, Event, EventError, EventErrorKind, MessageKind};
use wujie_store::outbox::TargetLock;

use super::{Home, V1, eventually, process_gone};

/// Reports its pid as an event, writes its arguments and environment to files in its working
/// directory, prints one line that is not JSON and a usage, and waits for its stdin to close.
const REPORTER: &str = r#"#!/bin/sh
printf '{"type":"text","content":"%s","source":"reporter","source_key":"pid"}\n' "$$"
printf '%s\n' "$@" > args
env > env
echo 'not an event'
printf '%s\n' '{"usage":{"provider":"reporter","model":"m","input_tokens":3,"output_tokens":4}}'
cat > /dev/null
"#;

/// Starts `sleep` in the background, in the adapter's group (its output elsewhere, so that it
/// does not hold the adapter's stdout open), reports the sleep's pid, then waits for it.
const PARENT: &str = r#"#!/bin/sh
sleep 300 > /dev/null &
printf '{"type":"text","content":"%s","source":"parent","source_key":"child"}\n' "$!"
wait
"#;

fn provider(home: &Home, name: &str, script: &str) -> Provider {
    let dir = home.path(&format!("src-{name}"));
    home.plugin_at(&dir, name, V1, serde_json::json!({}), script);
    home.configure(name, &dir.join("provider.json").to_string_lossy(), true);
    home.registry().resolve(name).unwrap()
}

fn start(provider: &Provider, args: &[String], cwd: &Path) -> Adapter {
    let command = provider.adapter_command(Path::new("wujie"), None).unwrap();
    let server = wujie_client::Client::new(
        "http://127.0.0.1:9",
        wujie_client::Token::new("the user's token"),
    )
    .unwrap();
    let binding = Binding {
        run_id: Some("run-1".into()),
        issue_id: Some("issue-1".into()),
        session_id: None,
    };
    let env = adapter_env(
        &binding,
        "workspace-1",
        &server,
        "the adapter's token",
        provider,
        &provider.name,
        args,
    );
    Adapter::spawn(&spawn_spec(&command, args, cwd, env)).unwrap()
}

/// The adapter's stdout as `wujie run` reads it: through a spool of the profile's outbox, for
/// a target this process holds (both kept for as long as the events are read).
async fn spooled_events(home: &Home, adapter: &mut Adapter) -> (StdoutEvents, (Spool, TargetLock)) {
    let (outbox, target) = crate::spool::tests::outbox_with_target(&home.path("state")).await;
    let (spool, file) = Spool::create(&outbox, "run-1", Arc::new(AtomicU64::new(0)))
        .await
        .unwrap();
    let events = StdoutEvents::take_from(adapter, file).unwrap();
    (events, (spool, target))
}

/// Every line the adapter prints until its stdout closes.
async fn read_all(events: &mut StdoutEvents) -> Vec<Result<DecodedLine, EventError>> {
    let mut lines = Vec::new();
    while let Some(read) = events.next().await.unwrap() {
        lines.extend(read.lines);
    }
    lines
}

/// The content of the first event of the next lines the adapter prints, as a pid, and the
/// lines that came in the same read after it (a read may hold all the adapter printed).
async fn reported_pid_and_rest(
    events: &mut StdoutEvents,
) -> (i32, Vec<Result<DecodedLine, EventError>>) {
    loop {
        let read = events
            .next()
            .await
            .unwrap()
            .expect("the adapter printed nothing");
        let mut lines = read.lines.into_iter();
        if let Some(Ok(line)) = lines.next() {
            let Event::Message(message) = &line.events[0] else {
                panic!("{line:?}")
            };
            return (
                message.content.as_deref().unwrap().parse().unwrap(),
                lines.collect(),
            );
        }
    }
}

/// [`reported_pid_and_rest`] for an adapter that prints nothing more in the same breath.
async fn reported_pid(events: &mut StdoutEvents) -> i32 {
    reported_pid_and_rest(events).await.0
}

#[tokio::test]
async fn an_adapter_runs_in_a_group_of_its_own_with_the_wujie_environment() {
    let home = Home::new();
    let provider = provider(&home, "reporter", REPORTER);
    let work = home.path("work");
    let args = vec!["--model".to_owned(), "two words".to_owned()];
    let mut adapter = start(&provider, &args, &work);
    let (mut events, _spool) = spooled_events(&home, &mut adapter).await;

    let (pid, mut rest) = reported_pid_and_rest(&mut events).await;
    let group = getpgid(Some(Pid::from_raw(pid))).unwrap();
    assert_eq!(group.as_raw(), pid, "the adapter leads a group of its own");
    assert_ne!(group, getpgrp(), "the adapter is not in wujie's group");

    // Its stdin is the caller's pipe: closing it ends the adapter.
    drop(adapter.stdin.take());
    rest.extend(read_all(&mut events).await);
    let status = adapter.wait().await.unwrap();
    assert!(status.success(), "{status:?}");

    // What it printed after its pid: an invalid line, named by its number, then a usage.
    assert_eq!(rest.len(), 2, "{rest:?}");
    let Err(invalid) = &rest[0] else {
        panic!("{rest:?}")
    };
    assert_eq!(invalid.line_no, 2);
    assert!(matches!(invalid.kind, EventErrorKind::NotJson(_)));
    let Ok(usage) = &rest[1] else {
        panic!("{rest:?}")
    };
    assert!(
        matches!(&usage.events[..], [Event::Usage(u)] if u.input_tokens == 3 && u.output_tokens == 4)
    );

    let argv = std::fs::read_to_string(work.join("args")).unwrap();
    assert_eq!(argv, "--model\ntwo words\n");
    let env: BTreeMap<String, String> = std::fs::read_to_string(work.join("env"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(name, _)| WUJIE_ENV_VARS.contains(name))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    let expected: BTreeMap<String, String> = [
        ("WUJIE_RUN_ID", "run-1"),
        ("WUJIE_ISSUE_ID", "issue-1"),
        ("WUJIE_WORKSPACE_ID", "workspace-1"),
        ("WUJIE_SERVER_URL", "http://127.0.0.1:9"),
        ("WUJIE_SERVER_URLS", "http://127.0.0.1:9"),
        ("WUJIE_TOKEN", "the adapter's token"),
        ("WUJIE_LOCALRUN_PROVIDER_NAME", "reporter"),
        ("WUJIE_LOCALRUN_PROVIDER_PROTOCOL", V1),
        ("WUJIE_LOCALRUN_PROVIDER_ORIGINAL_COMMAND", "reporter"),
        (
            "WUJIE_LOCALRUN_PROVIDER_ORIGINAL_ARGS",
            r#"["reporter","--model","two words"]"#,
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    // No session id for a run: a variable the binding does not set is not set at all.
    assert_eq!(env, expected);
}

#[tokio::test]
async fn every_line_is_an_event_the_last_one_without_a_newline_too() {
    let home = Home::new();
    let script = "#!/bin/sh\n\
        printf '%s\\n' '{\"type\":\"user_input\",\"content\":\"hi\",\"source\":\"s\",\"source_key\":\"k1\"}'\n\
        printf '%s' '{\"type\":\"final\",\"content\":\"bye\",\"source\":\"s\",\"source_key\":\"k2\"}'\n";
    let provider = provider(&home, "lines", script);
    let mut adapter = start(&provider, &[], &home.path("work"));
    let (mut events, _spool) = spooled_events(&home, &mut adapter).await;
    let lines = read_all(&mut events).await;
    assert!(adapter.wait().await.unwrap().success());

    // The last line has no newline: it counts all the same.
    let kinds: Vec<(u64, MessageKind, String)> = lines
        .into_iter()
        .map(|line| {
            let line = line.unwrap();
            let Event::Message(m) = &line.events[0] else {
                panic!("{line:?}")
            };
            (line.line_no, m.kind, m.content.clone().unwrap())
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (1, MessageKind::UserInput, "hi".to_owned()),
            (2, MessageKind::Final, "bye".to_owned())
        ]
    );
}

#[tokio::test]
async fn stopping_an_adapter_stops_what_it_started_in_its_group() {
    let home = Home::new();
    let provider = provider(&home, "parent", PARENT);
    let mut adapter = start(&provider, &[], &home.path("work"));
    let (mut events, _spool) = spooled_events(&home, &mut adapter).await;
    let child = reported_pid(&mut events).await;
    assert!(!process_gone(child));

    let status = adapter.stop(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(nix::sys::signal::Signal::SIGTERM as i32),
        "{status:?}"
    );
    eventually("the adapter's child to be stopped with it", || {
        process_gone(child)
    });
}

#[tokio::test]
async fn an_adapter_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let home = Home::new();
    let script = PARENT.replacen("#!/bin/sh\n", "#!/bin/sh\ntrap '' TERM\n", 1);
    let provider = provider(&home, "stubborn", &script);
    let mut adapter = start(&provider, &[], &home.path("work"));
    let (mut events, _spool) = spooled_events(&home, &mut adapter).await;
    let child = reported_pid(&mut events).await;

    let status = adapter.stop(Duration::from_millis(300)).await.unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(nix::sys::signal::Signal::SIGKILL as i32),
        "{status:?}"
    );
    eventually("the adapter's child to be killed with it", || {
        process_gone(child)
    });
}

#[tokio::test]
async fn what_an_adapter_leaves_in_its_group_goes_when_it_exits() {
    let home = Home::new();
    let script = PARENT.replace("wait\n", "exit 0\n");
    let provider = provider(&home, "leaver", &script);
    let mut adapter = start(&provider, &[], &home.path("work"));
    let (mut events, _spool) = spooled_events(&home, &mut adapter).await;
    let child = reported_pid(&mut events).await;

    let status = adapter.wait().await.unwrap();
    assert!(status.success(), "{status:?}");
    eventually("what the adapter left behind to be killed", || {
        process_gone(child)
    });
}
