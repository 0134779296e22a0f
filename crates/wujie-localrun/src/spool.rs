//! The spool: what `wujie` takes out of an adapter's stdout is in a file before it is decoded,
//! so that nothing it took out of the pipe lives only in its memory.
//!
//! On Linux the reader moves the bytes out of the pipe with `splice(2)` straight into the spool
//! file (`state/spool/<id>.ndjson`, mode 0600): once out of the pipe they are in the file's page
//! cache, which outlives the process however it dies. Only then are they read back and decoded,
//! and each commit of their lines to the outbox records the mark up to which every line is
//! committed ([`SpoolMark`]). Where `splice` does not work (macOS, a stdout that is not a pipe,
//! a file system that refuses it) the reader reads the bytes and then writes them to the spool:
//! a kill between those two calls loses that one chunk.
//!
//! Whoever takes a target over from a process that died ([`recover`]: `local-run sync`, the
//! background sync of a run, a discussion resumed) commits what the target's spools hold beyond
//! their marks as the reader would have: the same lines, numbered the same, so with the same keys.
//!
//! Committed bytes give their space back as the reader goes on (Linux: holes punched below the
//! mark), so a spool holds about what the reporter's queue holds, not the session's output. A
//! spool is removed once its session ended and every line was committed.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::unix::AsyncFd;
use wujie_protocol::event::{
    DEFAULT_MAX_LINE_BYTES, DecodedLine, EventError, EventErrorKind, LineDecoder,
};
use wujie_store::outbox::{Outbox, SpoolMark, now_ms};

use crate::error::LocalRunError;
use crate::events::items_for_line;

/// Most bytes taken out of the pipe at once (a pipe's default capacity).
pub(crate) const CHUNK: usize = 64 * 1024;
/// Committed bytes are given back to the file system once there are at least this many.
const RELEASE_STEP: u64 = 256 * 1024;
/// Space is given back in whole blocks of this size.
const BLOCK: u64 = 4096;

/// Where a profile's spools live: `spool/` next to the outbox.
pub fn spool_dir(outbox: &Outbox) -> PathBuf {
    outbox.path().with_file_name("spool")
}

fn spool_path(outbox: &Outbox, id: &str) -> PathBuf {
    spool_dir(outbox).join(format!("{id}.ndjson"))
}

/// A session's spool as the outbox records it. [`Spool::end`] forgets it once the session's
/// lines are all committed (or the session ended at an invalid line); until then whoever takes
/// its target over reads it.
pub struct Spool {
    id: String,
    path: PathBuf,
    outbox: Outbox,
}

impl Spool {
    /// A new spool whose lines go to `target_id` (a target this process holds), and its file
    /// for the reader. `committed` is where the reporter says every line is committed (see
    /// `Reporter::spool_committed`).
    pub async fn create(
        outbox: &Outbox,
        target_id: &str,
        committed: Arc<AtomicU64>,
    ) -> Result<(Spool, SpoolFile), LocalRunError> {
        // Its own id, not the target's: a resumed discussion's spool must not meet the one
        // a process that died left for the same discussion.
        let id = uuid::Uuid::now_v7().to_string();
        let path = spool_path(outbox, &id);
        // The row comes before the file, so that a file nobody records is one left over.
        outbox
            .add_spool(&id, target_id)
            .await
            .map_err(LocalRunError::outbox(
                "cannot record the spool in the outbox",
            ))?;
        let file = match create_file(&path) {
            Ok(file) => file,
            Err(e) => {
                let _ = outbox.end_spool(&id).await;
                return Err(spool_error("cannot create", &path, e));
            }
        };
        let spool_file = SpoolFile {
            id: id.clone(),
            path: path.clone(),
            file,
            written: 0,
            splice: true,
            failed: None,
            committed,
            released: 0,
            release: true,
        };
        let spool = Spool {
            id,
            path,
            outbox: outbox.clone(),
        };
        Ok((spool, spool_file))
    }

    /// Forget the spool and remove its file. Best effort: a spool left behind is read again
    /// from its mark, which covers every line its session handled.
    pub async fn end(self) {
        if let Err(e) = self.outbox.end_spool(&self.id).await {
            tracing::debug!("spool {} stays: {e}", self.id);
            return;
        }
        remove_spool_file(&self.path);
    }
}

