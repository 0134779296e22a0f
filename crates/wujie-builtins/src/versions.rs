//! The agent versions each built-in provider was tested with, and which version of an agent is
//! installed, as its package says. Agent CLIs change every week, and a new version may record
//! its sessions elsewhere: a version outside what was tested is worth one line to the user
//! before they wonder why nothing reached the issue.
//!
//! The installed version is read from the `package.json` above the executable (every supported
//! agent is an npm package), never by running `--version`: a run must not wait for it.

use std::path::Path;

/// The versions of an agent's package a built-in provider was tested with (both ends
/// included); `scripts/agents/install` pins the newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestedVersions {
    /// The npm package the agent comes in.
    pub package: &'static str,
    pub oldest: &'static str,
    pub newest: &'static str,
}

/// An agent installed in a version outside [`TestedVersions`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UntestedVersion {
    pub agent: &'static str,
    pub installed: String,
    pub tested: TestedVersions,
}

impl std::fmt::Display for UntestedVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tested = &self.tested;
        let range = if tested.oldest == tested.newest {
            tested.newest.to_owned()
        } else {
            format!("{} to {}", tested.oldest, tested.newest)
        };
        write!(
            f,
            "{} {} is not a version this wujie was tested with ({range}); if what it does stops \
             reaching the issue, it may record its sessions differently",
            self.agent, self.installed
        )
    }
}

impl TestedVersions {
    /// The version of this package that `program` belongs to, when it is found above it.
    pub fn installed(&self, program: &Path) -> Option<String> {
        let real = program.canonicalize().ok()?;
        // `node_modules/<package>/<bin or dist>/<file>`: a few levels at most.
        real.ancestors().skip(1).take(4).find_map(|dir| {
            let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
            let package: serde_json::Value = serde_json::from_str(&text).ok()?;
            (package["name"] == self.package)
                .then(|| package["version"].as_str().map(str::to_owned))
                .flatten()
        })
    }

    /// Whether `version` lies in the tested range (numeric `major.minor.patch`; anything after
    /// a `-` or `+` is a pre-release or build of that version). An unreadable one is not.
    pub fn covers(&self, version: &str) -> bool {
        match (numbers(self.oldest), numbers(self.newest), numbers(version)) {
            (Some(oldest), Some(newest), Some(version)) => oldest <= version && version <= newest,
            _ => false,
        }
    }
}

fn numbers(version: &str) -> Option<[u64; 3]> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    let numbers = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(numbers)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TESTED: TestedVersions = TestedVersions {
        package: "@scope/agent",
        oldest: "1.2.3",
        newest: "1.10.0",
    };

    #[test]
    fn versions_compare_by_number_not_by_text() {
        assert!(TESTED.covers("1.2.3") && TESTED.covers("1.9.0") && TESTED.covers("1.10.0"));
        assert!(TESTED.covers("1.10.0-beta.1"));
        assert!(!TESTED.covers("1.2.2") && !TESTED.covers("1.10.1") && !TESTED.covers("2.0.0"));
        for odd in ["", "1.2", "1.2.3.4", "v1.2.3", "1.x.3"] {
            assert!(!TESTED.covers(odd), "{odd:?}");
        }
    }

    #[test]
    fn the_installed_version_is_the_packages_above_the_executable() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("node_modules/@scope/agent");
        std::fs::create_dir_all(package.join("dist")).unwrap();
        std::fs::write(
            package.join("package.json"),
            r#"{"name": "@scope/agent", "version": "1.9.0"}"#,
        )
        .unwrap();
        std::fs::write(package.join("dist/cli.js"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        let link = dir.path().join("bin/agent");
        std::os::unix::fs::symlink(package.join("dist/cli.js"), &link).unwrap();
        assert_eq!(TESTED.installed(&link).as_deref(), Some("1.9.0"));

        // Another package's manifest is not the agent's.
        let other = TestedVersions {
            package: "@scope/other",
            ..TESTED
        };
        assert_eq!(other.installed(&link), None);
        assert_eq!(TESTED.installed(&dir.path().join("missing")), None);
    }

    /// The table says what `scripts/agents/install` pins: the newest tested version is the
    /// one the tests install.
    #[test]
    fn the_newest_tested_versions_are_the_ones_the_tests_install() {
        let script = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/agents/install"),
        )
        .unwrap();
        let mut checked = 0;
        for builtin in crate::BUILTINS {
            let Some(tested) = builtin.tested else {
                continue;
            };
            let pin = format!("[{}]={}", builtin.name, tested.newest);
            assert!(
                script.lines().any(|l| l.trim() == pin),
                "no {pin} in the install script"
            );
            checked += 1;
        }
        assert_eq!(checked, 5);
    }
}
