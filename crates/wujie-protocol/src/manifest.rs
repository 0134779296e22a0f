//! `provider.json`, the manifest of a local-run provider plugin (seed: "provider.json"): its
//! name, the adapter command, the protocol version it speaks and its declared capabilities.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::event::{FieldError, json_type_name, quote, take_opt_bool, take_opt_str, take_str};

pub const PROTOCOL_V1: &str = "wujie-localrun-provider.v1";
pub const PROTOCOL_V2: &str = "wujie-localrun-provider.v2";

/// Longest provider name accepted; the name becomes a directory name.
const MAX_NAME_BYTES: usize = 128;

/// The protocol an adapter speaks: v1 is Issue-first only, v2 also supports pre-issue
/// discussions and, optionally, native plan handoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtocolVersion {
    V1,
    V2,
}

impl ProtocolVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V1 => PROTOCOL_V1,
            ProtocolVersion::V2 => PROTOCOL_V2,
        }
    }

    fn from_name(name: &str) -> Option<ProtocolVersion> {
        match name {
            PROTOCOL_V1 => Some(ProtocolVersion::V1),
            PROTOCOL_V2 => Some(ProtocolVersion::V2),
            _ => None,
        }
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// What the adapter declares it can do. Absent fields are `false` / `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    pub interactive_pty: bool,
    pub structured_events: bool,
    pub issue_context: Option<String>,
    pub usage: bool,
    pub native_plan_handoff: bool,
    /// The agent uses Ctrl+Z itself: on a terminal the key goes to it instead of stopping the
    /// session, unless it comes again within 3 s (`interactive_pty` only).
    pub takes_ctrl_z: bool,
    /// After `fg` the agent repaints in full only when its window size changed: the terminal
    /// host makes its terminal one column narrower until it drew (`interactive_pty` only).
    pub resize_to_repaint: bool,
    /// The agent stops itself on Ctrl+Z (its own job control) and, once continued, draws
    /// again where the shell left the cursor: the key goes to it, the adapter runs it as the
    /// foreground process group of its terminal (so that its stop is not discarded), and the
    /// session stops when it did (`interactive_pty` only).
    pub suspends_itself: bool,
}

/// A validated `provider.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Manifest {
    pub schema_version: u32,
    /// Normalised: trimmed, lower case, safe as a directory name.
    pub name: String,
    pub display_name: Option<String>,
    pub command: String,
    pub protocol: ProtocolVersion,
    pub capabilities: Capabilities,
}

/// Why a `provider.json` was rejected. Every message names the field and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("provider.json is not valid JSON: {0}")]
    NotJson(String),
    #[error("provider.json must be a JSON object, found {found}")]
    NotObject { found: &'static str },
    #[error("provider.json: missing field `{field}`")]
    MissingField { field: &'static str },
    #[error("provider.json: field `{field}` must be {expected}, found {found}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    #[error("provider.json: field `{field}` must not be empty")]
    EmptyField { field: &'static str },
    #[error(
        "provider.json: unsupported schema_version {found}: only 1 is supported, write \"schema_version\": 1"
    )]
    UnsupportedSchema { found: String },
    #[error(
        "provider.json: unsupported protocol {found}: expected \"{PROTOCOL_V1}\" or \"{PROTOCOL_V2}\" (Issue-first uses wujie-localrun-provider.v1; discussions need .v2)"
    )]
    UnsupportedProtocol { found: String },
    #[error("provider.json: invalid name {name:?}: {reason}; the name is used as a directory name")]
    InvalidName { name: String, reason: &'static str },
    #[error(
        "provider.json: capabilities.native_plan_handoff is true but protocol is {protocol}; native plan handoff needs \"{PROTOCOL_V2}\""
    )]
    HandoffNeedsV2 { protocol: &'static str },
}

impl From<FieldError> for ManifestError {
    fn from(e: FieldError) -> Self {
        match e {
            FieldError::Missing { field } => ManifestError::MissingField { field },
            FieldError::WrongType {
                field,
                expected,
                found,
            } => ManifestError::WrongType {
                field,
                expected,
                found,
            },
            FieldError::Empty { field } => ManifestError::EmptyField { field },
        }
    }
}