fn create_file(path: &Path) -> io::Result<File> {
    loop {
        if let Some(dir) = path.parent() {
            DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            // The last spool's end removed the directory, empty, between the two: again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            opened => return opened,
        }
    }
}

fn remove_spool_file(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != io::ErrorKind::NotFound
    {
        tracing::debug!("cannot remove {}: {e}", path.display());
    }
    // The last spool takes the directory with it (it fails while another has a file there).
    if let Some(dir) = path.parent() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// What went wrong with the spool file at `path`: a full disk says so, and what to do.
fn spool_error(doing: &'static str, path: &Path, source: io::Error) -> LocalRunError {
    let full = matches!(
        source.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded | io::ErrorKind::FileTooLarge
    );
    if full {
        return LocalRunError::SpoolFull {
            path: path.to_path_buf(),
            source,
        };
    }
    LocalRunError::Spool {
        doing,
        path: path.to_path_buf(),
        source,
    }
}

/// The spool file as the reader writes it.
pub struct SpoolFile {
    id: String,
    path: PathBuf,
    file: File,
    /// Bytes in the file: where the next ones go.
    written: u64,
    /// `splice` works for this stdout and this file; once it did not, bytes are copied.
    splice: bool,
    /// Copied bytes could not be written to the spool: said on the next take, after the bytes
    /// themselves were handed over.
    failed: Option<LocalRunError>,
    committed: Arc<AtomicU64>,
    /// The space of the bytes before this offset was given back.
    released: u64,
    /// The file system takes space back (punched holes); false once it refused.
    release: bool,
}

impl SpoolFile {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Move the next bytes of the adapter's stdout into the spool, and into `buf`; how many (0
    /// at the end of stdout). Cancel-safe: it waits only while no byte left the pipe.
    pub async fn take(
        &mut self,
        stdout: &AsyncFd<OwnedFd>,
        buf: &mut [u8],
    ) -> Result<usize, LocalRunError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.release_committed();
        let moved = loop {
            let mut ready = stdout.readable().await.map_err(reading_stdout)?;
            match ready.try_io(|pipe| self.move_out(pipe.get_ref(), buf)) {
                Ok(Ok(moved)) => break moved,
                // A signal came in between; or the pipe was empty after all, and its
                // readiness is cleared to be waited for again.
                Ok(Err(_)) | Err(_) => continue,
            }
        };
        let at = self.written;
        match moved {
            Ok(Moved::Spliced(n)) => {
                self.written += n as u64;
                self.file
                    .read_exact_at(&mut buf[..n], at)
                    .map_err(|e| spool_error("cannot read back", &self.path, e))?;
                Ok(n)
            }
            Ok(Moved::Read(n)) => {
                self.written += n as u64;
                if let Err(e) = self.file.write_all_at(&buf[..n], at) {
                    self.failed = Some(spool_error("cannot write", &self.path, e));
                }
                Ok(n)
            }
            Err(Failed::Read(e)) => Err(reading_stdout(e)),
            Err(Failed::Splice(e)) => Err(spool_error(
                "cannot move the adapter's output into",
                &self.path,
                e,
            )),
        }
    }

    /// One attempt at taking bytes out of the pipe: spliced into the spool, or read into
    /// `buf`. The outer error is one to try again after: the pipe is empty (`WouldBlock`) or a
    /// signal came in.
    fn move_out(&mut self, pipe: &OwnedFd, buf: &mut [u8]) -> io::Result<Result<Moved, Failed>> {
        if self.splice {
            match splice_into(pipe, &self.file, self.written, buf.len()) {
                Ok(n) => return Ok(Ok(Moved::Spliced(n))),
                // Not a pipe, a file system that takes no splice, or no splice at all.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                    ) =>
                {
                    self.splice = false;
                }
                Err(e) if is_retry(&e) => return Err(e),
                Err(e) => return Ok(Err(Failed::Splice(e))),
            }
        }
        match rustix::io::read(pipe, &mut *buf) {
            Ok(n) => Ok(Ok(Moved::Read(n))),
            Err(e) => {
                let e = io::Error::from(e);
                if is_retry(&e) {
                    Err(e)
                } else {
                    Ok(Err(Failed::Read(e)))
                }
            }
        }
    }

    /// Give the space of committed bytes back to the file system, in steps of at least
    /// [`RELEASE_STEP`]: only bytes before the committed mark, which nobody reads again.
    fn release_committed(&mut self) {
        if !self.release {
            return;
        }
        let upto = self.committed.load(Ordering::Acquire) / BLOCK * BLOCK;
        if upto < self.released + RELEASE_STEP {
            return;
        }
        match punch_hole(&self.file, self.released, upto) {
            Ok(()) => self.released = upto,
            Err(e) => {
                tracing::debug!(
                    "{} keeps its space until it is removed: {e}",
                    self.path.display()
                );
                self.release = false;
            }
        }
    }
}

