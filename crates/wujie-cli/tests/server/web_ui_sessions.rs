//! The web UI in Chromium as a team lives in it: an issue page that catches up after the
//! server restarts, without a new login; a page whose token is revoked saying its session
//! ended, with a login that comes back to it; a link from another site opening the issue;
//! two servers on one host keeping their own logins.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Stdio;

use wujie_testkit::browser::Browser;
use wujie_testkit::{Env, V1, msg, write_plugin};

use super::web_ui_browser::Ui;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Another site: an HTTP server on `localhost` (a site other than `127.0.0.1`) whose every
/// page is `html`. It serves until the test process ends.
fn other_site(html: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{html}",
                html.len()
            );
        }
    });
    format!("http://localhost:{port}/")
}

const LIVE: &str = "document.getElementById('issue').dataset.live === 'on'";

/// An adapter that says one thing, then (once the file `go` exists) its final reply.
fn waiting_plugin(env: &Env) {
    let body = format!(
        "echo '{}'\nwhile [ ! -e {go} ]; do sleep 0.05; done\necho '{}'",
        msg("user_input", "Finish while the server is down", "1"),
        msg("final", "Finished while the server was down", "2"),
        go = env.work.path().join("go").display(),
    );
    let dir = env.work.path().join("waiter");
    write_plugin(&dir, "waiter", V1, &body);
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
}

#[test]
fn an_issue_page_catches_up_after_a_server_restart_without_a_new_login() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("Survives a restart");
    waiting_plugin(&env);
    let listen = format!("127.0.0.1:{}", free_port());
    let ui = Ui::start_on(&env, &listen);
    let mut b = Browser::start(&chromium);
    b.goto(&ui.login_url);
    b.wait_for("the issue list", "location.pathname === '/'");
    b.goto(&format!("{}/issues/{key}", ui.url));
    b.wait_for("the feed to be live", LIVE);
    b.eval("window.stillTheSamePage = true");
    let mut run = env
        .cmd()
        .args(["run", &key, "--", "waiter"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wujie run starts");
    b.wait_for(
        "the run, running",
        "!!document.querySelector('.run-head .run-running')",
    );

    drop(ui);
    b.wait_for(
        "the page to notice the server went",
        "document.getElementById('issue').dataset.live === 'off'",
    );
    // The run ends and a comment is written while no server serves the page.
    std::fs::write(env.work.path().join("go"), "").expect("go");
    assert!(run.wait().expect("the run ends").success());
    env.ok(&[
        "issue",
        "comment",
        &key,
        "written while the server was down",
    ]);
    let ui = Ui::start_on(&env, &listen);
    b.wait_for("the feed to be live again", LIVE);
    env.ok(&["issue", "comment", &key, "written after the restart"]);
    b.wait_for(
        "both comments, on the same page",
        "document.getElementById('timeline').innerText.includes('written while the server was down') \
         && document.getElementById('timeline').innerText.includes('written after the restart')",
    );
    b.wait_for(
        "the run's end and its final reply",
        "!!document.querySelector('.run-head .run-succeeded') \
         && document.querySelector('.transcript').innerText.includes('Finished while the server was down')",
    );
    assert_eq!(b.path(), format!("/issues/{key}"));
    assert_eq!(
        b.eval("window.stillTheSamePage"),
        serde_json::json!(true),
        "the page was reloaded"
    );
    // Nothing twice: the run's reply is in its transcript, not repeated as a comment.
    let timeline =
        b.eval("[...document.querySelectorAll('#timeline > *')].map(c => c.innerText).join('\\n')");
    let timeline = timeline.as_str().expect("text");
    for once in [
        "written while the server was down",
        "written after the restart",
        "Finished while the server was down",
    ] {
        assert_eq!(timeline.matches(once).count(), 1, "{once}: {timeline}");
    }
    drop(b);
    drop(ui);
}

/// Logs the browser in on the login page it is on, with a pasted token.
fn paste_token(b: &mut Browser, token: &str) {
    // The address changes to /login before its document is parsed: wait for the form itself.
    b.wait_for(
        "the login form",
        "!!document.querySelector('input[name=token]')",
    );
    b.eval(&format!(
        "document.querySelector('input[name=token]').value = {}",
        serde_json::json!(token)
    ));
    b.eval("document.querySelector('input[name=token]').form.submit()");
    b.wait_loaded();
}

#[test]
fn a_revoked_tokens_page_says_its_session_ended_and_logging_in_again_returns_to_it() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("Watched with a token that goes");
    let first = env.json(&["token", "create", "--name", "first"]);
    let ui = Ui::start(&env);
    let mut b = Browser::start(&chromium);
    let page = format!("/issues/{key}");

    // A deep link before logging in: the login comes back to it.
    b.goto(&format!("{}{page}", ui.url));
    assert_eq!(b.path(), "/login");
    paste_token(&mut b, first["token"].as_str().expect("secret"));
    b.wait_for("the issue", &format!("location.pathname === '{page}'"));
    b.wait_for("the feed to be live", LIVE);

    env.ok(&["token", "revoke", "first"]);
    b.wait_for(
        "the page to say its session ended",
        "!!document.querySelector('#session-ended a')",
    );
    assert_eq!(
        b.eval("document.querySelector('#session-ended a').getAttribute('href')"),
        serde_json::json!(format!("/login?next=%2Fissues%2F{key}"))
    );
    assert!(b.text().contains("session ended"), "{}", b.text());

    let second = env.json(&["token", "create", "--name", "second"]);
    b.eval("document.querySelector('#session-ended a').click()");
    b.wait_for("the login page", "location.pathname === '/login'");
    paste_token(&mut b, second["token"].as_str().expect("secret"));
    b.wait_for(
        "the issue again",
        &format!("location.pathname === '{page}'"),
    );
    b.wait_for("the feed to be live again", LIVE);
    drop(b);
    drop(ui);
}

#[test]
fn a_link_from_another_site_opens_the_issue_and_two_servers_keep_their_own_logins() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("Linked from a chat");
    let ui = Ui::start(&env);
    let other_env = Env::new();
    other_env.create_issue("On the other server");
    let other_ui = Ui::start(&other_env);
    let mut b = Browser::start(&chromium);

    b.goto(&ui.login_url);
    b.wait_for("the issue list", "location.pathname === '/'");

    // A link on another site's page opens the issue, logged in.
    let target = format!("{}/issues/{key}", ui.url);
    let chat = other_site(format!(r#"<a id="go" href="{target}">the issue</a>"#));
    b.goto(&chat);
    b.eval("document.getElementById('go').click()");
    b.wait_for(
        "the linked issue",
        &format!("location.href === {}", serde_json::json!(target)),
    );
    b.wait_loaded();
    assert!(b.text().contains("Linked from a chat"), "{}", b.text());

    // Logging in to another server on the same host leaves this login in place.
    b.goto(&other_ui.login_url);
    b.wait_for("the other issue list", "location.pathname === '/'");
    b.goto(&format!("{}/", ui.url));
    assert_eq!(b.path(), "/", "the first server's login was lost");
    assert!(b.text().contains("Linked from a chat"), "{}", b.text());
    drop(b);
    drop(other_ui);
    drop(ui);
}
