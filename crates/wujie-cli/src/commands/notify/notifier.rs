//! Telling the user of one notice: a line on stdout (text, or one JSON object), the terminal's
//! bell, and a desktop notification or the user's own command, started in the background so
//! that a slow one holds nothing up. A notifier that fails is said once on stderr, not at
//! every notice.

use std::io::IsTerminal;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use serde::Serialize;
use wujie_protocol::api::RunStatus;

use crate::context::env_var;
use crate::output::{inline, one_line, outln};

/// One thing the user is told of.
#[derive(Debug, Serialize)]
pub struct Notice {
    pub issue: String,
    pub title: String,
    pub run_id: String,
    #[serde(flatten)]
    pub what: What,
    /// What happened, in words (`wujie_protocol::notice`).
    pub text: String,
}

#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum What {
    RunEnded {
        status: RunStatus,
        exit_code: Option<i32>,
        error: Option<String>,
    },
    Question {
        question: String,
    },
}

/// What shows a notice outside the terminal.
#[derive(Debug)]
enum Desktop {
    /// The user's own, through `sh -c`.
    Command(String),
    NotifySend,
    Osascript,
    None,
}

impl Desktop {
    /// `command` (the flag, else the config's `notify_command`) first; else the platform's
    /// notifier where there is one to show notifications.
    fn choose(command: Option<String>, no_desktop: bool) -> Desktop {
        if no_desktop {
            return Desktop::None;
        }
        if let Some(command) = command {
            return Desktop::Command(command);
        }
        if cfg!(target_os = "macos") && on_path("osascript") {
            Desktop::Osascript
        } else if (env_var("DISPLAY").is_some() || env_var("WAYLAND_DISPLAY").is_some())
            && on_path("notify-send")
        {
            Desktop::NotifySend
        } else {
            Desktop::None
        }
    }

    /// What the user calls it, in the one report of its failure.
    fn name(&self) -> String {
        match self {
            Desktop::Command(command) => format!("the notify command `{}`", inline(command)),
            Desktop::NotifySend => "notify-send".to_owned(),
            Desktop::Osascript => "osascript".to_owned(),
            Desktop::None => String::new(),
        }
    }
}

fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        Path::new(&dir)
            .join(program)
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

pub struct Notifier {
    json: bool,
    bell: bool,
    desktop: Arc<Desktop>,
    /// Set once a failure of the desktop notifier was said.
    failure_said: Arc<AtomicBool>,
}

impl Notifier {
    pub fn new(json: bool, no_bell: bool, command: Option<String>, no_desktop: bool) -> Notifier {
        Notifier {
            json,
            // The bell is for people at a terminal; JSON is for programs.
            bell: !json && !no_bell && std::io::stdout().is_terminal(),
            desktop: Arc::new(Desktop::choose(command, no_desktop)),
            failure_said: Arc::default(),
        }
    }

    /// How the user will be told, for the line that says the command is ready.
    pub fn describe(&self) -> String {
        let mut ways = vec!["a line here"];
        if self.bell {
            ways.push("the bell");
        }
        let desktop = match &*self.desktop {
            Desktop::Command(_) => Some("your notify command"),
            Desktop::NotifySend | Desktop::Osascript => Some("a desktop notification"),
            Desktop::None => None,
        };
        ways.extend(desktop);
        ways.join(", ")
    }

    pub fn tell(&self, notice: &Notice) -> Result<()> {
        if self.json {
            outln!("{}", serde_json::to_string(notice)?);
        } else {
            let bell = if self.bell { "\x07" } else { "" };
            outln!(
                "{bell}{} {}: {}",
                inline(&notice.issue),
                one_line(&notice.title, 60),
                one_line(&notice.text, 400)
            );
        }
        self.show(notice);
        Ok(())
    }

    /// Starts the desktop notifier for `notice`, and says once if it fails.
    fn show(&self, notice: &Notice) {
        if matches!(*self.desktop, Desktop::None) {
            return;
        }
        // Stored text never drives a terminal, a hook's included; nor does it hold a NUL,
        // which no environment variable or argument can.
        let title = format!("{}: {}", inline(&notice.issue), inline(&notice.title));
        let body = inline(&notice.text).into_owned();
        let mut command = match &*self.desktop {
            Desktop::None => return,
            Desktop::Command(command) => {
                let mut sh = tokio::process::Command::new("sh");
                sh.arg("-c")
                    .arg(command)
                    .env("WUJIE_NOTIFY_TITLE", &title)
                    .env("WUJIE_NOTIFY_BODY", &body)
                    .env("WUJIE_NOTIFY_ISSUE", inline(&notice.issue).into_owned());
                sh
            }
            Desktop::NotifySend => {
                let mut send = tokio::process::Command::new("notify-send");
                // The body may be read as markup by the notification server.
                send.args([
                    "--app-name=wujie",
                    "--",
                    title.as_str(),
                    &markup_text(&body),
                ]);
                send
            }
            Desktop::Osascript => {
                let mut osascript = tokio::process::Command::new("osascript");
                // The texts go in as arguments, never into the script's source.
                osascript.args([
                    "-e",
                    "on run argv",
                    "-e",
                    "display notification (item 2 of argv) with title (item 1 of argv)",
                    "-e",
                    "end run",
                    title.as_str(),
                    body.as_str(),
                ]);
                osascript
            }
        };
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let desktop = self.desktop.clone();
        let failure_said = self.failure_said.clone();
        let fail = move |how: String| {
            if !failure_said.swap(true, Ordering::SeqCst) {
                wujie_process::stderr_line!(
                    "wujie: {} {how}; notices go on here without it (said once)",
                    desktop.name()
                );
            }
        };
        match command.spawn() {
            Ok(mut child) => {
                tokio::spawn(async move {
                    match child.wait().await {
                        Ok(status) if status.success() => {}
                        Ok(status) => fail(format!("failed ({status})")),
                        Err(e) => fail(format!("could not be waited for ({e})")),
                    }
                });
            }
            Err(e) => fail(format!("could not be started ({e})")),
        }
    }
}

/// `text` with the three characters notification markup reads escaped.
fn markup_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