fn reading_stdout(source: io::Error) -> LocalRunError {
    LocalRunError::Adapter {
        doing: "cannot read the adapter's stdout",
        source,
    }
}

/// The pipe is empty (`WouldBlock`, which makes `try_io` wait for readiness again) or a signal
/// came in between.
fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

enum Moved {
    /// Bytes spliced into the spool (not yet in the buffer).
    Spliced(usize),
    /// Bytes read into the buffer (not yet in the spool).
    Read(usize),
}

enum Failed {
    Read(io::Error),
    Splice(io::Error),
}

/// `splice(2)` from the pipe to the spool at `at`, without waiting for the pipe.
#[cfg(target_os = "linux")]
fn splice_into(pipe: &OwnedFd, file: &File, at: u64, len: usize) -> io::Result<usize> {
    use rustix::pipe::{SpliceFlags, splice};
    let mut at = at;
    Ok(splice(
        pipe,
        None,
        file,
        Some(&mut at),
        len,
        SpliceFlags::NONBLOCK,
    )?)
}

#[cfg(not(target_os = "linux"))]
fn splice_into(_pipe: &OwnedFd, _file: &File, _at: u64, _len: usize) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Frees the blocks of `file` between `from` and `to`, keeping its size and offsets.
#[cfg(target_os = "linux")]
fn punch_hole(file: &File, from: u64, to: u64) -> io::Result<()> {
    use nix::fcntl::{FallocateFlags, fallocate};
    let mode = FallocateFlags::FALLOC_FL_PUNCH_HOLE | FallocateFlags::FALLOC_FL_KEEP_SIZE;
    Ok(fallocate(file, mode, from as i64, (to - from) as i64)?)
}

#[cfg(not(target_os = "linux"))]
fn punch_hole(_file: &File, _from: u64, _to: u64) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// One take's worth of lines, with the time they were read (for delay statistics) and the
/// marks of the spool where they end.
pub struct ReadLines {
    pub lines: Vec<Result<DecodedLine, EventError>>,
    pub read_at_ms: i64,
    pub marks: LineMarks,
}

/// Where in the spool the lines of one take end, for the marks recorded with their commits.
#[derive(Debug, Clone)]
pub struct LineMarks {
    spool: String,
    /// Where the last line before this take ends (a take may start inside a line), and the
    /// lines before it.
    start: u64,
    lines_before: u64,
    /// Where each line that ends in this take ends; the first is line `lines_before + 1`.
    ends: Vec<u64>,
}

impl LineMarks {
    /// Every line up to `line_no` handled: a line that ends in this take, or the line before
    /// its first (`line_no` is never less). A line that does not end in this take (one too
    /// long, reported before its end) counts as the last one that does.
    pub fn after(&self, line_no: u64) -> SpoolMark {
        let here = (line_no.saturating_sub(self.lines_before) as usize).min(self.ends.len());
        SpoolMark {
            spool: self.spool.clone(),
            offset: here.checked_sub(1).map_or(self.start, |i| self.ends[i]),
            lines: self.lines_before + here as u64,
        }
    }

    /// Every line that ends in this take handled.
    pub fn all(&self) -> SpoolMark {
        self.after(u64::MAX)
    }
}

/// The spool's bytes as decoded lines, each take with its marks. A line's number is its
/// ordinal in the adapter's stdout, blank lines included, from wherever decoding resumes.
pub struct SpoolLines {
    spool: String,
    decoder: LineDecoder,
    /// Bytes decoded so far.
    offset: u64,
    /// Lines ended so far.
    lines: u64,
    /// Where the last line ended: the bytes after it are a line not finished yet.
    line_start: u64,
}

