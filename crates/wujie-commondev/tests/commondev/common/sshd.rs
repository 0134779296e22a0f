//! A private sshd on 127.0.0.1 for the ssh runtime tests: its own config, host key and
//! authorized_keys in a temp dir. Tests skip, with a reason, only when /usr/sbin/sshd is absent
//! and WUJIE_REQUIRE_ALL is unset.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::TestEnv;
use wujie_commondev::OpenRequest;
use wujie_commondev::runtime::RuntimeSettings;

/// A private sshd on a free loopback port; killed on drop.
pub struct Sshd {
    child: std::process::Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A private sshd with its files in `dir`, or a skip when sshd is not installed.
pub fn require_sshd(dir: &Path) -> Option<Sshd> {
    require_sshd_with(dir, true)
}

/// `sftp: false` leaves out the sftp subsystem, as on a host without it.
pub fn require_sshd_with(dir: &Path, sftp: bool) -> Option<Sshd> {
    let program = wujie_require::require_sshd()?;
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
             UsePAM no\nPermitRootLogin prohibit-password\n{subsystem}LogLevel ERROR\n",
            d = dir.display(),
            subsystem = if sftp { "Subsystem sftp internal-sftp\n" } else { "" }
        ),
    )
    .unwrap();
    // Owned by `Sshd` right away, whose drop kills and reaps it on every path.
    let sshd = Sshd {
        child: Command::new(program)
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
            return Some(sshd);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "sshd did not listen: {}",
        std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
    );
}

pub fn user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

pub fn ssh_settings(sshd: &Sshd, key: &str, remote_root: &Path) -> RuntimeSettings {
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

pub fn request(env: &TestEnv, sshd: &Sshd, branch: &str) -> OpenRequest {
    OpenRequest {
        project: "X".into(),
        branch: branch.into(),
        agent_cli: "agent".into(),
        workdir: env.workdir.clone(),
        issue: None,
        runtime: Some(format!("ssh://{}@127.0.0.1:{}", user(), sshd.port)),
        no_worktree: false,
    }
}

pub trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}
impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}
