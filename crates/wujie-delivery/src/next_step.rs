//! What the deliverer does after each request it made, decided from the server's answer: the
//! one place where retrying, shrinking a batch and refusing rows are decided.

use wujie_client::ClientError;

/// The request an answer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// A batch of `rows` outbox rows.
    Batch { rows: usize },
    /// A run's end.
    Finish,
}

/// What follows a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// The server answered: settle what it answered for (rows it stored or refused one by one
    /// are settled; rows an answer too short left out stay pending and are sent again).
    Settle,
    /// Send the same again after a backoff: there was no answer (network, timeout) or the
    /// server could not take it now (5xx, 429).
    Retry,
    /// The server refused the batch as a whole (too large, or one row spoils it): send the
    /// oldest `rows` of it, half, so that halving isolates the row at fault and one bad row
    /// never takes the others with it.
    Shrink { rows: usize },
    /// A lone row refused as a whole and for good (the run no longer exists, …): keep it in
    /// the outbox marked with the server's reason.
    Refuse,
    /// A run's end refused for good (the run was finished elsewhere): stop sending it.
    GiveUp,
}

impl NextStep {
    pub fn after<T>(request: Request, answer: &Result<T, ClientError>) -> NextStep {
        match (answer, request) {
            (Ok(_), _) => NextStep::Settle,
            (Err(e), _) if e.is_retryable() => NextStep::Retry,
            (Err(_), Request::Batch { rows }) if rows > 1 => NextStep::Shrink { rows: rows / 2 },
            (Err(_), Request::Batch { .. }) => NextStep::Refuse,
            (Err(_), Request::Finish) => NextStep::GiveUp,
        }
    }

    /// Whether the batch read while this one was in flight (the rows after it) is sent next:
    /// only when the server answered for every row sent, and the previous batch's settlement
    /// reached the outbox; otherwise the next batch is read afresh from the oldest pending row.
    pub fn prefetched_batch_follows(self, answered_every_row: bool, outbox_settled: bool) -> bool {
        self == NextStep::Settle && answered_every_row && outbox_settled
    }
}

#[cfg(test)]
mod tests {
    use wujie_client::{Method, StatusCode};

    use super::*;

    fn status(status: StatusCode) -> Result<(), ClientError> {
        Err(ClientError::Status {
            method: Method::POST,
            path: "/runs/r/events".into(),
            status,
            message: "no".into(),
            retry_after: None,
        })
    }

    fn batch(rows: usize) -> Request {
        Request::Batch { rows }
    }

    #[test]
    fn no_answer_or_a_busy_server_is_retried_whatever_was_sent() {
        let network: Result<(), ClientError> = Err(ClientError::Network {
            method: Method::POST,
            path: "/runs/r/events".into(),
            message: "reset".into(),
            timeout: true,
        });
        for request in [batch(1), batch(7), Request::Finish] {
            assert_eq!(NextStep::after(request, &network), NextStep::Retry);
            for code in [500, 502, 503, 504, 429] {
                let code = StatusCode::from_u16(code).unwrap();
                assert_eq!(NextStep::after(request, &status(code)), NextStep::Retry);
            }
        }
    }

    #[test]
    fn a_refused_batch_is_halved_down_to_one_row_which_is_then_refused() {
        for code in [400, 404, 409, 413, 422] {
            let answer = status(StatusCode::from_u16(code).unwrap());
            assert_eq!(
                NextStep::after(batch(1000), &answer),
                NextStep::Shrink { rows: 500 }
            );
            assert_eq!(
                NextStep::after(batch(3), &answer),
                NextStep::Shrink { rows: 1 }
            );
            assert_eq!(
                NextStep::after(batch(2), &answer),
                NextStep::Shrink { rows: 1 }
            );
            assert_eq!(NextStep::after(batch(1), &answer), NextStep::Refuse);
            assert_eq!(NextStep::after(Request::Finish, &answer), NextStep::GiveUp);
        }
    }

    #[test]
    fn an_answer_is_settled_and_only_a_complete_one_lets_the_prefetched_batch_follow() {
        let settle = NextStep::after(batch(10), &Ok(()));
        assert_eq!(settle, NextStep::Settle);
        assert!(settle.prefetched_batch_follows(true, true));
        assert!(!settle.prefetched_batch_follows(false, true));
        assert!(!settle.prefetched_batch_follows(true, false));
        for other in [
            NextStep::Retry,
            NextStep::Shrink { rows: 1 },
            NextStep::Refuse,
        ] {
            assert!(!other.prefetched_batch_follows(true, true));
        }
    }
}
