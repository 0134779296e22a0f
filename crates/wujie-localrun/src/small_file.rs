//! Reading a small file that someone else controls (a plugin's `provider.json`, the profile's
//! config): the file's type and size are checked before a byte is read, so a FIFO cannot block
//! the command and a link to `/dev/zero` cannot fill memory.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::OFlag;

use crate::error::LocalRunError;

/// The bytes of the regular file at `path` (symlinks followed), at most `max_bytes` of them.
pub fn read_small_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, LocalRunError> {
    let io = |e| LocalRunError::io(path, e);
    // Looked at before opening: opening some devices already does something.
    check(path, &std::fs::metadata(path).map_err(io)?, max_bytes)?;
    // Non-blocking, so a FIFO swapped in after the check cannot make `open` wait for a writer;
    // the type is checked again on what was actually opened.
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    check(path, &meta, max_bytes)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may grow between the check and the read.
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(path, max_bytes));
    }
    Ok(bytes)
}

fn check(path: &Path, meta: &Metadata, max_bytes: u64) -> Result<(), LocalRunError> {
    let kind = meta.file_type();
    let what = if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("directory")
    } else if kind.is_fifo() {
        Some("FIFO (named pipe)")
    } else if kind.is_char_device() {
        Some("character device")
    } else if kind.is_block_device() {
        Some("block device")
    } else if kind.is_socket() {
        Some("socket")
    } else {
        Some("special file")
    };
    if let Some(what) = what {
        return Err(LocalRunError::NotRegularFile {
            path: path.to_path_buf(),
            what,
        });
    }
    if meta.len() > max_bytes {
        return Err(too_large(path, max_bytes));
    }
    Ok(())
}

fn too_large(path: &Path, max_bytes: u64) -> LocalRunError {
    LocalRunError::FileTooLarge {
        path: path.to_path_buf(),
        max_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"1234").unwrap();
        assert_eq!(read_small_file(&path, 4).unwrap(), b"1234");
        assert!(matches!(
            read_small_file(&path, 3),
            Err(LocalRunError::FileTooLarge { .. })
        ));
    }

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        for (path, what) in [
            (fifo.as_path(), "FIFO (named pipe)"),
            (dir.path(), "directory"),
            (Path::new("/dev/zero"), "character device"),
        ] {
            match read_small_file(path, 1 << 20) {
                Err(LocalRunError::NotRegularFile { what: found, .. }) => assert_eq!(found, what),
                other => panic!("{}: {other:?}", path.display()),
            }
        }
    }
}
