//! The reporter's outbox on a real SQLite file: order, batches that follow one in flight,
//! settling, refused rows, and appends racing deletes.

use wujie_store::outbox::{NewTarget, Outbox, TargetKind};

async fn outbox_with_target(dir: &tempfile::TempDir, id: &str) -> Outbox {
    let outbox = Outbox::open(&dir.path().join("outbox.db")).await.unwrap();
    outbox
        .add_target(&NewTarget {
            id,
            kind: TargetKind::Run,
            server_url: "http://127.0.0.1:1",
            label: "WUJ-1",
            reporter_pid: std::process::id(),
        })
        .await
        .unwrap();
    outbox
}

fn items(from: usize, to: usize) -> Vec<(String, i64)> {
    (from..to)
        .map(|i| (format!("{{\"n\":{i}}}"), i as i64))
        .collect()
}

fn numbers(rows: &[wujie_store::outbox::OutboxRow]) -> Vec<i64> {
    rows.iter().map(|r| r.read_at_ms).collect()
}

#[tokio::test]
async fn appended_rows_come_back_in_order_across_insert_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = outbox_with_target(&dir, "run-1").await;
    // More rows than one INSERT statement carries, in two appends.
    outbox.append("run-1", &items(0, 1_234)).await.unwrap();
    outbox.append("run-1", &items(1_234, 1_300)).await.unwrap();

    let first = outbox.pending("run-1", 1_000).await.unwrap();
    assert_eq!(numbers(&first), (0..1_000).collect::<Vec<_>>());
    assert_eq!(first[7].item_json, "{\"n\":7}");

    // The batch after one still in flight starts right after its last row.
    let last = first.last().unwrap().seq;
    let next = outbox
        .pending_after("run-1", last, 1_000, usize::MAX)
        .await
        .unwrap();
    assert_eq!(numbers(&next), (1_000..1_300).collect::<Vec<_>>());

    // Settling the first batch leaves exactly the second pending.
    let seqs: Vec<i64> = first.iter().map(|r| r.seq).collect();
    outbox.settle(&seqs, &[]).await.unwrap();
    let left = outbox.pending("run-1", 10_000).await.unwrap();
    assert_eq!(numbers(&left), (1_000..1_300).collect::<Vec<_>>());
    let state = &outbox.targets().await.unwrap()[0];
    assert_eq!((state.pending, state.failed), (300, 0));
}

#[tokio::test]
async fn refused_rows_are_kept_apart_with_their_reason_until_retried() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = outbox_with_target(&dir, "run-1").await;
    outbox.append("run-1", &items(0, 10)).await.unwrap();
    let rows = outbox.pending("run-1", 10).await.unwrap();
    let delivered: Vec<i64> = rows
        .iter()
        .filter(|r| r.read_at_ms != 4)
        .map(|r| r.seq)
        .collect();
    let refused = vec![(rows[4].seq, "event too large".to_owned())];
    outbox.settle(&delivered, &refused).await.unwrap();

    assert!(outbox.pending("run-1", 10).await.unwrap().is_empty());
    assert!(
        outbox
            .pending_after("run-1", 0, 10, usize::MAX)
            .await
            .unwrap()
            .is_empty()
    );
    let failed = outbox.failed("run-1").await.unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].item_json, "{\"n\":4}");
    assert_eq!(failed[0].reason, "event too large");

    assert_eq!(outbox.retry_failed("run-1").await.unwrap(), 1);
    assert_eq!(
        numbers(&outbox.pending("run-1", 10).await.unwrap()),
        vec![4]
    );
}

#[tokio::test]
async fn appends_and_settles_running_together_lose_and_keep_nothing_extra() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = outbox_with_target(&dir, "run-1").await;
    const BATCHES: usize = 40;
    const PER_BATCH: usize = 250;
    let writer = {
        let outbox = outbox.clone();
        tokio::spawn(async move {
            for b in 0..BATCHES {
                let from = b * PER_BATCH;
                outbox
                    .append("run-1", &items(from, from + PER_BATCH))
                    .await
                    .unwrap();
            }
        })
    };
    // Deliver while the writer appends: every row is seen once, in order.
    let mut seen = Vec::new();
    let mut after = 0;
    while seen.len() < BATCHES * PER_BATCH {
        let rows = outbox
            .pending_after("run-1", after, 300, usize::MAX)
            .await
            .unwrap();
        if rows.is_empty() {
            tokio::task::yield_now().await;
            continue;
        }
        after = rows.last().unwrap().seq;
        let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
        outbox.settle(&seqs, &[]).await.unwrap();
        seen.extend(numbers(&rows));
    }
    writer.await.unwrap();
    assert_eq!(seen, (0..(BATCHES * PER_BATCH) as i64).collect::<Vec<_>>());
    assert!(outbox.pending("run-1", 1).await.unwrap().is_empty());
}

/// Events may be megabytes each: a read of pending rows holds no more than its byte bound past
/// its first row, whatever its row limit, and a row over the bound still comes alone.
#[tokio::test]
async fn a_read_of_pending_rows_is_bounded_in_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = outbox_with_target(&dir, "run-1").await;
    let mib = 1024 * 1024;
    let big: Vec<(String, i64)> = (0..5)
        .map(|i| (format!("{{\"n\":\"{}\"}}", "x".repeat(3 * mib)), i))
        .collect();
    outbox.append("run-1", &big).await.unwrap();

    let rows = outbox
        .pending_after("run-1", 0, 1_000, 8 * mib)
        .await
        .unwrap();
    assert_eq!(
        numbers(&rows),
        [0, 1],
        "two rows of 3 MiB fit in 8 MiB, three do not"
    );
    let rows = outbox.pending_after("run-1", 0, 1_000, mib).await.unwrap();
    assert_eq!(numbers(&rows), [0], "a row over the bound comes alone");
    let rows = outbox.pending("run-1", 1_000).await.unwrap();
    assert_eq!(
        numbers(&rows),
        [0, 1],
        "pending() is bounded by READ_MAX_BYTES"
    );
}
