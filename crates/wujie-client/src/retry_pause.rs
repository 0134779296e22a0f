//! How long to wait before sending again a request the server could not take: the caller's
//! backoff with jitter, and never less than the server asked for with `Retry-After` (a busy
//! server knows better than any client when to come back).

use std::time::Duration;

use rand::Rng;
use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::ClientError;

/// The longest `Retry-After` heeded: a server asking for more is waited on this long, so that
/// a wrong header cannot park a reporter for hours.
const LONGEST_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The pause before the next attempt after `error` (none: no answer worth reading), for a
/// caller whose backoff is now `backoff`.
pub fn retry_pause(backoff: Duration, error: Option<&ClientError>) -> Duration {
    pause_with_jitter(backoff, rand::rng().random_range(0.5..1.0), error)
}

/// `jitter` in 0.5..1: the backoff shrinks by it, and a server's `Retry-After` grows by up to
/// half, so clients told the same second do not all come back in the same instant.
fn pause_with_jitter(backoff: Duration, jitter: f64, error: Option<&ClientError>) -> Duration {
    let asked = error
        .and_then(ClientError::retry_after)
        .map(|d| d.min(LONGEST_RETRY_AFTER).mul_f64(2.0 - jitter))
        .unwrap_or_default();
    backoff.mul_f64(jitter).max(asked)
}

/// `Retry-After` in seconds, the form Wujie servers (and most proxies) send; the HTTP-date form
/// is not read, and the caller's own backoff applies then.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;
    use reqwest::{Method, StatusCode};

    use super::*;

    fn busy(retry_after: Option<Duration>) -> ClientError {
        ClientError::Status {
            method: Method::POST,
            path: "/issues/WUJ-1/runs".into(),
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "the database is busy".into(),
            retry_after,
        }
    }

    #[test]
    fn the_pause_is_never_shorter_than_the_server_asked() {
        let asked = Some(Duration::from_secs(2));
        for jitter in [0.5, 0.75, 0.999] {
            let pause = pause_with_jitter(Duration::from_millis(250), jitter, Some(&busy(asked)));
            assert!(pause >= Duration::from_secs(2), "{pause:?} at {jitter}");
            assert!(pause <= Duration::from_secs(3), "{pause:?} at {jitter}");
        }
    }

    #[test]
    fn without_retry_after_the_backoff_with_jitter_applies() {
        let backoff = Duration::from_secs(4);
        assert_eq!(
            pause_with_jitter(backoff, 0.5, Some(&busy(None))),
            Duration::from_secs(2)
        );
        assert_eq!(
            pause_with_jitter(backoff, 0.5, None),
            Duration::from_secs(2)
        );
        // A longer backoff of the caller's own wins over a shorter Retry-After.
        let short = Some(Duration::from_secs(1));
        assert_eq!(
            pause_with_jitter(backoff, 0.75, Some(&busy(short))),
            Duration::from_secs(3)
        );
    }

    #[test]
    fn a_retry_after_of_hours_is_heeded_for_a_minute_and_a_half_at_most() {
        let pause = pause_with_jitter(
            Duration::ZERO,
            0.5,
            Some(&busy(Some(Duration::from_secs(7200)))),
        );
        assert_eq!(pause, Duration::from_secs(90));
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_anything_else_is_ignored() {
        let read = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(RETRY_AFTER, HeaderValue::from_str(value).expect("header"));
            retry_after(&headers)
        };
        assert_eq!(read("1"), Some(Duration::from_secs(1)));
        assert_eq!(read(" 30 "), Some(Duration::from_secs(30)));
        assert_eq!(read("Wed, 21 Oct 2026 07:28:00 GMT"), None);
        assert_eq!(read("-1"), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }
}
