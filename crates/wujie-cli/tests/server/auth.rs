//! `wujie server`, tokens and login: auth on every route, run-scoped tokens, shared
//! credentials on one profile.

use wujie_testkit::*;

fn local_token(env: &Env) -> String {
    let creds: serde_json::Value = serde_json::from_slice(
        &std::fs::read(env.home.path().join("config/credentials.json")).unwrap(),
    )
    .unwrap();
    creds["local_token"].as_str().unwrap().to_owned()
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::new()
}

#[test]
fn standalone_server_shares_the_profile_and_requires_tokens() {
    let env = Env::new();
    let server = Server::start(&env, &[]);
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "binds loopback by default"
    );
    // The CLI on the same profile (embedded) and the server see the same database and token.
    let key = env.create_issue("shared");
    let token = local_token(&env);
    let got = http()
        .get(format!("{}/api/v1/issues/{key}", server.url))
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.json::<serde_json::Value>().unwrap()["title"], "shared");

    for path in [
        "/api/v1/issues",
        "/api/v1/workspace",
        &format!("/api/v1/issues/{key}"),
    ] {
        let r = http().get(format!("{}{path}", server.url)).send().unwrap();
        assert_eq!(r.status(), 401, "{path} without a token");
        let r = http()
            .get(format!("{}{path}", server.url))
            .bearer_auth("wjt_nope")
            .send()
            .unwrap();
        assert_eq!(r.status(), 401, "{path} with an unknown token");
    }
    let openapi = http()
        .get(format!("{}/api/v1/openapi.json", server.url))
        .send()
        .unwrap();
    assert_eq!(openapi.status(), 200);
    let doc: serde_json::Value = openapi.json().unwrap();
    assert!(
        doc["paths"]
            .as_object()
            .unwrap()
            .keys()
            .any(|p| p.contains("/runs/"))
    );
}

#[test]
fn token_create_and_login_from_another_profile() {
    let team = Env::new();
    let server = Server::start(&team, &[]);
    let token = team
        .ok(&["token", "create", "--name", "laptop"])
        .trim()
        .to_owned();
    assert!(token.starts_with("wjt_"));

    let laptop = Env::new();
    let err = laptop.fails(&["login", "--server", &server.url, "--token", "wjt_wrong"]);
    assert_eq!(
        err.trim_end(),
        format!(
            "wujie: error: the server at {} did not accept this token; check it, or mint a new \
             one with `wujie token create` where you are signed in to that server",
            server.url
        ),
    );
    let out = laptop.ok(&["login", "--server", &server.url, "--token", &token]);
    assert!(!out.contains(&token), "login never echoes the token");
    let key = laptop.create_issue("from the laptop");
    let seen = team.issue(&key);
    assert_eq!(seen["title"], "from the laptop");
}

#[test]
fn a_run_token_is_dead_once_its_run_ended() {
    let team = Env::new();
    let server = Server::start(&team, &[]);
    let token = team.ok(&["token", "create"]).trim().to_owned();
    let laptop = Env::new();
    laptop.ok(&["login", "--server", &server.url, "--token", &token]);

    let dump = laptop.work.path().join("ctx");
    let body = format!(
        "echo \"$WUJIE_TOKEN\" > {d}.token\necho \"$WUJIE_RUN_ID\" > {d}.run\necho '{}'",
        msg("final", "x", "k"),
        d = dump.display()
    );
    laptop.ok(&[
        "local-run",
        "provider",
        "install",
        laptop.plugin("ctx", V1, &body).to_str().unwrap(),
    ]);
    let first = laptop.create_issue("first");
    laptop.ok(&["run", &first, "--", "ctx"]);
    let first_run = std::fs::read_to_string(dump.with_extension("run"))
        .unwrap()
        .trim()
        .to_owned();
    let second = laptop.create_issue("second");
    laptop.ok(&["run", &second, "--", "ctx"]);
    let run_token = std::fs::read_to_string(dump.with_extension("token"))
        .unwrap()
        .trim()
        .to_owned();
    let own_run = std::fs::read_to_string(dump.with_extension("run"))
        .unwrap()
        .trim()
        .to_owned();

    // The adapter's token read its issue while the run ran; now that it ended, nothing.
    let u = |p: &str| format!("{}/api/v1{p}", server.url);
    let batch = serde_json::json!({"items": [{"source": "x", "source_key": "y", "event": {"event": "message", "type": "text", "content": "z", "source": "x", "source_key": "y"}}]});
    assert_eq!(
        http()
            .get(u(&format!("/runs/{own_run}")))
            .bearer_auth(&run_token)
            .send()
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        http()
            .get(u(&format!("/issues/{second}")))
            .bearer_auth(&run_token)
            .send()
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        http()
            .post(u(&format!("/runs/{own_run}/events")))
            .bearer_auth(&run_token)
            .json(&batch)
            .send()
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        http()
            .post(u(&format!("/runs/{first_run}/events")))
            .bearer_auth(&run_token)
            .json(&batch)
            .send()
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        http()
            .get(u(&format!("/runs/{first_run}")))
            .bearer_auth(&run_token)
            .send()
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        http()
            .get(u(&format!("/issues/{first}")))
            .bearer_auth(&run_token)
            .send()
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        http()
            .post(u("/issues"))
            .bearer_auth(&run_token)
            .json(&serde_json::json!({"title": "no"}))
            .send()
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        http()
            .post(u("/tokens"))
            .bearer_auth(&run_token)
            .json(&serde_json::json!({"name": "no"}))
            .send()
            .unwrap()
            .status(),
        401
    );
}
