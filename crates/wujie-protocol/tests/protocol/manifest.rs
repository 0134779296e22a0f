//! `provider.json`: the seed's manifests, and every validation rule as a table.

use serde_json::json;
use wujie_protocol::manifest::{
    Capabilities, Manifest, ManifestError, PROTOCOL_V1, PROTOCOL_V2, ProtocolVersion,
};

fn parse(value: &serde_json::Value) -> Result<Manifest, ManifestError> {
    Manifest::parse(value.to_string().as_bytes())
}

fn minimal() -> serde_json::Value {
    json!({
        "schema_version": 1,
        "name": "fake-provider",
        "command": "./wujie-localrun-fake",
        "protocol": PROTOCOL_V1,
    })
}

fn with(field: &str, value: serde_json::Value) -> serde_json::Value {
    let mut m = minimal();
    m[field] = value;
    m
}

fn without(field: &str) -> serde_json::Value {
    let mut m = minimal();
    m.as_object_mut().unwrap().remove(field);
    m
}

#[test]
fn seed_v2_minimal_manifest() {
    let text = r#"{
  "schema_version": 1,
  "name": "fake-provider",
  "display_name": "Fake Provider",
  "command": "./wujie-localrun-fake",
  "protocol": "wujie-localrun-provider.v2",
  "capabilities": {
    "interactive_pty": false,
    "structured_events": true,
    "issue_context": "env",
    "usage": true,
    "native_plan_handoff": false
  }
}"#;
    let m = Manifest::parse(text.as_bytes()).unwrap();
    assert_eq!(
        m,
        Manifest {
            schema_version: 1,
            name: "fake-provider".into(),
            display_name: Some("Fake Provider".into()),
            command: "./wujie-localrun-fake".into(),
            protocol: ProtocolVersion::V2,
            capabilities: Capabilities {
                interactive_pty: false,
                structured_events: true,
                issue_context: Some("env".into()),
                usage: true,
                native_plan_handoff: false,
                takes_ctrl_z: false,
                resize_to_repaint: false,
                suspends_itself: false,
            },
        }
    );
    assert_eq!(m.display_name(), "Fake Provider");
    assert!(m.command_is_relative_to_manifest());
    assert_eq!(
        serde_json::to_value(&m).unwrap(),
        json!({
            "schema_version": 1,
            "name": "fake-provider",
            "display_name": "Fake Provider",
            "command": "./wujie-localrun-fake",
            "protocol": "wujie-localrun-provider.v2",
            "capabilities": {
                "interactive_pty": false,
                "structured_events": true,
                "issue_context": "env",
                "usage": true,
                "native_plan_handoff": false,
                "takes_ctrl_z": false,
                "resize_to_repaint": false,
                "suspends_itself": false
            }
        })
    );
}

#[test]
fn seed_v1_fake_plugin_manifest() {
    let text = r#"{
  "schema_version": 1,
  "name": "fake-provider",
  "display_name": "Fake Provider",
  "command": "./wujie-localrun-fake",
  "protocol": "wujie-localrun-provider.v1",
  "capabilities": {
    "structured_events": true,
    "issue_context": "env",
    "usage": true
  }
}"#;
    let m = Manifest::parse(text.as_bytes()).unwrap();
    assert_eq!(m.protocol, ProtocolVersion::V1);
    assert_eq!(m.protocol.as_str(), PROTOCOL_V1);
    assert_eq!(
        m.capabilities,
        Capabilities {
            interactive_pty: false,
            structured_events: true,
            issue_context: Some("env".into()),
            usage: true,
            native_plan_handoff: false,
            takes_ctrl_z: false,
            resize_to_repaint: false,
            suspends_itself: false,
        }
    );
}

