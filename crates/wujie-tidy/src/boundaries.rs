//! Dependencies one crate owns: nothing else in the workspace may import them, so that SQL,
//! HTTP routing and command-line parsing each live in one place.

use crate::Violation;
use crate::usage::mentions_crate;

/// A dependency and the crates allowed to import it.
#[derive(Debug)]
pub struct Owned {
    pub dependency: &'static str,
    pub owners: &'static [&'static str],
    pub why: &'static str,
}

/// `wujie-mockllm` is the tests' scripted model server, a program of its own: it serves HTTP
/// and parses its own command line.
pub const OWNED: &[Owned] = &[
    Owned {
        dependency: "sqlx",
        owners: &["wujie-store"],
        why: "only wujie-store knows SQL: add what you need to the Store API",
    },
    Owned {
        dependency: "axum",
        owners: &["wujie-server", "wujie-mockllm"],
        why: "only wujie-server knows HTTP routing",
    },
    Owned {
        dependency: "clap",
        owners: &["wujie-cli", "wujie-mockllm"],
        why: "only the binary parses command lines: take typed options instead",
    },
    Owned {
        dependency: "anyhow",
        owners: &["wujie-cli", "wujie-mockllm"],
        why: "libraries return typed errors (thiserror); anyhow only at the top of a binary",
    },
];

/// Violations of [`OWNED`] by `package`: declared as a normal dependency, or named in its
/// library or binary source (a re-export would be a way around the manifest). Tests may use
/// such a crate directly, to read the truth from the database rather than through the API they
/// test.
pub fn owned_dependency_violations(
    package: &str,
    normal_dependencies: &[String],
    sources: &[(String, String)],
) -> Vec<Violation> {
    let mut found = Vec::new();
    for owned in OWNED.iter().filter(|o| !o.owners.contains(&package)) {
        if normal_dependencies.iter().any(|d| d == owned.dependency) {
            found.push(Violation {
                place: format!("{package}/Cargo.toml"),
                message: format!("depends on `{}`; {}", owned.dependency, owned.why),
            });
        }
        for (path, text) in sources {
            if mentions_crate(text, owned.dependency) {
                found.push(Violation {
                    place: format!("{package}/{path}"),
                    message: format!("imports `{}`; {}", owned.dependency, owned.why),
                });
            }
        }
    }
    found
}

/// A workspace crate and the workspace crates it may not depend on: the seams along which
/// local runs are split, so that each part keeps one concern.
#[derive(Debug)]
pub struct Seam {
    pub package: &'static str,
    pub not_on: &'static [&'static str],
    pub why: &'static str,
}

pub const SEAMS: &[Seam] = &[
    Seam {
        package: "wujie-builtins",
        not_on: &["wujie-localrun", "wujie-host", "wujie-delivery"],
        why: "a built-in provider is an adapter like any plugin's: it knows no flow that runs it",
    },
    Seam {
        package: "wujie-host",
        not_on: &["wujie-localrun", "wujie-builtins", "wujie-delivery"],
        why: "the terminal host relays a terminal: it knows no flow, provider or delivery",
    },
    Seam {
        package: "wujie-delivery",
        not_on: &["wujie-localrun", "wujie-builtins", "wujie-host"],
        why: "delivery moves events to the server: it knows no flow, provider or terminal",
    },
];

/// Violations of [`SEAMS`] by `package`, whose dependencies (of any kind) are `dependencies`.
pub fn seam_violations(package: &str, dependencies: &[String]) -> Vec<Violation> {
    let seams = SEAMS.iter().filter(|s| s.package == package);
    seams
        .flat_map(|seam| {
            seam.not_on
                .iter()
                .filter(|d| dependencies.iter().any(|have| have == *d))
                .map(move |d| Violation {
                    place: format!("{package}/Cargo.toml"),
                    message: format!("depends on `{d}`; {}", seam.why),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crate_that_is_not_the_owner_is_refused() {
        let found = owned_dependency_violations("wujie-localrun", &["sqlx".into()], &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("only wujie-store knows SQL"));
    }

    #[test]
    fn a_re_exported_import_in_source_is_refused() {
        let sources = vec![(
            "src/lib.rs".to_string(),
            "use wujie_store::x; fn f() { let _ = anyhow::anyhow!(\"x\"); }".to_string(),
        )];
        let found = owned_dependency_violations("wujie-server", &[], &sources);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].place, "wujie-server/src/lib.rs");
    }

    #[test]
    fn the_owner_may_use_it() {
        let sources = vec![(
            "src/lib.rs".to_string(),
            "use sqlx::SqlitePool;".to_string(),
        )];
        assert!(owned_dependency_violations("wujie-store", &["sqlx".into()], &sources).is_empty());
    }

    #[test]
    fn a_crate_across_a_seam_is_refused() {
        let found = seam_violations(
            "wujie-builtins",
            &["wujie-protocol".into(), "wujie-localrun".into()],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("`wujie-localrun`"), "{found:?}");
        assert!(seam_violations("wujie-localrun", &["wujie-builtins".into()]).is_empty());
    }
}
