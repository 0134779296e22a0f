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

/// `wujie cost`: the workspace's usage per provider and model with what each cost, then the
/// total. JSON: `{"usage": [{provider, model, …tokens, cost}], "cost": {…}}`.
pub async fn workspace(ctx: &crate::context::Context) -> anyhow::Result<()> {
    use crate::output::{inline, outln, print_json};
    let conn = ctx.connect().await?;
    let usage = conn.client.workspace_usage().await?;
    let prices = ctx.prices()?;
    let total = prices.cost(&usage);
    if ctx.json() {
        let mut rows = Vec::with_capacity(usage.len());
        for u in &usage {
            let mut row = serde_json::to_value(u)?;
            if let Some(obj) = row.as_object_mut() {
                obj.insert("cost".into(), cost_json(&prices.cost(std::iter::once(u))));
            }
            rows.push(row);
        }
        return print_json(&json!({ "usage": rows, "cost": cost_json(&total) }));
    }
    if usage.is_empty() {
        outln!("No usage yet: runs and discussions report it as their agents work.");
        return Ok(());
    }
    outln!(
        "{:<28} {:>12} {:>12} {:>12} {:>12}  COST",
        "PROVIDER/MODEL",
        "INPUT",
        "OUTPUT",
        "CACHE READ",
        "CACHE WRITE"
    );
    for u in &usage {
        let cost = prices.cost(std::iter::once(u));
        let unpriced = if cost.unpriced_models.is_empty() {
            ""
        } else {
            " (no price)"
        };
        outln!(
            "{:<28} {:>12} {:>12} {:>12} {:>12}  {}{unpriced}",
            inline(&format!("{}/{}", u.provider, u.model)),
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            cost.text(),
        );
    }
    outln!("\nWorkspace cost: {}", inline(&cost_text(&total)));
    Ok(())
}