#[test]
fn accepted_variants() {
    // (manifest, check)
    let m = parse(&with("name", json!("  Fake-Provider \t"))).unwrap();
    assert_eq!(m.name, "fake-provider");
    assert_eq!(m.display_name(), "fake-provider", "falls back to the name");
    assert_eq!(m.display_name, None);

    let m = parse(&with("display_name", json!("   "))).unwrap();
    assert_eq!(
        m.display_name, None,
        "a blank display name is no display name"
    );
    let m = parse(&with("display_name", json!(null))).unwrap();
    assert_eq!(m.display_name, None);

    let m = parse(&without("capabilities")).unwrap();
    assert_eq!(m.capabilities, Capabilities::default());
    let m = parse(&with("capabilities", json!(null))).unwrap();
    assert_eq!(m.capabilities, Capabilities::default());
    let m = parse(&with(
        "capabilities",
        json!({"future_thing": [1], "usage": true}),
    ))
    .unwrap();
    assert!(
        m.capabilities.usage,
        "unknown capability fields are ignored"
    );

    let mut v2 = with("protocol", json!(PROTOCOL_V2));
    v2["capabilities"] = json!({"native_plan_handoff": true});
    assert!(parse(&v2).unwrap().capabilities.native_plan_handoff);

    let m = parse(&with("homepage", json!({"x": 1}))).unwrap();
    assert_eq!(
        m.name, "fake-provider",
        "unknown top-level fields are ignored"
    );

    // A byte-order mark before the JSON is tolerated.
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend(minimal().to_string().bytes());
    assert!(Manifest::parse(&bom).is_ok());

    for (command, relative) in [
        ("./wujie-localrun-fake", true),
        ("bin/adapter", true),
        ("..\\adapter.exe", true),
        (".adapter", true),
        ("/usr/local/bin/adapter", true),
        ("wujie-localrun-fake", false),
        ("python3", false),
    ] {
        let m = parse(&with("command", json!(command))).unwrap();
        assert_eq!(m.command_is_relative_to_manifest(), relative, "{command}");
    }
}

