//! Starting a run or a discussion while the server is busy, restarting or not up yet: the
//! start's requests are sent again, with growing pauses and jitter (at least as long as the
//! server asked for), for a bounded time (to the next replica of a list after one gave no
//! answer, as the client does), with one line on stderr saying so.
//!
//! Every request of a start may be sent twice: the reads read, and the creates carry a start
//! key (`Idempotency-Key`) that the server stores under a UNIQUE key, so a create sent again
//! after its answer was lost returns what the first one created. Hence any answer that may
//! change by asking again is retried, a 500 included (the reporter retries the same).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use wujie_client::{ClientError, retry_pause};

use crate::error::LocalRunError;

/// A key for one start (`Idempotency-Key`): every request of that start sends it, and no other
/// start does.
pub fn new_start_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// How long a start keeps trying before it gives up.
pub const START_PATIENCE: Duration = Duration::from_secs(60);
const FIRST_PAUSE: Duration = Duration::from_millis(250);
const LONGEST_PAUSE: Duration = Duration::from_secs(4);

/// The retries of one start: one deadline for all of its requests.
#[derive(Debug)]
pub struct StartRetry {
    patience: Duration,
    deadline: Instant,
    pause: Duration,
    /// Whether the line on stderr was printed (once per start).
    told: bool,
}

impl StartRetry {
    pub fn new(patience: Duration) -> StartRetry {
        StartRetry {
            patience,
            deadline: Instant::now() + patience,
            pause: FIRST_PAUSE,
            told: false,
        }
    }

    /// `request` until it succeeds, fails for good, or the patience is spent; `doing` names
    /// the request in the error.
    pub async fn call<T, F, Fut>(&mut self, doing: &str, mut request: F) -> Result<T, LocalRunError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        loop {
            let e = match request().await {
                Ok(answer) => return Ok(answer),
                Err(e) => e,
            };
            let left = self.deadline.saturating_duration_since(Instant::now());
            if !e.is_retryable() || left.is_zero() {
                let doing = if self.told {
                    format!(
                        "{doing}: the server was still unavailable after {} s of retrying",
                        self.patience.as_secs()
                    )
                } else {
                    doing.to_owned()
                };
                return Err(LocalRunError::Server { doing, source: e });
            }
            if !self.told {
                self.told = true;
                wujie_process::stderr_line!(
                    "wujie: {}; retrying for up to {} s",
                    unavailable(&e),
                    self.patience.as_secs()
                );
            }
            tokio::time::sleep(retry_pause(self.pause, Some(&e)).min(left)).await;
            self.pause = (self.pause * 2).min(LONGEST_PAUSE);
        }
    }
}

/// What a retryable failure says about the server, briefly.
fn unavailable(e: &ClientError) -> String {
    match e {
        ClientError::Network { timeout: true, .. } => "the server does not answer".into(),
        ClientError::Network { .. } => "the server cannot be reached".into(),
        ClientError::Status { status, .. } if status.as_u16() == 503 || status.as_u16() == 429 => {
            "the server is busy".into()
        }
        ClientError::Status { .. } => "the server failed".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wujie_client::{Client, Token};

    /// A loopback port nothing listens on (bound, then released).
    fn closed_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port")
    }

    #[tokio::test]
    async fn a_server_that_never_comes_gives_a_clear_error_once_the_patience_is_spent() {
        let client = Client::new(
            &format!("http://127.0.0.1:{}", closed_port()),
            Token::new("wjt_x"),
        )
        .expect("client");
        let mut retry = StartRetry::new(Duration::from_secs(1));
        let mut attempts = 0;
        let e = retry
            .call("cannot read the workspace", || {
                attempts += 1;
                client.workspace()
            })
            .await
            .expect_err("nothing listens");
        assert!(attempts > 1, "retried: {attempts} attempts");
        let shown = e.to_string();
        assert!(
            shown.contains("cannot read the workspace")
                && shown.contains("still unavailable after 1 s of retrying"),
            "{shown}"
        );
        assert!(matches!(
            e,
            LocalRunError::Server {
                source: ClientError::Network { .. },
                ..
            }
        ));
    }

    #[tokio::test]
    async fn an_answer_that_will_not_change_is_not_retried() {
        let mut attempts = 0;
        let mut retry = StartRetry::new(Duration::from_secs(30));
        let e = retry
            .call("cannot read issue WUJ-9", || {
                attempts += 1;
                async {
                    Err::<(), _>(ClientError::Status {
                        method: wujie_client::Method::GET,
                        path: "/issues/WUJ-9".into(),
                        status: wujie_client::StatusCode::NOT_FOUND,
                        message: "issue WUJ-9 not found".into(),
                        retry_after: None,
                    })
                }
            })
            .await;
        assert_eq!(attempts, 1);
        assert_eq!(e.expect_err("404").to_string(), "cannot read issue WUJ-9");
    }

    /// A loopback HTTP server that answers its first request 503 with `Retry-After: 2` and
    /// the next one with a workspace; it reports when each request arrived.
    async fn busy_once_server() -> (String, tokio::sync::mpsc::UnboundedReceiver<Instant>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let (arrived, arrivals) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            for answer in 0.. {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let mut request = vec![0; 4096];
                let _ = socket.read(&mut request).await;
                let _ = arrived.send(Instant::now());
                let (head, body) = if answer == 0 {
                    (
                        "503 Service Unavailable\r\nRetry-After: 2",
                        r#"{"error":"the database is busy; retry in a moment (nothing was done)"}"#,
                    )
                } else {
                    ("200 OK", r#"{"id":"w","name":"Wujie","key_prefix":"WUJ"}"#)
                };
                let response = format!(
                    "HTTP/1.1 {head}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            }
        });
        (url, arrivals)
    }

    #[tokio::test]
    async fn a_busy_server_is_asked_again_no_sooner_than_its_retry_after() {
        let (url, mut arrivals) = busy_once_server().await;
        let client = Client::new(&url, Token::new("wjt_x")).expect("client");
        let workspace = StartRetry::new(Duration::from_secs(30))
            .call("cannot read the workspace", || client.workspace())
            .await
            .expect("the second answer");
        assert_eq!(workspace.key_prefix, "WUJ");
        let first = arrivals.recv().await.expect("first request");
        let second = arrivals.recv().await.expect("second request");
        let waited = second - first;
        assert!(
            waited >= Duration::from_secs(2),
            "asked again after {waited:?}, though the server said 2 s"
        );
    }
}
