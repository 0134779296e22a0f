//! Job control in an interactive shell (bash in tmux): Ctrl+Z, or SIGTSTP to `wujie`, stops
//! the session like any shell job — the adapter stops with it, the shell reports the job as
//! stopped and has the terminal — and `fg` brings both back: raw mode again, the adapter
//! redraws and takes the keys.

use std::path::Path;

use wujie_testkit::*;

fn bash_in_tmux(env: &Env, name: &str) -> Tmux {
    env.install_example("fake-tui-v2");
    let shell = format!(
        "cd {work} && exec env -i PATH=\"$PATH\" HOME={home} TERM=xterm-256color \
         WUJIE_HOME={home} PS1='$ ' bash --norc --noprofile -i",
        work = env.work.path().display(),
        home = env.home.path().display(),
    );
    let tmux = Tmux::start(name, &shell, 100, 30);
    tmux.wait_for("the prompt", |s| s.trim_end().ends_with('$'));
    tmux.keys(&["-l", &format!("seq 1 3; {WUJIE} discuss -- fake-tui-v2")]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("Ctrl+D quit");
    tmux
}

/// The state letter (`/proc/PID/stat`) of the process running in `cwd` whose command line
/// contains `program`.
fn state_of(program: &str, cwd: &Path) -> Option<char> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let here = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
        if String::from_utf8_lossy(&cmdline).contains(program) && here.as_deref() == Some(cwd) {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            return stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .next()?
                .chars()
                .next();
        }
    }
    None
}

fn stopped_and_back(name: &str, stop: impl FnOnce(&Env, &Tmux)) {
    let env = Env::new();
    let tmux = bash_in_tmux(&env, name);
    tmux.keys(&["-l", "hel"]);
    tmux.wait_text("> hel");
    stop(&env, &tmux);
    tmux.wait_text("Stopped");
    let adapter = "wujie-localrun-fake-tui";
    wait_until(30, "the adapter to stop with wujie", || {
        state_of(adapter, env.work.path()) == Some('T')
    });
    // The shell has the terminal, with its own settings.
    tmux.keys(&["-l", "echo shell-$((6*7))"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("shell-42");

    tmux.keys(&["-l", "fg"]);
    tmux.keys(&["Enter"]);
    wait_until(30, "the adapter to go on", || {
        state_of(adapter, env.work.path()).is_some_and(|s| s != 'T')
    });
    // It redrew its box (with the line it had) under what the shell printed.
    let back = tmux.wait_for("the adapter's redraw", |s| {
        s.rfind("> hel")
            .is_some_and(|at| s.find("shell-42").is_some_and(|shell| shell < at))
    });
    assert!(back.contains("Ctrl+D quit"), "{back}");
    tmux.keys(&["-l", "lo"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("agent: SQLite or PostgreSQL?");
    tmux.keys(&["C-d"]);
    tmux.wait_text("is still open");
    tmux.keys(&["-l", "echo EXIT=$?"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("EXIT=0");
}

#[test]
fn ctrl_z_stops_the_session_and_fg_brings_it_back() {
    stopped_and_back("ctrl-z", |_, tmux| tmux.keys(&["C-z"]));
}

#[test]
fn sigtstp_to_wujie_stops_the_session_and_fg_brings_it_back() {
    stopped_and_back("sigtstp", |env, _| {
        let pid = wait_for_wujie("this test's wujie", |pid, _, _| {
            std::fs::read_link(format!("/proc/{pid}/cwd"))
                .ok()
                .as_deref()
                == Some(env.work.path())
        });
        assert!(signal_pid(pid, nix::sys::signal::Signal::SIGTSTP));
    });
}