#[test]
fn rejected_manifests_table() {
    // (manifest bytes, fragments the message must contain)
    let cases: Vec<(Vec<u8>, Vec<&str>)> = vec![
        (b"".to_vec(), vec!["not valid JSON"]),
        (b"{\"schema_version\":1,".to_vec(), vec!["not valid JSON"]),
        (b"[1]".to_vec(), vec!["JSON object", "an array"]),
        (
            without("schema_version").to_string().into_bytes(),
            vec!["missing field `schema_version`"],
        ),
        (
            with("schema_version", json!(2)).to_string().into_bytes(),
            vec!["unsupported schema", "2", "\"schema_version\": 1"],
        ),
        (
            with("schema_version", json!(0)).to_string().into_bytes(),
            vec!["unsupported schema", "0"],
        ),
        (
            with("schema_version", json!("1")).to_string().into_bytes(),
            vec!["unsupported schema", "\"1\""],
        ),
        (
            with("schema_version", json!(1.5)).to_string().into_bytes(),
            vec!["unsupported schema", "1.5"],
        ),
        (
            with("schema_version", json!(-1)).to_string().into_bytes(),
            vec!["unsupported schema", "-1"],
        ),
        (
            without("name").to_string().into_bytes(),
            vec!["missing field `name`"],
        ),
        (
            with("name", json!(5)).to_string().into_bytes(),
            vec!["`name`", "a string", "a number"],
        ),
        (
            with("name", json!("   ")).to_string().into_bytes(),
            vec!["invalid name", "empty"],
        ),
        (
            with("name", json!("a/b")).to_string().into_bytes(),
            vec!["invalid name", "path separator"],
        ),
        (
            with("name", json!("a\\b")).to_string().into_bytes(),
            vec!["invalid name", "path separator"],
        ),
        (
            with("name", json!("..")).to_string().into_bytes(),
            vec!["invalid name", "\"..\""],
        ),
        (
            with("name", json!("a..b")).to_string().into_bytes(),
            vec!["invalid name", "\"..\""],
        ),
        (
            with("name", json!(".hidden")).to_string().into_bytes(),
            vec!["invalid name", "starts with '.'"],
        ),
        (
            with("name", json!("a\u{0}b")).to_string().into_bytes(),
            vec!["invalid name", "control character"],
        ),
        (
            with("name", json!("a\u{1b}b")).to_string().into_bytes(),
            vec!["invalid name", "control character"],
        ),
        (
            with("name", json!("fake provider"))
                .to_string()
                .into_bytes(),
            vec!["invalid name", "whitespace"],
        ),
        (
            with("name", json!("x".repeat(129)))
                .to_string()
                .into_bytes(),
            vec!["invalid name", "128 bytes"],
        ),
        (
            without("command").to_string().into_bytes(),
            vec!["missing field `command`"],
        ),
        (
            with("command", json!("")).to_string().into_bytes(),
            vec!["`command`", "empty"],
        ),
        (
            with("command", json!("  ")).to_string().into_bytes(),
            vec!["`command`", "empty"],
        ),
        (
            with("command", json!(["./a"])).to_string().into_bytes(),
            vec!["`command`", "a string", "an array"],
        ),
        (
            without("protocol").to_string().into_bytes(),
            vec!["missing field `protocol`"],
        ),
        (
            with("protocol", json!("wujie-localrun-provider.v3"))
                .to_string()
                .into_bytes(),
            vec![
                "unsupported protocol",
                "wujie-localrun-provider.v3",
                "Issue-first uses wujie-localrun-provider.v1; discussions need .v2",
            ],
        ),
        (
            with("protocol", json!("v1")).to_string().into_bytes(),
            vec![
                "unsupported protocol",
                "\"v1\"",
                "Issue-first uses wujie-localrun-provider.v1; discussions need .v2",
            ],
        ),
        (
            with("protocol", json!(2)).to_string().into_bytes(),
            vec!["unsupported protocol", "2"],
        ),
        (
            with("display_name", json!(1)).to_string().into_bytes(),
            vec!["`display_name`", "a string", "a number"],
        ),
        (
            with("capabilities", json!([])).to_string().into_bytes(),
            vec!["`capabilities`", "an object", "an array"],
        ),
        (
            with("capabilities", json!({"usage": "yes"}))
                .to_string()
                .into_bytes(),
            vec!["`capabilities.usage`", "a boolean", "a string"],
        ),
        (
            with("capabilities", json!({"interactive_pty": 1}))
                .to_string()
                .into_bytes(),
            vec!["`capabilities.interactive_pty`", "a boolean"],
        ),
        (
            with("capabilities", json!({"structured_events": "true"}))
                .to_string()
                .into_bytes(),
            vec!["`capabilities.structured_events`", "a boolean"],
        ),
        (
            with("capabilities", json!({"issue_context": true}))
                .to_string()
                .into_bytes(),
            vec!["`capabilities.issue_context`", "a string", "a boolean"],
        ),
        (
            with("capabilities", json!({"native_plan_handoff": 1}))
                .to_string()
                .into_bytes(),
            vec!["`capabilities.native_plan_handoff`", "a boolean"],
        ),
        (
            with("capabilities", json!({"native_plan_handoff": true}))
                .to_string()
                .into_bytes(),
            vec![
                "native_plan_handoff",
                PROTOCOL_V1,
                "needs \"wujie-localrun-provider.v2\"",
            ],
        ),
    ];
    for (bytes, fragments) in cases {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let error = match Manifest::parse(&bytes) {
            Ok(m) => panic!("{text} accepted as {m:?}"),
            Err(e) => e.to_string(),
        };
        assert!(error.starts_with("provider.json"), "{error}");
        for fragment in fragments {
            assert!(
                error.contains(fragment),
                "{text}: {error:?} lacks {fragment:?}"
            );
        }
    }
}

#[test]
fn error_variants_are_typed() {
    assert!(matches!(
        parse(&with("schema_version", json!(2))),
        Err(ManifestError::UnsupportedSchema { .. })
    ));
    assert!(matches!(
        parse(&with("protocol", json!("x"))),
        Err(ManifestError::UnsupportedProtocol { .. })
    ));
    assert!(matches!(
        parse(&with("name", json!("a/b"))),
        Err(ManifestError::InvalidName { .. })
    ));
    assert!(matches!(
        Manifest::parse(b"\xff"),
        Err(ManifestError::NotJson(_))
    ));
}

#[test]
fn huge_wrong_values_are_not_echoed_whole() {
    let error = parse(&with("protocol", json!("v".repeat(100_000))))
        .unwrap_err()
        .to_string();
    assert!(error.len() < 600, "{}", error.len());
}
