//! Live-feed latency and fan-out cost, end to end: an adapter prints messages (each carrying
//! the wall-clock time it printed it), `wujie --server URL run` reads and delivers them to a
//! standalone `wujie server`, and viewers of the issue take the time each message arrives:
//! API clients on `GET /issues/KEY/events` (the real client's parser) or browser pages'
//! feeds on `GET /live?issues=KEY` (logged in with a one-time link, the message's HTML). Printed
//! per scenario: p50/p99/max of arrival − print, the server's CPU time (utime + stime from
//! /proc) per delivered event, and its RSS (VmRSS before, peak sampled every 100 ms).
//!
//!   cargo bench -p wujie-cli --bench live_feed                       # release build
//!   WUJIE_BENCH_VIEWERS=1,10,50,100 WUJIE_BENCH_FEEDS=api,web WUJIE_BENCH_STREAM=5000 \
//!     WUJIE_BENCH_BURST=0 cargo bench -p wujie-cli --bench live_feed
//!   WUJIE_BENCH_SETUP=default WUJIE_BENCH_BURST=0 cargo bench -p wujie-cli --bench live_feed
//!
//! `WUJIE_BENCH_SETUP=default` is the default set-up instead: `wujie run` without `--server`
//! delivers to its own embedded server on the profile's SQLite database, and the viewers follow
//! the issue on the standalone server of the same profile (as `wujie ui` beside `wujie run`), so
//! each message reaches them through the other process's commit to the shared file.
//!
//! Scenarios: for each kind of feed and each number of viewers, a stream of STREAM events at
//! 1,000/s, then (unless BURST is 0) a burst of BURST events printed as fast as the adapter
//! can. Each uses a fresh issue, so the viewers replay nothing. The adapter's print time is
//! taken just before the line is written, so the figures include the pipe to `wujie` (the
//! "line read" is a few microseconds later). The server's CPU includes taking the events in
//! (the run's delivery and storing); the 1-viewer row says how much that is.

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wujie_client::{Client, FeedEvent, Token};

const WUJIE: &str = env!("CARGO_BIN_EXE_wujie");

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn wujie(home: &Path) -> Command {
    let mut cmd = Command::new(WUJIE);
    cmd.env("WUJIE_HOME", home).stdin(Stdio::null());
    for (k, _) in std::env::vars() {
        if k.starts_with("WUJIE_") && k != "WUJIE_HOME" && !k.starts_with("WUJIE_BENCH") {
            cmd.env_remove(k);
        }
    }
    cmd
}

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("wujie runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The adapter: `COUNT` text messages, at `RATE` per second (0: as fast as it can), each
/// starting with the nanoseconds since the epoch at which it is printed.
const GENERATOR: &str = r#"#!/usr/bin/env python3
import json, os, sys, time
count = int(os.environ["BENCH_COUNT"]); rate = float(os.environ["BENCH_RATE"])
pad = "x" * 60
out = sys.stdout
start = time.monotonic()
for i in range(count):
    if rate > 0:
        due = start + i / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    line = json.dumps({"type": "text", "content": "%d %s" % (time.time_ns(), pad),
                       "source": "bench", "source_key": str(i)})
    out.write(line + "\n")
    if rate > 0:
        out.flush()
out.flush()
"#;

fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at] as f64 / 1e6
}

struct Scenario {
    name: String,
    /// The default set-up (see the top): the run delivers to its own embedded server.
    embedded_run: bool,
    count: usize,
    rate: usize,
    clients: usize,
    feed: Feed,
}

/// Which feed the viewers follow.
#[derive(Clone, Copy, PartialEq)]
enum Feed {
    Api,
    /// A browser page's, with this session cookie.
    Web,
}

/// The server's CPU time so far (user + system), in clock ticks of 10 ms.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name in parentheses: fields 14 and 15 are utime and stime.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| {
        fields
            .get(n)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(11) + field(12)
}

/// The print time in a message of the page's feed: the first long number in its HTML.
fn printed_in_html(html: &str) -> Option<u128> {
    html.split(|c: char| !c.is_ascii_digit())
        .find(|digits| digits.len() >= 18)
        .and_then(|digits| digits.parse().ok())
}

