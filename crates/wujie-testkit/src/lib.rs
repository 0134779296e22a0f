//! What the `wujie` binary's integration tests share: a private profile per test (WUJIE_HOME in
//! a temp dir), the real `wujie` binary, servers, tmux, plugin directories written on the fly,
//! a PTY with a screen model ([`term`]), Chromium ([`browser`]) and real agents ([`tui_agent`]).
//! A library rather than a module of each test binary, so it is compiled once.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

/// The `wujie` binary under test: `Command::new(WUJIE)`, `format!("{WUJIE} run …")`.
pub const WUJIE: WujieBin = WujieBin;

/// Where the `wujie` binary of this build is. Cargo tells an integration test where its
/// crate's binaries are only at compile time (`CARGO_BIN_EXE_wujie`), which a library shared
/// by several test binaries cannot read; nextest also says it at run time, and otherwise the
/// binary sits in the directory above the test executable's `deps/`.
#[derive(Debug, Clone, Copy)]
pub struct WujieBin;

impl WujieBin {
    pub fn path(self) -> &'static str {
        static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        PATH.get_or_init(|| {
            let path = std::env::var("NEXTEST_BIN_EXE_wujie").unwrap_or_else(|_| {
                let exe = std::env::current_exe().expect("the test executable's path");
                let profile_dir = exe
                    .parent()
                    .and_then(Path::parent)
                    .expect("the test executable lies in <target>/<profile>/deps");
                profile_dir.join("wujie").to_string_lossy().into_owned()
            });
            assert!(
                Path::new(&path).is_file(),
                "the wujie binary is not at {path}: run these tests through cargo (cargo nextest run -p wujie-cli)"
            );
            path
        })
    }
}

impl std::fmt::Display for WujieBin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.path())
    }
}

impl AsRef<std::ffi::OsStr> for WujieBin {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path().as_ref()
    }
}

pub struct Env {
    pub home: TempDir,
    pub work: TempDir,
}

impl Default for Env {
    fn default() -> Env {
        Env::new()
    }
}

impl Env {
    pub fn new() -> Env {
        Env {
            home: tempfile::tempdir().expect("temp home"),
            work: tempfile::tempdir().expect("temp work dir"),
        }
    }

    /// `wujie` with this test's profile, run in the work dir, with no inherited run context.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::new(WUJIE);
        cmd.env("WUJIE_HOME", self.home.path())
            .current_dir(self.work.path())
            .stdin(Stdio::null());
        for (k, _) in std::env::vars() {
            if k.starts_with("WUJIE_") && k != "WUJIE_HOME" {
                cmd.env_remove(k);
            }
        }
        cmd
    }

    /// `wujie ARGS…` run in `dir` (a repository, a worktree) rather than the work dir.
    pub fn cmd_in(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = self.cmd();
        cmd.current_dir(dir).args(args);
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("wujie runs")
    }

    /// A new team token named `name`, minted on the server at `url` with this profile's token.
    pub fn team_token(&self, url: &str, name: &str) -> String {
        self.ok(&["--server", url, "token", "create", "--name", name])
            .trim()
            .to_owned()
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "wujie {args:?} failed ({:?})\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// Run and require failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "wujie {args:?} unexpectedly succeeded\nstdout:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).expect("utf-8 stderr")
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--output", "json"];
        all.extend_from_slice(args);
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    pub fn create_issue(&self, title: &str) -> String {
        let issue = self.json(&["issue", "create", "--title", title]);
        issue["key"].as_str().expect("issue key").to_owned()
    }

    pub fn issue(&self, key: &str) -> serde_json::Value {
        self.json(&["issue", "show", key])
    }

    /// Write a plugin dir named `name` with a shell adapter `body` and return its path.
    pub fn plugin(&self, name: &str, protocol: &str, body: &str) -> PathBuf {
        let dir = self.work.path().join("plugins").join(name);
        write_plugin(&dir, name, protocol, body);
        dir
    }

    /// Installs `examples/<name>` into this profile; returns what `wujie` printed.
    pub fn install_example(&self, name: &str) -> String {
        let dir = examples().join(name);
        self.ok(&["local-run", "provider", "install", dir.to_str().unwrap()])
    }

    pub fn config_path(&self) -> PathBuf {
        self.home.path().join("config").join("config.json")
    }
}

