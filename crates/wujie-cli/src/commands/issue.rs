//! `wujie issue create | list | show | comment | edit | close | reopen | runs | watch`
//! (`cancel` is `issue_cancel`).

use std::collections::{HashMap, HashSet};
use std::io::{IsTerminal, Read};

use anyhow::{Context as _, Result};
use wujie_client::{Client, FeedEvent};
use wujie_protocol::api::{
    AuthorKind, CreateComment, CreateIssue, EditIssue, IssueChange, IssueDetail, IssueEvent,
    IssueQuery, IssueStatus, MAX_ISSUE_LIST, RunMessage, RunStatus,
};
use wujie_protocol::event::MessageKind;
use wujie_protocol::git::{FileStatus, GitChanges, Patch, RunGit};
use wujie_protocol::notice;
use wujie_protocol::pricing::PriceTable;

use super::cost::{cost_text, priced_issue};
use super::transcript::{TranscriptPages, last_messages, print_issue_json};
use crate::cli::IssueCommand;
use crate::context::Context;
use crate::output::{
    block, colour_stdout, inline, issue_status, one_line, outln, print_json, stdout_columns,
};

pub async fn run(ctx: &Context, cmd: IssueCommand) -> Result<()> {
    let conn = ctx.connect().await?;
    let key = cmd.key().map(str::to_owned);
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
            IssueCommand::List {
                status,
                search,
                limit,
                all,
            } => {
                let shown = if all { MAX_ISSUE_LIST } else { limit };
                let query = IssueQuery {
                    status: status.as_deref().and_then(IssueStatus::from_name),
                    search,
                    // One more than shown, to know whether there are more.
                    limit: Some((shown + 1).min(MAX_ISSUE_LIST)),
                };
                list(ctx, &conn.client, &query, shown).await?;
            }
            IssueCommand::Diff {
                key,
                run,
                turn,
                stat,
            } => {
                diff(ctx, &conn.client, &key, run.as_deref(), turn, stat).await?;
            }
            IssueCommand::Show {
                key,
                tail,
                no_pager,
            } => {
                if ctx.json() && tail.is_some() {
                    anyhow::bail!(
                        "--tail shortens the text output; with --output json every message is in the document (cut it with jq, e.g. '.runs[].messages[-20:]')"
                    );
                }
                let issue = conn.client.get_issue(&key).await?;
                let prices = ctx.prices()?;
                if ctx.json() {
                    let doc = priced_issue(&issue, &prices)?;
                    print_issue_json(&conn.client, doc, &issue.runs).await?;
                } else {
                    let _pager = (!no_pager).then(crate::pager::Pager::start).flatten();
                    print_issue(&conn.client, &issue, &prices, tail).await?;
                    let query = wujie_client::JobQuery {
                        issue: Some(issue.id.clone()),
                        statuses: Vec::new(),
                        limit: Some(20),
                    };
                    let jobs = conn.client.list_jobs(&query).await?;
                    if !jobs.is_empty() {
                        outln!("\nJobs:");
                        super::jobs::print_jobs(&jobs)?;
                    }
                }
            }
            IssueCommand::Comment { key, text } => {
                let body = comment_text(text)?;
                let comment = conn
                    .client
                    .add_comment(&key, &CreateComment { body })
                    .await?;
                if ctx.json() {
                    print_json(&comment)?;
                } else {
                    outln!("Commented on {}.", inline(&key.to_ascii_uppercase()));
                }
            }
            IssueCommand::Edit {
                key,
                title,
                description,
            } => {
                anyhow::ensure!(
                    title.is_some() || description.is_some(),
                    "nothing to change: pass --title \"…\" and/or --description \"…\""
                );
                let edit = EditIssue { title, description };
                let issue = conn.client.edit_issue(&key, &edit).await?;
                if ctx.json() {
                    print_json(&issue)?;
                } else {
                    outln!("Edited {}: {}", issue.key, inline(&issue.title));
                }
            }
            IssueCommand::Close { key, not_planned } => {
                let status = if not_planned {
                    IssueStatus::Closed
                } else {
                    IssueStatus::Done
                };
                set_status(ctx, &conn.client, &key, status).await?;
            }
            IssueCommand::Reopen { key } => {
                set_status(ctx, &conn.client, &key, IssueStatus::Open).await?;
            }
            IssueCommand::Runs { key } => runs(ctx, &conn.client, &key).await?,
            IssueCommand::Watch { key, next } => watch(ctx, &conn.client, &key, next).await?,
            IssueCommand::Assign(args) => super::jobs::assign(ctx, &conn.client, args).await?,
            IssueCommand::Cancel { key, run } => {
                super::issue_cancel::cancel(ctx, &conn.client, &key, run.as_deref()).await?;
            }
        }
        Ok(())
    }
    .await;
    // The one thing these commands ask for that can be missing is the issue they name.
    let result = match (result, key) {
        (Err(e), Some(key)) if super::missing_issue::is_not_found(&e) => {
            Err(super::missing_issue::error(&conn.client, &key).await)
        }
        (result, _) => result,
    };
    conn.close().await;
    result
}

