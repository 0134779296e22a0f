//! Jobs: queued on an issue, claimed by workers under a lease, claimed again when the lease
//! runs out, ended once.

use std::collections::HashSet;
use std::time::Duration;

use wujie_protocol::api::{CreateIssue, CreateRun, IssueDetail, RunStatus};
use wujie_protocol::jobs::{
    ClaimJob, CreateJob, FinishJob, JobAttempt, JobStatus, MIN_LEASE_SECS, RenewLease,
};
use wujie_store::{JobFilter, Store, StoreError};

use super::common::TestStore;

async fn issue(store: &Store, title: &str, description: &str) -> IssueDetail {
    store
        .create_issue(&CreateIssue {
            title: title.into(),
            description: description.into(),
            discussion_id: None,
        })
        .await
        .expect("issue")
}

fn job_of(provider: &str) -> CreateJob {
    CreateJob {
        provider: provider.into(),
        args: vec!["--model".into(), "m".into()],
        prompt: None,
        worker_label: None,
    }
}

fn claim(worker: &str, providers: &[&str], labels: &[&str], lease_secs: u32) -> ClaimJob {
    ClaimJob {
        worker: worker.into(),
        labels: labels.iter().map(|l| l.to_string()).collect(),
        providers: providers.iter().map(|p| p.to_string()).collect(),
        lease_secs,
    }
}

fn run_for(job: &JobAttempt) -> CreateRun {
    CreateRun {
        provider: "pi".into(),
        cwd: "/tmp".into(),
        job: Some(job.clone()),
    }
}

