//! commondev `driver.json`: the data that chooses an agent backend.
//!
//! A driver declares how to start a sidecar (a small Node script that wraps one agent CLI behind
//! the sidecar JSON-RPC contract): which script, which node, which environment and arguments,
//! whether the CLI understands `--session-name`, and who prepares the model source
//! (`llmConfig`). Templates may use the placeholders `{workdir}` `{sessionId}` `{sessionName}`
//! `{dataDir}` `{pluginDir}`; anything else in braces that looks like a placeholder is an error,
//! because a silently unexpanded `{foo}` reaches the CLI as a literal and fails far from its cause.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The placeholders a driver template may use, in the order they are documented.
pub const PLACEHOLDERS: [&str; 5] = [
    "workdir",
    "sessionId",
    "sessionName",
    "dataDir",
    "pluginDir",
];

/// Why a `driver.json` was rejected or a template could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    #[error("driver.json is not valid JSON for a driver: {0}")]
    Json(String),
    #[error("driver.json field `{field}` must not be empty")]
    Empty { field: &'static str },
    #[error(
        "driver.json field `script` must be a relative path inside the driver directory without `..`, got {0:?}"
    )]
    ScriptOutsideDriver(String),
    #[error(
        "driver.json `llmConfig` is \"zcode\", which has no writer on purpose: only the environment \
         variable ZCODE_BUILTIN_PROVIDER_CONFIG_FILE is known, its file format has not been measured, \
         and writing a guessed format would break the CLI silently (it would look like \"the model \
         does not answer\"). Use \"none\" and configure ZCode's provider yourself (see \
         examples/custom-cli/zcode/README.md)"
    )]
    LlmConfigNotImplemented,
    #[error("driver.json `llmConfig` is {0:?}; the accepted values are \"pi\" and \"none\"")]
    UnknownLlmConfig(String),
    #[error(
        "driver.json `node` must be \"auto\" or an absolute path to a node executable, got {0:?}"
    )]
    BadNode(String),
    #[error(
        "unknown placeholder {{{name}}} in {location}; the known placeholders are {{workdir}} \
         {{sessionId}} {{sessionName}} {{dataDir}} {{pluginDir}}"
    )]
    UnknownPlaceholder { name: String, location: String },
}

/// Who writes the model-source configuration before the sidecar starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmConfig {
    /// Wujie writes pi's `models.json` and `auth.json` from its own model settings.
    Pi,
    /// The backend manages its own model source.
    None,
}

impl LlmConfig {
    fn parse(value: &str) -> Result<Self, DriverError> {
        match value {
            "pi" => Ok(Self::Pi),
            "none" => Ok(Self::None),
            "zcode" => Err(DriverError::LlmConfigNotImplemented),
            other => Err(DriverError::UnknownLlmConfig(other.to_owned())),
        }
    }
}

/// Which node runs the sidecar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeChoice {
    /// Local: `WUJIE_NODE`, then `node` on PATH. Over ssh: bare `node` from the remote PATH.
    Auto,
    /// An absolute path to a node executable (local runtime only).
    Path(String),
}

/// The raw shape of `driver.json` (camelCase, as the specification writes it).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawDriver {
    name: String,
    script: String,
    #[serde(default = "auto")]
    node: String,
    #[serde(default)]
    session_name_flag: bool,
    #[serde(default)]
    session_dir_suffix: String,
    #[serde(default = "none")]
    llm_config: String,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    cli_path: Option<String>,
}

fn auto() -> String {
    "auto".to_owned()
}

fn none() -> String {
    "none".to_owned()
}

/// A validated driver: every template only uses known placeholders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Driver {
    pub name: String,
    /// Path of the sidecar script, relative to the driver directory.
    pub script: String,
    pub node: NodeChoice,
    /// Whether `--session-name <name>` is passed to the sidecar.
    pub session_name_flag: bool,
    /// Suffix of the per-branch session directory handed to the sidecar.
    pub session_dir_suffix: String,
    pub llm_config: LlmConfig,
    /// Environment templates for the sidecar.
    pub env: BTreeMap<String, String>,
    /// Argument templates for the sidecar.
    pub args: Vec<String>,
    /// Declared location of the agent CLI (a template); the sidecar verifies it exists.
    pub cli_path: Option<String>,
}