/// `issue list`: the issues matching `query`, a line each.
/// Where `issue list` prints titles: after the key and status columns.
const LIST_TITLE_COLUMN: usize = 10 + 1 + 12 + 1;
/// Titles are never cut shorter than this, however narrow the terminal.
const MIN_TITLE_WIDTH: usize = 20;

/// `issue list`: at most `shown` issues, and a word on stderr when there are more.
async fn list(ctx: &Context, client: &Client, query: &IssueQuery, shown: u32) -> Result<()> {
    let mut issues = client.search_issues(query).await?;
    let more = issues.len() > shown as usize;
    issues.truncate(shown as usize);
    if !ctx.json() {
        if more {
            wujie_process::stderr_line!(
                "Showing the newest {shown}; `--limit N` (up to {MAX_ISSUE_LIST}) or `--all` \
                 shows more."
            );
        } else if issues.len() == MAX_ISSUE_LIST as usize {
            // The server's most: there may be more, which no listing shows.
            wujie_process::stderr_line!(
                "Showing the newest {MAX_ISSUE_LIST}, the most one listing gives; narrow it with \
                 --status or --search."
            );
        }
    }
    if ctx.json() {
        print_json(&issues)?;
    } else if issues.is_empty() && (query.status.is_some() || query.search.is_some()) {
        outln!("No issues match. `wujie issue list` with no filters shows them all.");
    } else if issues.is_empty() {
        outln!("No issues yet. Create one with `wujie issue create --title \"…\"`.");
    } else {
        // On a terminal titles take the rest of its width; elsewhere (a pipe, a file) they are
        // printed whole.
        let title_width = stdout_columns().map_or(usize::MAX, |cols| {
            cols.saturating_sub(LIST_TITLE_COLUMN).max(MIN_TITLE_WIDTH)
        });
        let colour = colour_stdout();
        outln!("{:<10} {:<12} title", "key", "status");
        for i in issues {
            outln!(
                "{:<10} {} {}",
                i.key,
                issue_status(i.status, 12, colour),
                one_line(&i.title, title_width)
            );
        }
    }
    Ok(())
}

/// `issue runs`: the issue's runs, a line each.
async fn runs(ctx: &Context, client: &Client, key: &str) -> Result<()> {
    let runs = client.issue_runs(key).await?;
    if ctx.json() {
        print_json(&runs)?;
    } else if runs.is_empty() {
        outln!(
            "No runs yet. Start one with `wujie run {} -- <provider>`.",
            inline(key)
        );
    } else {
        outln!(
            "{:<38} {:<10} {:<16} {:>8}  started",
            "run",
            "status",
            "provider",
            "messages"
        );
        for r in runs {
            outln!(
                "{:<38} {:<10} {:<16} {:>8}  {}",
                r.id,
                r.status.as_str(),
                one_line(&r.provider, 16),
                r.message_count,
                r.started_at
            );
        }
    }
    Ok(())
}