impl Manifest {
    /// Parses and validates the bytes of a `provider.json`. Unknown fields are ignored.
    pub fn parse(json: &[u8]) -> Result<Manifest, ManifestError> {
        // Editors on some systems save JSON with a byte-order mark; it is not content.
        let json = json.strip_prefix(b"\xef\xbb\xbf").unwrap_or(json);
        let mut object = match serde_json::from_slice::<Value>(json) {
            Ok(Value::Object(object)) => object,
            Ok(other) => {
                return Err(ManifestError::NotObject {
                    found: json_type_name(&other),
                });
            }
            Err(e) => return Err(ManifestError::NotJson(e.to_string())),
        };

        let schema_version = match object.remove("schema_version") {
            None => {
                return Err(FieldError::Missing {
                    field: "schema_version",
                }
                .into());
            }
            Some(value) if value.as_u64() == Some(1) => 1,
            Some(other) => {
                return Err(ManifestError::UnsupportedSchema {
                    found: quote(&other.to_string()),
                });
            }
        };

        let name = normalise_name(&take_str(&mut object, "name")?)?;

        let display_name = take_opt_str(&mut object, "display_name")?
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty());

        let command = take_str(&mut object, "command")?;
        if command.trim().is_empty() {
            return Err(FieldError::Empty { field: "command" }.into());
        }

        let protocol = match object.remove("protocol") {
            None => return Err(FieldError::Missing { field: "protocol" }.into()),
            Some(value) => match value.as_str().and_then(ProtocolVersion::from_name) {
                Some(protocol) => protocol,
                None => {
                    return Err(ManifestError::UnsupportedProtocol {
                        found: quote(&value.to_string()),
                    });
                }
            },
        };

        let capabilities = match object.remove("capabilities") {
            None | Some(Value::Null) => Capabilities::default(),
            Some(Value::Object(mut caps)) => parse_capabilities(&mut caps)?,
            Some(other) => {
                return Err(FieldError::WrongType {
                    field: "capabilities",
                    expected: "an object",
                    found: json_type_name(&other),
                }
                .into());
            }
        };
        if capabilities.native_plan_handoff && protocol != ProtocolVersion::V2 {
            return Err(ManifestError::HandoffNeedsV2 {
                protocol: protocol.as_str(),
            });
        }

        Ok(Manifest {
            schema_version,
            name,
            display_name,
            command,
            protocol,
            capabilities,
        })
    }

    /// The name to show a user: `display_name` when set, otherwise `name`.
    pub fn display_name(&self) -> &str {
        self.display_name.as_deref().unwrap_or(&self.name)
    }

    /// Whether `command` is resolved against the manifest's directory (it contains a path
    /// separator or starts with `.`) rather than looked up on `PATH`. An absolute command also
    /// counts: joining it onto the directory leaves it unchanged.
    pub fn command_is_relative_to_manifest(&self) -> bool {
        self.command.starts_with('.') || self.command.contains(['/', '\\'])
    }
}

fn parse_capabilities(caps: &mut Map<String, Value>) -> Result<Capabilities, FieldError> {
    Ok(Capabilities {
        interactive_pty: take_opt_bool(caps, "capabilities.interactive_pty")?.unwrap_or(false),
        structured_events: take_opt_bool(caps, "capabilities.structured_events")?.unwrap_or(false),
        issue_context: take_opt_str(caps, "capabilities.issue_context")?,
        usage: take_opt_bool(caps, "capabilities.usage")?.unwrap_or(false),
        native_plan_handoff: take_opt_bool(caps, "capabilities.native_plan_handoff")?
            .unwrap_or(false),
        takes_ctrl_z: take_opt_bool(caps, "capabilities.takes_ctrl_z")?.unwrap_or(false),
        resize_to_repaint: take_opt_bool(caps, "capabilities.resize_to_repaint")?.unwrap_or(false),
        suspends_itself: take_opt_bool(caps, "capabilities.suspends_itself")?.unwrap_or(false),
    })
}

/// Trims and lower-cases a provider name and checks that it is safe as one directory name.
fn normalise_name(raw: &str) -> Result<String, ManifestError> {
    provider_name(raw).map_err(|reason| ManifestError::InvalidName {
        name: quote(raw),
        reason,
    })
}

/// A provider name as every command takes it (trimmed, lower case), or why it cannot be one:
/// the name becomes one directory name below the profile, so it must not traverse.
pub fn provider_name(raw: &str) -> Result<String, &'static str> {
    let name = raw.trim().to_lowercase();
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > MAX_NAME_BYTES {
        Some("it is longer than 128 bytes")
    } else if name.contains(['/', '\\']) {
        Some("it contains a path separator ('/' or '\\')")
    } else if name.contains("..") {
        Some("it contains \"..\"")
    } else if name.starts_with('.') {
        Some("it starts with '.'")
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character")
    } else if name.chars().any(char::is_whitespace) {
        Some("it contains whitespace")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(reason),
        None => Ok(name),
    }
}
