//! Wujie's own model settings, and the writers that turn them into a backend's configuration
//! when a driver says `llmConfig` is not `none`.
//!
//! Settings come from `<data_dir>/commondev/llm.json`
//! (`{"base_url", "api", "api_key_env", "model"}`), each overridable by an environment variable:
//! `WUJIE_LLM_BASE_URL`, `WUJIE_LLM_API`, `WUJIE_LLM_API_KEY_ENV`, `WUJIE_LLM_MODEL`.
//! `api_key_env` names the environment variable that holds the key: the key itself is never
//! written to disk by Wujie.

mod pi;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use wujie_protocol::driver::LlmConfig;

use crate::error::{CommondevError, Result};

/// The model source Wujie hands to backends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    #[serde(default)]
    pub base_url: Option<String>,
    /// Wire API: `openai-completions`, `openai-responses` or `anthropic-messages`.
    #[serde(default)]
    pub api: Option<String>,
    /// Name of the environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
}

/// Environment overrides, read once by the product and given explicitly in tests.
#[derive(Debug, Clone, Default)]
pub struct LlmOverrides(pub LlmSettings);

impl LlmOverrides {
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self(LlmSettings {
            base_url: var("WUJIE_LLM_BASE_URL"),
            api: var("WUJIE_LLM_API"),
            api_key_env: var("WUJIE_LLM_API_KEY_ENV"),
            model: var("WUJIE_LLM_MODEL"),
        })
    }
}

const ENV_NAMES: &str = "WUJIE_LLM_BASE_URL, WUJIE_LLM_API, WUJIE_LLM_API_KEY_ENV, WUJIE_LLM_MODEL";

/// Complete settings, every field present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSource {
    pub base_url: String,
    pub api: String,
    pub api_key_env: String,
    pub model: String,
}

const APIS: [&str; 3] = [
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
];

impl LlmSettings {
    /// Reads `file` (absent is fine) and applies `overrides` on top.
    pub fn load(file: &Path, overrides: &LlmOverrides) -> Result<Self> {
        let mut settings = match std::fs::read_to_string(file) {
            Ok(text) => serde_json::from_str::<Self>(&text).map_err(|e| {
                CommondevError::LlmSettingsInvalid {
                    file: file.to_path_buf(),
                    detail: e.to_string(),
                }
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::default(),
            Err(source) => {
                return Err(CommondevError::Io {
                    what: "could not read",
                    path: file.to_path_buf(),
                    source,
                });
            }
        };
        let o = &overrides.0;
        for (slot, value) in [
            (&mut settings.base_url, &o.base_url),
            (&mut settings.api, &o.api),
            (&mut settings.api_key_env, &o.api_key_env),
            (&mut settings.model, &o.model),
        ] {
            if value.is_some() {
                slot.clone_from(value);
            }
        }
        Ok(settings)
    }

    pub(crate) fn complete(&self, config: &'static str, file: &Path) -> Result<ModelSource> {
        let missing: Vec<&str> = [
            ("base_url", &self.base_url),
            ("api", &self.api),
            ("api_key_env", &self.api_key_env),
            ("model", &self.model),
        ]
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| *k)
        .collect();
        if !missing.is_empty() {
            return Err(CommondevError::LlmSettingsMissing {
                config,
                missing: missing.join(", "),
                file: file.to_path_buf(),
                env: ENV_NAMES.into(),
            });
        }
        let source = ModelSource {
            base_url: self.base_url.clone().unwrap_or_default(),
            api: self.api.clone().unwrap_or_default(),
            api_key_env: self.api_key_env.clone().unwrap_or_default(),
            model: self.model.clone().unwrap_or_default(),
        };
        if !APIS.contains(&source.api.as_str()) {
            return Err(CommondevError::LlmSettingsInvalid {
                file: file.to_path_buf(),
                detail: format!("api {:?} is not one of {}", source.api, APIS.join(", ")),
            });
        }
        Ok(source)
    }
}

impl ModelSource {
    /// The key's variable must be set for the sidecar — in Wujie's environment, which it
    /// inherits, or in the driver's `env`. Otherwise the backend would send the variable's
    /// *name* as the key and fail much later with a 401 that says nothing about why.
    pub(super) fn check_key(&self, driver_env: &BTreeMap<String, String>) -> Result<()> {
        let name = &self.api_key_env;
        let set_here = std::env::var_os(name).is_some_and(|v| !v.is_empty());
        let set_by_driver = driver_env.get(name).is_some_and(|v| !v.is_empty());
        if set_here || set_by_driver {
            return Ok(());
        }
        Err(CommondevError::LlmKeyUnset {
            variable: name.clone(),
        })
    }
}

/// Prepares the model source for a branch, per the driver's `llmConfig`. Returns the directory
/// the sidecar receives as `WUJIE_LLM_DIR`, or `None` when the backend manages its own.
/// `driver_env` is the driver's own `env`, which the sidecar gets on top of Wujie's.
pub fn prepare(
    config: LlmConfig,
    settings: &LlmSettings,
    settings_file: &Path,
    branch_dir: &Path,
    driver_env: &BTreeMap<String, String>,
) -> Result<Option<std::path::PathBuf>> {
    match config {
        LlmConfig::None => Ok(None),
        LlmConfig::Pi => pi::prepare(settings, settings_file, branch_dir, driver_env).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_win_and_missing_fields_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("llm.json");
        std::fs::write(
            &file,
            r#"{"base_url":"http://a/v1","api":"openai-completions","model":"m"}"#,
        )
        .unwrap();
        let overrides = LlmOverrides(LlmSettings {
            model: Some("m2".into()),
            ..Default::default()
        });
        let settings = LlmSettings::load(&file, &overrides).unwrap();
        assert_eq!(settings.model.as_deref(), Some("m2"));
        let err = prepare(
            LlmConfig::Pi,
            &settings,
            &file,
            tmp.path(),
            &BTreeMap::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("api_key_env") && err.contains("WUJIE_LLM_API_KEY_ENV"),
            "{err}"
        );
        assert_eq!(
            prepare(
                LlmConfig::None,
                &settings,
                &file,
                tmp.path(),
                &BTreeMap::new()
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn a_key_variable_that_is_not_set_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("llm.json");
        let variable = format!("WUJIE_TEST_UNSET_KEY_{}", std::process::id());
        let settings = LlmSettings {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api: Some("openai-completions".into()),
            api_key_env: Some(variable.clone()),
            model: Some("m".into()),
        };
        let err = prepare(
            LlmConfig::Pi,
            &settings,
            &file,
            tmp.path(),
            &BTreeMap::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(&variable) && err.contains("not set"), "{err}");
        assert!(
            !tmp.path().join("llm/models.json").exists(),
            "nothing written"
        );
        // The driver's own `env` may provide it.
        let driver_env = BTreeMap::from([(variable, "k".to_owned())]);
        let dir = prepare(LlmConfig::Pi, &settings, &file, tmp.path(), &driver_env).unwrap();
        assert!(dir.unwrap().join("models.json").is_file());
    }
}
