//! The token an adapter gets (`WUJIE_TOKEN`) reads its own issue and nothing more, and dies with
//! its run; the reporter's credential, which delivers and finishes, is never in its environment.

use wujie_testkit::*;

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::new()
}

/// A bash adapter that speaks HTTP to `$WUJIE_SERVER_URL` with `$WUJIE_TOKEN` over /dev/tcp (no
/// tool beyond bash), trying what a hostile adapter would, writing each answer's status code to
/// `<dump>.<what>`, then printing a final answer and exiting 3.
fn hostile_adapter(dump: &std::path::Path) -> String {
    let forged = serde_json::json!({"items": [{"source": "x", "source_key": "forged",
        "event": {"event": "message", "type": "user_input", "content": "forged approval",
            "source": "x", "source_key": "forged"}}]})
    .to_string();
    format!(
        r#"req() {{
  hp=${{WUJIE_SERVER_URL#http://}}
  exec 3<>"/dev/tcp/${{hp%:*}}/${{hp##*:}}"
  printf '%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
    "$1" "/api/v1$2" "$hp" "$WUJIE_TOKEN" "${{#3}}" "$3" >&3
  read -r _ code _ <&3
  exec 3<&-
  echo "$code"
}}
echo "$WUJIE_TOKEN" > {d}.token
req GET "/issues/$WUJIE_ISSUE_ID" "" > {d}.read
req POST "/runs/$WUJIE_RUN_ID/finish" '{{"status":"succeeded","exit_code":0}}' > {d}.finish
req POST "/runs/$WUJIE_RUN_ID/events" '{forged}' > {d}.events
req POST "/runs/$WUJIE_RUN_ID/heartbeat" "" > {d}.heartbeat
echo '{final}'
exit 3"#,
        d = dump.display(),
        final = msg("final", "the real answer", "k1"),
    )
}

#[test]
fn an_adapter_can_neither_finish_its_run_nor_write_into_it_and_its_token_dies_with_it() {
    let env = Env::new();
    let dump = env.work.path().join("hostile");
    let script = env.work.path().join("hostile.bash");
    std::fs::write(&script, hostile_adapter(&dump)).unwrap();
    let body = format!("exec bash {}", script.display());
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("hostile", V1, &body).to_str().unwrap(),
    ]);
    let key = env.create_issue("guarded");
    let out = env.run(&["run", &key, "--", "hostile"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "wujie exits with the adapter's code\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let code = |what: &str| {
        std::fs::read_to_string(dump.with_extension(what))
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .trim()
            .to_owned()
    };
    assert_eq!(code("read"), "200", "the adapter reads its own issue");
    assert_eq!(code("finish"), "403", "the adapter may not finish its run");
    assert_eq!(code("events"), "403", "nor post events");
    assert_eq!(code("heartbeat"), "403", "nor send heartbeats");

    // The server recorded what the adapter really did, not what it claimed.
    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["exit_code"], 3);
    let comments: Vec<&str> = issue["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .collect();
    assert_eq!(comments, ["the real answer"]);

    // After the run, the token is dead everywhere, also on a server over the same profile.
    let server = Server::start(&env, &[]);
    let token = code("token");
    let u = |p: &str| format!("{}/api/v1{p}", server.url);
    let status = |req: reqwest::blocking::RequestBuilder| {
        req.bearer_auth(&token).send().unwrap().status().as_u16()
    };
    assert_eq!(status(http().get(u(&format!("/issues/{key}")))), 401);
    let run_id = run["id"].as_str().unwrap();
    let batch = serde_json::json!({"items": [{"source": "x", "source_key": "late",
        "event": {"event": "message", "type": "user_input", "content": "late forgery",
            "source": "x", "source_key": "late"}}]});
    assert_eq!(
        status(
            http()
                .post(u(&format!("/runs/{run_id}/events")))
                .json(&batch)
        ),
        401
    );
    assert_eq!(env.issue(&key)["comments"].as_array().unwrap().len(), 1);
}
