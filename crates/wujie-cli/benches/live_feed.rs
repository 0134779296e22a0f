//! Live-feed latency, end to end: an adapter prints messages (each carrying the wall-clock
//! time it printed it), `wujie --server URL run` reads and delivers them to a standalone
//! `wujie server`, and SSE clients on the issue's feed (`GET /issues/KEY/events`, the real
//! client's parser) take the time each message arrives. Printed: p50/p99/max of arrival −
//! print, per scenario, and the server's RSS (VmHWM and VmRSS from /proc).
//!
//!   cargo bench -p wujie-cli --bench live_feed                       # release build
//!   WUJIE_BENCH_CLIENTS=100 WUJIE_BENCH_STREAM=10000 WUJIE_BENCH_BURST=100000 cargo bench …
//!
//! Scenarios: a stream of 1,000 events/s to 1 client and to CLIENTS clients, and a burst of
//! BURST events (printed as fast as the adapter can) to 1 and to CLIENTS clients. Each uses a
//! fresh issue, so the clients replay nothing. The adapter's print time is taken just before
//! the line is written, so the figures include the pipe to `wujie` (the "line read" is a few
//! microseconds later).

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
    count: usize,
    rate: usize,
    clients: usize,
}

fn run_scenario(home: &Path, url: &str, client: &Client, server_pid: u32, s: &Scenario) {
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
    let (latencies, rss_during) = rt.block_on(async {
        let (live_tx, mut live_rx) = tokio::sync::mpsc::channel::<()>(s.clients);
        let mut tasks = Vec::new();
        for _ in 0..s.clients {
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
        let mut run = wujie(home)
            .args(["--server", url, "run", &key, "--", "gen"])
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
        let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
        let status = run.wait().expect("run ends");
        assert!(status.success(), "the run failed");
        (all, peak)
    });
    let mut sorted: Vec<u64> = latencies.into_iter().flatten().collect();
    sorted.sort_unstable();
    println!(
        "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
        s.name,
        s.clients,
        sorted.len(),
        percentile(&sorted, 0.5),
        percentile(&sorted, 0.99),
        percentile(&sorted, 1.0),
        rss_before as f64 / 1024.0,
        rss_during as f64 / 1024.0,
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not used.
    let clients = env_number("WUJIE_BENCH_CLIENTS", 100);
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
    let started = Instant::now();
    println!(
        "| scenario | clients | samples | p50 ms | p99 ms | max ms | server RSS before MiB | server RSS peak MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // A stream at 1,000 events/s and a burst (rate 0), each to one client and to `clients`.
    let kinds = [
        (format!("stream {stream} at 1000/s"), stream, 1000),
        (format!("burst {burst}"), burst, 0),
    ];
    for (name, count, rate) in kinds {
        for clients in [1, clients] {
            let s = Scenario {
                name: name.clone(),
                count,
                rate,
                clients,
            };
            run_scenario(home.path(), &url, &client, server.id(), &s);
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
