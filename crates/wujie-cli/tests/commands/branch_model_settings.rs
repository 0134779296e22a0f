//! Model settings are checked at `branch open`: a key variable that is not set is named there,
//! not discovered later as a 401 from the model server.

use wujie_testkit::*;

#[test]
fn an_unset_key_variable_is_refused_at_open() {
    let env = Env::new();
    let variable = format!("WUJIE_TEST_UNSET_KEY_{}", std::process::id());
    let settings = env.home.path().join("data/commondev/llm.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        serde_json::json!({"base_url": "http://127.0.0.1:9/v1", "api": "openai-completions",
                           "api_key_env": variable, "model": "m"})
        .to_string(),
    )
    .unwrap();
    let err = env.fails(&[
        "branch",
        "open",
        "--project",
        "p",
        "--branch",
        "b",
        "--agent-cli",
        "pi",
        "--workdir",
        env.work.path().to_str().unwrap(),
    ]);
    assert!(err.contains(&variable) && err.contains("not set"), "{err}");
}
