//! The ssh runtime against a real sshd on 127.0.0.1 (its own config, host key and
//! authorized_keys in a temp dir). Skipped, with a reason, only when /usr/sbin/sshd is absent and
//! WUJIE_REQUIRE_SSHD is unset.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::TestEnv;
use wujie_commondev::runtime::RuntimeSettings;
use wujie_commondev::{CommondevError, Lifetime, OpenRequest};

const SSHD: &str = "/usr/sbin/sshd";

fn sshd_available() -> bool {
    if Path::new(SSHD).is_file() {
        return true;
    }
    assert!(
        std::env::var_os("WUJIE_REQUIRE_SSHD").is_none(),
        "WUJIE_REQUIRE_SSHD is set but {SSHD} is missing (install openssh-server)"
    );
    eprintln!(
        "skipping: {SSHD} is not installed (install openssh-server, or set WUJIE_REQUIRE_SSHD to make this fail)"
    );
    false
}

/// A private sshd on a free loopback port; killed on drop.
struct Sshd {
    child: std::process::Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

fn start_sshd(dir: &Path) -> Sshd {
    keygen(&dir.join("host_key"));
    keygen(&dir.join("id_good"));
    keygen(&dir.join("id_other"));
    std::fs::copy(dir.join("id_good.pub"), dir.join("authorized_keys")).unwrap();
    // sshd refuses to start without its privilege-separation directory.
    let _ = std::fs::create_dir_all("/run/sshd");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PidFile {d}/sshd.pid\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             UsePAM no\nPermitRootLogin prohibit-password\nSubsystem sftp internal-sftp\nLogLevel ERROR\n",
            d = dir.display()
        ),
    )
    .unwrap();
    // Owned by `Sshd` right away, whose drop kills and reaps it on every path.
    let sshd = Sshd {
        child: Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stderr(std::fs::File::create(dir.join("sshd.log")).unwrap())
            .spawn()
            .unwrap(),
        port,
        dir: dir.to_path_buf(),
    };
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return sshd;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "sshd did not listen: {}",
        std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
    );
}

fn user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn ssh_settings(sshd: &Sshd, key: &str, remote_root: &Path) -> RuntimeSettings {
    let d = sshd.dir.display();
    RuntimeSettings {
        node_override: None,
        ssh_options: [
            "-F",
            "/dev/null",
            "-i",
            &format!("{d}/{key}"),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "IdentityAgent=none",
            "-o",
            &format!("UserKnownHostsFile={d}/known_hosts"),
            "-o",
            "StrictHostKeyChecking=accept-new",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect(),
        ssh_remote_root: Some(remote_root.display().to_string()),
    }
}

fn request(env: &TestEnv, sshd: &Sshd, branch: &str) -> OpenRequest {
    OpenRequest {
        project: "X".into(),
        branch: branch.into(),
        agent_cli: "agent".into(),
        workdir: env.workdir.clone(),
        issue: None,
        runtime: Some(format!("ssh://{}@127.0.0.1:{}", user(), sshd.port)),
    }
}

#[tokio::test]
async fn sidecar_over_ssh_uses_the_same_driver_and_contract() {
    if !sshd_available() {
        return;
    }
    let mut env = TestEnv::new();
    let sshd = start_sshd(&env.home.path().join("sshd").tap_mkdir());
    let remote_root = env.home.path().join("remote");
    env.runtime = ssh_settings(&sshd, "id_good", &remote_root);
    env.install("alpha", "agent");
    let sessions = env.sessions(Lifetime::OneShot);
    let opened = sessions.open(request(&env, &sshd, "r")).await.unwrap();
    assert_eq!(
        opened.branch.runtime,
        format!("ssh://{}@127.0.0.1:{}", user(), sshd.port)
    );
    let real = opened.branch.session_id.clone();
    assert!(real.starts_with("alpha_"), "{opened:?}");
    // --session-name crossed ssh intact (it contains a `/`).
    assert!(
        opened
            .branch
            .cli_version
            .as_deref()
            .unwrap()
            .ends_with("name=X/r")
    );
    let pushed: Vec<_> = std::fs::read_dir(remote_root.join("sidecars"))
        .unwrap()
        .collect();
    assert_eq!(pushed.len(), 1);
    let script = pushed[0].as_ref().unwrap().path().join("sidecar.mjs");
    let first_copy = std::fs::metadata(&script).unwrap().modified().unwrap();

    // A fresh one-shot sidecar resumes the real id: WUJIE_RESUME_SESSION_ID was passed through
    // `env K=V` on the remote command line (ssh forwards no local environment).
    let reply = sessions
        .prompt("X", "r", "over ssh 'quoted' $HOME")
        .await
        .unwrap();
    assert_eq!(
        reply.reply,
        format!("alpha({real}) heard: over ssh 'quoted' $HOME")
    );
    assert_eq!(reply.session_id, real);
    assert_eq!(
        std::fs::metadata(&script).unwrap().modified().unwrap(),
        first_copy,
        "copied once, reused"
    );
    assert!(remote_root.join("branches/br-X-r").is_dir());

    // Long-lived use over ssh, closed cleanly.
    let live = env.sessions(Lifetime::KeepAlive);
    live.open(request(&env, &sshd, "r")).await.unwrap();
    assert_eq!(
        live.prompt("X", "r", "again").await.unwrap().session_id,
        real
    );
    assert!(live.close("X", "r").await.unwrap().sidecar_closed);
}

#[tokio::test]
async fn ssh_without_key_login_fails_fast_and_says_so() {
    if !sshd_available() {
        return;
    }
    let mut env = TestEnv::new();
    let sshd = start_sshd(&env.home.path().join("sshd").tap_mkdir());
    env.runtime = ssh_settings(&sshd, "id_other", &env.home.path().join("remote"));
    env.install("alpha", "agent");
    let sessions = env.sessions(Lifetime::OneShot);
    // The deadline only guards against hanging forever on a password prompt.
    let err = tokio::time::timeout(
        Duration::from_secs(120),
        sessions.open(request(&env, &sshd, "k")),
    )
    .await
    .expect("ssh hung instead of failing")
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::SshLogin { .. }), "{text}");
    assert!(
        text.contains("key")
            && text.contains("BatchMode=yes")
            && text.contains("Permission denied"),
        "{text}"
    );
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}
impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}
