//! What an issue's runs cost, for `issue show`: a `cost` beside the issue's and each run's
//! fields in JSON, a cost line in text. A model without a price makes the cost unknown.

use serde_json::{Value, json};
use wujie_protocol::api::IssueDetail;
use wujie_protocol::pricing::{Cost, PriceTable};

/// `{"usd": 0.0105 | null, "priced_usd": …, "unpriced_models": […]}`: `usd` is the whole
/// cost, null when some usage is of a model without a price.
pub fn cost_json(cost: &Cost) -> Value {
    json!({
        "usd": cost.usd(),
        "priced_usd": cost.priced_usd,
        "unpriced_models": cost.unpriced_models,
    })
}

/// The issue as the API returns it, with `cost` on the issue and on each run.
pub fn priced_issue(issue: &IssueDetail, prices: &PriceTable) -> anyhow::Result<Value> {
    let mut doc = serde_json::to_value(issue)?;
    let total = prices.cost(issue.runs.iter().flat_map(|r| &r.usage));
    if let Some(runs) = doc.get_mut("runs").and_then(Value::as_array_mut) {
        for (json_run, run) in runs.iter_mut().zip(&issue.runs) {
            if let Some(obj) = json_run.as_object_mut() {
                obj.insert("cost".into(), cost_json(&prices.cost(&run.usage)));
            }
        }
    }
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("cost".into(), cost_json(&total));
    }
    Ok(doc)
}

/// The text `issue show` prints: `$0.0105`, `unknown (no price for local/llama)`, ….
pub fn cost_text(cost: &Cost) -> String {
    if cost.unpriced_models.is_empty() {
        cost.text()
    } else {
        format!(
            "{} (no price for {}; add it under `prices` in config.json)",
            cost.text(),
            cost.unpriced_models.join(", ")
        )
    }
}
