//! LineDecoder throughput on 100,000 typical adapter events, fed in 64 KiB pipe-sized chunks.
//! Reports MB/s (`bytes`) and events/s (`events`) for the same work:
//! `cargo bench -p wujie-protocol --bench decode`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use wujie_protocol::event::{DEFAULT_MAX_LINE_BYTES, LineDecoder};

const EVENTS: usize = 100_000;
const PIPE_CHUNK: usize = 64 * 1024;

/// A stream shaped like a real turn-by-turn session: prompt, thinking, tool calls and results,
/// a reply and usage, with contents of a few hundred bytes.
fn typical_stream() -> (Vec<u8>, usize) {
    let prose = "The build failed because the linker could not find `libssl`; installing the \
                 development package and re-running the tests fixes it. 继续检查剩余的测试。";
    let mut out = String::new();
    let mut events = 0;
    let mut turn = 0;
    while events < EVENTS {
        turn += 1;
        let key = format!("session:4f1c:turn:{turn}");
        let lines = [
            format!(r#"{{"type":"user_input","content":"please fix the failing build (turn {turn})","source":"fake-provider","source_key":"{key}:user"}}"#),
            format!(r#"{{"type":"thinking","content":"{prose}","source":"fake-provider","source_key":"{key}:thinking"}}"#),
            format!(r#"{{"type":"tool_use","tool":"exec_command","input":{{"command":"cargo test --workspace","cwd":"/home/me/project","timeout_ms":120000}},"source":"fake-provider","source_key":"{key}:tool:call-{turn}:use"}}"#),
            format!(r#"{{"type":"tool_result","tool":"exec_command","output":"running 42 tests\ntest result: ok. 42 passed; 0 failed\n{prose}","source":"fake-provider","source_key":"{key}:tool:call-{turn}:result"}}"#),
            format!(r#"{{"type":"text","content":"{prose}","source":"fake-provider","source_key":"{key}:text"}}"#),
            format!(r#"{{"type":"final","content":"{prose}","source":"fake-provider","source_key":"{key}:final"}}"#),
            r#"{"usage":{"provider":"fake-provider","model":"fake-model","input_tokens":1234,"output_tokens":567,"cache_read_tokens":890,"cache_write_tokens":0}}"#.to_owned(),
        ];
        for line in lines.iter().take(EVENTS - events) {
            out.push_str(line);
            out.push('\n');
            events += 1;
        }
    }
    (out.into_bytes(), events)
}

fn decode(stream: &[u8]) -> usize {
    let mut decoder = LineDecoder::new(DEFAULT_MAX_LINE_BYTES);
    let mut events = 0;
    for chunk in stream.chunks(PIPE_CHUNK) {
        for line in decoder.feed(chunk) {
            events += line.map(|l| l.events.len()).unwrap_or(0);
        }
    }
    events
        + decoder
            .finish()
            .map_or(0, |l| l.map(|l| l.events.len()).unwrap_or(0))
}

fn bench_decode(c: &mut Criterion) {
    let (stream, events) = typical_stream();
    assert_eq!(
        decode(&stream),
        events,
        "every line of the stream must decode"
    );
    let mut group = c.benchmark_group("line_decoder_100k_events");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("bytes", |b| b.iter(|| decode(black_box(&stream))));
    group.throughput(Throughput::Elements(events as u64));
    group.bench_function("events", |b| b.iter(|| decode(black_box(&stream))));
    group.finish();
}

criterion_group!(benches, bench_decode);
criterion_main!(benches);
