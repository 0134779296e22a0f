//! `wujie issue create | list | show`.

use anyhow::Result;
use wujie_protocol::api::{AuthorKind, CreateIssue, IssueDetail, RunMessage};
use wujie_protocol::event::MessageKind;

use crate::cli::IssueCommand;
use crate::context::Context;
use crate::output::{block, inline, one_line, outln, print_json};

pub async fn run(ctx: &Context, cmd: IssueCommand) -> Result<()> {
    let conn = ctx.connect().await?;
    let result = async {
        match cmd {
            IssueCommand::Create { title, description } => {
                let title = title.trim().to_owned();
                anyhow::ensure!(!title.is_empty(), "the title is empty: pass --title \"…\"");
                let issue = conn
                    .client
                    .create_issue(&CreateIssue {
                        title,
                        description,
                        discussion_id: None,
                    })
                    .await?;
                if ctx.json() {
                    print_json(&issue)?;
                } else {
                    outln!("Created {}: {}", issue.key, inline(&issue.title));
                }
            }
            IssueCommand::List => {
                let issues = conn.client.list_issues().await?;
                if ctx.json() {
                    print_json(&issues)?;
                } else if issues.is_empty() {
                    outln!("No issues yet. Create one with `wujie issue create --title \"…\"`.");
                } else {
                    outln!("{:<10} {:<12} title", "key", "status");
                    for i in issues {
                        let status = serde_json::to_value(i.status)?;
                        outln!(
                            "{:<10} {:<12} {}",
                            i.key,
                            status.as_str().unwrap_or(""),
                            one_line(&i.title, 70)
                        );
                    }
                }
            }
            IssueCommand::Show { key } => {
                let issue = conn.client.get_issue(&key).await?;
                if ctx.json() {
                    print_json(&issue)?;
                } else {
                    print_issue(&issue)?;
                }
            }
        }
        Ok(())
    }
    .await;
    conn.close().await;
    result
}

pub fn print_issue(issue: &IssueDetail) -> Result<()> {
    let status = serde_json::to_value(issue.status).unwrap_or_default();
    outln!(
        "{}  {}  [{}]",
        issue.key,
        inline(&issue.title),
        status.as_str().unwrap_or("")
    );
    if !issue.description.is_empty() {
        outln!("\n{}", block(&issue.description));
    }
    if !issue.comments.is_empty() {
        outln!("\nComments:");
        for c in &issue.comments {
            let who = match c.author_kind {
                AuthorKind::User => "user",
                AuthorKind::Agent => "agent",
            };
            outln!("  {who:>5}: {}", one_line(&c.body, 100));
        }
    }
    for run in &issue.runs {
        let exit = run
            .exit_code
            .map(|c| format!(", exit {c}"))
            .unwrap_or_default();
        outln!(
            "\nRun {} — {} — {}{exit}",
            run.id,
            inline(&run.provider),
            run.status.as_str()
        );
        if let Some(e) = &run.error {
            outln!("  error: {}", one_line(e, 100));
        }
        for m in &run.messages {
            outln!("  {}", describe(m));
        }
        for u in &run.usage {
            outln!(
                "  usage: {}/{} in {} out {} cache r/w {}/{}",
                inline(&u.provider),
                inline(&u.model),
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens
            );
        }
    }
    Ok(())
}

fn describe(m: &RunMessage) -> String {
    let kind = m.kind.as_str();
    match m.kind {
        MessageKind::ToolUse => {
            let input = m
                .input
                .as_ref()
                .map(|i| serde_json::Value::Object(i.clone()).to_string())
                .unwrap_or_default();
            format!(
                "{kind:>11}: {} {}",
                inline(m.tool.as_deref().unwrap_or("")),
                one_line(&input, 80)
            )
        }
        MessageKind::ToolResult => format!(
            "{kind:>11}: {} → {}",
            inline(m.tool.as_deref().unwrap_or("")),
            one_line(m.output.as_deref().unwrap_or(""), 80)
        ),
        _ => format!(
            "{kind:>11}: {}",
            one_line(m.content.as_deref().unwrap_or(""), 90)
        ),
    }
}
