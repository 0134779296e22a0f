//! What the people following an issue are told when one of its runs ends or its agent asks a
//! question: the one wording of `wujie issue watch`, `wujie notify` and the issue page's
//! notices. Callers shorten what they put in (an error, a question) to fit where it is shown.

use crate::api::RunStatus;

/// "run R (pi) succeeded", "run R (pi) failed: why", "run R (pi) cancelled"; the provider is
/// left out when it is not known.
pub fn run_ended(
    run: &str,
    provider: Option<&str>,
    status: RunStatus,
    error: Option<&str>,
) -> String {
    let provider = provider.map(|p| format!(" ({p})")).unwrap_or_default();
    let error = match (status, error) {
        (RunStatus::Failed, Some(e)) if !e.is_empty() => format!(": {e}"),
        _ => String::new(),
    };
    format!("run {run}{provider} {}{error}", status.as_str())
}

/// "the agent asks: …; answer it in its terminal".
pub fn question(question: &str) -> String {
    format!("the agent asks: {question}; answer it in its terminal")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ends_say_how_and_questions_where_to_answer() {
        assert_eq!(
            run_ended("r1", Some("pi"), RunStatus::Succeeded, None),
            "run r1 (pi) succeeded"
        );
        assert_eq!(
            run_ended("r1", Some("pi"), RunStatus::Failed, Some("exit 3")),
            "run r1 (pi) failed: exit 3"
        );
        assert_eq!(
            run_ended("r1", None, RunStatus::Cancelled, Some("ignored")),
            "run r1 cancelled"
        );
        assert_eq!(
            question("SQLite or PostgreSQL?"),
            "the agent asks: SQLite or PostgreSQL?; answer it in its terminal"
        );
    }
}
