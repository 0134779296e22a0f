//! The workspace's real crates, as `cargo metadata` describes them, with their source files.

use crate::TidyError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a source file belongs: what builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// `src/` and `build.rs`: the library and binaries, which `[dependencies]` serve.
    Product,
    /// `tests/`, `benches/`, `examples/`: what `[dev-dependencies]` serve.
    Test,
}

#[derive(Debug)]
pub struct SourceFile {
    /// Relative to the crate's directory.
    pub path: String,
    pub kind: SourceKind,
    pub text: String,
}

#[derive(Debug)]
pub struct Dependency {
    /// The name the code uses (a rename if there is one).
    pub name: String,
    /// The package's own name, as `[workspace.dependencies]` lists it.
    pub package: String,
    pub dev: bool,
}

#[derive(Debug)]
pub struct Package {
    pub name: String,
    pub dir: PathBuf,
    pub dependencies: Vec<Dependency>,
    pub sources: Vec<SourceFile>,
}

impl Package {
    pub fn normal_dependencies(&self) -> Vec<String> {
        let normal = self.dependencies.iter().filter(|d| !d.dev);
        normal.map(|d| d.name.clone()).collect()
    }

    pub fn sources_of(&self, kind: SourceKind) -> impl Iterator<Item = &SourceFile> {
        self.sources.iter().filter(move |s| s.kind == kind)
    }
}

/// The workspace members of the workspace whose root manifest is `root_manifest`.
pub fn load(root_manifest: &Path) -> Result<Vec<Package>, TidyError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(root_manifest)
        .output()
        .map_err(TidyError::Metadata)?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        return Err(TidyError::MetadataFailed(stderr));
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(TidyError::MetadataJson)?;
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    packages.iter().map(package_from_metadata).collect()
}

fn package_from_metadata(package: &serde_json::Value) -> Result<Package, TidyError> {
    let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap_or_default());
    let dir = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
    let dependencies = package["dependencies"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            let package = d["name"].as_str().unwrap_or_default().to_string();
            Dependency {
                name: d["rename"].as_str().unwrap_or(&package).to_string(),
                package,
                dev: d["kind"].as_str() == Some("dev"),
            }
        })
        .collect();
    Ok(Package {
        name: package["name"].as_str().unwrap_or_default().to_string(),
        sources: sources(&dir)?,
        dir,
        dependencies,
    })
}

fn sources(dir: &Path) -> Result<Vec<SourceFile>, TidyError> {
    let mut files = Vec::new();
    let places = [
        ("src", SourceKind::Product),
        ("build.rs", SourceKind::Product),
        ("tests", SourceKind::Test),
        ("benches", SourceKind::Test),
        ("examples", SourceKind::Test),
    ];
    for (place, kind) in places {
        collect(dir, &dir.join(place), kind, &mut files)?;
    }
    Ok(files)
}

fn collect(
    root: &Path,
    path: &Path,
    kind: SourceKind,
    out: &mut Vec<SourceFile>,
) -> Result<(), TidyError> {
    let read_error = |source| TidyError::Read {
        path: path.display().to_string(),
        source,
    };
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .map_err(read_error)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for entry in entries {
            collect(root, &entry, kind, out)?;
        }
    } else if path.is_file() && path.extension().is_some_and(|e| e == "rs") {
        let text = std::fs::read_to_string(path).map_err(read_error)?;
        let relative = path.strip_prefix(root).unwrap_or(path);
        out.push(SourceFile {
            path: relative.display().to_string(),
            kind,
            text,
        });
    }
    Ok(())
}

/// The names `[workspace.dependencies]` declares in the root manifest's text. TOML keeps an
/// inline table on one line, so each entry starts a line of its own.
pub fn workspace_dependency_names(root_manifest: &str) -> Vec<String> {
    let mut in_section = false;
    let mut names = Vec::new();
    for line in root_manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_section = line == "[workspace.dependencies]";
        } else if in_section && let Some((key, _)) = line.split_once('=') {
            let key = key.trim();
            if !key.is_empty() && !key.starts_with('#') {
                names.push(key.to_string());
            }
        }
    }
    names
}
