//! How an error reads as one line of text: its message, then each cause `source()` gives, each
//! once. Every place that shows an error to someone (the CLI, the server's answers, an
//! adapter's stderr, an MCP tool's result) writes it so, because our errors keep their cause as
//! `source()` rather than in their message (wujie-tidy's `causes` rule).

use std::error::Error;

/// `error` and its causes, joined by ": ". A cause that the text shown before it already ends
/// with is left out: some libraries' errors write their cause into their own message and
/// return it from `source()` as well (sqlx's "error returned from database: {0}"). Ours never
/// do, so this skips only the repeats of those.
pub fn with_causes(error: &(dyn Error + 'static)) -> String {
    with_causes_shown_by(error, |e| e.to_string())
}

/// [`with_causes`] with each error (the first and every cause) written by `show`, for a
/// reader who needs some errors told in other words than their own message (the CLI tells a
/// failed request by what it means to its user).
pub fn with_causes_shown_by(
    error: &(dyn Error + 'static),
    show: impl Fn(&(dyn Error + 'static)) -> String,
) -> String {
    let mut out = show(error);
    let mut shown = out.clone();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let text = show(inner);
        if !shown.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
            shown = text;
        }
        cause = inner.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot open the outbox")]
    struct Ours(#[source] Library);

    /// Shows its cause and returns it, as sqlx's database errors do.
    #[derive(Debug)]
    struct Library(Root);

    impl fmt::Display for Library {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "error returned from database: {}", self.0)
        }
    }

    impl Error for Library {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("file is not a database")]
    struct Root;

    #[test]
    fn each_cause_is_shown_once_in_order() {
        assert_eq!(
            with_causes(&Ours(Library(Root))),
            "cannot open the outbox: error returned from database: file is not a database"
        );
        assert_eq!(with_causes(&Root), "file is not a database");
    }

    #[test]
    fn a_cause_the_message_only_mentions_is_still_shown() {
        #[derive(Debug, thiserror::Error)]
        #[error("file is not a database, or not ours")]
        struct Mentions(#[source] Root);
        assert_eq!(
            with_causes(&Mentions(Root)),
            "file is not a database, or not ours: file is not a database"
        );
    }
}
