//! Scanner throughput on 64 MiB of mixed terminal input, fed in 4 KiB reads.
//!
//! Run: `cargo bench -p wujie-term --bench scanner`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use wujie_term::InputScanner;

const TOTAL: usize = 64 << 20;
const READ: usize = 4096;

/// Typing (ASCII and CJK), keys, replies, strings, mouse and pastes, repeated to `TOTAL` bytes.
fn mixed_input() -> Vec<u8> {
    let pieces: &[&[u8]] = &[
        b"hello world, this is typed text ",
        "讨论一下这个问题 ".as_bytes(),
        b"\x1b[A\x1b[B\x1b[1;5C\x1bOA\x7f\r",
        b"\x1b[24;80R\x1b[?64;1;2c\x1b[?2026;2$y\x1b[0n\x1b[8;50;200t",
        b"\x1b]11;rgb:1e1e/1e1e/1e1e\x1b\\\x1bP1+r636f6c73=3830\x1b\\",
        b"\x1b[<0;12;5M\x1b[<0;12;5m\x1b[I\x1b[O",
        b"\x1b[200~pasted line one\nline two with \x1b[31m escapes\n\x1b[201~",
    ];
    let mut input = Vec::with_capacity(TOTAL);
    let mut i = 0;
    while input.len() < TOTAL {
        input.extend_from_slice(pieces[i % pieces.len()]);
        i += 1;
    }
    // A large paste makes up part of real traffic too.
    input.extend_from_slice(b"\x1b[200~");
    input.extend(std::iter::repeat_n(b'x', 1 << 20));
    input.extend_from_slice(b"\x1b[201~");
    input
}

fn scan(c: &mut Criterion) {
    let input = mixed_input();
    let mut group = c.benchmark_group("scanner");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.sample_size(10);
    group.bench_function("mixed_64MiB_4KiB_reads", |b| {
        b.iter(|| {
            let mut scanner = InputScanner::new();
            let mut events = Vec::new();
            let mut count = 0usize;
            for chunk in input.chunks(READ) {
                events.clear();
                scanner.feed_into(black_box(chunk), &mut events);
                count += events.len();
            }
            black_box(count)
        })
    });
    group.finish();
}

criterion_group!(benches, scan);
criterion_main!(benches);
