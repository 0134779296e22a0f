//! Spool marks in the outbox: each commit of lines moves its spool's mark (and its target) in
//! the same transaction, and a target a spool still holds lines for is not forgotten.

use super::common::outbox_with_run_1;
use wujie_store::outbox::{NewTarget, SpoolMark, TargetKind};

fn mark(offset: u64, lines: u64) -> SpoolMark {
    SpoolMark {
        spool: "spool-1".to_owned(),
        offset,
        lines,
    }
}

#[tokio::test]
async fn a_commit_of_lines_moves_the_mark_of_their_spool() {
    let dir = tempfile::tempdir().unwrap();
    let (outbox, _owner) = outbox_with_run_1(&dir.path().join("outbox.db")).await;
    outbox.add_spool("spool-1", "run-1").await.unwrap();
    let state = &outbox.spools_of("run-1").await.unwrap()[0];
    assert_eq!(
        (&state.mark, state.target_id.as_str()),
        (&mark(0, 0), "run-1")
    );
    assert!(outbox.targets().await.unwrap()[0].spooled);

    let rows = vec![("{\"n\":0}".to_owned(), 0), ("{\"n\":1}".to_owned(), 0)];
    outbox
        .append_spooled("run-1", &rows, Some(&mark(120, 3)))
        .await
        .unwrap();
    assert_eq!(outbox.pending("run-1", 10).await.unwrap().len(), 2);
    assert_eq!(
        outbox.spools_of("run-1").await.unwrap()[0].mark,
        mark(120, 3)
    );
    // A plain append leaves the mark where it was.
    outbox.append("run-1", &rows).await.unwrap();
    assert_eq!(
        outbox.spools_of("run-1").await.unwrap()[0].mark,
        mark(120, 3)
    );

    // With no rows, the mark moves alone, and the lines after it go to another target.
    let _run_2 = outbox
        .add_target(&NewTarget {
            id: "run-2",
            kind: TargetKind::Run,
            server_url: "local",
            label: "WUJ-2",
            reporter_pid: std::process::id(),
        })
        .await
        .unwrap();
    outbox
        .append_spooled("run-2", &[], Some(&mark(130, 4)))
        .await
        .unwrap();
    assert!(outbox.spools_of("run-1").await.unwrap().is_empty());
    let moved = &outbox.spools_of("run-2").await.unwrap()[0];
    assert_eq!(
        (&moved.mark, moved.target_id.as_str()),
        (&mark(130, 4), "run-2")
    );
    assert_eq!(outbox.pending("run-2", 10).await.unwrap().len(), 0);

    // A target a spool holds lines for stays, delivered or not, until the spool ended.
    outbox.finish_delivered("run-2").await.unwrap();
    assert!(outbox.target("run-2").await.unwrap().is_some());
    outbox.end_spool("spool-1").await.unwrap();
    assert!(outbox.spools().await.unwrap().is_empty());
    assert!(!outbox.target("run-2").await.unwrap().unwrap().spooled);
    outbox.finish_delivered("run-2").await.unwrap();
    assert!(outbox.target("run-2").await.unwrap().is_none());
}