#[tokio::test]
async fn a_claim_takes_the_oldest_job_the_worker_can_run_with_the_issue_as_its_task() {
    let t = TestStore::open().await;
    let first = issue(&t.store, "Fix the parser", "It drops the last line.").await;
    let second = issue(&t.store, "Speed up start", "").await;
    let labelled = t
        .store
        .create_job(
            &first.key,
            &CreateJob {
                worker_label: Some("gpu".into()),
                ..job_of("pi")
            },
        )
        .await
        .unwrap();
    let other_agent = t
        .store
        .create_job(&first.key, &job_of("other"))
        .await
        .unwrap();
    let plain = t
        .store
        .create_job(&second.key, &job_of("pi"))
        .await
        .unwrap();
    let prompted = t
        .store
        .create_job(
            &second.key,
            &CreateJob {
                prompt: Some("only add a test".into()),
                ..job_of("pi")
            },
        )
        .await
        .unwrap();
    assert_eq!(plain.status, JobStatus::Queued);
    assert_eq!(plain.attempts, 0);

    // Without the label and for pi only: the labelled job and the other agent's are skipped.
    let got = t
        .store
        .claim_job(&claim("w1", &["pi"], &[], 60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.job.id, plain.id);
    assert_eq!(
        (got.job.status, got.attempt, got.job.attempts),
        (JobStatus::Running, 1, 1)
    );
    assert_eq!(got.job.worker.as_deref(), Some("w1"));
    assert!(got.job.lease_expires_at.is_some());
    assert_eq!(got.prompt, format!("{}: Speed up start", second.key));
    let got = t
        .store
        .claim_job(&claim("w1", &["pi"], &[], 60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.job.id, prompted.id);
    assert_eq!(got.prompt, "only add a test");
    assert!(
        t.store
            .claim_job(&claim("w1", &["pi"], &[], 60))
            .await
            .unwrap()
            .is_none()
    );

    let got = t
        .store
        .claim_job(&claim("w2", &["pi"], &["gpu"], 60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.job.id, labelled.id);
    assert_eq!(
        got.prompt,
        format!("{}: Fix the parser\n\nIt drops the last line.", first.key)
    );
    let got = t
        .store
        .claim_job(&claim("w3", &["other"], &[], 60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.job.id, other_agent.id);
    assert_eq!(got.job.args, ["--model", "m"]);
}

#[tokio::test]
async fn concurrent_claims_from_two_servers_never_take_one_job_twice() {
    let t = TestStore::open().await;
    let other = TestStore::connect(&t.database).await;
    let issue = issue(&t.store, "Many jobs", "").await;
    let mut queued = HashSet::new();
    for _ in 0..24 {
        queued.insert(
            t.store
                .create_job(&issue.key, &job_of("pi"))
                .await
                .unwrap()
                .id,
        );
    }
    let mut claimers = tokio::task::JoinSet::new();
    for n in 0..8 {
        let store = if n % 2 == 0 {
            t.store.clone()
        } else {
            other.clone()
        };
        claimers.spawn(async move {
            let mut mine = Vec::new();
            while let Some(got) = store
                .claim_job(&claim(&format!("w{n}"), &["pi"], &[], 60))
                .await
                .expect("claim")
            {
                mine.push(got.job.id);
            }
            mine
        });
    }
    let mut claimed = Vec::new();
    while let Some(mine) = claimers.join_next().await {
        claimed.extend(mine.unwrap());
    }
    let distinct: HashSet<_> = claimed.iter().cloned().collect();
    assert_eq!(claimed.len(), 24, "every job claimed once: {claimed:?}");
    assert_eq!(distinct, queued);
}

#[tokio::test]
async fn a_job_whose_lease_ran_out_is_claimed_again_and_the_lost_attempt_can_change_nothing() {
    let t = TestStore::open().await;
    let issue = issue(&t.store, "Interrupted", "").await;
    let job = t.store.create_job(&issue.key, &job_of("pi")).await.unwrap();
    let first = t
        .store
        .claim_job(&claim("dies", &["pi"], &[], MIN_LEASE_SECS))
        .await
        .unwrap()
        .unwrap();
    let first_attempt = JobAttempt {
        job_id: job.id.clone(),
        attempt: first.attempt,
    };
    let run = t
        .store
        .create_run(&issue.key, &run_for(&first_attempt))
        .await
        .unwrap()
        .run;
    assert_eq!(
        t.store.job(&job.id).await.unwrap().run_id.as_deref(),
        Some(run.id.as_str())
    );
    // Held while the lease lasts.
    assert!(
        t.store
            .claim_job(&claim("w2", &["pi"], &[], 60))
            .await
            .unwrap()
            .is_none()
    );

    tokio::time::sleep(Duration::from_secs(u64::from(MIN_LEASE_SECS)) + Duration::from_millis(300))
        .await;
    let second = t
        .store
        .claim_job(&claim("w2", &["pi"], &[], 60))
        .await
        .unwrap()
        .expect("claimed again once the lease ran out");
    assert_eq!(
        (second.job.id.as_str(), second.attempt),
        (job.id.as_str(), 2)
    );
    assert_eq!(second.job.worker.as_deref(), Some("w2"));
    assert_eq!(second.job.run_id, None);
    // The interrupted attempt's run failed for good: its reporter died with the worker.
    let failed = t.store.run(&run.id).await.unwrap();
    assert_eq!(failed.status, RunStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some(wujie_store::REPORTER_STOPPED));
    assert_eq!(failed.failure_kind, None);

    // The first attempt, back from the dead, can renew, start, end or give back nothing.
    let renew = RenewLease {
        attempt: 1,
        lease_secs: 60,
    };
    let refused = t.store.renew_job_lease(&job.id, &renew).await.unwrap_err();
    assert!(
        matches!(&refused, StoreError::Conflict(m) if m.contains("attempt 1") && m.contains("attempt 2 runs it now on w2")),
        "{refused}"
    );
    let refused = t
        .store
        .create_run(&issue.key, &run_for(&first_attempt))
        .await
        .unwrap_err();
    assert!(matches!(refused, StoreError::Conflict(_)), "{refused}");
    let finish = FinishJob {
        attempt: 1,
        status: JobStatus::Succeeded,
        error: None,
    };
    assert!(matches!(
        t.store.finish_job(&job.id, &finish).await.unwrap_err(),
        StoreError::Conflict(_)
    ));
    assert!(matches!(
        t.store.release_job(&job.id, 1).await.unwrap_err(),
        StoreError::Conflict(_)
    ));

    // The second attempt ends it, once; the same end sent again is answered the same.
    let finish = FinishJob {
        attempt: 2,
        status: JobStatus::Succeeded,
        error: None,
    };
    let ended = t.store.finish_job(&job.id, &finish).await.unwrap();
    assert_eq!((ended.status, ended.attempts), (JobStatus::Succeeded, 2));
    assert_eq!(ended.lease_expires_at, None);
    assert_eq!(t.store.finish_job(&job.id, &finish).await.unwrap(), ended);
    let other_end = FinishJob {
        status: JobStatus::Failed,
        ..finish
    };
    assert!(matches!(
        t.store.finish_job(&job.id, &other_end).await.unwrap_err(),
        StoreError::Conflict(_)
    ));
    assert!(
        t.store
            .claim_job(&claim("w3", &["pi"], &[], 60))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_job_given_back_waits_again_and_a_rerun_is_a_new_job_asked_the_same() {
    let t = TestStore::open().await;
    let issue = issue(&t.store, "Give back", "").await;
    let job = t
        .store
        .create_job(
            &issue.key,
            &CreateJob {
                prompt: Some("do it".into()),
                worker_label: Some("box".into()),
                ..job_of("pi")
            },
        )
        .await
        .unwrap();
    let got = t
        .store
        .claim_job(&claim("w1", &["pi"], &["box"], 60))
        .await
        .unwrap()
        .unwrap();
    let back = t.store.release_job(&job.id, got.attempt).await.unwrap();
    assert_eq!(
        (back.status, back.lease_expires_at.as_deref()),
        (JobStatus::Queued, None)
    );
    let again = t
        .store
        .claim_job(&claim("w2", &["pi"], &["box"], 60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((again.job.id.as_str(), again.attempt), (job.id.as_str(), 2));

    let rerun = t.store.rerun_job(&job.id).await.unwrap();
    assert_ne!(rerun.id, job.id);
    assert_eq!(rerun.rerun_of.as_deref(), Some(job.id.as_str()));
    assert_eq!((rerun.status, rerun.attempts), (JobStatus::Queued, 0));
    assert_eq!(
        (
            rerun.provider.as_str(),
            rerun.prompt.as_deref(),
            rerun.worker_label.as_deref()
        ),
        ("pi", Some("do it"), Some("box"))
    );
    assert_eq!(rerun.args, job.args);

    let listed = t
        .store
        .jobs(&JobFilter {
            issue: Some(issue.key.to_lowercase()),
            statuses: vec![JobStatus::Queued],
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(
        listed.iter().map(|j| &j.id).collect::<Vec<_>>(),
        [&rerun.id]
    );
    let all = t
        .store
        .jobs(&JobFilter {
            issue: None,
            statuses: Vec::new(),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 2);
}

fn refused<T>(result: Result<T, StoreError>) -> String {
    match result {
        Err(StoreError::Invalid(m)) => m,
        Err(other) => panic!("not refused as invalid: {other}"),
        Ok(_) => panic!("accepted"),
    }
}

#[tokio::test]
async fn bad_jobs_claims_and_leases_are_refused_with_what_is_allowed() {
    let t = TestStore::open().await;
    let issue = issue(&t.store, "Bad input", "").await;
    let m = refused(t.store.create_job(&issue.key, &job_of(" ")).await);
    assert!(m.contains("provider"), "{m}");
    let m = refused(
        t.store
            .create_job(
                &issue.key,
                &CreateJob {
                    prompt: Some("  ".into()),
                    ..job_of("pi")
                },
            )
            .await,
    );
    assert!(m.contains("prompt is empty"), "{m}");
    let m = refused(t.store.claim_job(&claim("w", &["pi"], &[], 1)).await);
    assert!(m.contains("3 to 3600 seconds"), "{m}");
    let m = refused(t.store.claim_job(&claim("w", &[], &[], 60)).await);
    assert!(m.contains("no provider"), "{m}");
    assert!(matches!(
        t.store
            .create_job("WUJ-999", &job_of("pi"))
            .await
            .unwrap_err(),
        StoreError::NotFound(_)
    ));
    assert!(matches!(
        t.store.job("nope").await.unwrap_err(),
        StoreError::NotFound(_)
    ));
    // A NUL in a prompt is kept, on both backends.
    let nul = t
        .store
        .create_job(
            &issue.key,
            &CreateJob {
                prompt: Some("a\0b".into()),
                ..job_of("pi")
            },
        )
        .await
        .unwrap();
    assert_eq!(nul.prompt.as_deref(), Some("a\0b"));
}

#[tokio::test]
async fn a_queued_job_is_cancelled_before_any_worker_takes_it_and_a_running_one_is_not() {
    let t = TestStore::open().await;
    let issue = issue(&t.store, "Changed my mind", "").await;
    let waiting = t.store.create_job(&issue.key, &job_of("pi")).await.unwrap();
    let running = t.store.create_job(&issue.key, &job_of("pi")).await.unwrap();
    // The older one is taken first: cancel the younger, still queued.
    let got = t
        .store
        .claim_job(&claim("w", &["pi"], &[], 60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.job.id, waiting.id);
    let cancelled = t.store.cancel_job(&running.id).await.unwrap();
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(
        cancelled.error.as_deref(),
        Some("cancelled before a worker took it")
    );
    assert!(
        t.store
            .claim_job(&claim("w", &["pi"], &[], 60))
            .await
            .unwrap()
            .is_none()
    );
    let again = t.store.cancel_job(&running.id).await.unwrap_err();
    assert!(
        matches!(&again, StoreError::Conflict(m) if m.contains("already ended as cancelled")),
        "{again}"
    );
    let busy = t.store.cancel_job(&waiting.id).await.unwrap_err();
    assert!(
        matches!(&busy, StoreError::Conflict(m) if m.contains("is running on w") && m.contains("cancel its run")),
        "{busy}"
    );
}
