//! Whether source text uses a crate: found in Rust's own tokens, so a crate named only in a
//! comment or a string does not count.

use crate::Violation;
use crate::workspace::{Package, SourceKind};
use proc_macro2::{Spacing, TokenStream, TokenTree};
use std::str::FromStr;

/// Dependencies of `package` that nothing uses, and `[dependencies]` that only its tests use.
pub fn unused_dependency_violations(package: &Package) -> Vec<Violation> {
    let used_in = |name: &str, kind: SourceKind| {
        package
            .sources_of(kind)
            .any(|file| mentions_crate(&file.text, name))
    };
    let mut found = Vec::new();
    for dependency in &package.dependencies {
        let name = dependency.name.as_str();
        let in_product = used_in(name, SourceKind::Product);
        let in_tests = used_in(name, SourceKind::Test);
        let message = match (dependency.dev, in_product, in_tests) {
            (false, false, true) => "only tests use it: move it to [dev-dependencies]",
            (false, false, false) | (true, false, false) => "nothing uses it: remove it",
            _ => continue,
        };
        found.push(Violation {
            place: format!("{}/Cargo.toml", package.name),
            message: format!("`{name}`: {message}"),
        });
    }
    found
}

/// Entries of `[workspace.dependencies]` that no member declares.
pub fn unused_workspace_dependency_violations(
    declared: &[String],
    packages: &[Package],
) -> Vec<Violation> {
    let declared_by_a_member = |name: &str| {
        packages
            .iter()
            .flat_map(|p| &p.dependencies)
            .any(|d| d.package == name)
    };
    declared
        .iter()
        .filter(|name| !declared_by_a_member(name))
        .map(|name| Violation {
            place: "Cargo.toml".into(),
            message: format!("[workspace.dependencies] `{name}`: no crate uses it: remove it"),
        })
        .collect()
}

/// True when `text` names `crate_name` (dashes or underscores) as a path root (`name::…`,
/// `#[name::main]`), in a `use` (`use name;`, `use name as x`) or as `extern crate name`.
/// Text that does not lex as Rust uses nothing.
pub fn mentions_crate(text: &str, crate_name: &str) -> bool {
    let ident = crate_name.replace('-', "_");
    TokenStream::from_str(text).is_ok_and(|tokens| stream_mentions(tokens, &ident))
}

fn stream_mentions(tokens: TokenStream, ident: &str) -> bool {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Group(group) if stream_mentions(group.stream(), ident) => return true,
            TokenTree::Ident(name) if name == ident && !continues_path(&trees[..i]) => {
                let before = i.checked_sub(1).and_then(|j| trees.get(j));
                let used_after_keyword = matches!(
                    before, Some(TokenTree::Ident(k)) if k == "use" || k == "crate"
                );
                if used_after_keyword || starts_path(&trees[i + 1..]) {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// `a::` or `a<T>::` just before: the ident is a later segment of someone else's path
/// (`std::time::Duration`), not a crate. A leading `::` (`::time::Date`) does name a crate.
fn continues_path(before: &[TokenTree]) -> bool {
    match before {
        [.., segment, TokenTree::Punct(a), TokenTree::Punct(b)]
            if a.as_char() == ':' && b.as_char() == ':' =>
        {
            matches!(segment, TokenTree::Ident(_))
                || matches!(segment, TokenTree::Punct(p) if p.as_char() == '>')
        }
        _ => false,
    }
}

/// `::` next: the ident is the first segment of a path.
fn starts_path(rest: &[TokenTree]) -> bool {
    matches!(
        rest,
        [TokenTree::Punct(a), TokenTree::Punct(b), ..]
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::{Dependency, SourceFile};

    fn package(dependencies: &[(&str, bool)], sources: &[(SourceKind, &str)]) -> Package {
        Package {
            name: "p".into(),
            dir: Default::default(),
            dependencies: dependencies
                .iter()
                .map(|(name, dev)| Dependency {
                    name: name.to_string(),
                    package: name.to_string(),
                    dev: *dev,
                })
                .collect(),
            sources: sources
                .iter()
                .map(|(kind, text)| SourceFile {
                    path: "f.rs".into(),
                    kind: *kind,
                    text: text.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn unused_and_test_only_dependencies_are_found() {
        let p = package(
            &[
                ("uuid", false),
                ("nix", false),
                ("serde", false),
                ("tempfile", true),
            ],
            &[
                (SourceKind::Product, "use serde::Serialize;"),
                (SourceKind::Test, "fn t() { nix::unistd::getpid(); }"),
            ],
        );
        let found: Vec<String> = unused_dependency_violations(&p)
            .into_iter()
            .map(|v| v.message)
            .collect();
        assert_eq!(
            found,
            [
                "`uuid`: nothing uses it: remove it",
                "`nix`: only tests use it: move it to [dev-dependencies]",
                "`tempfile`: nothing uses it: remove it",
            ]
        );
    }

    #[test]
    fn workspace_dependencies_no_member_declares_are_found() {
        let members = [package(&[("serde", false)], &[])];
        let declared = ["serde".to_string(), "bytes".to_string()];
        let found = unused_workspace_dependency_violations(&declared, &members);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("`bytes`"));
    }

    #[test]
    fn a_dev_dependency_used_by_unit_tests_in_src_counts() {
        let p = package(
            &[("proptest", true)],
            &[(
                SourceKind::Product,
                "#[cfg(test)] mod t { use proptest::prelude::*; }",
            )],
        );
        assert!(unused_dependency_violations(&p).is_empty());
    }

    #[test]
    fn paths_uses_and_attributes_count() {
        assert!(mentions_crate(
            "fn f() { serde_json::to_string(&1); }",
            "serde_json"
        ));
        assert!(mentions_crate("use rustix;", "rustix"));
        assert!(mentions_crate("#[tokio::test] async fn t() {}", "tokio"));
        assert!(mentions_crate("extern crate libc;", "libc"));
        assert!(mentions_crate("use pty_process::Pty;", "pty-process"));
        assert!(mentions_crate(
            "fn f() { g(vec![memchr::memchr(b'a', b\"\")]); }",
            "memchr"
        ));
    }

    #[test]
    fn comments_strings_and_other_names_do_not() {
        assert!(!mentions_crate("// uses tokio::spawn\nfn f() {}", "tokio"));
        assert!(!mentions_crate("/// see `uuid::Uuid`\nfn f() {}", "uuid"));
        assert!(!mentions_crate("fn f() { let s = \"time::now\"; }", "time"));
        assert!(!mentions_crate(
            "fn f() { let time = 1; let _ = time; }",
            "time"
        ));
        assert!(!mentions_crate("fn f() { my_tokio::spawn(); }", "tokio"));
        assert!(!mentions_crate("use std::time::Duration;", "time"));
        assert!(!mentions_crate("fn f() { tokio::time::sleep(d); }", "time"));
        assert!(mentions_crate("fn f() { ::time::Date::MIN; }", "time"));
        assert!(!mentions_crate("this is not rust \"", "tokio"));
    }
}
