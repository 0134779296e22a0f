//! Turning a discussion into an issue: the one promotion state machine, used by native
//! handoff, `wujie discussion promote` and the terminal's `/wujiecreateissue`.
//!
//! Draft → (confirmed) → promote on the server (issue + run + run token, discussion marked
//! promoted, in one transaction) → the caller switches its reporter to the run.

use wujie_client::{Client, ClientError};
use wujie_protocol::api::{Discussion, DiscussionEntry, PromoteDiscussion, Promoted};
use wujie_protocol::event::MessageKind;

/// Longest title taken from a plan or a message.
const TITLE_MAX_CHARS: usize = 80;

/// What the issue will be: shown on the confirmation card before anything is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueDraft {
    pub title: String,
    pub description: String,
}

/// Title and description from the latest `plan`; without a plan, from the conversation (the
/// first user message as the title, the exchange as the description).
pub fn draft_from(discussion: &Discussion, title_override: Option<&str>) -> IssueDraft {
    let plan = discussion
        .entries
        .iter()
        .rev()
        .find(|e| e.kind == MessageKind::Plan);
    let (title, description) = match plan {
        Some(plan) => (title_of(&plan.content), plan.content.clone()),
        None => {
            let first_user = discussion
                .entries
                .iter()
                .find(|e| e.kind == MessageKind::UserInput)
                .map(|e| title_of(&e.content))
                .unwrap_or_default();
            (first_user, transcript(&discussion.entries))
        }
    };
    let title = title_override
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .unwrap_or(title);
    let title = if title.is_empty() {
        format!("Discussion {}", short_id(&discussion.id))
    } else {
        title
    };
    let link = format!(
        "\n\n---\nPromoted from discussion {} ({}).",
        discussion.id, discussion.provider
    );
    IssueDraft {
        title,
        description: format!("{}{link}", description.trim_end()),
    }
}

/// The first meaningful line, without Markdown heading marks, cut to a title's length.
fn title_of(text: &str) -> String {
    let line = text
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= TITLE_MAX_CHARS {
        line.to_owned()
    } else {
        let mut t: String = line.chars().take(TITLE_MAX_CHARS - 1).collect();
        t.push('…');
        t
    }
}

fn transcript(entries: &[DiscussionEntry]) -> String {
    entries
        .iter()
        .map(|e| {
            let who = match e.kind {
                MessageKind::UserInput => "User",
                MessageKind::Question => "Agent asked",
                _ => "Agent",
            };
            format!("**{who}:** {}", e.content.trim())
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Create the issue and its run from the discussion.
pub async fn promote(
    client: &Client,
    discussion: &Discussion,
    draft: &IssueDraft,
    cwd: &str,
) -> Result<Promoted, ClientError> {
    client
        .promote_discussion(
            &discussion.id,
            &PromoteDiscussion {
                title: draft.title.clone(),
                description: draft.description.clone(),
                provider: discussion.provider.clone(),
                cwd: cwd.to_owned(),
            },
        )
        .await
}

/// An error an adapter may see: what failed, never a token, a URL or internals.
pub fn redacted(error: &ClientError) -> String {
    match error.status().map(|s| s.as_u16()) {
        Some(409) => "the discussion was already turned into an issue".to_owned(),
        Some(401) | Some(403) => "the Wujie server refused the request (not authorized)".to_owned(),
        Some(code) => format!("the Wujie server could not create the issue (HTTP {code})"),
        None => "the Wujie server could not be reached".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wujie_protocol::api::DiscussionStatus;

    fn entry(kind: MessageKind, content: &str) -> DiscussionEntry {
        DiscussionEntry {
            kind,
            content: content.to_owned(),
            source: "s".to_owned(),
            source_key: content.to_owned(),
            created_at: String::new(),
        }
    }

    fn discussion(entries: Vec<DiscussionEntry>) -> Discussion {
        Discussion {
            id: "0192d3f0-aaaa-bbbb".to_owned(),
            status: DiscussionStatus::Open,
            provider: "grok".to_owned(),
            cwd: "/w".to_owned(),
            issue_id: None,
            issue_key: None,
            native_session_ids: Vec::new(),
            entries,
            usage: Vec::new(),
            created_at: String::new(),
        }
    }

    #[test]
    fn latest_plan_wins() {
        let d = discussion(vec![
            entry(MessageKind::UserInput, "how should we fix X?"),
            entry(MessageKind::Plan, "# Old plan\n- a"),
            entry(MessageKind::Plan, "\n## Fix X by caching\n\n- b"),
        ]);
        let draft = draft_from(&d, None);
        assert_eq!(draft.title, "Fix X by caching");
        assert!(
            draft
                .description
                .starts_with("\n## Fix X by caching\n\n- b")
        );
        assert!(draft.description.contains("0192d3f0-aaaa-bbbb"));
    }

    #[test]
    fn without_a_plan_the_conversation_is_used() {
        let d = discussion(vec![
            entry(MessageKind::UserInput, "make the build faster"),
            entry(MessageKind::Question, "which part?"),
            entry(MessageKind::UserInput, "linking"),
            entry(MessageKind::Final, "use mold"),
        ]);
        let draft = draft_from(&d, None);
        assert_eq!(draft.title, "make the build faster");
        assert!(draft.description.contains("**Agent asked:** which part?"));
        assert!(draft.description.contains("**Agent:** use mold"));
        assert_eq!(
            draft_from(&d, Some("  Faster links ")).title,
            "Faster links"
        );
    }

    #[test]
    fn long_and_empty_titles() {
        let long = "x".repeat(200);
        let d = discussion(vec![entry(MessageKind::Plan, &long)]);
        assert_eq!(draft_from(&d, None).title.chars().count(), TITLE_MAX_CHARS);
        let d = discussion(vec![]);
        assert_eq!(draft_from(&d, None).title, "Discussion 0192d3f0");
    }
}