/// The issue as text, every run's whole transcript read page by page as it is printed.
/// `issue`, its runs with their transcripts (the last `tail` messages of each when given).
pub async fn print_issue(
    client: &Client,
    issue: &IssueDetail,
    prices: &PriceTable,
    tail: Option<usize>,
) -> Result<()> {
    outln!(
        "{}  {}  [{}]",
        issue.key,
        inline(&issue.title),
        issue_status(issue.status, 0, colour_stdout())
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
        // Until its reporter ends the run, the only sign that it is stopping.
        if let (RunStatus::Running, Some(cancel)) = (run.status, &run.cancel) {
            outln!("  cancelled by {}, stopping…", inline(cancel.who()));
        }
        if let Some(git) = &run.git {
            print_run_git(git)?;
        }
        match tail {
            None => {
                let mut pages = TranscriptPages::of(client, run);
                while let Some(page) = pages.next_page().await? {
                    for m in &page {
                        outln!("  {}", describe(m));
                    }
                }
            }
            Some(n) => {
                let last = last_messages(client, run, n).await?;
                match last.earlier {
                    Some(0) => {}
                    Some(1) => outln!("  … 1 earlier message not shown (--tail {n})"),
                    Some(k) => outln!("  … {k} earlier messages not shown (--tail {n})"),
                    None => outln!("  … earlier messages not shown (--tail {n})"),
                }
                for m in &last.messages {
                    outln!("  {}", describe(m));
                }
            }
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
        if !run.usage.is_empty() {
            outln!("  cost: {}", inline(&cost_text(&prices.cost(&run.usage))));
        }
    }
    let usage: Vec<_> = issue.runs.iter().flat_map(|r| &r.usage).collect();
    if !usage.is_empty() {
        outln!("\nCost: {}", inline(&cost_text(&prices.cost(usage))));
    }
    Ok(())
}

/// `wujie issue diff`: the run's patch (or `--stat`), from its latest snapshot, or one turn's.
async fn diff(
    ctx: &Context,
    client: &Client,
    key: &str,
    run: Option<&str>,
    turn: Option<u32>,
    stat: bool,
) -> Result<()> {
    anyhow::ensure!(
        turn != Some(0),
        "--turn counts from 1: turn 1 is what the run changed up to its first final reply"
    );
    let issue = client.get_issue(key).await?;
    let run = match run {
        Some(id) => issue
            .runs
            .iter()
            .find(|r| r.id == id)
            .with_context(|| format!("issue {} has no run {id}; `wujie issue show {}` lists its runs", issue.key, issue.key))?,
        None => issue
            .runs
            .iter()
            .rev()
            .find(|r| r.git.is_some())
            .with_context(|| format!("no run of issue {} recorded code changes (runs record them when started in a git work tree)", issue.key))?,
    };
    anyhow::ensure!(
        run.git.is_some(),
        "run {} recorded no code changes: it did not run in a git work tree, or git was not installed",
        run.id
    );
    let changes = match turn {
        // The issue was found: a turn not found is said in the server's words, not taken for
        // a missing issue.
        Some(turn) => client
            .run_git_turn(&run.id, turn)
            .await
            .map_err(|e| match e.status() {
                Some(wujie_client::StatusCode::NOT_FOUND) => {
                    anyhow::anyhow!(crate::user_error::client_error(&e))
                }
                _ => e.into(),
            })?,
        None => client.run_git(&run.id).await?,
    };
    if ctx.json() {
        return print_json(&changes);
    }
    // Said on stderr, so that stdout stays a patch `git apply` takes.
    if let Some(turn) = turn {
        say_which_turns(turn, &changes);
    }
    if stat {
        return print_run_git(&changes.summary());
    }
    for file in &changes.files {
        match &file.patch {
            Patch::Kept(text) => crate::output::write_stdout(format_args!("{text}"))?,
            // Said on stderr, so that stdout stays a patch `git apply` takes.
            omitted => wujie_process::stderr_line!(
                "wujie: {}: {}",
                inline(&file.path),
                omitted.omitted_reason().unwrap_or_default()
            ),
        }
    }
    Ok(())
}

/// What a turn's changes are when they are not simply its own: none, or shared with the turns
/// that ended while the code was being read.
fn say_which_turns(turn: u32, changes: &GitChanges) {
    if changes.files.is_empty() {
        wujie_process::stderr_line!("wujie: turn {turn} changed no files");
    } else if let Some(span) = changes.turns.filter(|s| s.first != s.last) {
        wujie_process::stderr_line!(
            "wujie: turns {} to {} ended while the code was being read after turn {}; their \
             changes are recorded together",
            span.first,
            span.last,
            span.first
        );
    }
}

/// A run's code: where it ran, its commits, and a `git diff --stat`-like list of its files.
fn print_run_git(git: &RunGit) -> Result<()> {
    let branch = git.branch.as_deref().unwrap_or("detached HEAD");
    let short = |c: &Option<String>| {
        c.as_deref()
            .map_or("none".to_owned(), |c| c.chars().take(7).collect())
    };
    outln!(
        "  code: {} on {} (base {}, head {})",
        inline(&git.repo),
        inline(branch),
        short(&git.base_commit),
        short(&git.head_commit)
    );
    for c in &git.commits {
        outln!(
            "  commit {} {}",
            c.sha.chars().take(7).collect::<String>(),
            one_line(&c.subject, 80)
        );
    }
    let additions: u64 = git.files.iter().map(|f| f.additions).sum();
    let deletions: u64 = git.files.iter().map(|f| f.deletions).sum();
    outln!(
        "  {} file{} changed, {additions} insertion{}(+), {deletions} deletion{}(-)",
        git.files.len(),
        if git.files.len() == 1 { "" } else { "s" },
        if additions == 1 { "" } else { "s" },
        if deletions == 1 { "" } else { "s" },
    );
    let width = git
        .files
        .iter()
        .map(|f| inline(&f.path).chars().count())
        .max()
        .unwrap_or(0);
    for f in &git.files {
        let counts = if f.binary {
            "binary".to_owned()
        } else {
            // As `--stat` draws it: at most 40 marks, in proportion when there are more.
            let total = f.additions + f.deletions;
            let scale = |n: u64| {
                if total > 40 {
                    (n * 40).div_ceil(total)
                } else {
                    n
                }
            };
            format!(
                "{:>5} {}{}",
                total,
                "+".repeat(scale(f.additions) as usize),
                "-".repeat(scale(f.deletions) as usize)
            )
        };
        let mut notes = Vec::new();
        match f.status {
            FileStatus::Modified => {}
            FileStatus::Renamed => notes.push(format!(
                "renamed from {}",
                inline(f.old_path.as_deref().unwrap_or("?"))
            )),
            other => notes.push(other.as_str().to_owned()),
        }
        notes.extend(f.patch_omitted.iter().map(|r| inline(r).into_owned()));
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!("  ({})", notes.join("; "))
        };
        outln!("    {:<width$} | {counts}{notes}", inline(&f.path));
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

async fn set_status(ctx: &Context, client: &Client, key: &str, status: IssueStatus) -> Result<()> {
    let current = client.get_issue(key).await?;
    if current.status == status {
        if ctx.json() {
            print_json(&current)?;
        }
        wujie_process::stderr_line!(
            "wujie: {} is already {}; nothing changed.",
            current.key,
            status.as_str()
        );
        return Ok(());
    }
    let issue = client.set_issue_status(key, status).await?;
    if ctx.json() {
        print_json(&issue)?;
    } else {
        outln!("{} is now {}.", issue.key, issue.status.as_str());
    }
    Ok(())
}

/// The comment's text: the argument, stdin (`-`, or no argument with input piped in), or what
/// the user writes in `$EDITOR`.
fn comment_text(text: Option<String>) -> Result<String> {
    let text = match text.as_deref() {
        Some("-") => read_stdin()?,
        Some(_) => text.unwrap_or_default(),
        None if !std::io::stdin().is_terminal() => read_stdin()?,
        None => edit_in_editor()?,
    };
    anyhow::ensure!(
        !text.trim().is_empty(),
        "the comment is empty: pass its text, pipe it in, or write it in $EDITOR"
    );
    Ok(text)
}

fn read_stdin() -> Result<String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the comment from stdin")?;
    Ok(text)
}

fn edit_in_editor() -> Result<String> {
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .ok()
        .filter(|e| !e.trim().is_empty())
        .context("no comment text: pass it as an argument, pipe it in, or set $EDITOR")?;
    let path = std::env::temp_dir().join(format!("wujie-comment-{}.md", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create {} to write the comment in", path.display()))?;
    // Through the shell, so that an EDITOR with arguments (`code --wait`) works.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status();
    let text = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    let status = status.with_context(|| format!("cannot start the editor {editor:?}"))?;
    anyhow::ensure!(
        status.success(),
        "the editor {editor:?} exited with {status}; the comment was not sent"
    );
    text.context("cannot read the comment back from the editor's file")
}

/// How many times `watch` reconnects in a row after losing the feed before giving up.
const WATCH_RECONNECTS: u32 = 5;

/// Follows the issue's feed from its beginning, reconnecting with the last event id when the
/// connection drops, until no run of the issue is running any more (with `next`, once a run
/// was seen running after the history, so that it waits for one to start).
async fn watch(ctx: &Context, client: &Client, key: &str, next: bool) -> Result<()> {
    let mut last_id: Option<String> = None;
    let mut running: HashSet<String> = HashSet::new();
    let mut live = false;
    let mut saw_a_run = false;
    let mut providers: HashMap<String, String> = HashMap::new();
    let mut failures = 0;
    loop {
        let mut feed = match client.follow_issue(key, last_id.as_deref()).await {
            Ok(feed) => feed,
            Err(e) if e.is_retryable() && failures < WATCH_RECONNECTS => {
                failures += 1;
                tokio::time::sleep(std::time::Duration::from_millis(200 << failures)).await;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        loop {
            let event = match feed.next().await {
                None => break,
                Some(Err(e)) if e.is_retryable() => break,
                Some(event) => event?,
            };
            failures = 0;
            if ctx.json() {
                print_feed_json(&event)?;
            }
            match event {
                FeedEvent::Live => live = true,
                FeedEvent::Message { id, event } => {
                    if !ctx.json() {
                        let m = &event.message;
                        let line = match (m.kind, m.content.as_deref()) {
                            (MessageKind::Question, Some(question)) => {
                                standing_out(&notice::question(&one_line(question, 200)))
                            }
                            _ => describe(m),
                        };
                        outln!("{line}");
                    }
                    last_id = Some(id);
                }
                FeedEvent::Issue { id, event } => {
                    match &event.change {
                        IssueChange::RunStarted { run_id, provider } => {
                            running.insert(run_id.clone());
                            providers.insert(run_id.clone(), provider.clone());
                        }
                        IssueChange::RunFinished { run_id, .. } => {
                            running.remove(run_id);
                        }
                        _ => {}
                    }
                    if !ctx.json() {
                        outln!("{}", describe_change(&event, &providers));
                    }
                    last_id = Some(id);
                }
            }
            saw_a_run |= live && !running.is_empty();
            if live && running.is_empty() && (saw_a_run || !next) {
                return Ok(());
            }
        }
        failures += 1;
        anyhow::ensure!(
            failures <= WATCH_RECONNECTS,
            "lost the connection to the server {WATCH_RECONNECTS} times in a row; run \
             `wujie issue watch {key}` again to resume"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200 << failures)).await;
    }
}

fn print_feed_json(event: &FeedEvent) -> Result<()> {
    let line = match event {
        FeedEvent::Message { id, event } => {
            serde_json::json!({"event": "message", "id": id, "data": event})
        }
        FeedEvent::Issue { id, event } => {
            serde_json::json!({"event": "issue", "id": id, "data": event})
        }
        FeedEvent::Live => serde_json::json!({"event": "live"}),
    };
    outln!("{}", serde_json::to_string(&line)?);
    Ok(())
}

/// A line that stands out from the feed's others: what the watcher waits for (a run's end, a
/// question). Marked on any output, and bold yellow on a terminal with colours.
fn standing_out(text: &str) -> String {
    if colour_stdout() {
        format!("\x1b[1;33m==> {text}\x1b[0m")
    } else {
        format!("==> {text}")
    }
}

/// `providers`: each run's provider, by run id, for its end.
fn describe_change(event: &IssueEvent, providers: &HashMap<String, String>) -> String {
    let who = match (&event.author.kind, &event.author.run_id) {
        (AuthorKind::User, _) => "user",
        (AuthorKind::Agent, _) => "agent",
    };
    let what = match &event.change {
        IssueChange::Created { title } => format!("created: {}", one_line(title, 80)),
        IssueChange::Edited { title, description } => match (title, description) {
            (Some(t), _) => format!("edited, title now: {}", one_line(t, 70)),
            (None, _) => "edited the description".to_owned(),
        },
        IssueChange::Status { status } => format!("status: {}", status.as_str()),
        IssueChange::Comment { comment } => format!("comment: {}", one_line(&comment.body, 90)),
        IssueChange::RunStarted { run_id, provider } => {
            format!("run {run_id} started ({})", inline(provider))
        }
        IssueChange::RunFinished {
            run_id,
            status,
            exit_code,
            error,
        } => {
            let exit = exit_code
                .map(|c| format!(" (exit {c})"))
                .unwrap_or_default();
            let provider = providers.get(run_id).map(|p| inline(p));
            let error = error.as_deref().map(|e| one_line(e, 80));
            let ended = notice::run_ended(run_id, provider.as_deref(), *status, error.as_deref());
            return standing_out(&format!("{}: {ended}{exit}", event.issue_key));
        }
        IssueChange::CancelRequested { run_id } => format!(
            "asked run {run_id} to stop (cancelled by {})",
            inline(event.by.as_deref().unwrap_or("a user"))
        ),
        IssueChange::CodeChanged { run_id, files, .. } => format!(
            "run {run_id}'s code: {files} {} changed since its start",
            if *files == 1 { "file" } else { "files" }
        ),
        IssueChange::Usage { usage, .. } => format!(
            "usage: {}/{} in {} out {}",
            inline(&usage.provider),
            inline(&usage.model),
            usage.input_tokens,
            usage.output_tokens
        ),
    };
    format!("{:>11}: {who} {what}", event.issue_key)
}
