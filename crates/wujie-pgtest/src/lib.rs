//! Tests only: a throw-away PostgreSQL cluster for the test process, started on first use in a
//! temp dir (initdb, then the server on a free loopback port and a socket in that dir), and a
//! fresh database per test. The cluster is stopped when the process exits: at a normal exit by
//! an `atexit` handler (fast shutdown, then the dir is removed), and if the process dies
//! without one by the parent-death signal the server was started with. Clusters left behind by
//! processes that died that way are removed by the next one.
//!
//! Whether a test that needs PostgreSQL skips or fails when the server programs are missing is
//! the workspace's one rule (`wujie-require`): it fails when `WUJIE_REQUIRE_ALL` is set (CI sets
//! it), and skips with a message saying so otherwise.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::{Pid, Uid, User};

/// Which backend the store and server suites run on: `WUJIE_TEST_DATABASE=postgres` asks for
/// PostgreSQL (scripts/test runs those suites once more that way), anything else is SQLite.
pub fn postgres_requested() -> bool {
    std::env::var("WUJIE_TEST_DATABASE").is_ok_and(|v| v == "postgres")
}

/// A running cluster; its superuser `wujie` logs in without a password, over loopback only.
#[derive(Debug)]
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    pid: Pid,
}

static CLUSTER: OnceLock<Result<Cluster, &str>> = OnceLock::new();
static NEXT_DATABASE: AtomicU32 = AtomicU32::new(0);

/// The cluster of this process, started on first use. `None` (after printing why) when the
/// PostgreSQL programs are not installed and PostgreSQL is not required.
///
/// # Panics
/// When the programs are missing and `WUJIE_REQUIRE_ALL` is set, or when they are there
/// but the cluster does not start.
pub fn require_cluster() -> Option<&'static Cluster> {
    let started = CLUSTER.get_or_init(|| {
        let bin = find_bin().ok_or("its server programs (initdb, postgres) are not installed")?;
        Ok(Cluster::start(bin))
    });
    match started {
        Ok(cluster) => Some(cluster),
        Err(why) => wujie_require::missing(
            "PostgreSQL",
            why,
            "install the Debian package postgresql (scripts/setup does), or set WUJIE_PG_BIN to their directory",
        ),
    }
}

impl Cluster {
    /// Creates an empty database and returns its URL.
    pub fn create_database(&self) -> String {
        let name = format!(
            "t{}_{}",
            std::process::id(),
            NEXT_DATABASE.fetch_add(1, Ordering::Relaxed)
        );
        let status = Command::new(self.bin.join("createdb"))
            .args(self.connection_args())
            .arg(&name)
            .stdin(Stdio::null())
            .status()
            .expect("run createdb");
        assert!(status.success(), "createdb {name} failed: {status}");
        self.url(&name)
    }

    /// The URL of database `name` on this cluster.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://wujie@127.0.0.1:{}/{name}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The cluster's data directory (the files PostgreSQL keeps the databases in).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// How the client programs (`createdb`, `psql`) reach the cluster: its loopback port, as
    /// its superuser.
    fn connection_args(&self) -> [String; 6] {
        [
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "wujie",
        ]
        .map(str::to_owned)
    }

