//! What an issue promoted from a discussion holds: the draft put in front of the user (the
//! terminal's card, the web UI's form, `wujie discussion promote`) and the request that
//! creates the issue. One rule for every way in, so the same discussion becomes the same
//! issue whichever one the user took.

use crate::api::{Discussion, DiscussionEntry, PromoteDiscussion};
use crate::event::MessageKind;

/// Longest title taken from a plan or a message.
const TITLE_MAX_CHARS: usize = 80;

/// What the issue will be, before the user confirmed it (or, in the web UI, edited it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueDraft {
    pub title: String,
    /// The description the user sees and may edit; the request adds the line naming the
    /// discussion to it ([`IssueDraft::request`]).
    pub description: String,
}

impl IssueDraft {
    /// Title and description from the latest `plan`; without a plan, from the conversation
    /// (the first user message as the title, the exchange as the description); a discussion
    /// that gives no title is named by its id.
    pub fn from_discussion(discussion: &Discussion) -> IssueDraft {
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
        let title = if title.is_empty() {
            format!("Discussion {}", short_id(&discussion.id))
        } else {
            title
        };
        IssueDraft { title, description }
    }

    /// The draft under the title the user chose instead, unless that is blank.
    pub fn titled(self, title: Option<&str>) -> IssueDraft {
        match title.map(str::trim).filter(|t| !t.is_empty()) {
            Some(title) => IssueDraft {
                title: title.to_owned(),
                ..self
            },
            None => self,
        }
    }

    /// The request that creates the issue from `discussion`: its description ends with a line
    /// naming the discussion it came from. `agent_continues` says whether an agent goes on
    /// with the work on the promotion's run (the terminal's promotion); when none does (the
    /// command line, the web UI) the run ends with the promotion.
    pub fn request(
        &self,
        discussion: &Discussion,
        cwd: &str,
        agent_continues: bool,
    ) -> PromoteDiscussion {
        let origin = format!(
            "---\nPromoted from discussion {} ({}).",
            discussion.id, discussion.provider
        );
        let body = self.description.trim_end();
        PromoteDiscussion {
            title: self.title.clone(),
            description: if body.is_empty() {
                origin
            } else {
                format!("{body}\n\n{origin}")
            },
            provider: discussion.provider.clone(),
            cwd: cwd.to_owned(),
            end_run: !agent_continues,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::DiscussionStatus;

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
            next_after: 0,
            more: false,
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
        let draft = IssueDraft::from_discussion(&d);
        assert_eq!(draft.title, "Fix X by caching");
        assert_eq!(draft.description, "\n## Fix X by caching\n\n- b");
    }

    #[test]
    fn without_a_plan_the_conversation_is_used() {
        let d = discussion(vec![
            entry(MessageKind::UserInput, "make the build faster"),
            entry(MessageKind::Question, "which part?"),
            entry(MessageKind::UserInput, "linking"),
            entry(MessageKind::Final, "use mold"),
        ]);
        let draft = IssueDraft::from_discussion(&d);
        assert_eq!(draft.title, "make the build faster");
        assert!(draft.description.contains("**Agent asked:** which part?"));
        assert!(draft.description.contains("**Agent:** use mold"));
        assert_eq!(
            draft.clone().titled(Some("  Faster links ")).title,
            "Faster links"
        );
        assert_eq!(draft.clone().titled(Some("  ")), draft);
    }

    #[test]
    fn long_and_empty_titles() {
        let long = "x".repeat(200);
        let d = discussion(vec![entry(MessageKind::Plan, &long)]);
        let title = IssueDraft::from_discussion(&d).title;
        assert_eq!(title.chars().count(), TITLE_MAX_CHARS);
        let d = discussion(vec![]);
        assert_eq!(IssueDraft::from_discussion(&d).title, "Discussion 0192d3f0");
    }

    #[test]
    fn the_request_names_the_discussion_and_says_whether_an_agent_continues() {
        let d = discussion(vec![entry(MessageKind::Plan, "# Plan\n\n- a\n\n")]);
        let draft = IssueDraft::from_discussion(&d);
        let request = draft.request(&d, "/here", true);
        assert_eq!(request.title, "Plan");
        assert_eq!(
            request.description,
            "# Plan\n\n- a\n\n---\nPromoted from discussion 0192d3f0-aaaa-bbbb (grok)."
        );
        assert_eq!(
            (request.provider.as_str(), request.cwd.as_str()),
            ("grok", "/here")
        );
        assert!(!request.end_run);
        assert!(draft.request(&d, "/here", false).end_run);
        let empty = IssueDraft {
            title: "t".to_owned(),
            description: " \n".to_owned(),
        };
        assert_eq!(
            empty.request(&d, "/w", false).description,
            "---\nPromoted from discussion 0192d3f0-aaaa-bbbb (grok)."
        );
    }
}
