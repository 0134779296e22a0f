//! Replacing a file's contents all at once: whoever reads it, and whatever a crash or a power
//! cut leaves, finds the old contents or all of the new, never a mix or an empty file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Tells apart the temporary files of writes this process makes at the same time.
static WRITES: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path`: into a new file beside it, created with `mode` (less the umask),
/// flushed to the disk, renamed over `path`, and then the directory flushed too, so that the
/// rename itself survives a crash. The directory is created when missing. On an error `path`
/// is as it was and no temporary file is left.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let Some(name) = path.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a file to write needs a file name",
        ));
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let temp = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let written = write_new(&temp, bytes, mode).and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written?;
    File::open(dir)?.sync_all()
}

/// A new file at `temp` holding `bytes`, on the disk.
fn write_new(temp: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    // A file of this name can only be left by a process that died with our pid: replace it,
    // and create our own afresh (`create_new` neither follows a link nor keeps another mode).
    let _ = std::fs::remove_file(temp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(temp)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn writes_a_new_file_with_its_mode_in_a_new_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a/b/secret.json");
        write_atomic(&path, b"{}", 0o600).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(names_in(&tmp.path().join("a/b")), ["secret.json"]);
    }

    #[test]
    fn replaces_a_file_contents_and_mode_and_leaves_nothing_beside_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.json");
        std::fs::write(&path, b"old and longer").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        write_atomic(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(names_in(tmp.path()), ["config.json"]);
    }

    #[test]
    fn a_failed_write_keeps_what_was_there_and_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        // A directory cannot be replaced by a file: the rename fails.
        let path = tmp.path().join("taken");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), b"kept").unwrap();
        assert!(write_atomic(&path, b"new", 0o644).is_err());
        assert_eq!(std::fs::read(path.join("inside")).unwrap(), b"kept");
        assert_eq!(names_in(tmp.path()), ["taken"]);
    }

    #[test]
    fn a_temporary_file_left_by_a_dead_process_is_replaced_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, b"not yours").unwrap();
        let path = tmp.path().join("dir/file");
        std::fs::create_dir(tmp.path().join("dir")).unwrap();
        let next = WRITES.load(Ordering::Relaxed);
        // Every write of this process until well after ours would take one of these names.
        for n in next..next + 64 {
            let name = format!(".file.{}.{n}.tmp", std::process::id());
            std::os::unix::fs::symlink(&outside, tmp.path().join("dir").join(name)).unwrap();
        }
        write_atomic(&path, b"mine", 0o600).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"mine");
        assert_eq!(std::fs::read(&outside).unwrap(), b"not yours");
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let error = write_atomic(Path::new("/"), b"x", 0o644).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }
}
