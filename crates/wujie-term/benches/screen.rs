//! Screen-model throughput on 32 MiB of adapter output (text lines, some colour, a redrawn
//! status line), fed in 64 KiB reads as the host reads its PTY; vt100 on the same bytes for
//! comparison (it used to be the host's shadow screen).
//!
//! Run: `cargo bench -p wujie-term --bench screen`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::num::NonZeroU16;
use wujie_term::{ScreenModel, TermSize};

const TOTAL: usize = 32 << 20;
const READ: usize = 64 * 1024;

fn output() -> Vec<u8> {
    let mut out = Vec::with_capacity(TOTAL + 256);
    let mut i = 0u64;
    while out.len() < TOTAL {
        out.extend_from_slice(
            format!("line {i:08} of the relay benchmark, some text to fill the row up\r\n")
                .as_bytes(),
        );
        if i.is_multiple_of(16) {
            out.extend_from_slice(b"\x1b[1;32mok\x1b[0m \xe4\xb8\xad\xe6\x96\x87 done\r\n");
        }
        if i.is_multiple_of(64) {
            out.extend_from_slice(b"\x1b7\x1b[50;1H\x1b[2Kstatus: working\x1b8");
        }
        i += 1;
    }
    out
}

fn screen(c: &mut Criterion) {
    let input = output();
    let size = TermSize {
        rows: 50,
        cols: 120,
    };
    let mut group = c.benchmark_group("screen");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.sample_size(10);
    group.bench_function("model_32MiB_64KiB_reads", |b| {
        b.iter(|| {
            let mut model = ScreenModel::new(size);
            for chunk in input.chunks(READ) {
                model.feed(black_box(chunk));
            }
            black_box((model.cursor(), model.used_rows()))
        })
    });
    group.bench_function("vt100_32MiB_64KiB_reads", |b| {
        b.iter(|| {
            let rows = NonZeroU16::new(size.rows).unwrap();
            let cols = NonZeroU16::new(size.cols).unwrap();
            let mut parser = vt100::Parser::new(rows, cols, 0);
            for chunk in input.chunks(READ) {
                parser.process(black_box(chunk));
            }
            black_box(parser.screen().cursor_position())
        })
    });
    group.finish();
}

criterion_group!(benches, screen);
criterion_main!(benches);
