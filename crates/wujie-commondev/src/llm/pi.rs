//! The writer behind `llmConfig: "pi"`: pi's `models.json` and `auth.json`, in a per-branch
//! directory the sidecar points pi at (never the user's own pi directory). This file is the one
//! place in the core that knows pi's configuration format, because the driver data asks for it
//! by name; how pi is launched lives in `runtime/pi/`.

use std::path::Path;

use serde_json::json;
use wujie_process::atomic_file::write_atomic;

use super::ModelSource;
use crate::error::{CommondevError, Result};

/// The provider id Wujie's model source gets in pi's configuration.
const PROVIDER: &str = "wujie";

/// Checks the settings (the key's variable included) and writes the configuration into
/// `<branch_dir>/llm`; returns that directory.
pub(super) fn prepare(
    settings: &super::LlmSettings,
    settings_file: &Path,
    branch_dir: &Path,
    driver_env: &std::collections::BTreeMap<String, String>,
) -> Result<std::path::PathBuf> {
    let source = settings.complete("pi", settings_file)?;
    source.check_key(driver_env)?;
    let dir = branch_dir.join("llm");
    write(&dir, &source)?;
    Ok(dir)
}

fn write(dir: &Path, source: &ModelSource) -> Result<()> {
    // `apiKey` holds the *name* of the environment variable: pi resolves it at request time,
    // so the key never lands on disk.
    let models = json!({
        "providers": {
            PROVIDER: {
                "baseUrl": source.base_url,
                "api": source.api,
                "apiKey": source.api_key_env,
                "models": [{"id": source.model, "name": source.model}],
            }
        }
    });
    let selection = json!({"defaultProvider": PROVIDER, "defaultModel": source.model});
    for (name, value) in [
        ("models.json", models),
        ("auth.json", json!({})),
        ("settings.json", selection),
    ] {
        let path = dir.join(name);
        let text = serde_json::to_vec_pretty(&value).unwrap_or_default();
        // Owner-only: auth.json is where pi keeps the keys a user logs in with.
        write_atomic(&path, &text, 0o600).map_err(|source| CommondevError::Io {
            what: "could not write the model configuration",
            path,
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_models_without_the_key() {
        let tmp = tempfile::tempdir().unwrap();
        let source = ModelSource {
            base_url: "http://127.0.0.1:9/v1".into(),
            api: "openai-completions".into(),
            api_key_env: "MY_KEY_VAR".into(),
            model: "mock-1".into(),
        };
        write(tmp.path(), &source).unwrap();
        let models: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(tmp.path().join("models.json")).unwrap())
                .unwrap();
        assert_eq!(models["providers"]["wujie"]["apiKey"], "MY_KEY_VAR");
        assert_eq!(models["providers"]["wujie"]["models"][0]["id"], "mock-1");
        for name in ["models.json", "auth.json", "settings.json"] {
            let mode = std::fs::metadata(tmp.path().join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
    }
}
