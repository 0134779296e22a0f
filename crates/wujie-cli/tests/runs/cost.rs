//! What runs cost in `wujie issue show`: priced from the default table or the profile's
//! `prices`, and unknown (never a guess) for a model without a price.

use wujie_testkit::{Env, V1, write_plugin};

/// Installs an adapter that reports one usage event of `provider/model`.
fn usage_plugin(env: &Env, name: &str, provider: &str, model: &str) {
    let usage = serde_json::json!({"usage": {
        "provider": provider, "model": model, "input_tokens": 1000, "output_tokens": 500,
        "cache_read_tokens": 2000, "cache_write_tokens": 0
    }});
    let dir = env.work.path().join(name);
    write_plugin(&dir, name, V1, &format!("echo '{usage}'"));
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
}

fn set_prices(env: &Env, prices: serde_json::Value) {
    let path = env.config_path();
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("config")).expect("JSON");
    config["prices"] = prices;
    std::fs::write(&path, config.to_string()).expect("write config");
}

#[test]
fn runs_and_issues_are_priced_and_unknown_models_stay_unknown() {
    let env = Env::new();
    usage_plugin(&env, "sonnet", "anthropic", "claude-sonnet-4-5");
    usage_plugin(&env, "llama", "local", "llama");
    let key = env.create_issue("Cost");
    env.ok(&["run", &key, "--", "sonnet"]);
    env.ok(&["run", &key, "--", "llama"]);

    let shown = env.issue(&key);
    // 1000 × $3 + 500 × $15 + 2000 × $0.30 per million.
    let priced = 0.003 + 0.0075 + 0.0006;
    let run_cost = |i: usize| shown["runs"][i]["cost"].clone();
    assert!((run_cost(0)["usd"].as_f64().unwrap() - priced).abs() < 1e-12);
    assert!(run_cost(1)["usd"].is_null(), "{}", run_cost(1));
    assert_eq!(
        run_cost(1)["unpriced_models"],
        serde_json::json!(["local/llama"])
    );
    assert!(
        shown["cost"]["usd"].is_null(),
        "one run has no price: {}",
        shown["cost"]
    );
    assert!((shown["cost"]["priced_usd"].as_f64().unwrap() - priced).abs() < 1e-12);
    // The tokens are there either way.
    assert_eq!(shown["runs"][1]["usage"][0]["input_tokens"], 1000);

    let text = env.ok(&["issue", "show", &key]);
    assert!(text.contains("cost: $0.0111"), "{text}");
    assert!(
        text.contains("cost: unknown (no price for local/llama"),
        "{text}"
    );
    assert!(text.contains("Cost: $0.0111 + unknown"), "{text}");

    // The profile's prices add the missing model and override a default.
    set_prices(
        &env,
        serde_json::json!({
            "local/llama": {"input": 1, "output": 2},
            "claude-sonnet-4-5": {"input": 0, "output": 0}
        }),
    );
    let shown = env.issue(&key);
    assert_eq!(shown["runs"][0]["cost"]["usd"], 0.0);
    assert!((shown["cost"]["usd"].as_f64().unwrap() - 0.002).abs() < 1e-12);
}

#[test]
fn a_malformed_price_table_is_named() {
    let env = Env::new();
    usage_plugin(&env, "sonnet", "anthropic", "claude-sonnet-4-5");
    let key = env.create_issue("Cost");
    set_prices(&env, serde_json::json!({"m": {"input": "three"}}));
    let err = env.fails(&["issue", "show", &key]);
    assert!(
        err.contains("the `prices` entry \"m\""),
        "names the key: {err}"
    );
    assert!(
        err.contains("{\"input\": N, \"output\": N"),
        "and the shape: {err}"
    );
    assert!(err.contains("config.json"), "{err}");
    // Prices that are not an object at all.
    set_prices(&env, serde_json::json!(["m"]));
    let err = env.fails(&["issue", "show", &key]);
    assert!(
        err.contains("`prices` in") && err.contains("is not an object"),
        "{err}"
    );
}

#[test]
fn the_workspace_cost_adds_up_every_issue_per_model() {
    let env = Env::new();
    let empty = env.ok(&["cost"]);
    assert!(empty.contains("No usage yet"), "{empty}");
    assert_eq!(
        env.json(&["cost"]),
        serde_json::json!({"usage": [], "cost": {"usd": 0.0, "priced_usd": 0.0, "unpriced_models": []}})
    );

    usage_plugin(&env, "sonnet", "anthropic", "claude-sonnet-4-5");
    usage_plugin(&env, "llama", "local", "llama");
    let first = env.create_issue("Cost one");
    let second = env.create_issue("Cost two");
    env.ok(&["run", &first, "--", "sonnet"]);
    env.ok(&["run", &second, "--", "sonnet"]);
    env.ok(&["run", &second, "--", "llama"]);

    let doc = env.json(&["cost"]);
    let usage = doc["usage"].as_array().expect("usage rows");
    assert_eq!(usage.len(), 2, "{doc:#}");
    let sonnet = usage
        .iter()
        .find(|u| u["model"] == "claude-sonnet-4-5")
        .expect("the sonnet row");
    // Two runs of one usage event each, summed.
    assert_eq!(sonnet["input_tokens"], 2000, "{doc:#}");
    assert_eq!(sonnet["output_tokens"], 1000, "{doc:#}");
    assert_eq!(sonnet["cache_read_tokens"], 4000, "{doc:#}");
    let priced = 2.0 * (0.003 + 0.0075 + 0.0006);
    assert!((sonnet["cost"]["usd"].as_f64().unwrap() - priced).abs() < 1e-12);
    let llama = usage.iter().find(|u| u["model"] == "llama").expect("llama");
    assert!(llama["cost"]["usd"].is_null(), "{doc:#}");
    assert!(doc["cost"]["usd"].is_null(), "{doc:#}");
    assert!((doc["cost"]["priced_usd"].as_f64().unwrap() - priced).abs() < 1e-12);
    assert_eq!(
        doc["cost"]["unpriced_models"],
        serde_json::json!(["local/llama"])
    );

    let text = env.ok(&["cost"]);
    assert!(text.contains("anthropic/claude-sonnet-4-5"), "{text}");
    assert!(text.contains("$0.0222"), "{text}");
    assert!(text.contains("local/llama"), "{text}");
    assert!(text.contains("unknown (no price)"), "{text}");
    assert!(
        text.contains("Workspace cost: $0.0222 + unknown (no price for local/llama"),
        "{text}"
    );
}

#[test]
fn the_demo_s_fake_model_costs_nothing_instead_of_asking_for_a_price() {
    let env = Env::new();
    let out = env.ok(&["demo"]);
    assert!(!out.contains("no price for"), "{out}");
    let shown = env.issue("WUJ-1");
    assert_eq!(shown["cost"]["usd"], 0.0, "{}", shown["cost"]);
}
