//! The workspace's own rules, checked against its real crates. Each check's unit tests (in
//! `src/`) show that it fails on code that breaks its rule.

use std::path::{Path, PathBuf};
use wujie_tidy::workspace::{self, Package, SourceKind};
use wujie_tidy::{Violation, boundaries, causes, diagnostics, purity, skips, usage};

fn root_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml")
}

fn packages() -> Vec<Package> {
    let packages =
        workspace::load(&root_manifest()).expect("cargo metadata describes the workspace");
    assert!(
        packages.iter().any(|p| p.name == "wujie-store") && packages.len() >= 10,
        "cargo metadata listed only {:?}",
        packages.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
    packages
}

fn assert_none(rule: &str, found: Vec<Violation>) {
    let lines: Vec<String> = found.iter().map(|v| format!("  {v}")).collect();
    assert!(found.is_empty(), "{rule}:\n{}", lines.join("\n"));
}

#[test]
fn owned_dependencies_stay_with_their_owner() {
    let mut found = Vec::new();
    for package in packages() {
        let sources: Vec<(String, String)> = package
            .sources_of(SourceKind::Product)
            .map(|f| (f.path.clone(), f.text.clone()))
            .collect();
        found.extend(boundaries::owned_dependency_violations(
            &package.name,
            &package.normal_dependencies(),
            &sources,
        ));
    }
    assert_none("a crate imports what another crate owns", found);
}

#[test]
fn pure_crates_do_no_io_and_do_not_panic() {
    let mut found = Vec::new();
    let mut checked = 0;
    for package in packages() {
        if !purity::PURE_CRATES.contains(&package.name.as_str()) {
            continue;
        }
        for file in package.sources_of(SourceKind::Product) {
            let place = format!("{}/{}", package.name, file.path);
            let syntax = syn::parse_file(&file.text).unwrap_or_else(|e| panic!("{place}: {e}"));
            found.extend(purity::purity_violations(&place, &syntax));
            checked += 1;
        }
    }
    assert!(
        checked > 10,
        "only {checked} files of the pure crates were found"
    );
    assert_none("a pure crate does I/O or can panic", found);
}

#[test]
fn every_declared_dependency_is_used() {
    let found = packages()
        .iter()
        .flat_map(usage::unused_dependency_violations)
        .collect();
    assert_none(
        "a declared dependency is not used where it is declared",
        found,
    );
}

#[test]
fn every_workspace_dependency_is_used() {
    let text = std::fs::read_to_string(root_manifest()).expect("the root manifest reads");
    let declared = workspace::workspace_dependency_names(&text);
    assert!(declared.iter().any(|d| d == "serde"), "parsed {declared:?}");
    let found = usage::unused_workspace_dependency_violations(&declared, &packages());
    assert_none("the workspace declares a dependency no crate uses", found);
}

#[test]
fn the_parts_of_local_runs_keep_to_their_seams() {
    let packages = packages();
    for seam in boundaries::SEAMS {
        assert!(
            packages.iter().any(|p| p.name == seam.package),
            "no crate {} in the workspace",
            seam.package
        );
    }
    let found = packages
        .iter()
        .flat_map(|p| {
            let all: Vec<String> = p.dependencies.iter().map(|d| d.package.clone()).collect();
            boundaries::seam_violations(&p.name, &all)
        })
        .collect();
    assert_none("a crate depends on one across its seam", found);
}

#[test]
fn tests_skip_only_through_a_require_helper() {
    let mut found = Vec::new();
    let mut checked = 0;
    for package in packages() {
        for file in package.sources_of(SourceKind::Test) {
            if !file.path.ends_with(".rs") {
                continue;
            }
            let place = format!("{}/{}", package.name, file.path);
            let syntax = syn::parse_file(&file.text).unwrap_or_else(|e| panic!("{place}: {e}"));
            found.extend(skips::early_return_violations(&place, &syntax));
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} test files were found");
    assert_none("a test skips without a require… helper", found);
}

#[test]
fn product_code_never_panics_on_a_closed_stderr() {
    let mut found = Vec::new();
    let mut checked = 0;
    for package in packages() {
        if diagnostics::TEST_SUPPORT_CRATES.contains(&package.name.as_str()) {
            continue;
        }
        for file in package.sources_of(SourceKind::Product) {
            if !file.path.ends_with(".rs") {
                continue;
            }
            let place = format!("{}/{}", package.name, file.path);
            let syntax = syn::parse_file(&file.text).unwrap_or_else(|e| panic!("{place}: {e}"));
            found.extend(diagnostics::panicking_print_violations(&place, &syntax));
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} product files were found");
    assert_none(
        "product code prints with a macro that panics on a closed stderr",
        found,
    );
}

#[test]
fn errors_show_each_cause_once() {
    let mut found = Vec::new();
    let mut checked = 0;
    for package in packages() {
        for file in package.sources_of(SourceKind::Product) {
            let place = format!("{}/{}", package.name, file.path);
            let syntax = syn::parse_file(&file.text).unwrap_or_else(|e| panic!("{place}: {e}"));
            found.extend(causes::repeated_cause_violations(&place, &syntax));
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} source files were found");
    assert_none("an error shows its cause twice", found);
}
