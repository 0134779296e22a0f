//! What a failed command exits with, and that its error names what failed and then each cause
//! once (README, "Exit codes").

use wujie_testkit::*;

#[test]
fn a_command_line_that_cannot_be_carried_out_exits_2() {
    let env = Env::new();
    env.install_example("fake-provider");
    let key = env.create_issue("x");

    let out = env.run(&["run", &key, "--", "nope"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("unknown provider").count(), 1, "{err}");

    // A v1 provider keeps the Issue-first contract.
    let out = env.run(&["discuss", "--", "fake-provider"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("wujie run ISSUE -- fake-provider"), "{err}");
}

#[test]
fn a_failed_request_says_what_it_was_for_then_why_once() {
    let env = Env::new();
    env.install_example("fake-provider");
    // A server that refuses the token: an answer that retrying would not change (a server
    // that does not answer is waited for, see start_retry.rs).
    let server = Server::start(&Env::new(), &[]);
    let out = env
        .cmd()
        .env("WUJIE_SERVER_URL", &server.url)
        .env("WUJIE_TOKEN", "wjt_not_a_real_token")
        .args(["run", "WUJ-7", "--", "fake-provider"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("wujie: error: "))
        .unwrap_or_else(|| panic!("an error line: {err}"));
    assert!(
        line.starts_with(&format!(
            "wujie: error: cannot read issue WUJ-7: the server at {} did not accept the token",
            server.url
        )),
        "what failed comes first, then its cause in the user's words: {line}"
    );
    assert_eq!(err.matches("WUJ-7").count(), 1, "{err}");
    assert!(!err.contains("GET") && !err.contains("/issues"), "{err}");
    assert!(
        !err.contains("wjt_not_a_real_token"),
        "no token printed: {err}"
    );
}

#[test]
fn a_missing_interpreter_is_named_once() {
    let env = Env::new();
    let dir = env.plugin("broken", V1, "");
    std::fs::write(dir.join("adapter"), "#!/no/such/interpreter\n").unwrap();
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    let key = env.create_issue("x");
    let out = env.run(&["run", &key, "--", "broken"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("\"/no/such/interpreter\"").count(), 1, "{err}");
    assert!(!err.contains("No such file or directory"), "{err}");
    assert_eq!(env.issue(&key)["runs"][0]["status"], "failed");
}
