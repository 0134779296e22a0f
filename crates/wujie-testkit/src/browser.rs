//! A real headless Chromium for the web UI's tests, driven over the DevTools protocol: one
//! WebSocket (tungstenite) and the handful of commands the tests use (navigate, evaluate,
//! screenshot, viewport, colour scheme). Chromium runs in its own process group with a fresh profile
//! directory, and the whole group is killed when the browser is dropped.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;
use tungstenite::{Message, WebSocket};

pub struct Browser {
    child: Child,
    _profile: TempDir,
    socket: WebSocket<TcpStream>,
    /// The DevTools session of the tab commands go to.
    session: String,
    /// Every tab's session, in the order they were opened; the first is the start page's.
    tabs: Vec<String>,
    next_id: u64,
}

impl Browser {
    pub fn start(chromium: &Path) -> Browser {
        let profile = tempfile::tempdir().expect("browser profile dir");
        let child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--no-first-run",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--remote-debugging-port=0",
                "--window-size=1200,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromium starts");
        // Chromium writes its DevTools port and browser path here once it listens.
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(60);
        let (port, path) = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break (port.to_owned(), path.to_owned());
                }
            }
            assert!(
                Instant::now() < deadline,
                "chromium did not open its DevTools port"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let stream = TcpStream::connect(format!("127.0.0.1:{port}")).expect("DevTools port");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("read timeout");
        let (socket, _) = tungstenite::client(format!("ws://127.0.0.1:{port}{path}"), stream)
            .expect("DevTools WebSocket");
        let mut browser = Browser {
            child,
            _profile: profile,
            socket,
            session: String::new(),
            tabs: Vec::new(),
            next_id: 0,
        };
        browser.open_tab();
        browser
    }

    /// Opens another tab (blank) and sends the commands that follow to it; returns its index
    /// for `use_tab`. The tabs before it stay open, with whatever they had loaded.
    pub fn open_tab(&mut self) -> usize {
        // Target commands go to the browser, not to a tab.
        self.session.clear();
        let target = self.call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().expect("target id").to_owned();
        let attached = self.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        self.session = attached["sessionId"].as_str().expect("session").to_owned();
        self.call("Page.enable", json!({}));
        self.call("Runtime.enable", json!({}));
        self.tabs.push(self.session.clone());
        self.tabs.len() - 1
    }

    /// Sends the commands that follow to the tab `open_tab` returned `index` for.
    pub fn use_tab(&mut self, index: usize) {
        self.session = self.tabs[index].clone();
    }

    /// Sends one command (to the page once attached) and returns its result; events that
    /// arrive meanwhile are skipped.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.try_call(method, params)
            .unwrap_or_else(|e| panic!("{method} failed: {e}"))
    }

    fn try_call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut command = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            command["sessionId"] = self.session.clone().into();
        }
        self.socket
            .send(Message::text(command.to_string()))
            .map_err(|e| e.to_string())?;
        loop {
            let message = self.socket.read().map_err(|e| e.to_string())?;
            let Message::Text(text) = message else {
                continue;
            };
            let value: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            if value["id"].as_u64() != Some(id) {
                continue;
            }
            if let Some(error) = value.get("error") {
                return Err(error.to_string());
            }
            return Ok(value["result"].clone());
        }
    }

    pub fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait_loaded();
    }

    /// Waits until the document (after a navigation or a form post) has loaded.
    pub fn wait_loaded(&mut self) {
        // A navigation started by a click may not have begun yet: give it a moment to.
        std::thread::sleep(Duration::from_millis(100));
        self.wait_for("the page to load", "document.readyState === 'complete'");
    }

    /// Evaluates `expression` in the page; its value (JSON), or the exception's text.
    pub fn try_eval(&mut self, expression: &str) -> Result<Value, String> {
        let result = self.try_call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(exception) = result.get("exceptionDetails") {
            return Err(exception.to_string());
        }
        Ok(result["result"]["value"].clone())
    }

    pub fn eval(&mut self, expression: &str) -> Value {
        self.try_eval(expression)
            .unwrap_or_else(|e| panic!("evaluating {expression}: {e}"))
    }

    /// Waits (up to 30 s) until `expression` is true in the page; evaluation errors (the page
    /// is between documents) count as not yet.
    pub fn wait_for(&mut self, what: &str, expression: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.try_eval(expression).ok() == Some(Value::Bool(true)) {
                return;
            }
            if Instant::now() > deadline {
                let body = self
                    .try_eval("document.body ? document.body.innerText : ''")
                    .unwrap_or_default();
                panic!("timed out waiting for {what} ({expression}); the page says:\n{body}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The page's path (`/issues/WUJ-1`).
    pub fn path(&mut self) -> String {
        self.eval("location.pathname")
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub fn text(&mut self) -> String {
        self.eval("document.body.innerText")
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Sets the viewport, e.g. 390×844 for a phone.
    pub fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        );
    }

    /// Makes the pages see the system's colour scheme as `scheme` (`dark` or `light`), as
    /// `prefers-color-scheme` tells it.
    pub fn prefer_color_scheme(&mut self, scheme: &str) {
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        );
    }

    /// A PNG of the whole page.
    pub fn screenshot(&mut self, to: &Path) {
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let data = shot["data"].as_str().expect("screenshot data");
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("base64 PNG");
        std::fs::write(to, png).expect("write screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.socket.close(None);
        let pgid = self.child.id() as i32;
        // Its renderers and helpers are in its group.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}