/// A browser page's feed of `key`: the time each message arrives, after signalling `live`.
async fn web_viewer(
    http: reqwest::Client,
    url: String,
    cookie: String,
    key: String,
    count: usize,
    live_tx: tokio::sync::mpsc::Sender<()>,
) -> Vec<u64> {
    let mut response = http
        .get(format!("{url}/live"))
        .query(&[("issues", &key)])
        .header(reqwest::header::COOKIE, cookie)
        .send()
        .await
        .expect("page feed");
    assert!(
        response.status().is_success(),
        "page feed: {}",
        response.status()
    );
    let mut seen = Vec::with_capacity(count);
    let mut buffer = String::new();
    while let Some(chunk) = response.chunk().await.expect("page feed chunk") {
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let name = block.lines().find_map(|l| l.strip_prefix("event: "));
            match name {
                Some("live") => {
                    let _ = live_tx.send(()).await;
                }
                Some("message") => {
                    let arrived = now_ns();
                    let data = block
                        .lines()
                        .find_map(|l| l.strip_prefix("data: "))
                        .expect("event data");
                    let doc: serde_json::Value = serde_json::from_str(data).expect("JSON");
                    let printed = printed_in_html(doc["html"].as_str().expect("html"))
                        .expect("timestamped message");
                    seen.push(arrived.saturating_sub(printed) as u64);
                    if seen.len() == count {
                        return seen;
                    }
                }
                _ => {}
            }
        }
    }
    seen
}

/// Logs a browser in with a one-time link; its session cookie (`name=value`).
fn browser_cookie(url: &str, client: &Client) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let login = rt
        .block_on(client.create_browser_login())
        .expect("browser login");
    let http = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client");
    let answer = http
        .get(format!("{url}{}", login.path))
        .send()
        .expect("login link");
    let set = answer
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .expect("a session cookie")
        .to_str()
        .expect("ASCII cookie");
    set.split(';').next().expect("name=value").to_owned()
}

