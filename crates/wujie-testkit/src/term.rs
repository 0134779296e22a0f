//! A terminal for the interactive host's tests: a program on a PTY of our own whose output
//! is read into a vt100 screen model, answering cursor position queries like a real terminal.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{Env, WUJIE};

pub const ROWS: u16 = 24;
pub const COLS: u16 = 80;
pub const DEADLINE: Duration = Duration::from_secs(30);

const CURSOR_QUERY: &[u8] = b"\x1b[6n";

/// Where a cursor position query ends in `chunk`, given the bytes `seen` just before it.
fn query_end(seen: &[u8], chunk: &[u8]) -> Option<usize> {
    let joined = [seen, chunk].concat();
    let at = joined
        .windows(CURSOR_QUERY.len())
        .position(|w| w == CURSOR_QUERY)?;
    Some(at + CURSOR_QUERY.len() - seen.len())
}

/// The terminal a test runs in: its size and whether it answers cursor position queries (as
/// every real terminal does).
#[derive(Debug, Clone, Copy)]
pub struct Terminal {
    pub rows: u16,
    pub cols: u16,
    pub reports_cursor: bool,
}

impl Terminal {
    pub const STANDARD: Terminal = Terminal::new(ROWS, COLS);

    pub const fn new(rows: u16, cols: u16) -> Terminal {
        Terminal {
            rows,
            cols,
            reports_cursor: true,
        }
    }
}

/// Counts the bells (BEL) the program rang.
#[derive(Debug, Default)]
pub struct Bells(usize);

impl vt100::Callbacks for Bells {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.0 += 1;
    }
}

/// A program on a PTY of our own, its output rendered by a vt100 model.
pub struct Term {
    pub pty: Arc<pty_process::blocking::Pty>,
    pub screen: Arc<Mutex<vt100::Parser<Bells>>>,
    pub child: std::process::Child,
    /// While set, the terminal takes no output (as a stalled ssh session or tmux client).
    paused: Arc<AtomicBool>,
    /// Takes the program's output into `screen` until every writer of the terminal is gone.
    reader: std::thread::JoinHandle<()>,
}

