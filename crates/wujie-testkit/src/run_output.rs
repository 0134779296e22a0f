//! Reading what a `wujie` command printed and what a run holds, for the built-in providers'
//! tests.

use std::process::Output;

use serde_json::Value;

/// A command's status, stdout and stderr, for assertion messages.
pub fn describe(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The run's messages of one type (`--output json` of `issue show`, one run).
pub fn messages_of<'a>(run: &'a Value, kind: &str) -> Vec<&'a Value> {
    run["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["type"] == kind)
        .collect()
}

/// The run's one message of this type.
pub fn one<'a>(run: &'a Value, kind: &str) -> &'a Value {
    let found = messages_of(run, kind);
    assert_eq!(found.len(), 1, "exactly one {kind} in {run:#}");
    found[0]
}