impl SpoolLines {
    pub fn new(spool: &str) -> SpoolLines {
        SpoolLines::resuming(&SpoolMark {
            spool: spool.to_owned(),
            offset: 0,
            lines: 0,
        })
    }

    /// Decoding the rest of a spool from `mark`, numbering lines on from it.
    fn resuming(mark: &SpoolMark) -> SpoolLines {
        SpoolLines {
            spool: mark.spool.clone(),
            decoder: LineDecoder::resuming(DEFAULT_MAX_LINE_BYTES, mark.lines),
            offset: mark.offset,
            lines: mark.lines,
            line_start: mark.offset,
        }
    }

    /// The lines the next bytes of the spool complete.
    pub fn feed(&mut self, bytes: &[u8], read_at_ms: i64) -> ReadLines {
        let ends: Vec<u64> = memchr::memchr_iter(b'\n', bytes)
            .map(|i| self.offset + i as u64 + 1)
            .collect();
        let lines = self.decoder.feed(bytes);
        let read = self.read(lines, ends, read_at_ms);
        self.offset += bytes.len() as u64;
        read
    }

    /// The end of the stream: a last line without its newline is a line too.
    pub fn finish(&mut self, read_at_ms: i64) -> ReadLines {
        let lines = self.decoder.finish().into_iter().collect();
        let ends = if self.offset > self.line_start {
            vec![self.offset]
        } else {
            Vec::new()
        };
        self.read(lines, ends, read_at_ms)
    }

    fn read(
        &mut self,
        lines: Vec<Result<DecodedLine, EventError>>,
        ends: Vec<u64>,
        read_at_ms: i64,
    ) -> ReadLines {
        let marks = LineMarks {
            spool: self.spool.clone(),
            start: self.line_start,
            lines_before: self.lines,
            ends,
        };
        self.lines += marks.ends.len() as u64;
        if let Some(end) = marks.ends.last() {
            self.line_start = *end;
        }
        ReadLines {
            lines,
            read_at_ms,
            marks,
        }
    }
}

/// Commit what the spools of `target_id` hold beyond their marks, as the reader would have:
/// lines up to the first invalid one (which ended its session), a handoff with an unknown
/// mode skipped (the reader refused it), a last line without newline taken as the end of the
/// stream. Then the spools are forgotten. The caller holds the target's lock, so the process
/// that wrote them is gone.
pub async fn recover(outbox: &Outbox, target_id: &str) -> Result<(), LocalRunError> {
    let spools = outbox
        .spools_of(target_id)
        .await
        .map_err(LocalRunError::outbox("cannot read the spools"))?;
    for spool in spools {
        recover_spool(outbox, target_id, &spool.mark).await?;
    }
    Ok(())
}

async fn recover_spool(
    outbox: &Outbox,
    target_id: &str,
    mark: &SpoolMark,
) -> Result<(), LocalRunError> {
    let path = spool_path(outbox, &mark.spool);
    let file = match File::open(&path) {
        Ok(file) => Some(file),
        // Its session never took anything out of the pipe, or the file went with its row.
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(spool_error("cannot read", &path, e)),
    };
    if let Some(file) = file {
        let mut lines = SpoolLines::resuming(mark);
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = file
                .read_at(&mut buf, lines.offset)
                .map_err(|e| spool_error("cannot read", &path, e))?;
            let read = if n == 0 {
                lines.finish(now_ms())
            } else {
                lines.feed(&buf[..n], now_ms())
            };
            let (rows, mark, invalid) = rows_of(target_id, read);
            outbox
                .append_spooled(target_id, &rows, Some(&mark))
                .await
                .map_err(LocalRunError::outbox(
                    "cannot commit what the spool held to the outbox",
                ))?;
            if n == 0 || invalid {
                break;
            }
        }
    }
    outbox
        .end_spool(&mark.spool)
        .await
        .map_err(LocalRunError::outbox("cannot forget a spool"))?;
    remove_spool_file(&path);
    Ok(())
}