    /// Runs `psql` with `sql` on database `name` and returns its unaligned, tuples-only output
    /// (for tests that check rows directly).
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(self.connection_args())
            .args(["-d", name, "-c", sql])
            .stdin(Stdio::null())
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Waits (60 s at most, only so that a hang fails) until at least `sessions` sessions on
    /// database `name` wait for a lock: requests held up by [`Cluster::hold_transaction`].
    pub fn wait_for_lock_waiters(&self, name: &str, sessions: usize) {
        let waiting = "SELECT COUNT(*) FROM pg_stat_activity \
                       WHERE datname = current_database() AND wait_event_type = 'Lock'";
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.psql(name, waiting).parse::<usize>().unwrap_or(0) < sessions {
            assert!(
                Instant::now() < deadline,
                "fewer than {sessions} sessions waited for a lock within 60 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs `sql` in a transaction of its own on database `name` and keeps that transaction
    /// open (with its locks: e.g. `LOCK TABLE issues IN ACCESS EXCLUSIVE MODE`, as a
    /// migration or a maintenance job would) until the returned guard is dropped.
    pub fn hold_transaction(&self, name: &str, sql: &str) -> HeldTransaction {
        use std::io::Write;
        let app = format!(
            "wujie-test-hold-{}-{}",
            std::process::id(),
            NEXT_DATABASE.fetch_add(1, Ordering::Relaxed)
        );
        let mut child = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1"])
            .args(self.connection_args())
            .args(["-d", name])
            .env("PGAPPNAME", &app)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("run psql");
        let mut stdin = child.stdin.take().expect("psql stdin");
        writeln!(stdin, "BEGIN;\n{sql};").expect("write to psql");
        stdin.flush().expect("write to psql");
        // Once `sql` itself has run: psql sends `BEGIN` on its own first, after which the
        // session is idle in a transaction too, without the lock (a request sent then was
        // answered at once, and no request ever waited for the lock).
        let ran = format!("'{}'", sql.replace('\'', "''"));
        let idle = format!(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = '{app}' \
             AND state = 'idle in transaction' AND position({ran} in query) > 0"
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.psql(name, &idle) != "1" {
            assert!(
                child.try_wait().expect("psql status").is_none(),
                "psql ended before running {sql:?}"
            );
            assert!(Instant::now() < deadline, "{sql:?} did not run within 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        HeldTransaction {
            child,
            stdin: Some(stdin),
        }
    }

    fn start(bin: PathBuf) -> Cluster {
        remove_abandoned_clusters();
        let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the cluster dir");
        // PostgreSQL refuses to run as root; as root, the cluster belongs to `nobody`.
        let runner = Uid::effective().is_root().then(|| {
            User::from_name("nobody")
                .ok()
                .flatten()
                .expect("user nobody")
        });
        if let Some(user) = &runner {
            nix::unistd::chown(&dir, Some(user.uid), Some(user.gid))
                .expect("chown the cluster dir");
        }
        let data = dir.join("data");
        let as_runner = |program: &str| {
            let mut cmd = Command::new(bin.join(program));
            if let Some(user) = &runner {
                cmd.uid(user.uid.as_raw()).gid(user.gid.as_raw());
            }
            cmd.stdin(Stdio::null());
            cmd
        };
        // initdb takes seconds; test processes copy one template cluster instead.
        let template = ensure_template(&bin, &as_runner);
        let copied = Command::new("cp")
            .arg("-a")
            .arg(&template)
            .arg(&data)
            .status()
            .expect("run cp");
        assert!(
            copied.success(),
            "copying the template cluster failed: {copied}"
        );
        let port = free_port();
        let log = std::fs::File::create(dir.join("server.log")).expect("create the server log");
        let mut server = as_runner("postgres");
        server
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(&dir)
            // Loopback only; durability is not what these tests are about.
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            .args(["-c", "max_connections=300"])
            .stdout(Stdio::null())
            .stderr(log);
        // If this process dies without running its exit handler, the server stops with it
        // (immediate shutdown). The signal is sent when the thread that started the server
        // ends, so a thread that lives as long as the process does it.
        // SAFETY: the hook only makes one system call (prctl), which is async-signal-safe.
        #[allow(unsafe_code)]
        unsafe {
            server.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(Signal::SIGQUIT).map_err(std::io::Error::from)
            });
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let child = server.spawn().map(|c| c.id());
            let _ = tx.send(child);
            loop {
                std::thread::park();
            }
        });
        let pid = rx.recv().expect("server thread").expect("start postgres");
        let cluster = Cluster {
            dir,
            bin,
            port,
            pid: Pid::from_raw(pid as i32),
        };
        STOP_AT_EXIT
            .set((cluster.pid, cluster.dir.clone()))
            .expect("one cluster per process");
        // SAFETY: registering a plain `extern "C"` function; it only touches statics.
        #[allow(unsafe_code)]
        unsafe {
            nix::libc::atexit(stop_at_exit);
        }
        cluster.wait_ready();
        cluster
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not get ready on port {}: {log}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

const DIR_PREFIX: &str = "wujie-pgtest-";

/// An initdb'd data directory shared by test processes (read only, copied by each), made once
/// per PostgreSQL installation under a lock. Returns its path.
fn ensure_template(bin: &Path, as_runner: &dyn Fn(&str) -> Command) -> PathBuf {
    let version = bin
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = std::env::temp_dir().join(format!("wujie-pgtemplate-{version}"));
    let data = base.join("data");
    let done = base.join("complete");
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join("wujie-pgtemplate.lock"))
        .expect("open the template lock");
    let _lock = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("lock the template");
    if done.exists() {
        return data;
    }
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("create the template dir");
    if Uid::effective().is_root() {
        let user = User::from_name("nobody")
            .ok()
            .flatten()
            .expect("user nobody");
        nix::unistd::chown(&base, Some(user.uid), Some(user.gid)).expect("chown the template");
    }
    let init = as_runner("initdb")
        .arg("-D")
        .arg(&data)
        .args([
            "-U",
            "wujie",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ])
        .output()
        .expect("run initdb");
    assert!(
        init.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    std::fs::write(&done, b"").expect("mark the template complete");
    data
}

static STOP_AT_EXIT: OnceLock<(Pid, PathBuf)> = OnceLock::new();

/// Fast shutdown (open sessions are ended), wait for the server to exit, remove its dir.
extern "C" fn stop_at_exit() {
    if let Some((pid, dir)) = STOP_AT_EXIT.get() {
        if nix::sys::signal::kill(*pid, Signal::SIGINT).is_ok() {
            let _ = nix::sys::wait::waitpid(*pid, None);
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Clusters of test processes that are gone (killed before their exit handler ran).
fn remove_abandoned_clusters() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let alive = nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok();
        if !alive && !server_running(&entry.path()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether the cluster in `dir` still has a server (its pid file names a live process).
fn server_running(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("data").join("postmaster.pid"))
        .ok()
        .and_then(|text| {
            text.lines()
                .next()
                .and_then(|l| l.trim().parse::<i32>().ok())
        })
        .is_some_and(|pid| nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok())
}

/// A port nothing listens on right now (the server takes it a moment later).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The directory of initdb and postgres: `WUJIE_PG_BIN`, else the newest Debian install under
/// /usr/lib/postgresql, else wherever `PATH` finds initdb.
fn find_bin() -> Option<PathBuf> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("WUJIE_PG_BIN").map(PathBuf::from) {
        return has_server(&dir).then_some(dir);
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, dir)| has_server(dir))
        .collect();
    debian.sort();
    if let Some((_, dir)) = debian.pop() {
        return Some(dir);
    }
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|dir| has_server(dir))
}

/// The name of the database at `url`, a URL [`Cluster::create_database`] returned.
pub fn database_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

/// A transaction kept open by [`Cluster::hold_transaction`]; dropping it ends the session
/// (psql reads the end of its input), which rolls the transaction back and frees its locks.
#[derive(Debug)]
pub struct HeldTransaction {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
}

impl Drop for HeldTransaction {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