pub fn write_plugin(dir: &Path, name: &str, protocol: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let manifest = serde_json::json!({
        "schema_version": 1,
        "name": name,
        "display_name": format!("{name} (test)"),
        "command": "./adapter",
        "protocol": protocol,
        "capabilities": {"structured_events": true, "issue_context": "env", "usage": true}
    });
    std::fs::write(dir.join("provider.json"), manifest.to_string()).unwrap();
    let script = dir.join("adapter");
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub const V1: &str = "wujie-localrun-provider.v1";
pub const V2: &str = "wujie-localrun-provider.v2";

/// The repository's examples directory.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// One message line as an adapter prints it.
pub fn msg(kind: &str, content: &str, key: &str) -> String {
    serde_json::json!({"type": kind, "content": content, "source": "t", "source_key": key})
        .to_string()
}

/// A standalone `wujie server` on 127.0.0.1 with an ephemeral port, killed on drop.
pub struct Server {
    pub child: std::process::Child,
    pub url: String,
}

impl Server {
    /// Start on an ephemeral loopback port.
    pub fn start(env: &Env, extra: &[&str]) -> Server {
        let mut args = vec!["--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        Server::start_args(env, &args)
    }

    /// Start with exactly these `wujie server` arguments.
    pub fn start_args(env: &Env, args: &[&str]) -> Server {
        use std::io::BufRead;
        let mut child = env
            .cmd()
            .arg("server")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("server starts");
        let stdout = child.stdout.take().expect("server stdout");
        let mut first = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut first)
            .expect("server prints its address");
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {first:?}"))
            .to_owned();
        Server { child, url }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Wait (bounded) until `cond` holds; panics with `what` after `secs` seconds.
pub fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The JSON values of a file with one per line (a log an agent or adapter appends to); none
/// when the file is not there yet.
pub fn json_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("the log holds JSON"))
        .collect()
}

/// Whether a process id is still alive (and not a zombie we could reap).
pub fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Send `signal` to one process; returns whether it was delivered. Signals are sent with the
/// system call rather than `kill(1)`: procps' `kill -KILL -12345` reads the group as `-1` and
/// so signals every process the user may signal.
pub fn signal_pid(pid: i32, signal: nix::sys::signal::Signal) -> bool {
    pid > 1 && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).is_ok()
}

/// Send `signal` to the process group `pgid` (an adapter leads its own group).
pub fn signal_group(pgid: i32, signal: nix::sys::signal::Signal) -> bool {
    pgid > 1 && nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), signal).is_ok()
}

/// Whether `pid` is a `wujie process-guard`, which a `wujie` that starts agents starts beside
/// them (see `wujie_process::marks`): it is never the process a test looks for.
pub fn is_process_guard(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).nth(1) == Some(&b"process-guard"[..]))
}

/// Waits up to 30 s for a running `wujie` process that `matches` (given its pid, its command
/// line and its /proc stat line) and returns its pid.
pub fn wait_for_wujie(what: &str, matches: impl Fn(i32, &str, &str) -> bool) -> i32 {
    let mut found = 0;
    wait_until(30, what, || {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if cmdline.starts_with(WUJIE.path())
                && !is_process_guard(pid)
                && matches(pid, &cmdline, &stat)
            {
                found = pid;
                return true;
            }
        }
        false
    });
    found
}