impl Term {
    pub fn spawn(env: &Env, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Term {
        Term::spawn_on(env, program, args, Terminal::STANDARD)
    }

    pub fn spawn_on(
        env: &Env,
        program: impl AsRef<std::ffi::OsStr>,
        args: &[&str],
        terminal: Terminal,
    ) -> Term {
        Term::spawn_with_vars(env, program, args, terminal, &[])
    }

    /// [`Term::spawn_on`] with more environment variables for the program.
    pub fn spawn_with_vars(
        env: &Env,
        program: impl AsRef<std::ffi::OsStr>,
        args: &[&str],
        terminal: Terminal,
        vars: &[(&str, &str)],
    ) -> Term {
        let Terminal {
            rows,
            cols,
            reports_cursor,
        } = terminal;
        let (pty, pts) = pty_process::blocking::open().expect("a pty");
        pty.resize(pty_process::Size::new(rows, cols)).unwrap();
        let mut cmd = pty_process::blocking::Command::new(program)
            .args(args)
            .current_dir(env.work.path())
            .env("WUJIE_HOME", env.home.path())
            .env("TERM", "xterm-256color");
        for (k, _) in std::env::vars() {
            if k.starts_with("WUJIE_") && k != "WUJIE_HOME" {
                cmd = cmd.env_remove(k);
            }
        }
        for (k, v) in vars {
            cmd = cmd.env(k, v);
        }
        let child = cmd.spawn(pts).expect("spawn on the pty");
        let pty = Arc::new(pty);
        let screen = Arc::new(Mutex::new(vt100::Parser::new_with_callbacks(
            rows.try_into().expect("rows"),
            cols.try_into().expect("columns"),
            1000,
            Bells::default(),
        )));
        let (reader, model) = (pty.clone(), screen.clone());
        let paused = Arc::new(AtomicBool::new(false));
        let stalled = paused.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            let mut seen = Vec::new();
            // EIO once the program and everything it started closed the terminal.
            loop {
                while stalled.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let Ok(n @ 1..) = (&*reader).read(&mut buf) else {
                    break;
                };
                let mut chunk = &buf[..n];
                // Like a real terminal, answer a cursor position query once everything before
                // it was drawn (a query may be split across reads).
                while reports_cursor && !chunk.is_empty() {
                    let Some(end) = query_end(&seen, chunk) else {
                        break;
                    };
                    let mut parser = model.lock().unwrap();
                    parser.process(&chunk[..end]);
                    let (row, col) = parser.screen().cursor_position();
                    drop(parser);
                    let report = format!("\x1b[{};{}R", row + 1, col + 1);
                    let _ = (&*reader).write_all(report.as_bytes());
                    chunk = &chunk[end..];
                    seen.clear();
                }
                seen.extend_from_slice(chunk);
                let keep = seen.len().saturating_sub(CURSOR_QUERY.len() - 1);
                seen.drain(..keep);
                model.lock().unwrap().process(chunk);
            }
        });
        Term {
            pty,
            screen,
            child,
            paused,
            reader,
        }
    }

    /// The terminal stops taking output, until [`Term::resume_output`]; what the program
    /// writes meanwhile waits in the PTY, then blocks the program.
    pub fn pause_output(&self) {
        self.paused.store(true, Ordering::SeqCst);
    }

    /// How many bytes the program wrote that the terminal has not taken yet: while output is
    /// paused, a full PTY buffer that stops growing means the program's writes are blocked.
    pub fn pending_output(&self) -> u64 {
        rustix::io::ioctl_fionread(&*self.pty).expect("FIONREAD on the PTY")
    }

    pub fn resume_output(&self) {
        self.paused.store(false, Ordering::SeqCst);
    }

    pub fn discuss(env: &Env, args: &[&str]) -> Term {
        let mut all = vec!["discuss", "--", "fake-tui-v2"];
        all.extend_from_slice(args);
        Term::spawn(env, WUJIE, &all)
    }

    pub fn send(&self, bytes: &[u8]) {
        (&*self.pty).write_all(bytes).unwrap();
    }

    /// How many times the program rang the terminal's bell.
    pub fn bells(&self) -> usize {
        self.screen.lock().unwrap().callbacks().0
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Waits until `cond` holds on a screen that stopped changing (a redraw may arrive in
    /// several reads; a snapshot must not catch it half done).
    pub fn wait_for(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let text = self.contents();
            if cond(&text) {
                std::thread::sleep(Duration::from_millis(50));
                if self.contents() == text {
                    return text;
                }
                continue;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; screen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }

    /// Type a line and wait for the adapter's answer.
    pub fn say(&self, line: &str, answer: &str) {
        self.send(line.as_bytes());
        self.wait_text(&format!("> {line}"));
        self.send(b"\r");
        self.wait_text(answer);
    }

    /// `/wujie` → `/wujiecreateissue` → "Create the issue and continue in this context", until
    /// the host says it created `key`.
    pub fn create_issue_from_menu(&self, key: &str) {
        self.send(b"/wujie");
        self.wait_text("/wujiecreateissue");
        self.send(b"\r");
        self.wait_text("Create the issue and continue");
        self.send(b"\r");
        self.wait_text(&format!("wujie: created {key}"));
    }

    pub fn resize(&self, rows: u16, cols: u16) {
        self.screen
            .lock()
            .unwrap()
            .screen_mut()
            .set_size(rows.try_into().unwrap(), cols.try_into().unwrap());
        self.pty.resize(pty_process::Size::new(rows, cols)).unwrap();
    }

    /// Everything the terminal holds, oldest first: its scrollback, then the screen's rows,
    /// each with trailing blanks trimmed.
    pub fn history(&self) -> Vec<String> {
        let mut parser = self.screen.lock().unwrap();
        let screen = parser.screen_mut();
        let cols = screen.size().1.get();
        screen.set_scrollback(usize::MAX);
        let kept = screen.scrollback();
        let mut lines = Vec::new();
        // Scrolled back by `offset` rows, the top row is the scrollback's `offset`-th last.
        for offset in (1..=kept).rev() {
            screen.set_scrollback(offset);
            lines.extend(screen.rows(0, cols).next());
        }
        screen.set_scrollback(0);
        lines.extend(screen.rows(0, cols));
        lines.iter().map(|l| l.trim_end().to_owned()).collect()
    }

    /// Waits until [`Term::history`] reads `expected` (once the screen settled).
    pub fn wait_history(&self, what: &str, expected: &[String]) {
        let start = Instant::now();
        loop {
            let now = self.history();
            if now == expected {
                std::thread::sleep(Duration::from_millis(50));
                if self.history() == expected {
                    return;
                }
                continue;
            }
            if start.elapsed() >= DEADLINE {
                panic!(
                    "timed out waiting for {what}\nexpected:\n{}\nfound:\n{}",
                    expected.join("\n"),
                    now.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // What the program wrote before it exited may still be in the PTY: the screen
                // is whole once the reader met the end (EIO, every writer gone).
                while !self.reader.is_finished() && start.elapsed() < DEADLINE {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return status;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for exit; screen:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Screen text with the ids that change from run to run replaced.
pub fn stable(screen: &str) -> String {
    let mut out = String::new();
    for line in screen.lines() {
        let line = match line.find("discussion ") {
            Some(at) if line[at..].contains('-') => {
                format!("{}discussion [id]{}", &line[..at], {
                    let rest = &line[at + "discussion ".len()..];
                    rest.find(' ').map_or("", |end| &rest[end..])
                })
            }
            _ => line.to_owned(),
        };
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim_end().to_owned()
}
