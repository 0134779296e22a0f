//! Splitting a byte stream into lines, for any chunking, with bounded memory. The adapter
//! protocol ([`crate::event::LineDecoder`]) and the built-in providers' readers of an agent's
//! own stdout both stand on it.

/// One line as [`LineSplitter`] hands it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinePiece<'a> {
    /// A whole line, without its `'\n'` and without one trailing `'\r'`.
    Line(&'a [u8]),
    /// A line longer than the limit: reported as soon as that is certain, once; its bytes are
    /// dropped as they come.
    TooLong,
}

/// Buffers at most `max_line_bytes` of an unfinished line, so a runaway writer cannot exhaust
/// memory; a line that arrives whole inside one chunk is handed over in place, without a copy.
#[derive(Debug)]
pub struct LineSplitter {
    max_line_bytes: usize,
    /// Bytes of the current, unfinished line.
    pending: Vec<u8>,
    /// The current line already passed the limit and was reported; skip to its end.
    skipping: bool,
}

impl LineSplitter {
    pub fn new(max_line_bytes: usize) -> LineSplitter {
        LineSplitter {
            max_line_bytes,
            pending: Vec::new(),
            skipping: false,
        }
    }

    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// Calls `each` for every line the chunk completes, in order.
    pub fn feed(&mut self, chunk: &[u8], mut each: impl FnMut(LinePiece<'_>)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let (segment, after) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            if !self.skipping {
                if self.pending.is_empty() && after.is_some() {
                    self.hand_over(segment, &mut each);
                } else if self.pending.len() + segment.len() > self.max_line_bytes.saturating_add(1)
                {
                    // Certainly over the limit whatever follows (one trailing '\r' is allowed
                    // beyond it): report now instead of buffering further.
                    self.skipping = true;
                    self.pending.clear();
                    each(LinePiece::TooLong);
                } else {
                    self.pending.extend_from_slice(segment);
                    if after.is_some() {
                        let line = std::mem::take(&mut self.pending);
                        self.hand_over(&line, &mut each);
                        // Keep the allocation for the next line.
                        self.pending = line;
                        self.pending.clear();
                    }
                }
            }
            let Some(after) = after else { break };
            self.skipping = false;
            rest = after;
        }
    }

    /// Ends the stream: hands over a last line that had no `'\n'`.
    pub fn finish(&mut self, mut each: impl FnMut(LinePiece<'_>)) {
        if std::mem::take(&mut self.skipping) || self.pending.is_empty() {
            self.pending.clear();
            return;
        }
        let line = std::mem::take(&mut self.pending);
        self.hand_over(&line, &mut each);
    }

    fn hand_over(&self, line: &[u8], each: &mut impl FnMut(LinePiece<'_>)) {
        let content = line.strip_suffix(b"\r").unwrap_or(line);
        if content.len() > self.max_line_bytes {
            each(LinePiece::TooLong);
        } else {
            each(LinePiece::Line(content));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(chunks: &[&[u8]], max: usize) -> Vec<Option<Vec<u8>>> {
        let mut splitter = LineSplitter::new(max);
        let mut out = Vec::new();
        let mut keep = |piece: LinePiece<'_>| {
            out.push(match piece {
                LinePiece::Line(line) => Some(line.to_vec()),
                LinePiece::TooLong => None,
            })
        };
        for chunk in chunks {
            splitter.feed(chunk, &mut keep);
        }
        splitter.finish(&mut keep);
        out
    }

    #[test]
    fn lines_for_any_chunking() {
        let text = b"one\r\ntwo\n\nthree";
        let whole = split_all(&[text], 100);
        let expected: Vec<Option<Vec<u8>>> = [&b"one"[..], b"two", b"", b"three"]
            .iter()
            .map(|l| Some(l.to_vec()))
            .collect();
        assert_eq!(whole, expected);
        for cut in 0..text.len() {
            let (a, b) = text.split_at(cut);
            assert_eq!(split_all(&[a, b], 100), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(split_all(&bytes, 100), whole);
    }

    #[test]
    fn too_long_lines_are_reported_once_and_skipped() {
        let text = b"short\nwaytoolongline\nok\n";
        let whole = split_all(&[text], 5);
        assert_eq!(
            whole,
            vec![Some(b"short".to_vec()), None, Some(b"ok".to_vec())]
        );
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(split_all(&bytes, 5), whole);
        assert_eq!(split_all(&[b"abcdefgh"], 5), vec![None]);
        // The limit counts the line without its '\r'.
        assert_eq!(split_all(&[b"abcde\r\n"], 5), vec![Some(b"abcde".to_vec())]);
        assert_eq!(split_all(&[b"abcdef\n"], 5), vec![None]);
    }
}