/// A shell command in a tmux session on a private socket (killed on drop): a terminal driven
/// like a person drives one, read back with `capture-pane`.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `shell` in a `cols`×`rows` window; `name` keeps sockets of parallel tests apart.
    pub fn start(name: &str, shell: &str, cols: u16, rows: u16) -> Tmux {
        let tmux = Tmux {
            socket: format!("wujie-test-{name}-{}", std::process::id()),
        };
        let (cols, rows) = (cols.to_string(), rows.to_string());
        tmux.tmux(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &cols,
            "-y",
            &rows,
            shell,
        ]);
        tmux
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "t"])
    }

    /// The pane's terminal modes as tmux holds them: `alternate screen, cursor shown, mouse
    /// reported`, each 1 or 0 (`1 0 1`: a full-screen program's; `0 1 0`: a shell's).
    pub fn modes(&self) -> String {
        let modes = "#{alternate_on} #{cursor_flag} #{mouse_any_flag}";
        self.tmux(&["display", "-p", "-t", "t", modes])
            .trim()
            .to_owned()
    }

    /// Waits (60 s at most, only so a hang fails) until [`Tmux::modes`] reads `modes`.
    pub fn wait_modes(&self, modes: &str) {
        let start = std::time::Instant::now();
        while self.modes() != modes {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "the terminal's modes read {:?}, not {modes:?}; screen:\n{}",
                self.modes(),
                self.screen()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// The screen with its escape sequences: colours, and SO before cells drawn in DEC line
    /// drawing (SI after them).
    pub fn styled_screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-e", "-t", "t"])
    }

    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Waits until `cond` holds on a screen that stayed the same for 300 ms (a program may
    /// draw one change in several writes).
    pub fn wait_settled(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        loop {
            let screen = self.wait_for(what, &cond);
            std::thread::sleep(std::time::Duration::from_millis(300));
            if self.screen() == screen {
                return screen;
            }
        }
    }

    /// Waits (60 s at most, only so a hang fails) until `cond` holds on the screen.
    pub fn wait_for(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        self.poll_for(std::time::Duration::from_secs(60), &cond)
            .unwrap_or_else(|| panic!("timed out waiting for {what}; screen:\n{}", self.screen()))
    }

    /// [`Tmux::wait_for`] on the [`Tmux::styled_screen`].
    pub fn wait_styled(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        self.poll_with(
            Tmux::styled_screen,
            std::time::Duration::from_secs(60),
            &cond,
        )
        .unwrap_or_else(|| {
            panic!(
                "timed out waiting for {what}; screen:\n{:?}",
                self.styled_screen()
            )
        })
    }

    /// The screen once `cond` holds on it, or `None` if it did not within `within`.
    pub fn poll_for(
        &self,
        within: std::time::Duration,
        cond: impl Fn(&str) -> bool,
    ) -> Option<String> {
        self.poll_with(Tmux::screen, within, cond)
    }

    fn poll_with(
        &self,
        capture: fn(&Tmux) -> String,
        within: std::time::Duration,
        cond: impl Fn(&str) -> bool,
    ) -> Option<String> {
        let start = std::time::Instant::now();
        loop {
            let screen = capture(self);
            if cond(&screen) {
                return Some(screen);
            }
            if start.elapsed() > within {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

pub mod browser;
pub mod git_repo;
pub mod lossy_proxy;
pub mod run_output;
pub mod spawned;
pub mod term;
pub mod tui_agent;

/// What differs between runs of the same test, taken out of the text a snapshot pins: this
/// test's profile and work directory, other temp paths, ports, ids, times and tokens.
/// `let _filters = env.snapshot_filters().bind_to_scope();` before `insta::assert_snapshot!`.
impl Env {
    pub fn snapshot_filters(&self) -> insta::Settings {
        let mut settings = insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        for (dir, name) in [(self.home.path(), "[HOME]"), (self.work.path(), "[WORK]")] {
            // Both spellings: a temp dir may be reached through a symlink (/tmp on macOS).
            for path in [dir.to_path_buf(), dir.canonicalize().unwrap_or_default()] {
                let text = path.to_string_lossy();
                if !text.is_empty() {
                    settings.add_filter(&regex_escape(&text), name);
                }
            }
        }
        settings.add_filter(r"/tmp/[^\s'\x22:]+", "[TEMP]");
        settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
        settings.add_filter(
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            "[ID]",
        );
        settings.add_filter(
            r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d| UTC)?",
            "[TIME]",
        );
        settings.add_filter(r"wjt_[A-Za-z0-9_-]+", "[TOKEN]");
        settings
    }
}

/// `text` as a regular expression that matches only itself.
fn regex_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}
