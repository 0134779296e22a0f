//! The sample adapters in `localrun-providers/`: their own Python test suites (stdlib
//! `unittest`, run with the specification's command) and their installation as plugins.

use std::path::PathBuf;
use std::process::Command;

use wujie_testkit::*;

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../localrun-providers")
}

/// How many tests unittest says it ran ("Ran N tests in …"), if it says so.
fn tests_ran(stderr: &str) -> Option<u32> {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("Ran "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// `python3 localrun-providers/NAME/test_wujie_localrun_NAME.py` runs some tests and they pass.
fn python_suite_passes(python: &std::path::Path, name: &str) {
    let suite = samples()
        .join(name)
        .join(format!("test_wujie_localrun_{name}.py"));
    let out = Command::new(python)
        .arg(&suite)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("python3 {} did not start: {e}", suite.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} failed ({:?}):\n{stderr}",
        suite.display(),
        out.status
    );
    // unittest reports on stderr: "Ran N tests" and "OK" — also when it found no test at all.
    assert!(stderr.contains("\nOK"), "{stderr}");
    let ran = tests_ran(&stderr);
    assert!(
        ran.is_some_and(|n| n > 0),
        "{} ran {ran:?} tests:\n{stderr}",
        suite.display()
    );
}

/// `wujie local-run provider install ./localrun-providers/NAME`, then `list` shows it.
fn installs_as_a_v2_plugin(name: &str) {
    let env = Env::new();
    env.ok(&[
        "local-run",
        "provider",
        "install",
        samples().join(name).to_str().unwrap(),
    ]);
    let list = env.json(&["local-run", "provider", "list"]);
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed: {list:#}"));
    assert_eq!(row["kind"], "plugin", "{row:#}");
    assert_eq!(row["protocol"], V2, "{row:#}");
    assert_eq!(row["enabled"], true, "{row:#}");
}

#[test]
fn grok_sample_unittests_pass() {
    let Some(python) = wujie_require::require("python3") else {
        return;
    };
    python_suite_passes(&python, "grok");
}

#[test]
fn grok_sample_installs_as_a_v2_plugin() {
    installs_as_a_v2_plugin("grok");
}

#[test]
fn hermes_sample_unittests_pass() {
    let Some(python) = wujie_require::require("python3") else {
        return;
    };
    python_suite_passes(&python, "hermes");
}

#[test]
fn hermes_sample_installs_as_a_v2_plugin() {
    installs_as_a_v2_plugin("hermes");
}
