//! The servers a client may send a request to: one server, or several replicas of one team
//! server (one database behind them all), named as a comma-separated list of URLs. Requests go
//! to one replica until it stops answering; then to the next, in the order given.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::ClientError;

#[derive(Debug)]
pub(crate) struct Replicas {
    urls: Vec<String>,
    /// The index in `urls` of the replica requests go to.
    current: AtomicUsize,
}

impl Replicas {
    /// `http://a:7878` or `http://a:7878,http://b:7878`; each must be an http(s) URL.
    pub(crate) fn parse(list: &str) -> Result<Replicas, ClientError> {
        let invalid = |reason: String| ClientError::InvalidUrl {
            url: list.to_owned(),
            reason,
        };
        let mut urls = Vec::new();
        for url in list.split(',').map(str::trim) {
            if url.is_empty() {
                return Err(invalid(
                    "an empty server URL; separate several replicas' URLs with single commas"
                        .into(),
                ));
            }
            let url = url.trim_end_matches('/').to_owned();
            let parsed = reqwest::Url::parse(&url).map_err(|e| invalid(format!("{url}: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(invalid(format!("{url}: the scheme must be http or https")));
            }
            urls.push(url);
        }
        Ok(Replicas {
            urls,
            current: AtomicUsize::new(0),
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.urls.len()
    }

    /// The index of the replica to try first.
    pub(crate) fn current(&self) -> usize {
        self.current.load(Ordering::Relaxed)
    }

    /// Every replica, comma-separated, in the order to try them now: the one requests go to
    /// first, then the others in the order of the list.
    pub(crate) fn in_order(&self) -> String {
        let first = self.current();
        (0..self.urls.len())
            .map(|i| self.url(first + i))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub(crate) fn url(&self, index: usize) -> &str {
        &self.urls[index % self.urls.len()]
    }

    /// The replica at `index` answered: later requests go there too.
    pub(crate) fn answered(&self, index: usize) {
        self.current
            .store(index % self.urls.len(), Ordering::Relaxed);
    }

    /// The replica at `index` gave no answer to a request it may have received: the next
    /// attempt (the caller's retry) goes to the next replica. Only if no other request moved
    /// on meanwhile, so that concurrent failures skip one replica, not several.
    pub(crate) fn failed(&self, index: usize) {
        let index = index % self.urls.len();
        let next = (index + 1) % self.urls.len();
        let _ = self
            .current
            .compare_exchange(index, next, Ordering::Relaxed, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_url_or_a_list() {
        let one = Replicas::parse("http://a:1/").expect("one");
        assert_eq!((one.len(), one.url(0)), (1, "http://a:1"));
        let two = Replicas::parse("http://a:1, https://b:2").expect("two");
        assert_eq!(two.len(), 2);
        assert_eq!(two.url(1), "https://b:2");
        for bad in [
            "",
            "http://a:1,",
            "http://a:1,,http://b:2",
            "ftp://a",
            "a:1",
        ] {
            assert!(Replicas::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_failure_moves_on_once_and_an_answer_stays() {
        let r = Replicas::parse("http://a:1,http://b:2,http://c:3").expect("three");
        r.failed(0);
        // A second request that failed on the same replica does not skip b.
        r.failed(0);
        assert_eq!(r.current(), 1);
        r.failed(1);
        r.failed(2);
        assert_eq!(r.current(), 0, "wraps around");
        r.answered(2);
        assert_eq!(r.current(), 2);
        assert_eq!(r.in_order(), "http://c:3,http://a:1,http://b:2");
        assert_eq!(
            Replicas::parse("http://a:1/").expect("one").in_order(),
            "http://a:1"
        );
    }
}
