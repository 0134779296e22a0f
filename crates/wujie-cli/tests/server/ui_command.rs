//! `wujie ui` without a browser: it prints the address and a one-time login link, keeps
//! serving, and a display without `xdg-open` is no error.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use wujie_testkit::{Env, signal_pid};

fn no_redirects() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// Starts `wujie ui` (text output) with `display` as DISPLAY; returns the child and the two
/// lines it printed.
fn start(env: &Env, display: Option<&str>) -> (std::process::Child, String, String) {
    let mut cmd = env.cmd();
    cmd.arg("ui").stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    if let Some(d) = display {
        // Only this test's directory on PATH: there is no xdg-open to find.
        cmd.env("DISPLAY", d).env("PATH", env.work.path());
    }
    let mut child = cmd.spawn().expect("wujie ui starts");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let (mut first, mut second) = (String::new(), String::new());
    out.read_line(&mut first).expect("address line");
    out.read_line(&mut second).expect("login line");
    (child, first, second)
}

#[test]
fn ui_prints_a_one_time_login_link_and_serves_the_demo_issue() {
    let env = Env::new();
    env.ok(&["demo"]);
    let (mut child, first, second) = start(&env, None);
    let url = first
        .trim()
        .strip_prefix("Wujie UI: ")
        .unwrap_or_else(|| panic!("{first:?}"))
        .trim_end_matches('/')
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let link = second
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no link in {second:?}"))
        .to_owned();
    let creds = std::fs::read_to_string(env.home.path().join("config/credentials.json")).unwrap();
    let token: serde_json::Value = serde_json::from_str(&creds).unwrap();
    assert!(
        !link.contains(token["local_token"].as_str().unwrap()),
        "the link must not hold the token"
    );

    let http = no_redirects();
    let login = http.get(&link).send().unwrap();
    assert_eq!(login.status().as_u16(), 303);
    let cookie = login.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let list = http
        .get(format!("{url}/"))
        .header("cookie", &cookie)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(list.contains("Try Wujie: run the fake provider"), "{list}");
    assert_eq!(
        http.get(&link).send().unwrap().status().as_u16(),
        400,
        "used once"
    );

    assert!(signal_pid(
        child.id() as i32,
        nix::sys::signal::Signal::SIGTERM
    ));
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_display_without_xdg_open_is_no_error() {
    let env = Env::new();
    let (mut child, first, _) = start(&env, Some(":99"));
    assert!(
        first.starts_with("Wujie UI: http://127.0.0.1:"),
        "{first:?}"
    );
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut note = String::new();
    stderr.read_line(&mut note).expect("a note");
    assert!(note.contains("could not start a browser"), "{note:?}");
    // Still serving.
    let url = first.trim().strip_prefix("Wujie UI: ").unwrap();
    let answer = no_redirects().get(format!("{url}login")).send().unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    assert!(signal_pid(
        child.id() as i32,
        nix::sys::signal::Signal::SIGTERM
    ));
    assert!(child.wait().unwrap().success());
}

#[test]
fn sigterm_as_soon_as_the_address_is_printed_stops_the_ui_cleanly() {
    // A script that starts `wujie ui`, reads the address and stops it at once: the signal must
    // find the UI listening for it, not end the process by the signal's default action.
    let env = Env::new();
    for _ in 0..5 {
        let (mut child, first, _) = start(&env, None);
        assert!(first.starts_with("Wujie UI: "), "{first:?}");
        assert!(signal_pid(
            child.id() as i32,
            nix::sys::signal::Signal::SIGTERM
        ));
        let status = child.wait().unwrap();
        assert!(status.success(), "{status:?}");
    }
}
