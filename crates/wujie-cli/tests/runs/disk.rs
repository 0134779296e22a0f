//! A full disk under the profile's state dir: `wujie run` says so and names the file (the outbox,
//! or the spool its reader writes first, whichever found the disk full), keeps everything it
//! read, and `local-run sync` delivers it once there is space again.
//!
//! The disk is a real, small tmpfs mounted over the state dir, so this test needs root (or
//! CAP_SYS_ADMIN); it fails, rather than skips, where it cannot mount one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use wujie_testkit::spawned::Spawned;
use wujie_testkit::*;

/// A tmpfs of a given size mounted on a directory, unmounted on drop.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "this test fills a small tmpfs and needs to mount one (root or CAP_SYS_ADMIN): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs {
            dir: dir.to_path_buf(),
        }
    }

    fn resize(&self, size: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.dir)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Waits for `<dir>/go`, then prints 4 KB text events until it is stopped.
fn filling_adapter(dir: &Path) -> String {
    format!(
        r#"echo $$ > {d}/adapter.pid
touch {d}/paused
while [ ! -e {d}/go ]; do sleep 0.05; done
pad=$(head -c 4000 /dev/zero | tr '\0' x)
i=0
while true; do
  printf '{{"type":"text","content":"event %d %s","source":"fill","source_key":"e%d"}}\n' $i "$pad" $i || exit 0
  i=$((i+1))
done"#,
        d = dir.display()
    )
}

#[test]
fn a_full_disk_is_named_and_sync_delivers_everything_kept_once_there_is_space() {
    let team = Env::new();
    let mut server = Server::start(&team, &[]);
    let token = team.ok(&["token", "create"]).trim().to_owned();
    let laptop = Env::new();
    let disk = Tmpfs::mount(&laptop.home.path().join("state"), "2m");
    laptop.ok(&["login", "--server", &server.url, "--token", &token]);
    let dir = laptop.work.path().to_path_buf();
    let plugin = laptop.plugin("fill", V1, &filling_adapter(&dir));
    laptop.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = laptop.create_issue("disk full");

    let child = laptop
        .cmd()
        .args(["run", &key, "--drain-timeout", "1", "--", "fill"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = Spawned::new(child, vec![dir.join("adapter.pid")]);
    wait_until(60, "the adapter to start", || dir.join("paused").exists());
    // With the server gone, every event stays in the outbox until the disk is full (or the
    // spool cannot take the next bytes out of the pipe).
    let addr = server.url.trim_start_matches("http://").to_owned();
    server.kill();
    std::fs::write(dir.join("go"), "").unwrap();
    let code = run.wait(120, "wujie run to stop on the full disk");
    let stderr = run.stderr();
    assert_ne!(code, Some(0), "{stderr}");
    let state = laptop.home.path().join("state");
    let outbox = state.join("outbox.db").display().to_string();
    let spools = format!("cannot write the spool {}/", state.join("spool").display());
    assert!(
        stderr.contains("no space left on device")
            && (stderr.contains(&outbox) || stderr.contains(&spools))
            && stderr.contains("local-run sync"),
        "says what happened, to which file, and what to do: {stderr}"
    );

    disk.resize("64m");
    let _server = Server::start_args(&team, &["--listen", &addr]);
    let report = laptop.json(&["local-run", "sync"]);
    assert_eq!(report["pending"], 0, "{report}");
    let issue = laptop.issue(&key);
    let messages = issue["runs"][0]["messages"].as_array().unwrap();
    assert!(!messages.is_empty(), "what was committed was delivered");
    for (i, m) in messages.iter().enumerate() {
        let content = m["content"].as_str().unwrap();
        assert!(
            content.starts_with(&format!("event {i} ")),
            "every event once, in order, none missing before the last: #{i} is {:.20}",
            content
        );
    }
    assert_eq!(issue["runs"][0]["status"], "failed");
    assert_eq!(laptop.json(&["local-run", "status"]), serde_json::json!([]));
}
