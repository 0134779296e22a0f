//! The web UI over HTTP: login links, session cookies, CSRF and Origin checks, and agent text
//! escaped in the served HTML. (The browser itself is in wujie-cli's web_ui_browser test.)

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use wujie_protocol::api::{IngestBatch, RunStatus};
use wujie_protocol::event::MessageKind;
use wujie_protocol::promotion::IssueDraft;

use super::harness::{Harness, message};

fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// Logs in through a fresh one-time link; returns the `Cookie` header value.
async fn log_in(h: &Harness) -> String {
    let login = h.admin.create_browser_login().await.expect("login link");
    let answer = browser()
        .get(format!("{}{}", h.url(), login.path))
        .send()
        .await
        .expect("GET login link");
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    let cookie = answer.headers()[SET_COOKIE]
        .to_str()
        .expect("ascii")
        .to_owned();
    cookie.split(';').next().expect("name=value").to_owned()
}

async fn page(h: &Harness, path: &str, cookie: &str) -> (StatusCode, String) {
    let answer = browser()
        .get(format!("{}{path}", h.url()))
        .header(COOKIE, cookie)
        .send()
        .await
        .expect("GET page");
    (answer.status(), answer.text().await.expect("body"))
}

fn csrf_of(html: &str) -> String {
    let at = html.find(r#"name="csrf" value=""#).expect("a CSRF field") + 19;
    html[at..at + 64].to_owned()
}

/// Posts a form the way a browser on the page would (its Origin), with the fields given.
async fn post(
    h: &Harness,
    path: &str,
    cookie: &str,
    origin: Option<&str>,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let mut req = browser()
        .post(format!("{}{path}", h.url()))
        .header(COOKIE, cookie)
        .form(fields);
    if let Some(origin) = origin {
        req = req.header(ORIGIN, origin);
    }
    req.send().await.expect("POST form")
}

#[tokio::test]
async fn pages_need_a_login_and_a_login_link_works_once() {
    let h = Harness::start().await;
    h.issue("Visible after login").await;
    let anonymous = browser().get(format!("{}/", h.url())).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::SEE_OTHER);
    assert_eq!(anonymous.headers()[LOCATION], "/login");
    let port = h.url().rsplit(':').next().expect("a port").to_owned();

    let login = h.admin.create_browser_login().await.expect("login link");
    assert!(
        !login.path.contains(&h.admin_token),
        "the link never holds the token"
    );
    let link = format!("{}{}", h.url(), login.path);
    let first = browser().get(&link).send().await.unwrap();
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    let set_cookie = first.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    // Each server its own cookie, so that two on one host do not log each other out; Lax, so
    // that a link from another site opens the page logged in.
    assert!(
        set_cookie.starts_with(&format!("wujie_session_{port}=")),
        "{set_cookie}"
    );
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set_cookie.contains(flag), "{set_cookie}");
    }
    assert!(!set_cookie.contains("Secure"), "plain HTTP: {set_cookie}");
    let again = browser().get(&link).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::BAD_REQUEST, "a link works once");
    assert!(
        again
            .text()
            .await
            .unwrap()
            .contains("already used or has expired")
    );

    let cookie = set_cookie.split(';').next().unwrap();
    let (status, html) = page(&h, "/", cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Visible after login"));
    h.stop().await;
}

#[tokio::test]
async fn behind_tls_the_cookie_is_secure() {
    let h = Harness::start().await;
    let login = h.admin.create_browser_login().await.expect("login link");
    let answer = browser()
        .get(format!("{}{}", h.url(), login.path))
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    let set_cookie = answer.headers()[SET_COOKIE].to_str().unwrap();
    assert!(set_cookie.ends_with("; Secure"), "{set_cookie}");
    h.stop().await;
}

#[tokio::test]
async fn a_session_ends_when_its_token_is_revoked() {
    let h = Harness::start().await;
    let minted = h.store.create_user_token("browser").await.unwrap();
    let client = h.client(&minted.token);
    let login = client.create_browser_login().await.unwrap();
    let answer = browser()
        .get(format!("{}{}", h.url(), login.path))
        .send()
        .await
        .unwrap();
    let cookie = answer.headers()[SET_COOKIE].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    assert_eq!(page(&h, "/", &cookie).await.0, StatusCode::OK);
    h.store.revoke_token(&minted.id).await.unwrap();
    assert_eq!(page(&h, "/", &cookie).await.0, StatusCode::SEE_OTHER);
    h.stop().await;
}