fn run_scenario(
    home: &Path,
    url: &str,
    client: &Client,
    cookie: &str,
    server_pid: u32,
    s: &Scenario,
) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let issue: serde_json::Value = serde_json::from_str(&ok(wujie(home).args([
        "--server", url, "--output", "json", "issue", "create", "--title", &s.name,
    ])))
    .expect("issue JSON");
    let key = issue["key"].as_str().expect("key").to_owned();
    let (rss_before, _) = rss_kib(server_pid);
    let (latencies, rss_during, cpu_ticks) = rt.block_on(async {
        let (live_tx, mut live_rx) = tokio::sync::mpsc::channel::<()>(s.clients);
        let mut tasks = Vec::new();
        let http = reqwest::Client::new();
        for _ in 0..s.clients {
            if s.feed == Feed::Web {
                tasks.push(tokio::spawn(web_viewer(
                    http.clone(),
                    url.to_owned(),
                    cookie.to_owned(),
                    key.clone(),
                    s.count,
                    live_tx.clone(),
                )));
                continue;
            }
            let client = client.clone();
            let key = key.clone();
            let live_tx = live_tx.clone();
            let count = s.count;
            tasks.push(tokio::spawn(async move {
                let mut feed = client.follow_issue(&key, None).await.expect("feed");
                let mut seen = Vec::with_capacity(count);
                while let Some(event) = feed.next().await {
                    match event.expect("feed event") {
                        FeedEvent::Live => {
                            let _ = live_tx.send(()).await;
                        }
                        FeedEvent::Message { event, .. } => {
                            let arrived = now_ns();
                            let printed: u128 = event
                                .message
                                .content
                                .as_deref()
                                .and_then(|c| c.split(' ').next())
                                .and_then(|t| t.parse().ok())
                                .expect("timestamped message");
                            seen.push(arrived.saturating_sub(printed) as u64);
                            if seen.len() == count {
                                break;
                            }
                        }
                        FeedEvent::Issue { .. } => {}
                    }
                }
                seen
            }));
        }
        drop(live_tx);
        for _ in 0..s.clients {
            live_rx.recv().await.expect("every client live");
        }
        let cpu_before = cpu_ticks(server_pid);
        let server_flag: &[&str] = if s.embedded_run {
            &[]
        } else {
            &["--server", url]
        };
        let mut run = wujie(home)
            .args(server_flag)
            .args(["run", &key, "--", "gen"])
            .env("BENCH_COUNT", s.count.to_string())
            .env("BENCH_RATE", s.rate.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("wujie run");
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let sampled = peak.clone();
        let sampler = tokio::spawn(async move {
            loop {
                sampled.fetch_max(rss_kib(server_pid).0, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        let mut all = Vec::with_capacity(tasks.len());
        for task in tasks {
            all.push(task.await.expect("client task"));
        }
        sampler.abort();
        let cpu = cpu_ticks(server_pid) - cpu_before;
        let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
        let status = run.wait().expect("run ends");
        assert!(status.success(), "the run failed");
        (all, peak, cpu)
    });
    let mut sorted: Vec<u64> = latencies.into_iter().flatten().collect();
    sorted.sort_unstable();
    // Clock ticks are 10 ms; per delivered event, in microseconds.
    let cpu_per_event_us = cpu_ticks as f64 * 10_000.0 / sorted.len().max(1) as f64;
    println!(
        "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.1} | {:.1} |",
        s.name,
        if s.feed == Feed::Web { "web" } else { "api" },
        s.clients,
        sorted.len(),
        percentile(&sorted, 0.5),
        percentile(&sorted, 0.99),
        percentile(&sorted, 1.0),
        cpu_ticks as f64 / 100.0,
        cpu_per_event_us,
        rss_before as f64 / 1024.0,
        rss_during as f64 / 1024.0,
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not used.
    let stream = env_number("WUJIE_BENCH_STREAM", 10_000);
    let burst = env_number("WUJIE_BENCH_BURST", 100_000);
    let home = tempfile::tempdir().expect("home");
    let plugin = home.path().join("gen-plugin");
    std::fs::create_dir_all(&plugin).expect("plugin dir");
    std::fs::write(
        plugin.join("provider.json"),
        r#"{"schema_version":1,"name":"gen","command":"./adapter","protocol":"wujie-localrun-provider.v1"}"#,
    )
    .expect("manifest");
    std::fs::write(plugin.join("adapter"), GENERATOR).expect("adapter");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        plugin.join("adapter"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    ok(wujie(home.path()).args([
        "local-run",
        "provider",
        "install",
        plugin.to_str().expect("path"),
    ]));
    let mut server = wujie(home.path())
        .args(["--output", "json", "server", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("server");
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("server address");
    let doc: serde_json::Value = serde_json::from_str(&line).expect("server JSON");
    let url = doc["url"].as_str().expect("url").to_owned();
    let creds: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join("config/credentials.json")).expect("creds"),
    )
    .expect("creds JSON");
    let token = creds["local_token"].as_str().expect("token").to_owned();
    let client = Client::new(&url, Token::new(token)).expect("client");
    let cookie = browser_cookie(&url, &client);
    let viewers: Vec<usize> = std::env::var("WUJIE_BENCH_VIEWERS")
        .unwrap_or_else(|_| "1,100".to_owned())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let feeds: Vec<Feed> = std::env::var("WUJIE_BENCH_FEEDS")
        .unwrap_or_else(|_| "api".to_owned())
        .split(',')
        .filter_map(|f| match f.trim() {
            "api" => Some(Feed::Api),
            "web" => Some(Feed::Web),
            _ => None,
        })
        .collect();
    let embedded_run = match std::env::var("WUJIE_BENCH_SETUP").as_deref() {
        Ok("default") => true,
        Ok("server") | Err(_) => false,
        Ok(other) => panic!("WUJIE_BENCH_SETUP={other}: expected server or default"),
    };
    let started = Instant::now();
    println!(
        "| scenario | feed | viewers | samples | p50 ms | p99 ms | max ms | server CPU s | server CPU per delivered event µs | server RSS before MiB | server RSS peak MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    // A stream at 1,000 events/s and a burst (rate 0), each to every number of viewers.
    let setup = if embedded_run { ", default set-up" } else { "" };
    let mut kinds = vec![(format!("stream {stream} at 1000/s{setup}"), stream, 1000)];
    if burst > 0 {
        kinds.push((format!("burst {burst}{setup}"), burst, 0));
    }
    for (name, count, rate) in kinds {
        for &feed in &feeds {
            for &clients in &viewers {
                let s = Scenario {
                    name: name.clone(),
                    embedded_run,
                    count,
                    rate,
                    clients,
                    feed,
                };
                run_scenario(home.path(), &url, &client, &cookie, server.id(), &s);
            }
        }
    }
    let (rss, hwm) = rss_kib(server.id());
    println!(
        "\nserver at the end: VmRSS {:.1} MiB, VmHWM {:.1} MiB; {:.0} s in all",
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0,
        started.elapsed().as_secs_f64()
    );
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = server.wait();
}
