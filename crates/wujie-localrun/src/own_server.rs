//! The profile's own servers: while `wujie server` serves the profile's database it records
//! where, so that `wujie --server URL` naming it uses the profile's token with no login.
//!
//! Every server has a record of its own, `state/servers/<random id>.json` (its URL), so that
//! several servers on one profile are all known, and a server that ends removes only its own.
//! A record counts only while its server holds an exclusive `flock` on it, from before the
//! record appears under its name until after it is removed: the kernel drops that lock the
//! moment the process dies, however it dies. A pid would prove nothing (a zombie keeps its pid,
//! another process may get it, and the port may then belong to any program), and the profile's
//! token must never go to another program. A record nobody holds a lock on was left by a server
//! that died: readers remove it.
//!
//! An earlier version kept one `state/server.json` naming a pid and never locked it, so it
//! cannot prove its server alive and is not read; that version's server removes it when it ends.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg, OFlag};

use crate::error::LocalRunError;
use crate::profile::Profile;

/// Largest record read; one holds a URL.
const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// This process's record of the server it runs; removed when dropped.
#[derive(Debug)]
pub struct OwnServerRecord {
    path: PathBuf,
    _lock: Flock<File>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct OwnServer {
    url: String,
}

impl OwnServerRecord {
    pub fn write(profile: &Profile, url: &str) -> Result<OwnServerRecord, LocalRunError> {
        let dir = profile.own_servers_dir();
        let id = uuid::Uuid::new_v4().simple().to_string();
        let path = dir.join(format!("{id}.json"));
        // Written and locked under a name readers skip, then renamed: under its own name a
        // record is complete and locked from its first moment, so no reader takes a starting
        // server for a dead one.
        let staging = dir.join(format!(".{id}.tmp"));
        let locked = loop {
            std::fs::create_dir_all(&dir).map_err(|e| LocalRunError::io(&dir, e))?;
            match write_locked(&staging, url) {
                // The last server to end removed the directory, empty, between the two: again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                locked => break locked.map_err(|e| LocalRunError::io(&staging, e)),
            }
        };
        let written = locked.and_then(|lock| {
            std::fs::rename(&staging, &path).map_err(|e| LocalRunError::io(&path, e))?;
            Ok(lock)
        });
        match written {
            Ok(lock) => Ok(OwnServerRecord { path, _lock: lock }),
            Err(e) => {
                let _ = std::fs::remove_file(&staging);
                Err(e)
            }
        }
    }
}

fn write_locked(path: &Path, url: &str) -> std::io::Result<Flock<File>> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    // Nobody else opens a file of this name, so the lock is free.
    let mut lock = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| e)?;
    let record = OwnServer {
        url: url.trim_end_matches('/').to_owned(),
    };
    let bytes = serde_json::to_vec(&record).map_err(std::io::Error::other)?;
    lock.write_all(&bytes)?;
    Ok(lock)
}

impl Drop for OwnServerRecord {
    fn drop(&mut self) {
        // Removed while still locked: a reader that opened it just before sees it alive, one
        // that opens it after finds nothing.
        let _ = std::fs::remove_file(&self.path);
        // The last server takes the directory with it (it fails while another has a record).
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Whether `url` is where one of this profile's own servers listens right now, so that the
/// profile's token is never sent elsewhere.
pub fn is_own_server(profile: &Profile, url: &str) -> bool {
    let url = url.trim_end_matches('/');
    let Ok(entries) = std::fs::read_dir(profile.own_servers_dir()) else {
        return false;
    };
    let mut found = false;
    // Every record is looked at, also after a match, so that the dead ones are removed.
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_record = name
            .to_str()
            .is_some_and(|n| n.ends_with(".json") && !n.starts_with('.'));
        if is_record && live_url(&entry.path()).is_some_and(|live| live == url) {
            found = true;
        }
    }
    found
}

/// The URL of the record at `path` while its server holds the record's lock; a record whose
/// lock is free is removed. Anything unreadable counts as no server.
fn live_url(path: &Path) -> Option<String> {
    // Not following links, and non-blocking, so that whatever was put here in a record's
    // place cannot make the command wait.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    // A shared lock conflicts only with the server's exclusive one, so readers probing at the
    // same time never take each other for a server.
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Ok(_) => {
            let _ = std::fs::remove_file(path);
            None
        }
        Err((file, Errno::EWOULDBLOCK)) => {
            let mut bytes = Vec::new();
            file.take(MAX_RECORD_BYTES).read_to_end(&mut bytes).ok()?;
            serde_json::from_slice::<OwnServer>(&bytes)
                .ok()
                .map(|own| own.url)
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_running_server_of_a_profile_is_known_until_it_ends() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let (first, second) = ("http://127.0.0.1:1001", "http://127.0.0.1:1002");
        let first_record = OwnServerRecord::write(&profile, first).unwrap();
        let second_record = OwnServerRecord::write(&profile, second).unwrap();
        assert!(
            is_own_server(&profile, first),
            "the first server is forgotten"
        );
        assert!(is_own_server(&profile, second));

        drop(second_record);
        assert!(
            is_own_server(&profile, first),
            "the second server's end took the first one's record"
        );
        assert!(!is_own_server(&profile, second));
        drop(first_record);
        assert!(!is_own_server(&profile, first));
    }

    /// What a server killed before it could remove its record leaves behind, naming a port
    /// another program listens on now.
    #[test]
    fn a_record_nobody_holds_a_lock_on_is_ignored_and_removed() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let stranger = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", stranger.local_addr().unwrap());
        let left = profile.own_servers_dir().join("0123abcd.json");
        std::fs::create_dir_all(profile.own_servers_dir()).unwrap();
        std::fs::write(&left, serde_json::json!({ "url": url }).to_string()).unwrap();

        assert!(!is_own_server(&profile, &url));
        assert!(!left.exists(), "the dead server's record is still there");
    }
}
