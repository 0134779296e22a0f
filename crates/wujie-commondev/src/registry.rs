//! The driver lookup chain: which `runtime/<cli>/driver.json` and sidecar script a branch uses.
//!
//! Order: ① `<data_dir>/commondev/runtime/<cli>/` (local override), ② bundled drivers: a
//! `runtime/` directory installed beside the executable, then the copy compiled into the binary
//! (materialised under `<data_dir>/commondev/bundled/<cli>/`), ③ `<executable dir>/<cli>/`
//! (development). The script follows the same chain, starting at the driver's own directory, so
//! an override may contain only a `driver.json` and reuse the bundled sidecar.

use std::path::{Path, PathBuf};

use wujie_process::atomic_file::write_atomic;
use wujie_protocol::driver::Driver;

use crate::error::{CommondevError, Looked, Result};
use crate::paths::CommondevDirs;

mod generated {
    include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
}

/// A driver compiled into the binary: its CLI name and files.
#[derive(Debug, Clone)]
pub struct BundledDriver {
    pub cli: String,
    pub files: Vec<(String, String)>,
}

/// The drivers shipped with Wujie (the repository's `runtime/`).
pub fn shipped_drivers() -> Vec<BundledDriver> {
    generated::BUNDLED
        .iter()
        .map(|(cli, files)| BundledDriver {
            cli: (*cli).to_owned(),
            files: files
                .iter()
                .map(|(n, c)| ((*n).to_owned(), (*c).to_owned()))
                .collect(),
        })
        .collect()
}

/// Where drivers are looked up. `standard` is what the product uses; tests build their own.
#[derive(Debug, Clone)]
pub struct DriverLocations {
    /// ① `<data_dir>/commondev/runtime`.
    pub override_root: PathBuf,
    /// ② a `runtime/` directory installed beside the executable.
    pub installed_root: Option<PathBuf>,
    /// ② the compiled-in copy.
    pub bundled: Vec<BundledDriver>,
    /// Where the compiled-in copy is written out.
    pub bundled_cache: PathBuf,
    /// ③ the executable's directory.
    pub exe_dir: Option<PathBuf>,
}

impl DriverLocations {
    pub fn standard(dirs: &CommondevDirs) -> Self {
        let exe_dir = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf));
        Self {
            override_root: dirs.runtime_override(),
            installed_root: exe_dir.as_ref().map(|d| d.join("runtime")),
            bundled: shipped_drivers(),
            bundled_cache: dirs.bundled_cache(),
            exe_dir,
        }
    }
}

/// A driver found on the chain, with everything needed to start its sidecar.
#[derive(Debug, Clone)]
pub struct ResolvedDriver {
    pub cli: String,
    pub driver: Driver,
    pub driver_file: PathBuf,
    /// The directory holding `driver.json`: the `{pluginDir}` placeholder.
    pub plugin_dir: PathBuf,
    pub script: PathBuf,
    /// Which link of the chain it came from, for reports.
    pub source: &'static str,
    /// What the user should know about this choice: a script taken from a later link of the
    /// chain, a `name` that differs from the directory.
    pub notes: Vec<String>,
}