impl Driver {
    /// Parses and validates the text of a `driver.json`.
    pub fn parse(text: &str) -> Result<Self, DriverError> {
        let raw: RawDriver =
            serde_json::from_str(text).map_err(|e| DriverError::Json(e.to_string()))?;
        if raw.name.trim().is_empty() {
            return Err(DriverError::Empty { field: "name" });
        }
        if raw.script.trim().is_empty() {
            return Err(DriverError::Empty { field: "script" });
        }
        if raw.script.starts_with('/') || raw.script.split(['/', '\\']).any(|part| part == "..") {
            return Err(DriverError::ScriptOutsideDriver(raw.script));
        }
        let node = match raw.node.as_str() {
            "auto" => NodeChoice::Auto,
            path if path.starts_with('/') => NodeChoice::Path(path.to_owned()),
            other => return Err(DriverError::BadNode(other.to_owned())),
        };
        let llm_config = LlmConfig::parse(&raw.llm_config)?;
        for (key, value) in &raw.env {
            check_template(value, &format!("env.{key}"))?;
        }
        for (index, arg) in raw.args.iter().enumerate() {
            check_template(arg, &format!("args[{index}]"))?;
        }
        if let Some(cli_path) = &raw.cli_path {
            check_template(cli_path, "cliPath")?;
        }
        Ok(Self {
            name: raw.name,
            script: raw.script,
            node,
            session_name_flag: raw.session_name_flag,
            session_dir_suffix: raw.session_dir_suffix,
            llm_config,
            env: raw.env,
            args: raw.args,
            cli_path: raw.cli_path,
        })
    }

    /// Expands every template of this driver with `values`.
    pub fn expand(&self, values: &PlaceholderValues) -> Result<ExpandedDriver, DriverError> {
        let env = self
            .env
            .iter()
            .map(|(key, value)| Ok((key.clone(), expand(value, values, &format!("env.{key}"))?)))
            .collect::<Result<BTreeMap<_, _>, DriverError>>()?;
        let mut args = self
            .args
            .iter()
            .enumerate()
            .map(|(index, arg)| expand(arg, values, &format!("args[{index}]")))
            .collect::<Result<Vec<_>, DriverError>>()?;
        if self.session_name_flag {
            args.push("--session-name".to_owned());
            args.push(values.session_name.clone());
        }
        let cli_path = self
            .cli_path
            .as_deref()
            .map(|template| expand(template, values, "cliPath"))
            .transpose()?;
        Ok(ExpandedDriver {
            env,
            args,
            cli_path,
        })
    }
}

/// The values placeholders expand to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlaceholderValues {
    pub workdir: String,
    pub session_id: String,
    pub session_name: String,
    pub data_dir: String,
    pub plugin_dir: String,
}

impl PlaceholderValues {
    fn get(&self, name: &str) -> Option<&str> {
        match name {
            "workdir" => Some(&self.workdir),
            "sessionId" => Some(&self.session_id),
            "sessionName" => Some(&self.session_name),
            "dataDir" => Some(&self.data_dir),
            "pluginDir" => Some(&self.plugin_dir),
            _ => None,
        }
    }
}

/// A driver's templates after expansion: what the sidecar is started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpandedDriver {
    pub env: BTreeMap<String, String>,
    pub args: Vec<String>,
    pub cli_path: Option<String>,
}

/// A piece of a template: literal text or a placeholder name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Placeholder(&'a str),
}

