//! Any bytes as provider.json: parsing never panics, and an accepted manifest serialises to JSON
//! that parses back to the same manifest with a name that is safe as a directory name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wujie_protocol::manifest::Manifest;

fuzz_target!(|data: &[u8]| {
    let Ok(manifest) = Manifest::parse(data) else {
        return;
    };
    assert!(!manifest.name.is_empty());
    assert!(!manifest.name.contains(['/', '\\']) && !manifest.name.starts_with('.'));
    assert_eq!(manifest.name, manifest.name.trim().to_lowercase());
    let json = serde_json::to_vec(&manifest).expect("a manifest serialises");
    assert_eq!(Manifest::parse(&json), Ok(manifest));
});