enum Candidate {
    Dir(PathBuf, &'static str),
    Bundled(usize),
    /// No compiled-in driver has this name; kept so the not-found error lists this link too.
    NotBundled,
}

fn valid_cli_name(cli: &str) -> bool {
    !cli.is_empty()
        && cli != "."
        && cli != ".."
        && cli
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl DriverLocations {
    fn candidates(&self, cli: &str) -> Vec<Candidate> {
        let mut out = vec![Candidate::Dir(
            self.override_root.join(cli),
            "local override",
        )];
        if let Some(root) = &self.installed_root {
            out.push(Candidate::Dir(
                root.join(cli),
                "installed beside the executable",
            ));
        }
        match self.bundled.iter().position(|b| b.cli == cli) {
            Some(index) => out.push(Candidate::Bundled(index)),
            None => out.push(Candidate::NotBundled),
        }
        if let Some(dir) = &self.exe_dir {
            out.push(Candidate::Dir(
                dir.join(cli),
                "executable's directory (development)",
            ));
        }
        out
    }

    fn describe(&self, candidate: &Candidate) -> String {
        match candidate {
            Candidate::Dir(dir, source) => format!("{} ({source})", dir.display()),
            Candidate::Bundled(index) => format!(
                "compiled-in driver {:?} (written to {})",
                self.bundled[*index].cli,
                self.bundled_cache.join(&self.bundled[*index].cli).display()
            ),
            Candidate::NotBundled => "drivers compiled into this binary".to_owned(),
        }
    }

    /// Materialises a compiled-in driver so node can run it; rewritten only when it changed.
    fn materialise(&self, index: usize) -> Result<PathBuf> {
        let bundled = &self.bundled[index];
        let dir = self.bundled_cache.join(&bundled.cli);
        for (name, contents) in &bundled.files {
            let path = dir.join(name);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(contents.as_str()) {
                write_atomic(&path, contents.as_bytes(), 0o644).map_err(|source| {
                    CommondevError::Io {
                        what: "could not write the bundled driver file",
                        path: path.clone(),
                        source,
                    }
                })?;
            }
        }
        Ok(dir)
    }

    /// Finds the driver for `cli` along the chain.
    pub fn resolve(&self, cli: &str) -> Result<ResolvedDriver> {
        if !valid_cli_name(cli) {
            return Err(CommondevError::BadCliName(cli.to_owned()));
        }
        let candidates = self.candidates(cli);
        let mut looked = Vec::new();
        for (position, candidate) in candidates.iter().enumerate() {
            let place = self.describe(candidate);
            let (dir, source) = match candidate {
                Candidate::Dir(dir, source) => {
                    if !dir.join("driver.json").is_file() {
                        looked.push(Looked {
                            place,
                            found: "no driver.json".into(),
                        });
                        continue;
                    }
                    (dir.clone(), *source)
                }
                Candidate::Bundled(index) => (self.materialise(*index)?, "bundled with Wujie"),
                Candidate::NotBundled => {
                    let names: Vec<&str> = self.bundled.iter().map(|b| b.cli.as_str()).collect();
                    let found = format!("none named {cli:?} (bundled: {})", names.join(", "));
                    looked.push(Looked { place, found });
                    continue;
                }
            };
            let driver_file = dir.join("driver.json");
            let text =
                std::fs::read_to_string(&driver_file).map_err(|source| CommondevError::Io {
                    what: "could not read",
                    path: driver_file.clone(),
                    source,
                })?;
            let driver = Driver::parse(&text).map_err(|source| CommondevError::Driver {
                file: driver_file.clone(),
                source,
            })?;
            let (script, script_note) =
                self.find_script(&dir, &driver, &driver_file, &candidates[position + 1..])?;
            let mut notes: Vec<String> = script_note.into_iter().collect();
            if driver.name != cli {
                notes.push(format!(
                    "{} says \"name\": {:?}, but it is the driver of agent CLI {cli:?} (its \
                     directory); set \"name\" to {cli:?} so the two agree",
                    driver_file.display(),
                    driver.name
                ));
            }
            return Ok(ResolvedDriver {
                cli: cli.to_owned(),
                driver,
                driver_file,
                plugin_dir: dir,
                script,
                source,
                notes,
            });
        }
        Err(CommondevError::DriverNotFound {
            cli: cli.to_owned(),
            looked,
            override_dir: self.override_root.join(cli),
        })
    }

    fn find_script(
        &self,
        driver_dir: &Path,
        driver: &Driver,
        driver_file: &Path,
        later: &[Candidate],
    ) -> Result<(PathBuf, Option<String>)> {
        let mut looked = Vec::new();
        let own = driver_dir.join(&driver.script);
        if own.is_file() {
            return Ok((own, None));
        }
        looked.push(Looked {
            place: own.display().to_string(),
            found: "missing".into(),
        });
        for candidate in later {
            let dir = match candidate {
                Candidate::Dir(dir, _) => dir.clone(),
                Candidate::Bundled(index) => self.materialise(*index)?,
                Candidate::NotBundled => continue,
            };
            let path = dir.join(&driver.script);
            if path.is_file() {
                let note = format!(
                    "{} has no {} beside it: using the sidecar script {} ({})",
                    driver_file.display(),
                    driver.script,
                    path.display(),
                    self.describe(candidate)
                );
                return Ok((path, Some(note)));
            }
            looked.push(Looked {
                place: path.display().to_string(),
                found: "missing".into(),
            });
        }
        Err(CommondevError::ScriptNotFound {
            driver_file: driver_file.to_path_buf(),
            script: driver.script.clone(),
            looked,
        })
    }
}
