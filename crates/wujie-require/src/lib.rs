//! What a test does when something it needs is not on this machine: a browser, a database
//! server, sshd, an agent CLI. Locally it skips, saying what is missing and how to install it;
//! where `WUJIE_REQUIRE_ALL` is set (CI sets it, having installed everything) it fails, so a
//! broken set-up can never pass as a green run of fewer tests.
//!
//! Every skip in the workspace's tests goes through [`missing`]; `wujie-tidy` refuses an early
//! `return` in a test that does not come from a `require…` helper.

use std::path::{Path, PathBuf};

/// Set (to anything but `0` or nothing) to turn every skip into a failure.
pub const REQUIRE_ALL_ENV: &str = "WUJIE_REQUIRE_ALL";

/// Whether a missing tool must fail the test rather than skip it.
pub fn all_required() -> bool {
    std::env::var_os(REQUIRE_ALL_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// `what` is not to be had here, because `why`; `fix` says how to get it. Skips (`None`, after
/// saying so on stderr) or, under [`REQUIRE_ALL_ENV`], fails the test.
///
/// # Panics
/// When [`REQUIRE_ALL_ENV`] is set.
pub fn missing<T>(what: &str, why: &str, fix: &str) -> Option<T> {
    let message = format!("{what} is missing: {why}; {fix}");
    if all_required() {
        panic!("{REQUIRE_ALL_ENV} is set but {message}");
    }
    eprintln!("skipping: {message} (set {REQUIRE_ALL_ENV}=1 to make this fail)");
    None
}

/// The program `name` found on `PATH` (or the absolute path `name` when it exists), or a skip
/// that names the Debian package to install.
///
/// # Panics
/// When it is missing and [`REQUIRE_ALL_ENV`] is set.
pub fn require(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    match find_program(name, &path) {
        Some(found) => Some(found),
        None => missing(
            name,
            "not found on PATH",
            &format!(
                "install it (apt-get install {}; scripts/setup does)",
                package_of(name)
            ),
        ),
    }
}

/// `/usr/sbin/sshd`, which is not on an ordinary user's `PATH`.
///
/// # Panics
/// When it is missing and [`REQUIRE_ALL_ENV`] is set.
pub fn require_sshd() -> Option<PathBuf> {
    let sshd = Path::new("/usr/sbin/sshd");
    if sshd.is_file() {
        return Some(sshd.to_path_buf());
    }
    missing(
        "sshd",
        "/usr/sbin/sshd does not exist",
        "install it (apt-get install openssh-server; scripts/setup does)",
    )
}

/// Where `name` is: itself when it holds a `/`, else the first executable file of that name
/// in the `PATH` list `path`.
fn find_program(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| PathBuf::from(name));
    }
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The Debian package that brings the program `name`, where it is not the program's own name.
fn package_of(name: &str) -> &str {
    match name {
        "python3" => "python3",
        "ssh" => "openssh-client",
        "psql" | "initdb" => "postgresql",
        "sqlite3" => "sqlite3",
        other => other,
    }
}