#[tokio::test]
async fn a_pasted_user_token_logs_in_and_a_run_token_does_not() {
    let h = Harness::start().await;
    let origin = h.url();
    let ok = browser()
        .post(format!("{}/login", h.url()))
        .header(ORIGIN, &origin)
        .form(&[("token", h.admin_token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::SEE_OTHER);
    assert!(ok.headers().contains_key(SET_COOKIE));
    let issue = h.issue("Run token").await;
    let run = h.run_on(&issue.key).await;
    let refused = browser()
        .post(format!("{}/login", h.url()))
        .header(ORIGIN, &origin)
        .form(&[("token", run.token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(!refused.headers().contains_key(SET_COOKIE));
    h.stop().await;
}

#[tokio::test]
async fn forms_need_the_session_csrf_token_and_this_origin() {
    let h = Harness::start().await;
    let issue = h.issue("CSRF").await;
    let cookie = log_in(&h).await;
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    let csrf = csrf_of(&html);
    let path = format!("/issues/{}/comments", issue.key);
    let origin = h.url();

    let no_token = post(&h, &path, &cookie, Some(&origin), &[("body", "x")]).await;
    assert_eq!(no_token.status(), StatusCode::FORBIDDEN);
    let wrong_token = post(
        &h,
        &path,
        &cookie,
        Some(&origin),
        &[("body", "x"), ("csrf", &"0".repeat(64))],
    )
    .await;
    assert_eq!(wrong_token.status(), StatusCode::FORBIDDEN);
    let other_site = post(
        &h,
        &path,
        &cookie,
        Some("http://evil.test"),
        &[("body", "x"), ("csrf", &csrf)],
    )
    .await;
    assert_eq!(other_site.status(), StatusCode::FORBIDDEN);
    let no_origin = post(&h, &path, &cookie, None, &[("body", "x"), ("csrf", &csrf)]).await;
    assert_eq!(no_origin.status(), StatusCode::FORBIDDEN);
    assert!(
        h.admin
            .get_issue(&issue.key)
            .await
            .unwrap()
            .comments
            .is_empty()
    );

    let from_page = post(
        &h,
        &path,
        &cookie,
        Some(&origin),
        &[("body", "from the page"), ("csrf", &csrf)],
    )
    .await;
    assert_eq!(from_page.status(), StatusCode::SEE_OTHER);
    let comments = h.admin.get_issue(&issue.key).await.unwrap().comments;
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].body, "from the page");
    // Recorded as written by the token that logged the browser in.
    let issue_id = h.admin.get_issue(&issue.key).await.unwrap().id;
    let activity = h
        .store
        .issue_activity_after(Some(&issue_id), 0, 100)
        .await
        .unwrap();
    let last = activity.last().expect("the comment's change");
    assert_eq!(last.by.as_deref(), Some("test admin"), "{last:?}");

    // Another browser's session has another token.
    let other_cookie = log_in(&h).await;
    let crossed = post(
        &h,
        &path,
        &other_cookie,
        Some(&origin),
        &[("body", "x"), ("csrf", &csrf)],
    )
    .await;
    assert_eq!(crossed.status(), StatusCode::FORBIDDEN);
    h.stop().await;
}

#[tokio::test]
async fn the_cookie_alone_does_not_open_the_api_and_bearer_tokens_still_work() {
    let h = Harness::start().await;
    let cookie = log_in(&h).await;
    let api = browser()
        .get(format!("{}/api/v1/issues", h.url()))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), StatusCode::UNAUTHORIZED);
    assert!(h.admin.list_issues().await.is_ok());
    h.stop().await;
}

#[tokio::test]
async fn agent_text_is_escaped_and_scripts_come_only_from_the_server() {
    let h = Harness::start().await;
    let issue = h.issue("XSS").await;
    let run = h.run_on(&issue.key).await;
    let hostile = "<script>alert(1)</script> [x](javascript:alert(2)) <img src=x onerror=alert(3)>";
    h.admin
        .ingest_run_events(
            &run.run.id,
            &IngestBatch {
                items: vec![
                    message(MessageKind::Text, "1", hostile),
                    message(MessageKind::Error, "2", hostile),
                ],
            },
        )
        .await
        .unwrap();
    let cookie = log_in(&h).await;
    let answer = browser()
        .get(format!("{}/issues/{}", h.url(), issue.key))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    let csp = answer.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let html = answer.text().await.unwrap();
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(
        !html.to_ascii_lowercase().contains("href=\"javascript"),
        "{html}"
    );
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    // The page's only script is the server's own file.
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert!(html.contains(r#"<script src="/assets/app.js" defer></script>"#));
    h.stop().await;
}

#[tokio::test]
async fn a_discussion_promoted_from_its_page_keeps_the_link_to_it() {
    let h = Harness::start().await;
    let id = h.discussion("grok").await.discussion.id;
    let plan = "# Cache the parser\n\n1. Write it";
    h.admin
        .ingest_discussion_events(
            &id,
            &IngestBatch {
                items: vec![
                    message(MessageKind::UserInput, "1", "how do we make it fast?"),
                    message(MessageKind::Plan, "2", plan),
                ],
            },
        )
        .await
        .expect("ingest");
    let cookie = log_in(&h).await;
    let (_, html) = page(&h, &format!("/discussions/{id}"), &cookie).await;
    // The form starts from the draft the command line would create.
    let d = h.admin.get_discussion(&id).await.expect("discussion");
    let draft = IssueDraft::from_discussion(&d);
    assert!(
        html.contains(&format!(r#"value="{}""#, draft.title)),
        "{html}"
    );
    assert!(
        html.contains(&format!("{}</textarea>", draft.description)),
        "{html}"
    );
    let csrf = csrf_of(&html);
    let answer = post(
        &h,
        &format!("/discussions/{id}/promote"),
        &cookie,
        Some(&h.url()),
        &[
            ("title", "Cache the parser"),
            ("description", plan),
            ("csrf", &csrf),
        ],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    let key = answer.headers()[LOCATION]
        .to_str()
        .expect("ascii")
        .trim_start_matches("/issues/")
        .to_owned();
    let issue = h.admin.get_issue(&key).await.expect("the promoted issue");
    assert_eq!(issue.title, "Cache the parser");
    assert_eq!(
        issue.description,
        format!("{plan}\n\n---\nPromoted from discussion {id} (grok).")
    );
    // No agent goes on with it here: the promotion's run has ended.
    assert_eq!(issue.runs[0].status, RunStatus::Succeeded);
    h.stop().await;
}

/// Logs in through a one-time link asked for with `token`, going to `next`; returns the answer.
async fn open_login_link(h: &Harness, token: &str, next: &str) -> reqwest::Response {
    let login = h
        .client(token)
        .create_browser_login()
        .await
        .expect("login link");
    browser()
        .get(format!("{}{}", h.url(), login.path))
        .query(&[("next", next)])
        .send()
        .await
        .expect("GET login link")
}

fn cookie_of(answer: &reqwest::Response) -> String {
    let set_cookie = answer.headers()[SET_COOKIE].to_str().expect("ascii");
    set_cookie.split(';').next().expect("name=value").to_owned()
}

#[tokio::test]
async fn login_returns_to_the_page_asked_for_and_never_to_another_site() {
    let h = Harness::start().await;
    let issue = h.issue("Deep link").await;
    let path = format!("/issues/{}", issue.key);
    let anonymous = browser()
        .get(format!("{}{path}?tab=runs", h.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        anonymous.headers()[LOCATION],
        format!("/login?next=%2Fissues%2F{}%3Ftab%3Druns", issue.key).as_str()
    );
    // The login form carries where to go on.
    let (_, form) = page(&h, &format!("/login?next={path}"), "").await;
    assert!(
        form.contains(&format!(r#"name="next" value="{path}""#)),
        "{form}"
    );

    let back = open_login_link(&h, &h.admin_token, &path).await;
    assert_eq!(back.status(), StatusCode::SEE_OTHER);
    assert_eq!(back.headers()[LOCATION], path.as_str());
    let pasted = browser()
        .post(format!("{}/login", h.url()))
        .header(ORIGIN, h.url())
        .form(&[("token", h.admin_token.as_str()), ("next", path.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(pasted.headers()[LOCATION], path.as_str());

    // Anything that could leave this server goes to the issue list instead.
    for elsewhere in [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example/",
        "\\evil.example",
        "/\tevil",
        "evil",
        "javascript:alert(1)",
        "/issues/WUJ-1\r\nSet-Cookie: x=1",
    ] {
        let answer = open_login_link(&h, &h.admin_token, elsewhere).await;
        assert_eq!(answer.status(), StatusCode::SEE_OTHER, "{elsewhere:?}");
        assert_eq!(answer.headers()[LOCATION], "/", "{elsewhere:?}");
        let form = browser()
            .get(format!("{}/login", h.url()))
            .query(&[("next", elsewhere)])
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!form.contains(r#"name="next""#), "{elsewhere:?}: {form}");
    }
    h.stop().await;
}

/// An issue page's live feed, read until it is live.
struct PageFeed {
    feed: reqwest::Response,
    read: String,
}

impl PageFeed {
    /// `issues` as the page's feed worker asks for them: `KEY[@POSITION],…`.
    async fn open(h: &Harness, issues: &str, cookie: &str) -> PageFeed {
        let feed = browser()
            .get(format!("{}/live", h.url()))
            .query(&[("issues", issues)])
            .header(COOKIE, cookie)
            .send()
            .await
            .expect("the live feed");
        assert_eq!(feed.status(), StatusCode::OK);
        let mut page = PageFeed {
            feed,
            read: String::new(),
        };
        let wanted = issues.split(',').count();
        while page.read.matches("event: live").count() < wanted {
            let chunk = tokio::time::timeout(Duration::from_secs(30), page.feed.chunk())
                .await
                .expect("the feed goes live")
                .expect("readable")
                .expect("open");
            page.read.push_str(&String::from_utf8_lossy(&chunk));
        }
        page
    }

    /// Reads until the server ends the feed; what came after `live`.
    async fn until_ended(mut self) -> String {
        tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(chunk) = self.feed.chunk().await.expect("readable") {
                self.read.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .expect("the feed ends within 30 s");
        let (_, after) = self.read.split_once("event: live").expect("live");
        after.to_owned()
    }
}

#[tokio::test]
async fn a_pages_live_feed_ends_and_says_so_when_its_session_ends() {
    let h = Harness::start().await;
    let issue = h.issue("Watched from a browser").await;
    let minted = h.store.create_user_token("browser").await.unwrap();
    let cookie = cookie_of(&open_login_link(&h, &minted.token, "/").await);
    let feed = PageFeed::open(&h, &issue.key, &cookie).await;
    h.admin.revoke_token(&minted.id).await.expect("revoke");
    let ended = feed.until_ended().await;
    assert!(ended.contains("event: ended"), "{ended}");
    // It says so, with a link that logs in again and comes back to the issue.
    assert!(
        ended.contains(&format!("/login?next=%2Fissues%2F{}", issue.key)),
        "{ended}"
    );
    // A feed asked for without a session answers the same, rather than a login page that
    // the page's EventSource could not read.
    let without = browser()
        .get(format!("{}/live?issues={}", h.url(), issue.key))
        .header(COOKIE, &cookie)
        .send()
        .await
        .expect("the live feed");
    assert_eq!(without.status(), StatusCode::OK);
    assert!(without.text().await.unwrap().contains("event: ended"));
    h.stop().await;
}

#[tokio::test]
async fn logging_out_ends_the_sessions_open_pages_and_no_other() {
    let h = Harness::start().await;
    let issue = h.issue("Open in two browsers").await;
    let leaving = log_in(&h).await;
    let staying = log_in(&h).await;
    let leaving_feed = PageFeed::open(&h, &issue.key, &leaving).await;
    let mut staying_feed = PageFeed::open(&h, &issue.key, &staying).await;
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &leaving).await;
    let out = post(
        &h,
        "/logout",
        &leaving,
        Some(&h.url()),
        &[("csrf", &csrf_of(&html))],
    )
    .await;
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    assert!(leaving_feed.until_ended().await.contains("event: ended"));
    assert_eq!(page(&h, "/", &leaving).await.0, StatusCode::SEE_OTHER);
    // The other browser's page still follows the issue.
    h.admin
        .add_comment(
            &issue.key,
            &wujie_protocol::api::CreateComment {
                body: "still followed".into(),
            },
        )
        .await
        .expect("comment");
    while !staying_feed.read.contains("still followed") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), staying_feed.feed.chunk())
            .await
            .expect("the comment within 30 s")
            .expect("readable")
            .expect("open");
        staying_feed.read.push_str(&String::from_utf8_lossy(&chunk));
    }
    h.stop().await;
}

#[tokio::test]
async fn one_connection_follows_every_open_issue_page_and_says_whose_each_event_is() {
    let h = Harness::start().await;
    let first = h.issue("First tab").await;
    let second = h.issue("Second tab").await;
    let cookie = log_in(&h).await;
    let mut feed = PageFeed::open(&h, &format!("{},{}", first.key, second.key), &cookie).await;
    for (key, body) in [(&second.key, "on the second"), (&first.key, "on the first")] {
        h.admin
            .add_comment(
                key,
                &wujie_protocol::api::CreateComment { body: body.into() },
            )
            .await
            .expect("comment");
    }
    while !(feed.read.contains("on the second") && feed.read.contains("on the first")) {
        let chunk = tokio::time::timeout(Duration::from_secs(30), feed.feed.chunk())
            .await
            .expect("both comments within 30 s")
            .expect("readable")
            .expect("open");
        feed.read.push_str(&String::from_utf8_lossy(&chunk));
    }
    let comments: Vec<serde_json::Value> = feed
        .read
        .split("\n\n")
        .filter(|e| e.starts_with("event: comment"))
        .map(|e| {
            let data = e
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .expect("data");
            serde_json::from_str(data).expect("JSON")
        })
        .collect();
    assert_eq!(comments.len(), 2, "{}", feed.read);
    // Each issue is followed by a relay of its own: the two issues' events may come in either
    // order, each saying whose it is.
    let of = |key: &str| {
        comments
            .iter()
            .find(|c| c["issue"] == key)
            .unwrap_or_else(|| panic!("no comment of {key}: {}", feed.read))
    };
    assert!(
        of(&second.key)["html"]
            .as_str()
            .unwrap()
            .contains("on the second")
    );
    assert!(
        of(&first.key)["html"]
            .as_str()
            .unwrap()
            .contains("on the first")
    );
    // Each event's position reopens that issue's feed after it: nothing again, nothing missed.
    let at = of(&first.key)["at"].as_str().expect("a position");
    let mut again = PageFeed::open(&h, &format!("{}@{at}", first.key), &cookie).await;
    h.admin
        .add_comment(
            &first.key,
            &wujie_protocol::api::CreateComment {
                body: "after".into(),
            },
        )
        .await
        .expect("comment");
    while !again.read.contains("after") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), again.feed.chunk())
            .await
            .expect("the comment within 30 s")
            .expect("readable")
            .expect("open");
        again.read.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(!again.read.contains("on the first"), "{}", again.read);

    for (issues, says) in [
        ("", "name at least one issue"),
        (&*format!("{}@x", first.key), "not a position"),
        (
            &*vec![first.key.as_str(); 201].join(","),
            "at most 200 issues",
        ),
    ] {
        // Keys, `@`, `.` and `,` need no escaping in a query.
        let (status, html) = page(&h, &format!("/live?issues={issues}"), &cookie).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{issues}");
        assert!(html.contains(says), "{issues}: {html}");
    }
    h.stop().await;
}

#[tokio::test]
async fn a_tool_rows_folded_line_says_what_ran() {
    let h = Harness::start().await;
    let issue = h.issue("Tools at a glance").await;
    let run = h.run_on(&issue.key).await;
    let tool = |key: &str, name: &str, input: serde_json::Value| {
        let mut item = message(MessageKind::ToolUse, key, "");
        if let wujie_protocol::event::Event::Message(m) = &mut item.event {
            m.content = None;
            m.tool = Some(name.into());
            m.input = input.as_object().cloned();
        }
        item
    };
    let long = format!("grep -rn needle {}", "src/ ".repeat(40));
    h.admin
        .ingest_run_events(
            &run.run.id,
            &IngestBatch {
                items: vec![
                    tool(
                        "1",
                        "Bash",
                        serde_json::json!({"command": "cargo test -p core"}),
                    ),
                    tool(
                        "2",
                        "Read",
                        serde_json::json!({"file_path": "src/<main>.rs"}),
                    ),
                    tool("3", "Bash", serde_json::json!({"command": long})),
                    tool("4", "Think", serde_json::json!({"depth": 3})),
                ],
            },
        )
        .await
        .expect("ingest");
    let cookie = log_in(&h).await;
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    let (_, transcript) = html
        .split_once(r#"<ol class="transcript">"#)
        .unwrap_or_else(|| panic!("no transcript: {html}"));
    let summaries: Vec<&str> = transcript
        .split("<summary>")
        .skip(1)
        .filter_map(|s| s.split_once("</summary>").map(|(summary, _)| summary))
        .collect();
    assert_eq!(summaries.len(), 4, "{html}");
    assert!(
        summaries[0].contains("cargo test -p core"),
        "{}",
        summaries[0]
    );
    // Escaped like every other value.
    assert!(
        summaries[1].contains("src/&lt;main&gt;.rs"),
        "{}",
        summaries[1]
    );
    // A long command is cut on the folded line (the whole of it is inside).
    assert!(summaries[2].contains("grep -rn needle"), "{}", summaries[2]);
    assert!(
        summaries[2].contains('…') && summaries[2].len() < 300,
        "{}",
        summaries[2]
    );
    // No command or file: the tool's name alone.
    assert!(!summaries[3].contains("depth"), "{}", summaries[3]);
    h.stop().await;
}

#[tokio::test]
async fn a_long_tool_output_shows_its_start_and_the_rest_on_asking() {
    let h = Harness::start().await;
    let issue = h.issue("Long output").await;
    let run = h.run_on(&issue.key).await;
    let output: String = (1..=500).map(|n| format!("line {n}\n")).collect();
    let mut item = message(MessageKind::ToolResult, "1", "");
    if let wujie_protocol::event::Event::Message(m) = &mut item.event {
        m.content = None;
        m.tool = Some("Bash".into());
        m.output = Some(output);
    }
    h.admin
        .ingest_run_events(&run.run.id, &IngestBatch { items: vec![item] })
        .await
        .expect("ingest");
    let cookie = log_in(&h).await;
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    let (shown, rest) = html
        .split_once("show more")
        .unwrap_or_else(|| panic!("no \"show more\": {html}"));
    assert!(
        shown.contains("line 1\n") && shown.contains("line 40\n"),
        "{shown}"
    );
    assert!(!shown.contains("line 41\n"), "{shown}");
    // Nothing is lost: the rest is there, folded.
    assert!(rest.contains("460 more lines"), "{rest}");
    assert!(
        rest.contains("line 41\n") && rest.contains("line 500\n"),
        "{rest}"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_job_queued_from_the_issue_page_is_listed_there_for_a_worker() {
    let h = Harness::start().await;
    let issue = h.issue("Ask an agent from the page").await;
    let cookie = log_in(&h).await;
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    assert!(html.contains(r#"id="no-jobs""#), "{html}");
    let csrf = csrf_of(&html);
    let path = format!("/issues/{}/jobs", issue.key);
    let origin = h.url();

    let no_token = post(&h, &path, &cookie, Some(&origin), &[("agent", "pi")]).await;
    assert_eq!(no_token.status(), StatusCode::FORBIDDEN);
    let queued = post(
        &h,
        &path,
        &cookie,
        Some(&origin),
        &[
            ("agent", "Pi"),
            ("prompt", "  "),
            ("worker", "<b>box</b>"),
            ("csrf", &csrf),
        ],
    )
    .await;
    assert_eq!(queued.status(), StatusCode::SEE_OTHER);
    let jobs = h
        .store
        .jobs(&wujie_store::JobFilter {
            issue: Some(issue.key.clone()),
            statuses: Vec::new(),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    // An empty task means the issue's own; the name is a provider's, in lower case.
    assert_eq!((job.provider.as_str(), job.prompt.as_deref()), ("pi", None));
    assert_eq!(job.worker_label.as_deref(), Some("<b>box</b>"));
    assert_eq!(job.requested_by.as_deref(), Some("test admin"));
    assert_eq!(
        queued.headers()[LOCATION].to_str().unwrap(),
        format!("/issues/{}#job-{}", issue.key, job.id)
    );

    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    assert!(
        html.contains(&format!(r#"id="job-{}" data-status="queued""#, job.id)),
        "{html}"
    );
    assert!(
        html.contains("&lt;b&gt;box&lt;/b&gt;") && !html.contains("<b>box</b>"),
        "{html}"
    );
    assert!(!html.contains(r#"id="no-jobs""#));

    let nameless = post(
        &h,
        &path,
        &cookie,
        Some(&origin),
        &[("agent", " "), ("csrf", &csrf)],
    )
    .await;
    assert_eq!(nameless.status(), StatusCode::BAD_REQUEST);
    h.stop().await;
}

#[tokio::test]
async fn a_queued_job_is_cancelled_from_the_issue_page() {
    let h = Harness::start().await;
    let issue = h.issue("Not after all").await;
    let cookie = log_in(&h).await;
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    let csrf = csrf_of(&html);
    let origin = h.url();
    post(
        &h,
        &format!("/issues/{}/jobs", issue.key),
        &cookie,
        Some(&origin),
        &[("agent", "pi"), ("csrf", &csrf)],
    )
    .await;
    let filter = wujie_store::JobFilter {
        issue: Some(issue.key.clone()),
        statuses: Vec::new(),
        limit: 10,
    };
    let job = h.store.jobs(&filter).await.unwrap().remove(0);
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    let cancel = format!("/issues/{}/jobs/{}/cancel", issue.key, job.id);
    assert!(html.contains(&format!(r#"action="{cancel}""#)), "{html}");

    let cancelled = post(&h, &cancel, &cookie, Some(&origin), &[("csrf", &csrf)]).await;
    assert_eq!(cancelled.status(), StatusCode::SEE_OTHER);
    let job = h.store.job(&job.id).await.unwrap();
    assert_eq!(job.status, wujie_protocol::jobs::JobStatus::Cancelled);
    assert_eq!(
        job.error.as_deref(),
        Some("cancelled by test admin before a worker took it")
    );
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    assert!(
        !html.contains(&format!(r#"action="{cancel}""#)),
        "no button once cancelled"
    );
    let again = post(&h, &cancel, &cookie, Some(&origin), &[("csrf", &csrf)]).await;
    assert_eq!(again.status(), StatusCode::CONFLICT);
    h.stop().await;
}

#[tokio::test]
async fn a_running_runs_cancel_button_asks_it_to_stop_and_returns_to_the_page() {
    let h = Harness::start().await;
    let issue = h.issue("cancel from the page").await;
    let running = h.run_on(&issue.key).await.run.id;
    let ended = h.run_on(&issue.key).await.run.id;
    let finish = wujie_protocol::api::FinishRun {
        status: RunStatus::Succeeded,
        exit_code: Some(0),
        error: None,
    };
    h.admin.finish_run(&ended, &finish).await.expect("finish");
    let cookie = log_in(&h).await;
    let path = format!("/issues/{}", issue.key);
    let (_, html) = page(&h, &path, &cookie).await;
    let button = |id: &str| format!(r#"action="/runs/{id}/cancel""#);
    // Only the running run has one.
    assert!(html.contains(&button(&running)), "{html}");
    assert!(!html.contains(&button(&ended)), "{html}");

    let origin = h.url();
    let cancel = format!("/runs/{running}/cancel");
    let forged = post(
        &h,
        &cancel,
        &cookie,
        Some(&origin),
        &[("csrf", &"0".repeat(64))],
    )
    .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert_eq!(h.admin.get_run(&running).await.unwrap().cancel, None);

    // An open page follows the issue: the cancel shows in the run's head there too.
    let mut open = PageFeed::open(&h, &issue.key, &cookie).await;
    let asked = post(
        &h,
        &cancel,
        &cookie,
        Some(&origin),
        &[("csrf", &csrf_of(&html))],
    )
    .await;
    assert_eq!(asked.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        asked.headers()[LOCATION],
        format!("{path}#run-{running}").as_str()
    );
    let cancel = h.admin.get_run(&running).await.unwrap().cancel;
    // Recorded as asked by the token that logged the browser in.
    assert_eq!(cancel.and_then(|c| c.by).as_deref(), Some("test admin"));
    // The page says so instead of offering the button again.
    let (_, html) = page(&h, &path, &cookie).await;
    assert!(!html.contains(&button(&running)), "{html}");
    assert!(html.contains("cancelled by test admin"), "{html}");
    while !open.read.contains("cancelled by test admin") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), open.feed.chunk())
            .await
            .expect("the run's new head within 30 s")
            .expect("readable")
            .expect("open");
        open.read.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(open.read.contains("event: run"), "{}", open.read);

    // An ended run: the page answers in words, as the API does.
    let late = format!("/runs/{ended}/cancel");
    let refused = post(
        &h,
        &late,
        &cookie,
        Some(&origin),
        &[("csrf", &csrf_of(&html))],
    )
    .await;
    assert_eq!(refused.status(), StatusCode::CONFLICT);
    let text = refused.text().await.expect("body");
    assert!(text.contains("already ended as succeeded"), "{text}");
    h.stop().await;
}

#[tokio::test]
async fn a_long_transcript_shows_its_latest_messages_and_a_link_to_the_earlier_ones() {
    let h = Harness::start().await;
    let issue = h.issue("Long transcript").await;
    let run = h.run_on(&issue.key).await;
    // Six messages of 300 KiB: the page's budget (1 MiB) holds the latest three.
    let items: Vec<_> = (0..6)
        .map(|i| {
            let content = format!("marker-{i} <b>{}</b>", "x".repeat(300 << 10));
            message(MessageKind::Text, &format!("m{i}"), &content)
        })
        .collect();
    h.admin
        .ingest_run_events(&run.run.id, &IngestBatch { items })
        .await
        .expect("ingest");
    let cookie = log_in(&h).await;
    let (status, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    assert_eq!(status, StatusCode::OK);
    let shown = |html: &str| -> Vec<usize> {
        (0..6)
            .filter(|i| html.contains(&format!("marker-{i} ")))
            .collect()
    };
    assert_eq!(shown(&html), [3, 4, 5], "the latest messages");
    assert!(html.contains("&lt;b&gt;"), "agent text stays escaped");
    let at = html
        .find("Show earlier messages")
        .expect("a link to the earlier messages");
    let href_at = html[..at].rfind("href=\"").expect("the link's href") + 6;
    let href = html[href_at..]
        .split('"')
        .next()
        .expect("href")
        .replace("&amp;", "&");
    assert!(
        href.starts_with(&format!("/issues/{}?run=", issue.key)),
        "{href}"
    );

    let (status, earlier) = page(&h, &href, &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown(&earlier), [0, 1, 2], "the page before them");
    assert!(
        !earlier.contains("Show earlier messages"),
        "nothing before the first"
    );

    let (status, bad) = page(
        &h,
        &format!("/issues/{}?run={}&before=soon", issue.key, run.run.id),
        &cookie,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        bad.contains("before must be the position of a message"),
        "{bad}"
    );
    h.stop().await;
}

#[tokio::test]
async fn an_unknown_page_answers_an_html_page_and_the_api_json() {
    let h = Harness::start().await;
    let cookie = log_in(&h).await;
    for path in ["/no-such-page", "/issues/WUJ-1/nothing-here"] {
        let answer = browser()
            .get(format!("{}{path}", h.url()))
            .header(COOKIE, &cookie)
            .send()
            .await
            .expect("GET");
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            answer.headers()["content-type"],
            "text/html; charset=utf-8",
            "{path}"
        );
        assert!(answer.headers().contains_key("content-security-policy"));
        let html = answer.text().await.expect("body");
        assert!(html.contains("<h1>Error 404</h1>"), "{html}");
        assert!(html.contains("there is no page at this address"), "{html}");
    }
    let api = browser()
        .get(format!("{}/api/v1/no-such-route", h.url()))
        .send()
        .await
        .expect("GET");
    assert_eq!(api.status(), StatusCode::NOT_FOUND);
    assert_eq!(api.headers()["content-type"], "application/json");
    let error: serde_json::Value = api.json().await.expect("JSON");
    assert!(
        error["error"]
            .as_str()
            .expect("an error")
            .contains("no such API route"),
        "{error}"
    );
    // A method a route does not take: the same two kinds of answer, in words.
    let page = browser()
        .delete(format!("{}/issues", h.url()))
        .header(COOKIE, &cookie)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(page.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert!(page.headers().contains_key("content-security-policy"));
    let html = page.text().await.expect("body");
    assert!(html.contains("cannot be asked for that way"), "{html}");
    let api = browser()
        .put(format!("{}/api/v1/issues", h.url()))
        .send()
        .await
        .expect("PUT");
    assert_eq!(api.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(api.headers()["content-type"], "application/json");
    let error: serde_json::Value = api.json().await.expect("JSON");
    assert_eq!(
        error["error"],
        "/api/v1/issues does not take PUT; /api/v1/openapi.json lists what each route takes"
    );
    h.stop().await;
}

#[tokio::test]
async fn the_title_and_description_are_edited_from_the_issue_page() {
    let h = Harness::start().await;
    let issue = h.issue("Tpyo in the title").await;
    let cookie = log_in(&h).await;
    let path = format!("/issues/{}", issue.key);
    let (_, html) = page(&h, &path, &cookie).await;
    // The form starts from what the issue says.
    assert!(
        html.contains(r#"id="edit-title" type="text" name="title" required maxlength="500" value="Tpyo in the title""#),
        "{html}"
    );
    let csrf = csrf_of(&html);
    let edit = format!("{path}/edit");
    let answer = post(
        &h,
        &edit,
        &cookie,
        Some(&h.url()),
        &[
            ("title", "Typo in the title"),
            ("description", "Now with **a description**"),
            ("csrf", &csrf),
        ],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    assert_eq!(answer.headers()[LOCATION], path.as_str());
    let edited = h.admin.get_issue(&issue.key).await.expect("issue");
    assert_eq!(edited.title, "Typo in the title");
    assert_eq!(edited.description, "Now with **a description**");
    let (_, html) = page(&h, &path, &cookie).await;
    assert!(html.contains("<strong>a description</strong>"), "{html}");
    // An empty title is refused in words, and nothing changes.
    let answer = post(
        &h,
        &edit,
        &cookie,
        Some(&h.url()),
        &[("title", "  "), ("description", "gone"), ("csrf", &csrf)],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    let text = answer.text().await.expect("body");
    assert!(text.contains("an issue needs a non-empty title"), "{text}");
    let kept = h.admin.get_issue(&issue.key).await.expect("issue");
    assert_eq!(kept.description, "Now with **a description**");
    // Like every form, it needs the session's token.
    let answer = post(
        &h,
        &edit,
        &cookie,
        Some(&h.url()),
        &[("title", "Forged"), ("description", "")],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        h.admin.get_issue(&issue.key).await.expect("issue").title,
        "Typo in the title"
    );
    h.stop().await;
}

#[tokio::test]
async fn discussion_and_transcript_entries_are_labelled_in_words() {
    let h = Harness::start().await;
    let id = h.discussion("grok").await.discussion.id;
    h.admin
        .ingest_discussion_events(
            &id,
            &IngestBatch {
                items: vec![
                    message(MessageKind::UserInput, "1", "how do we make it fast?"),
                    message(MessageKind::Question, "2", "Which cache?"),
                    message(MessageKind::Plan, "3", "1. Cache it"),
                    message(MessageKind::Final, "4", "Planned."),
                ],
            },
        )
        .await
        .expect("ingest");
    let issue = h.issue("Labels").await;
    let run = h.run_on(&issue.key).await;
    h.admin
        .ingest_run_events(
            &run.run.id,
            &IngestBatch {
                items: vec![
                    message(MessageKind::UserInput, "1", "fix it"),
                    message(MessageKind::Final, "2", "fixed"),
                ],
            },
        )
        .await
        .expect("ingest");
    let cookie = log_in(&h).await;
    let labels = |html: &str| -> Vec<String> {
        html.split(r#"<div class="label">"#)
            .skip(1)
            .filter_map(|s| s.split_once("</div>").map(|(label, _)| label.to_owned()))
            .collect()
    };
    let (_, html) = page(&h, &format!("/discussions/{id}"), &cookie).await;
    assert_eq!(
        labels(&html),
        ["You", "Question", "Plan", "Reply"],
        "{html}"
    );
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    assert_eq!(labels(&html), ["You", "Reply"], "{html}");
    h.stop().await;
}

#[tokio::test]
async fn the_list_and_the_board_mark_the_issues_an_agent_is_working_on() {
    let h = Harness::start().await;
    let idle = h.issue("Waiting for someone").await;
    let busy = h.issue("Being worked on").await;
    let run = h.run_on(&busy.key).await;
    let cookie = log_in(&h).await;
    let row = |html: &str, key: &str| -> String {
        let start = html
            .find(&format!(r#"id="issue-{key}""#))
            .unwrap_or_else(|| panic!("no row of {key}: {html}"));
        let end = html[start..].find("</li>").expect("the row ends") + start;
        html[start..end].to_owned()
    };
    let (status, list) = page(&h, "/", &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert!(row(&list, &busy.key).contains("agent running"), "{list}");
    assert!(!row(&list, &idle.key).contains("agent running"), "{list}");
    assert!(
        list.contains(r#"href="/board""#),
        "the list links the board"
    );

    // One column per status, each issue in its status's.
    let (status, board) = page(&h, "/board", &cookie).await;
    assert_eq!(status, StatusCode::OK);
    let columns: Vec<&str> = board
        .split(r#"<section class="column" data-status=""#)
        .skip(1)
        .collect();
    let names: Vec<&str> = columns
        .iter()
        .map(|c| c.split('"').next().unwrap_or(""))
        .collect();
    assert_eq!(names, ["open", "in_progress", "done", "closed"]);
    assert!(columns[0].contains(&format!(r#"id="issue-{}""#, idle.key)));
    assert!(columns[1].contains(&format!(r#"id="issue-{}""#, busy.key)));
    assert!(row(&board, &busy.key).contains("agent running"), "{board}");

    // Once the run ends, the mark goes.
    h.admin
        .finish_run(
            &run.run.id,
            &wujie_protocol::api::FinishRun {
                status: RunStatus::Succeeded,
                exit_code: Some(0),
                error: None,
            },
        )
        .await
        .expect("finish");
    let (_, list) = page(&h, "/", &cookie).await;
    assert!(!row(&list, &busy.key).contains("agent running"), "{list}");
    h.stop().await;
}

#[tokio::test]
async fn the_issue_page_is_one_timeline_of_comments_status_changes_and_runs() {
    let h = Harness::start().await;
    let issue = h.issue("One timeline").await;
    let comment = |body: &str| wujie_protocol::api::CreateComment { body: body.into() };
    h.admin
        .add_comment(&issue.key, &comment("Said before the run"))
        .await
        .expect("comment");
    let run = h.run_on(&issue.key).await;
    h.admin
        .ingest_run_events(
            &run.run.id,
            &IngestBatch {
                items: vec![
                    message(MessageKind::UserInput, "1", "Please do it"),
                    message(MessageKind::Final, "2", "Did it"),
                ],
            },
        )
        .await
        .expect("ingest");
    h.admin
        .finish_run(
            &run.run.id,
            &wujie_protocol::api::FinishRun {
                status: RunStatus::Succeeded,
                exit_code: Some(0),
                error: None,
            },
        )
        .await
        .expect("finish");
    h.admin
        .add_comment(&issue.key, &comment("Said after the run"))
        .await
        .expect("comment");
    h.admin
        .set_issue_status(&issue.key, wujie_protocol::api::IssueStatus::Done)
        .await
        .expect("close");
    let cookie = log_in(&h).await;
    let (_, html) = page(&h, &format!("/issues/{}", issue.key), &cookie).await;
    let (_, timeline) = html
        .split_once(r#"<div id="timeline">"#)
        .unwrap_or_else(|| panic!("no timeline: {html}"));
    let at = |what: &str| {
        timeline
            .find(what)
            .unwrap_or_else(|| panic!("{what} is not on the timeline: {timeline}"))
    };
    // Oldest first: the comment, the run with its transcript, the comment after it, the
    // issue closed. (The run's start set the issue in progress: the run says so itself.)
    let order = [
        at("Said before the run"),
        at(&format!(r#"id="run-{}""#, run.run.id)),
        at("Please do it"),
        at("Did it"),
        at("Said after the run"),
        at("closed the issue as done"),
    ];
    assert!(order.is_sorted(), "{order:?}: {timeline}");
    // The run's prompt and reply are comments of the issue too, but shown once: in the run.
    assert_eq!(
        h.admin
            .get_issue(&issue.key)
            .await
            .expect("issue")
            .comments
            .len(),
        4
    );
    assert_eq!(timeline.matches("Please do it").count(), 1, "{timeline}");
    assert_eq!(timeline.matches("Did it").count(), 1, "{timeline}");
    assert!(!timeline.contains("in progress"), "{timeline}");
    h.stop().await;
}