/// The outbox rows of a take's lines up to its first invalid line, the mark after them, and
/// whether an invalid line ended them.
fn rows_of(target_id: &str, read: ReadLines) -> (Vec<(String, i64)>, SpoolMark, bool) {
    let mut rows = Vec::new();
    for line in read.lines {
        let line = match line {
            Ok(line) => line,
            Err(EventError {
                kind: EventErrorKind::UnknownHandoffMode { .. },
                ..
            }) => continue,
            Err(e) => return (rows, read.marks.after(e.line_no - 1), true),
        };
        rows.extend(items_for_line(target_id, line).iter().map(|item| {
            let json = serde_json::to_string(item).expect("items serialize");
            (json, read.read_at_ms)
        }));
    }
    (rows, read.marks.all(), false)
}

/// Remove spool files that no spool row names any more (left by a crash between the two steps
/// of [`Spool::end`]). Best effort.
pub async fn remove_orphans(outbox: &Outbox) {
    let Ok(entries) = std::fs::read_dir(spool_dir(outbox)) else {
        return;
    };
    // Listed before the rows are read: a spool's row is written before its file is created,
    // so every file listed here has its row, unless its spool ended.
    let files: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = entry.path();
            let id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".ndjson")?
                .to_owned();
            Some((id, path))
        })
        .collect();
    let Ok(spools) = outbox.spools().await else {
        return;
    };
    for (id, path) in files {
        if !spools.iter().any(|s| s.mark.spool == id) {
            remove_spool_file(&path);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use tokio::io::Interest;
    use wujie_store::outbox::{NewTarget, TargetKind, TargetLock};

    use super::*;

    fn text(i: usize) -> String {
        format!(r#"{{"type":"text","content":"event {i}","source":"s","source_key":"e{i}"}}"#)
    }

    const USAGE: &str =
        r#"{"usage":{"provider":"p","model":"m","input_tokens":1,"output_tokens":2}}"#;

    /// Lines as an adapter prints them: text events, usage (keyed by its line number), a
    /// blank line, and `last` after them without a newline.
    fn stdout(count: usize, last: &str) -> Vec<u8> {
        let mut out = String::new();
        for i in 0..count {
            out += &text(i);
            out += "\n";
            if i % 3 == 0 {
                out += USAGE;
                out += "\n\n";
            }
        }
        out += last;
        out.into_bytes()
    }

    /// The outbox in `dir` with the run target `run-1` held by this process (the suite's
    /// supervisor tests read adapters through it too).
    pub(crate) async fn outbox_with_target(dir: &Path) -> (Outbox, TargetLock) {
        let outbox = Outbox::open(&dir.join("outbox.db")).await.unwrap();
        let owner = outbox
            .add_target(&NewTarget {
                id: "run-1",
                kind: TargetKind::Run,
                server_url: "local",
                label: "WUJ-1",
                reporter_pid: std::process::id(),
            })
            .await
            .unwrap();
        (outbox, owner)
    }

    /// The items (as committed to the outbox) that decoding `bytes` in `chunk`-sized takes
    /// gives, as the live reader hands them to `wujie run`.
    fn live_items(bytes: &[u8], chunk: usize) -> Vec<String> {
        let mut lines = SpoolLines::new("spool");
        let mut reads: Vec<ReadLines> = bytes.chunks(chunk).map(|c| lines.feed(c, 0)).collect();
        reads.push(lines.finish(0));
        reads
            .into_iter()
            .flat_map(|read| rows_of("run-1", read).0)
            .map(|(json, _)| json)
            .collect()
    }

    async fn committed_items(outbox: &Outbox) -> Vec<String> {
        outbox
            .pending("run-1", 100_000)
            .await
            .unwrap()
            .into_iter()
            .map(|row| row.item_json)
            .collect()
    }

    #[test]
    fn marks_say_where_the_lines_of_a_take_end() {
        let mut lines = SpoolLines::new("s");
        let first = lines.feed(b"one\ntwo\nthr", 0);
        assert_eq!(
            (first.marks.after(0).offset, first.marks.after(0).lines),
            (0, 0)
        );
        assert_eq!(
            (first.marks.after(1).offset, first.marks.after(1).lines),
            (4, 1)
        );
        assert_eq!((first.marks.all().offset, first.marks.all().lines), (8, 2));
        // A line ending in a later take counts as the last one ending in this one.
        assert_eq!(first.marks.after(3), first.marks.all());
        let second = lines.feed(b"ee\n\nfour", 0);
        // Before its first line: where the line before it ended, not where the take started.
        assert_eq!(
            (second.marks.after(2).offset, second.marks.after(2).lines),
            (8, 2)
        );
        assert_eq!(
            (second.marks.after(3).offset, second.marks.after(3).lines),
            (14, 3)
        );
        assert_eq!(
            (second.marks.all().offset, second.marks.all().lines),
            (15, 4)
        );
        // The last line, without its newline, ends the stream.
        let end = lines.finish(0);
        assert_eq!((end.marks.all().offset, end.marks.all().lines), (19, 5));
        assert_eq!(end.marks.all().spool, "s");
        let mut ended = SpoolLines::new("s");
        ended.feed(b"one\n", 0);
        assert_eq!(
            ended.finish(0).marks.all().lines,
            1,
            "no line after the last newline"
        );
    }

    #[tokio::test]
    async fn what_a_dead_reader_left_after_its_mark_is_committed_with_the_keys_it_had_live() {
        let dir = tempfile::tempdir().unwrap();
        let (outbox, _owner) = outbox_with_target(dir.path()).await;
        let bytes = stdout(40, &text(40));
        for chunk in [7, 100, 4096] {
            let (spool, _file) = Spool::create(&outbox, "run-1", Arc::default())
                .await
                .unwrap();
            std::fs::write(&spool.path, &bytes).unwrap();
            // The reader committed the lines of its first takes, with their mark, then died.
            let mut lines = SpoolLines::new(&spool.id);
            let mut committed = 0;
            for take in bytes.chunks(chunk).take(3) {
                let (rows, mark, _) = rows_of("run-1", lines.feed(take, 0));
                committed += rows.len();
                outbox
                    .append_spooled("run-1", &rows, Some(&mark))
                    .await
                    .unwrap();
            }
            recover(&outbox, "run-1").await.unwrap();
            let items = committed_items(&outbox).await;
            assert_eq!(
                items,
                live_items(&bytes, chunk),
                "in takes of {chunk} ({committed} committed)"
            );
            assert!(items.iter().any(|i| i.contains("usage:run-1:line:")));
            assert!(
                items.last().unwrap().contains("event 40"),
                "the last line, without newline"
            );
            assert!(outbox.spools_of("run-1").await.unwrap().is_empty());
            assert!(!spool.path.exists());
            let seqs: Vec<i64> = outbox
                .pending("run-1", 100_000)
                .await
                .unwrap()
                .iter()
                .map(|r| r.seq)
                .collect();
            outbox.settle(&seqs, &[]).await.unwrap();
        }
    }

    #[tokio::test]
    async fn recovery_stops_at_an_invalid_line_and_skips_an_unknown_handoff() {
        let dir = tempfile::tempdir().unwrap();
        let (outbox, _owner) = outbox_with_target(dir.path()).await;
        let (spool, _file) = Spool::create(&outbox, "run-1", Arc::default())
            .await
            .unwrap();
        let handoff = r#"{"event":"handoff_ready","request_id":"r","mode":"later"}"#;
        let bytes = format!(
            "{}\n{handoff}\n{}\nnot json\n{}\n",
            text(0),
            text(1),
            text(2)
        );
        std::fs::write(&spool.path, bytes).unwrap();
        recover(&outbox, "run-1").await.unwrap();
        let items = committed_items(&outbox).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert!(items[0].contains("event 0") && items[1].contains("event 1"));
        assert!(outbox.spools_of("run-1").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_spool_is_its_owners_only_and_a_file_nobody_records_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (outbox, _owner) = outbox_with_target(dir.path()).await;
        let (spool, _file) = Spool::create(&outbox, "run-1", Arc::default())
            .await
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&spool.path), 0o600);
        assert_eq!(mode(&spool_dir(&outbox)), 0o700);
        assert_eq!(spool.path.parent().unwrap(), dir.path().join("spool"));
        let orphan = spool_dir(&outbox).join("gone.ndjson");
        std::fs::write(&orphan, "x").unwrap();
        remove_orphans(&outbox).await;
        assert!(!orphan.exists());
        assert!(spool.path.exists(), "a recorded spool stays");
        let path = spool.path.clone();
        spool.end().await;
        assert!(!path.exists());
        assert!(outbox.spools().await.unwrap().is_empty());
    }

    /// An adapter's stdout: a pipe (or, with `socket`, a socket, which `splice` cannot
    /// take from). The read end for `take`; a thread writes `bytes` to the other end and
    /// closes it.
    #[allow(unsafe_code)]
    fn adapter_printing(bytes: Vec<u8>, socket: bool) -> AsyncFd<OwnedFd> {
        let (read, mut write): (OwnedFd, Box<dyn Write + Send>) = if socket {
            let (read, write) = std::os::unix::net::UnixStream::pair().unwrap();
            (read.into(), Box::new(write))
        } else {
            let (read, write) = rustix::pipe::pipe().unwrap();
            (read, Box::new(File::from(write)))
        };
        std::thread::spawn(move || write.write_all(&bytes).unwrap());
        rustix::io::ioctl_fionbio(&read, true).unwrap();
        // SAFETY: the `AsyncFd` owns the descriptor, which stays open and unchanged until it
        // drops it.
        unsafe { AsyncFd::register_with_interest(read, Interest::READABLE) }.unwrap()
    }

    /// Takes everything until the end of stdout: what was handed over.
    async fn take_all(spool: &mut SpoolFile, stdout: &AsyncFd<OwnedFd>) -> Vec<u8> {
        let mut buf = vec![0u8; CHUNK];
        let mut taken = Vec::new();
        loop {
            let n = spool.take(stdout, &mut buf).await.unwrap();
            if n == 0 {
                return taken;
            }
            taken.extend_from_slice(&buf[..n]);
        }
    }

    #[tokio::test]
    async fn what_is_taken_from_stdout_is_in_the_spool_first_spliced_or_copied() {
        let dir = tempfile::tempdir().unwrap();
        let (outbox, _owner) = outbox_with_target(dir.path()).await;
        // Several pipes full.
        let bytes = stdout(3_000, "");
        for (splice, socket) in [(true, false), (false, false), (true, true)] {
            let (spool, mut file) = Spool::create(&outbox, "run-1", Arc::default())
                .await
                .unwrap();
            file.splice = splice;
            let stdout = adapter_printing(bytes.clone(), socket);
            let taken = take_all(&mut file, &stdout).await;
            let what = format!("splice {splice}, socket {socket}");
            assert_eq!(taken, bytes, "{what}");
            assert_eq!(std::fs::read(&spool.path).unwrap(), bytes, "{what}");
            let spliced = cfg!(target_os = "linux") && splice && !socket;
            assert_eq!(
                file.splice, spliced,
                "{what}: a socket cannot be spliced from"
            );
            spool.end().await;
        }
    }

    #[tokio::test]
    async fn committed_bytes_give_their_space_back() {
        let dir = tempfile::tempdir().unwrap();
        let (outbox, _owner) = outbox_with_target(dir.path()).await;
        let committed = Arc::new(AtomicU64::new(0));
        let (spool, mut file) = Spool::create(&outbox, "run-1", committed.clone())
            .await
            .unwrap();
        let bytes = stdout(40_000, "");
        let stdout = adapter_printing(bytes.clone(), false);
        take_all(&mut file, &stdout).await;
        let on_disk = |p: &Path| std::fs::metadata(p).unwrap().blocks() * 512;
        assert!(on_disk(&spool.path) >= bytes.len() as u64);
        // Everything but the last few bytes committed.
        committed.store(bytes.len() as u64 - 100, Ordering::Release);
        file.release_committed();
        assert!(
            on_disk(&spool.path) <= 2 * BLOCK,
            "{} bytes on disk of {}",
            on_disk(&spool.path),
            bytes.len()
        );
        assert_eq!(
            std::fs::metadata(&spool.path).unwrap().len(),
            bytes.len() as u64
        );
        // What is not committed is still there, where it was.
        let mut tail = vec![0u8; 100];
        file.file
            .read_exact_at(&mut tail, bytes.len() as u64 - 100)
            .unwrap();
        assert_eq!(tail, bytes[bytes.len() - 100..]);
    }
}
