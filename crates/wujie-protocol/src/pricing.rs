//! What recorded token usage cost: a price table per provider and model (US dollars per
//! million input, output, cache-read and cache-write tokens), and the cost of a set of usage
//! rows under it. A model the table does not price has no cost: it is named as unpriced,
//! never given a made-up number.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::Usage;

/// US dollars per million tokens of each kind.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

/// Prices by `provider/model` or by `model` alone (any provider). The exact `provider/model`
/// entry wins over the model's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable(pub BTreeMap<String, ModelPrice>);

/// List prices of common models (USD per million tokens, standard tier, as published by
/// their vendors in 2025); the profile's `prices` add to and override them.
const DEFAULTS: &[(&str, ModelPrice)] = &[
    ("claude-opus-4-1", price(15.0, 75.0, 1.5, 18.75)),
    ("claude-opus-4", price(15.0, 75.0, 1.5, 18.75)),
    ("claude-sonnet-4-5", price(3.0, 15.0, 0.3, 3.75)),
    ("claude-sonnet-4", price(3.0, 15.0, 0.3, 3.75)),
    ("claude-haiku-4-5", price(1.0, 5.0, 0.1, 1.25)),
    ("claude-3-5-haiku", price(0.8, 4.0, 0.08, 1.0)),
    ("gpt-5", price(1.25, 10.0, 0.125, 0.0)),
    ("gpt-5-mini", price(0.25, 2.0, 0.025, 0.0)),
    ("gpt-5-codex", price(1.25, 10.0, 0.125, 0.0)),
    ("gpt-4.1", price(2.0, 8.0, 0.5, 0.0)),
    ("gpt-4.1-mini", price(0.4, 1.6, 0.1, 0.0)),
    ("gpt-4o", price(2.5, 10.0, 1.25, 0.0)),
    ("gpt-4o-mini", price(0.15, 0.6, 0.075, 0.0)),
    ("o3", price(2.0, 8.0, 0.5, 0.0)),
    ("o4-mini", price(1.1, 4.4, 0.275, 0.0)),
    ("gemini-2.5-pro", price(1.25, 10.0, 0.31, 0.0)),
    ("gemini-2.5-flash", price(0.3, 2.5, 0.075, 0.0)),
    ("grok-4", price(3.0, 15.0, 0.75, 0.0)),
    ("grok-code-fast-1", price(0.2, 1.5, 0.02, 0.0)),
    // The bundled fake provider's model (`wujie demo`) calls no model: it costs nothing.
    ("fake-provider/fake-model", price(0.0, 0.0, 0.0, 0.0)),
];

const fn price(input: f64, output: f64, cache_read: f64, cache_write: f64) -> ModelPrice {
    ModelPrice {
        input,
        output,
        cache_read,
        cache_write,
    }
}

impl PriceTable {
    /// The documented defaults.
    pub fn defaults() -> PriceTable {
        PriceTable(
            DEFAULTS
                .iter()
                .map(|(model, p)| ((*model).to_owned(), *p))
                .collect(),
        )
    }

    /// The defaults with `overrides` laid over them.
    pub fn with_overrides(overrides: PriceTable) -> PriceTable {
        let mut table = PriceTable::defaults();
        table.0.extend(overrides.0);
        table
    }

    pub fn price_of(&self, provider: &str, model: &str) -> Option<&ModelPrice> {
        self.0
            .get(&format!("{provider}/{model}"))
            .or_else(|| self.0.get(model))
    }

    /// The cost of `usage` rows: what the priced ones add up to, and which models had no
    /// price.
    pub fn cost<'a>(&self, usage: impl IntoIterator<Item = &'a Usage>) -> Cost {
        let mut cost = Cost::default();
        for u in usage {
            match self.price_of(&u.provider, &u.model) {
                Some(p) => {
                    let million = 1_000_000.0;
                    cost.priced_usd += (u.input_tokens as f64 * p.input
                        + u.output_tokens as f64 * p.output
                        + u.cache_read_tokens as f64 * p.cache_read
                        + u.cache_write_tokens as f64 * p.cache_write)
                        / million;
                }
                None => {
                    let name = format!("{}/{}", u.provider, u.model);
                    if !cost.unpriced_models.contains(&name) {
                        cost.unpriced_models.push(name);
                    }
                }
            }
        }
        cost
    }
}

/// The cost of some usage. `usd` is the total only when every model was priced.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// What the usage of priced models cost, in US dollars.
    pub priced_usd: f64,
    /// `provider/model` of usage the price table has no entry for.
    pub unpriced_models: Vec<String>,
}

impl Cost {
    /// The whole cost, or `None` when some usage is of a model without a price.
    pub fn usd(&self) -> Option<f64> {
        self.unpriced_models.is_empty().then_some(self.priced_usd)
    }

    /// `$0.0123`, `unknown`, or `$0.0123 + unknown` when some models have no price.
    pub fn text(&self) -> String {
        let dollars = format!("${:.4}", self.priced_usd);
        match (self.unpriced_models.is_empty(), self.priced_usd > 0.0) {
            (true, _) => dollars,
            (false, false) => "unknown".to_owned(),
            (false, true) => format!("{dollars} + unknown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(provider: &str, model: &str, i: u64, o: u64, cr: u64, cw: u64) -> Usage {
        Usage {
            provider: provider.into(),
            model: model.into(),
            input_tokens: i,
            output_tokens: o,
            cache_read_tokens: cr,
            cache_write_tokens: cw,
        }
    }

    #[test]
    fn each_kind_of_token_has_its_price() {
        let table = PriceTable::defaults();
        let cost = table.cost(&[usage(
            "anthropic",
            "claude-sonnet-4-5",
            1_000_000,
            1_000_000,
            1_000_000,
            1_000_000,
        )]);
        assert_eq!(cost.usd(), Some(3.0 + 15.0 + 0.3 + 3.75));
        assert_eq!(cost.text(), "$22.0500");
    }

    #[test]
    fn an_unknown_model_has_no_cost() {
        let table = PriceTable::defaults();
        let unknown = table.cost(&[usage("local", "my-llama", 10, 10, 0, 0)]);
        assert_eq!(unknown.usd(), None);
        assert_eq!(unknown.text(), "unknown");
        assert_eq!(unknown.unpriced_models, vec!["local/my-llama".to_owned()]);
        let mixed = table.cost(&[
            usage("local", "my-llama", 10, 10, 0, 0),
            usage("openai", "gpt-4o", 1_000_000, 0, 0, 0),
        ]);
        assert_eq!(mixed.usd(), None);
        assert_eq!(mixed.text(), "$2.5000 + unknown");
    }

    #[test]
    fn provider_entries_win_over_model_entries_and_overrides_over_defaults() {
        let overrides: PriceTable = serde_json::from_str(
            r#"{"gpt-4o": {"input": 1, "output": 1}, "azure/gpt-4o": {"input": 7, "output": 0}}"#,
        )
        .expect("table");
        let table = PriceTable::with_overrides(overrides);
        assert_eq!(
            table.price_of("openai", "gpt-4o").map(|p| p.input),
            Some(1.0)
        );
        assert_eq!(
            table.price_of("azure", "gpt-4o").map(|p| p.input),
            Some(7.0)
        );
        assert!(table.price_of("openai", "claude-sonnet-4-5").is_some());
    }

    #[test]
    fn a_price_with_a_misspelled_field_is_refused() {
        let bad = serde_json::from_str::<PriceTable>(r#"{"m": {"input": 1, "ouput": 2}}"#);
        assert!(bad.is_err());
    }
}