/// Splits a template into pieces. `{name}` is a placeholder when `name` is a non-empty run of
/// ASCII letters, digits and `_`; other braces (JSON in an argument, a lone `{`) are literal text.
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with('}') {
            if open > 0 {
                out.push(Piece::Text(&rest[..open]));
            }
            out.push(Piece::Placeholder(&after[..name_len]));
            rest = &after[name_len + 1..];
        } else {
            out.push(Piece::Text(&rest[..open + 1]));
            rest = after;
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

fn check_template(template: &str, location: &str) -> Result<(), DriverError> {
    expand(template, &PlaceholderValues::default(), location).map(|_| ())
}

/// Expands one template; `location` names it in errors (`args[2]`, `env.HOME`, `cliPath`).
pub fn expand(
    template: &str,
    values: &PlaceholderValues,
    location: &str,
) -> Result<String, DriverError> {
    let mut out = String::with_capacity(template.len());
    for piece in pieces(template) {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Placeholder(name) => match values.get(name) {
                Some(value) => out.push_str(value),
                None => {
                    return Err(DriverError::UnknownPlaceholder {
                        name: name.to_owned(),
                        location: location.to_owned(),
                    });
                }
            },
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> PlaceholderValues {
        PlaceholderValues {
            workdir: "/w".into(),
            session_id: "br-p-b".into(),
            session_name: "p/b".into(),
            data_dir: "/d".into(),
            plugin_dir: "/plug".into(),
        }
    }

    const ZCODE: &str = r#"{
      "name": "zcode", "script": "sidecar.mjs", "node": "auto",
      "sessionNameFlag": false, "sessionDirSuffix": ".zcode-sessions", "llmConfig": "none",
      "env": {"ZCODE_DATA_BASE_DIR": "{dataDir}/runtime/zcode"},
      "args": ["--workdir", "{workdir}", "--session-id", "{sessionId}", "--mode", "guarded"],
      "cliPath": "{pluginDir}/zcode.cjs"
    }"#;

    #[test]
    fn parses_and_expands_the_specification_example() {
        let driver = Driver::parse(ZCODE).unwrap();
        assert_eq!(driver.llm_config, LlmConfig::None);
        assert_eq!(driver.node, NodeChoice::Auto);
        let expanded = driver.expand(&values()).unwrap();
        assert_eq!(
            expanded.args,
            [
                "--workdir",
                "/w",
                "--session-id",
                "br-p-b",
                "--mode",
                "guarded"
            ]
        );
        assert_eq!(expanded.env["ZCODE_DATA_BASE_DIR"], "/d/runtime/zcode");
        assert_eq!(expanded.cli_path.as_deref(), Some("/plug/zcode.cjs"));
    }

    #[test]
    fn session_name_is_passed_only_when_declared() {
        let text = ZCODE.replace("\"sessionNameFlag\": false", "\"sessionNameFlag\": true");
        let with = Driver::parse(&text).unwrap().expand(&values()).unwrap();
        assert_eq!(with.args[6..], ["--session-name", "p/b"]);
        let without = Driver::parse(ZCODE).unwrap().expand(&values()).unwrap();
        assert!(!without.args.iter().any(|a| a == "--session-name"));
    }

    #[test]
    fn unknown_placeholders_are_errors_wherever_they_are() {
        for (from, to, location) in [
            (
                "{workdir}\", \"--session-id",
                "{cwd}\", \"--session-id",
                "args[1]",
            ),
            (
                "{dataDir}/runtime",
                "{rawfile}/runtime",
                "env.ZCODE_DATA_BASE_DIR",
            ),
            ("{pluginDir}/zcode.cjs", "{rawfile}/zcode.cjs", "cliPath"),
        ] {
            let err = Driver::parse(&ZCODE.replace(from, to)).unwrap_err();
            match err {
                DriverError::UnknownPlaceholder { location: got, .. } => assert_eq!(got, location),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn braces_that_are_not_placeholders_stay_literal() {
        let got = expand(r#"{"a": 1} { {} {workdir}"#, &values(), "x").unwrap();
        assert_eq!(got, r#"{"a": 1} { {} /w"#);
    }

    #[test]
    fn llm_config_zcode_is_refused_with_the_reason() {
        let err = Driver::parse(&ZCODE.replace("\"none\"", "\"zcode\"")).unwrap_err();
        assert_eq!(err, DriverError::LlmConfigNotImplemented);
        assert!(
            err.to_string()
                .contains("ZCODE_BUILTIN_PROVIDER_CONFIG_FILE")
        );
        let err = Driver::parse(&ZCODE.replace("\"none\"", "\"openai\"")).unwrap_err();
        assert_eq!(err, DriverError::UnknownLlmConfig("openai".into()));
    }

    #[test]
    fn rejects_bad_shapes() {
        assert!(matches!(Driver::parse("[]"), Err(DriverError::Json(_))));
        assert!(matches!(
            Driver::parse(&ZCODE.replace("sidecar.mjs", "../x.mjs")),
            Err(DriverError::ScriptOutsideDriver(_))
        ));
        assert!(matches!(
            Driver::parse(&ZCODE.replace("\"auto\"", "\"node18\"")),
            Err(DriverError::BadNode(_))
        ));
        assert!(matches!(
            Driver::parse(&ZCODE.replace("\"args\"", "\"argv\"")),
            Err(DriverError::Json(_))
        ));
    }

    #[test]
    fn template_expansion_never_panics_on_odd_input() {
        for template in [
            "{",
            "}",
            "{}",
            "{{}}",
            "{é}",
            "a{workdir",
            "{workdir}}",
            "é{x",
        ] {
            let _ = expand(template, &values(), "x");
        }
        assert_eq!(expand("a{workdir", &values(), "x").unwrap(), "a{workdir");
    }

    proptest::proptest! {
        #[test]
        fn expansion_never_panics_and_leaves_brace_free_text_alone(template in "\\PC*") {
            let result = expand(&template, &values(), "x");
            if !template.contains('{') {
                proptest::prop_assert_eq!(result.unwrap(), template);
            }
        }

        #[test]
        fn known_placeholders_always_expand(parts in proptest::collection::vec(("[a-z /]{0,4}", 0usize..5), 0..6)) {
            let mut template = String::new();
            let mut expected = String::new();
            let v = values();
            for (text, index) in &parts {
                template.push_str(text);
                expected.push_str(text);
                let name = PLACEHOLDERS[*index];
                template.push_str(&format!("{{{name}}}"));
                expected.push_str(v.get(name).unwrap_or_default());
            }
            proptest::prop_assert_eq!(expand(&template, &v, "x").unwrap(), expected);
        }
    }
}
