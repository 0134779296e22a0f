//! The pages' HTML (maud: every `(value)` is escaped; Markdown goes through `markdown::to_html`
//! and is the only `PreEscaped` content besides JSON encoded by serde).

use std::collections::{HashMap, HashSet};

use maud::{DOCTYPE, Markup, PreEscaped, html};
use wujie_protocol::api::{
    AuthorKind, Comment, Discussion, DiscussionStatus, IssueChange, IssueDetail, IssueEvent,
    IssueStatus, IssueSummary, Run, RunMessage, RunStatus,
};
use wujie_protocol::event::{MessageKind, Usage};
use wujie_protocol::jobs::{Job, JobStatus};
use wujie_protocol::pricing::PriceTable;
use wujie_protocol::promotion::IssueDraft;

use super::auth::Viewer;
use super::code::{self, RunCode};
use super::markdown;
use super::return_to::ReturnTo;
use super::time::{duration_between, elapsed_since, short_time};

fn markdown(source: &str) -> Markup {
    PreEscaped(markdown::to_html(source))
}

pub(crate) fn csrf_field(viewer: &Viewer) -> Markup {
    html! { input type="hidden" name="csrf" value=(viewer.csrf_token()); }
}

fn layout(title: &str, viewer: Option<&Viewer>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Wujie" }
                link rel="stylesheet" href="/assets/style.css";
                script src="/assets/app.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "Wujie" }
                    @if let Some(viewer) = viewer {
                        nav {
                            a href="/" { "Issues" }
                            a href="/board" { "Board" }
                            a href="/discussions" { "Discussions" }
                        }
                        // In the header, which stays on screen: whether the page follows
                        // the tracker live (set by the script on pages that do).
                        span #live-state .live-state aria-live="polite" {}
                        form.logout method="post" action="/logout" {
                            (csrf_field(viewer))
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

pub(crate) fn error_page(status: u16, message: &str) -> Markup {
    layout(
        "Error",
        None,
        html! {
            h1 { "Error " (status) }
            p.error-text { (message) }
            p { a href="/" { "Back to the issues" } }
        },
    )
}

pub(crate) fn login(problem: Option<&str>, next: Option<&ReturnTo>) -> Markup {
    layout(
        "Log in",
        None,
        html! {
            h1 { "Log in" }
            @if let Some(problem) = problem { p.error-text role="alert" { (problem) } }
            p { "Open the link " code { "wujie ui" } " prints, or paste a user token (" code { "wujie token create" } ")." }
            form.card method="post" action="/login" {
                @if let Some(next) = next { input type="hidden" name="next" value=(next.path()); }
                label for="token" { "Token" }
                input #token type="password" name="token" autocomplete="off" required;
                button type="submit" { "Log in" }
            }
        },
    )
}

fn status_name(status: IssueStatus) -> &'static str {
    match status {
        IssueStatus::Open => "open",
        IssueStatus::InProgress => "in progress",
        IssueStatus::Done => "done",
        IssueStatus::Closed => "closed",
    }
}

pub(crate) fn status_badge(status: IssueStatus) -> Markup {
    html! { span #issue-status class={"badge status-" (status.as_str())} { (status_name(status)) } }
}

/// The list's filters as given, to show them back in the form.
pub(crate) struct ListFilter<'a> {
    pub(crate) search: &'a str,
    pub(crate) status: Option<IssueStatus>,
}

/// Issues as the list and the board show them.
pub(crate) struct Listed {
    pub(crate) issues: Vec<IssueSummary>,
    /// The ids of those an agent is working on now.
    pub(crate) running: HashSet<String>,
    /// Where the page's live updates start.
    pub(crate) feed_after: String,
}

const STATUSES: [IssueStatus; 4] = [
    IssueStatus::Open,
    IssueStatus::InProgress,
    IssueStatus::Done,
    IssueStatus::Closed,
];

/// An issue's row in the list, or its card on the board (the same markup, styled by where it
/// is); the live updates replace it whole.
pub(crate) fn issue_row(issue: &IssueSummary, running: bool) -> Markup {
    html! {
        li.issue id={"issue-" (issue.key)} data-status=(issue.status.as_str()) {
            a href={"/issues/" (issue.key)} {
                span.key { (issue.key) }
                " "
                span.title { (issue.title) }
            }
            " "
            span class={"badge status-" (issue.status.as_str())} { (status_name(issue.status)) }
            @if running { " " span.badge.agent-running title="An agent is working on it now" { "agent running" } }
            span.when { (short_time(&issue.created_at)) }
        }
    }
}

pub(crate) fn issue_list(
    viewer: &Viewer,
    listed: &Listed,
    filter: &ListFilter<'_>,
    cost: &str,
) -> Markup {
    let status_filter = filter.status.map_or("", IssueStatus::as_str);
    layout(
        "Issues",
        Some(viewer),
        html! {
            h1 { "Issues" }
            p.muted #workspace-cost { "Workspace cost: " (cost) " · " a href="/board" { "Board view" } }
            form.filters method="get" action="/" role="search" {
                input type="search" name="search" value=(filter.search) placeholder="Search titles, descriptions, comments" aria-label="Search";
                select name="status" aria-label="Status" {
                    option value="" selected[filter.status.is_none()] { "any status" }
                    @for s in STATUSES {
                        option value=(s.as_str()) selected[filter.status == Some(s)] { (status_name(s)) }
                    }
                }
                button type="submit" { "Filter" }
            }
            @if listed.issues.is_empty() {
                p.muted #no-issues { "No issues match." }
            }
            // What the live updates may add: new issues only where the list is not searched,
            // and of the status filtered on.
            ul.issues #issue-list data-feed-after=(listed.feed_after)
                data-status-filter=(status_filter) data-searched[!filter.search.is_empty()] {
                @for issue in &listed.issues { (issue_row(issue, listed.running.contains(&issue.id))) }
            }
            details.card.new-issue {
                summary { "New issue" }
                form method="post" action="/issues" {
                    (csrf_field(viewer))
                    label for="new-title" { "Title" }
                    input #new-title type="text" name="title" required maxlength="500";
                    label for="new-description" { "Description (Markdown)" }
                    textarea #new-description name="description" rows="5" {}
                    button type="submit" { "Create issue" }
                }
            }
        },
    )
}

/// One column per status, each issue a card in its status's column.
pub(crate) fn board(viewer: &Viewer, listed: &Listed) -> Markup {
    layout(
        "Board",
        Some(viewer),
        html! {
            h1 { "Board" }
            p.muted { "The newest issues by status · " a href="/" { "List view" } }
            div.board #issue-board data-feed-after=(listed.feed_after) {
                @for status in STATUSES {
                    @let cards: Vec<&IssueSummary> = listed.issues.iter().filter(|i| i.status == status).collect();
                    section.column data-status=(status.as_str()) {
                        h2 { (status_name(status)) " " span.count { (cards.len()) } }
                        ul.issues.cards {
                            @for issue in cards { (issue_row(issue, listed.running.contains(&issue.id))) }
                        }
                    }
                }
            }
        },
    )
}

pub(crate) fn issue_actions(viewer: &Viewer, key: &str, status: IssueStatus) -> Markup {
    let closed = matches!(status, IssueStatus::Done | IssueStatus::Closed);
    html! {
        div #issue-actions .actions {
            @if closed {
                form method="post" action={"/issues/" (key) "/status"} {
                    (csrf_field(viewer))
                    input type="hidden" name="status" value="open";
                    button type="submit" { "Reopen" }
                }
            } @else {
                form method="post" action={"/issues/" (key) "/status"} {
                    (csrf_field(viewer))
                    input type="hidden" name="status" value="done";
                    button type="submit" { "Close as done" }
                }
                form method="post" action={"/issues/" (key) "/status"} {
                    (csrf_field(viewer))
                    input type="hidden" name="status" value="closed";
                    button.secondary type="submit" { "Close as not planned" }
                }
            }
        }
    }
}

/// `code`: the code of each run that recorded some, by run id.
pub(crate) fn issue_page(
    viewer: &Viewer,
    issue: &IssueDetail,
    code: &HashMap<String, RunCode>,
    jobs: &[Job],
    statuses: &[IssueEvent],
    feed_after: &str,
    prices: &PriceTable,
) -> Markup {
    let all_usage: Vec<Usage> = issue.runs.iter().flat_map(|r| r.usage.clone()).collect();
    layout(
        &issue.key,
        Some(viewer),
        html! {
            article #issue data-key=(issue.key) data-feed-after=(feed_after) {
                h1 {
                    span.key { (issue.key) } " "
                    span #issue-title { (issue.title) } " "
                    (status_badge(issue.status))
                }
                p.muted {
                    "Opened " (short_time(&issue.created_at))
                    " · " (issue_usage(&all_usage, prices))
                    @if let Some(d) = &issue.discussion_id {
                        " · from " a href={"/discussions/" (d)} { "a discussion" }
                    }
                }
                div #issue-description .prose { (markdown(&issue.description)) }
                details.card #edit-issue {
                    summary { "Edit title and description" }
                    form #edit-form method="post" action={"/issues/" (issue.key) "/edit"} {
                        (csrf_field(viewer))
                        label for="edit-title" { "Title" }
                        input #edit-title type="text" name="title" required maxlength="500" value=(issue.title);
                        label for="edit-description" { "Description (Markdown)" }
                        textarea #edit-description name="description" rows="8" { (issue.description) }
                        button type="submit" { "Save" }
                    }
                }
                (issue_actions(viewer, &issue.key, issue.status))
                h2 { "Timeline" }
                div #timeline {
                    @for entry in timeline(issue, statuses) {
                        @match entry {
                            Entry::Comment(comment) => (comment_view(comment)),
                            Entry::Status(change, status) => (status_entry(change, status)),
                            Entry::Run(run) => (run_section(viewer, run, code.get(&run.id), prices)),
                        }
                    }
                }
                @if issue.runs.is_empty() { p.muted #no-runs { "No runs yet. Start one with " code { "wujie run " (issue.key) " -- PROVIDER" } ", or queue one below." } }
                form.card #comment-form method="post" action={"/issues/" (issue.key) "/comments"} {
                    (csrf_field(viewer))
                    label for="comment-body" { "Comment (Markdown)" }
                    textarea #comment-body name="body" rows="4" required {}
                    button type="submit" { "Comment" }
                }
                (jobs_section(viewer, &issue.key, jobs))
                // Shown by the script where the browser has notifications to allow: asking
                // for them is left to this button, never done on load.
                button.secondary #notify-me type="button" hidden { "Notify me" }
                // Run ends and questions, as the live feed tells them (the script's).
                div #notices aria-live="polite" {}
            }
        },
    )
}

/// One entry of an issue's timeline.
enum Entry<'a> {
    Comment(&'a Comment),
    Status(&'a IssueEvent, IssueStatus),
    /// A run with its transcript, its code changes and its end, at its start.
    Run(&'a Run),
}

/// The issue's comments, status changes and runs, oldest first. A comment a run made of its
/// prompt or its final reply is left out: the run's transcript shows it, in its place.
fn timeline<'a>(issue: &'a IssueDetail, statuses: &'a [IssueEvent]) -> Vec<Entry<'a>> {
    let shown_run = |id: &String| issue.runs.iter().any(|run| &run.id == id);
    let mut entries: Vec<(&str, Entry<'a>)> = Vec::new();
    for comment in &issue.comments {
        if !comment.run_id.as_ref().is_some_and(shown_run) {
            entries.push((&comment.created_at, Entry::Comment(comment)));
        }
    }
    for change in statuses {
        if let IssueChange::Status { status } = change.change
            && status_shown(status)
        {
            entries.push((&change.created_at, Entry::Status(change, status)));
        }
    }
    for run in &issue.runs {
        entries.push((&run.started_at, Entry::Run(run)));
    }
    // Times are all written alike (UTC, fixed width), so they sort as text; a stable sort
    // keeps what happened at the same moment in the order above.
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries.into_iter().map(|(_, entry)| entry).collect()
}

/// Whether a change to `status` has an entry on the timeline: an issue is in progress once a
/// run starts on it, and the run's own entry says so.
pub(crate) fn status_shown(status: IssueStatus) -> bool {
    status != IssueStatus::InProgress
}

/// What a status change did, in words.
fn status_change_words(status: IssueStatus) -> &'static str {
    match status {
        IssueStatus::Open => "reopened the issue",
        IssueStatus::InProgress => "started a run: in progress",
        IssueStatus::Done => "closed the issue as done",
        IssueStatus::Closed => "closed the issue as not planned",
    }
}

/// A status change on the timeline: who made it, and what it did.
pub(crate) fn status_entry(change: &IssueEvent, status: IssueStatus) -> Markup {
    let who = match (&change.by, change.author.kind) {
        (Some(name), _) => name.as_str(),
        (None, AuthorKind::Agent) => "an agent",
        (None, AuthorKind::User) => "the server",
    };
    html! {
        div.status-change id={"activity-" (change.seq)} {
            span class={"badge status-" (status.as_str())} { (status_name(status)) }
            " " strong { (who) } " " (status_change_words(status))
            span.when { (short_time(&change.created_at)) }
        }
    }
}

/// The issue's jobs (runs asked for from the tracker, for a `wujie worker`) and the form that
/// queues one.
fn jobs_section(viewer: &Viewer, key: &str, jobs: &[Job]) -> Markup {
    html! {
        h2 { "Jobs" }
        div #jobs {
            @if jobs.is_empty() {
                p.muted #no-jobs { "No jobs yet. Ask an agent below; a " code { "wujie worker" } " takes it." }
            } @else {
                table.jobs {
                    thead { tr { th { "Agent" } th { "Status" } th { "Worker" } th { "Run" } th { "Queued" } } }
                    tbody {
                        @for job in jobs {
                            tr.job id={"job-" (job.id)} data-status=(job.status.as_str()) {
                                td { (job.provider) @if let Some(label) = &job.worker_label { span.muted { " (label " (label) ")" } } }
                                td {
                                    (job.status.as_str())
                                    @if job.attempts > 1 { span.muted { " after " (job.attempts) " tries" } }
                                    @if let Some(error) = &job.error { div.error-text { (error) } }
                                }
                                td { (job.worker.as_deref().unwrap_or("–")) }
                                td { @if let Some(run) = &job.run_id { a href={"#run-" (run)} { (short_id(run)) } } @else { "–" } }
                                td {
                                    (short_time(&job.created_at))
                                    @if job.status == JobStatus::Queued {
                                        form.inline method="post" action={"/issues/" (key) "/jobs/" (job.id) "/cancel"} {
                                            (csrf_field(viewer))
                                            button.secondary type="submit" { "Cancel" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        form.card #assign-form method="post" action={"/issues/" (key) "/jobs"} {
            (csrf_field(viewer))
            label for="assign-agent" { "Agent (a provider that runs without a terminal)" }
            input #assign-agent type="text" name="agent" value="pi" required;
            label for="assign-prompt" { "Task (empty: the issue's title and description)" }
            textarea #assign-prompt name="prompt" rows="2" {}
            label for="assign-worker" { "Worker label (optional)" }
            input #assign-worker type="text" name="worker";
            button type="submit" { "Queue a run" }
        }
    }
}

/// What an open page shows once its browser's session has ended: why it stopped following the
/// issue, and a login that comes back to `page`.
pub(crate) fn session_ended(page: Option<&ReturnTo>) -> Markup {
    let login = page.map_or_else(|| "/login".to_owned(), ReturnTo::login_href);
    html! {
        p.error-text #session-ended role="alert" {
            "Your session ended (you logged out, or its token was revoked or expired), so this \
             page no longer follows the issue. "
            a href=(login) { "Log in again" }
            " to come back to it."
        }
    }
}

pub(crate) fn comment_view(comment: &Comment) -> Markup {
    let who = match comment.author_kind {
        AuthorKind::User => "user",
        AuthorKind::Agent => "agent",
    };
    html! {
        article.comment id={"comment-" (comment.id)} {
            header {
                span class={"author " (who)} { (who) }
                @if let Some(run) = &comment.run_id { span.muted { " in run " (short_id(run)) } }
                span.when { (short_time(&comment.created_at)) }
            }
            div.prose { (markdown(&comment.body)) }
        }
    }
}

pub(crate) fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn run_status_name(status: RunStatus) -> &'static str {
    status.as_str()
}

pub(crate) fn issue_usage(usage: &[Usage], prices: &PriceTable) -> Markup {
    html! { span #issue-usage { (usage_text(usage)) " · cost " (prices.cost(usage).text()) } }
}

/// The models that used the tokens (in the order first seen), then the tokens.
fn usage_text(usage: &[Usage]) -> String {
    let sum = |f: fn(&Usage) -> u64| usage.iter().map(f).fold(0u64, u64::saturating_add);
    let mut models: Vec<&str> = Vec::new();
    for u in usage {
        if !u.model.is_empty() && !models.contains(&u.model.as_str()) {
            models.push(&u.model);
        }
    }
    let models = match models.as_slice() {
        [] => String::new(),
        [one] => format!("model {one} · "),
        many => format!("models {} · ", many.join(", ")),
    };
    format!(
        "{models}tokens in {} · out {} · cache read {} · cache write {}",
        sum(|u| u.input_tokens),
        sum(|u| u.output_tokens),
        sum(|u| u.cache_read_tokens),
        sum(|u| u.cache_write_tokens)
    )
}

/// A run's status line: status, duration, exit code, error, usage and cost; while it runs, a
/// way to cancel it (or who already did).
pub(crate) fn run_head(viewer: &Viewer, run: &Run, prices: &PriceTable) -> Markup {
    html! {
        div.run-head id={"run-head-" (run.id)} {
            span class={"badge run-" (run.status.as_str())} { (run_status_name(run.status)) }
            " " strong { (run.provider) }
            " " span.muted { "run " (short_id(&run.id)) }
            " · started " (short_time(&run.started_at))
            @match &run.ended_at {
                Some(end) => { " · took " (duration_between(&run.started_at, end)) }
                None => { " · running for " span.elapsed data-started=(run.started_at) { (elapsed_since(&run.started_at)) } }
            }
            @if let Some(code) = run.exit_code { " · exit " (code) }
            @if run.status == RunStatus::Running { (run_cancel(viewer, run)) }
            @if let Some(error) = &run.error { p.error-text role="alert" { "Error: " (error) } }
            p.muted.usage { (usage_text(&run.usage)) " · cost " (prices.cost(&run.usage).text()) }
        }
    }
}

/// The Cancel button of a running run, or who asked to cancel it (its reporter stops the
/// agent within seconds, and the run's end follows).
fn run_cancel(viewer: &Viewer, run: &Run) -> Markup {
    html! {
        @match &run.cancel {
            Some(cancel) => { " · " span.muted.cancel-asked { "cancelled by " (cancel.who()) ", stopping…" } }
            None => {
                form.run-cancel method="post" action={"/runs/" (run.id) "/cancel"} {
                    (csrf_field(viewer))
                    button.secondary type="submit" { "Cancel" }
                }
            }
        }
    }
}

/// A run: its head, its code changes (`code`), its transcript.
pub(crate) fn run_section(
    viewer: &Viewer,
    run: &Run,
    code: Option<&RunCode>,
    prices: &PriceTable,
) -> Markup {
    html! {
        section.run id={"run-" (run.id)} data-run=(run.id) {
            (run_head(viewer, run, prices))
            (code::run_code(&run.id, code))
            // The page holds each run's latest messages only; a link (no script needed) shows
            // the page of messages before them in their place.
            @if let Some(before) = run.messages_before {
                p.earlier {
                    a href={"/issues/" (run.issue_key) "?run=" (run.id) "&before=" (before) "#run-" (run.id)} {
                        "Show earlier messages"
                    }
                }
            }
            ol.transcript {
                (transcript(&run.messages))
            }
        }
    }
}

fn pretty_json(input: &serde_json::Map<String, serde_json::Value>) -> String {
    serde_json::to_string_pretty(input).unwrap_or_default()
}

/// The input fields that say what a tool call ran, in the order looked for.
const GIST_FIELDS: [&str; 7] = [
    "command",
    "cmd",
    "file_path",
    "path",
    "pattern",
    "url",
    "query",
];

/// Longest gist on a folded tool row, in characters.
const GIST_CHARS: usize = 80;

/// What a tool call ran (its command, its file…), cut to one short line, so that a folded row
/// says it without being opened.
fn tool_gist(input: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let value = GIST_FIELDS
        .iter()
        .find_map(|field| input.get(*field)?.as_str())?;
    let line = value.lines().next().unwrap_or("").trim();
    if line.is_empty() {
        return None;
    }
    let cut = value.trim().len() > line.len() || line.chars().count() > GIST_CHARS;
    let mut gist: String = line.chars().take(GIST_CHARS).collect();
    if cut {
        gist.push('…');
    }
    Some(gist)
}

/// Lines of a long tool text shown before "show more".
const SHOWN_LINES: usize = 40;
/// Bytes shown before "show more", for few but long lines.
const SHOWN_BYTES: usize = 4000;

/// A tool's text: its start, and the rest folded behind "show more" (the page works without
/// JavaScript, so the rest is in the page, not fetched).
fn capped(text: &str) -> Markup {
    let mut end = text
        .match_indices('\n')
        .nth(SHOWN_LINES - 1)
        .map_or(text.len(), |(i, _)| i + 1);
    if end > SHOWN_BYTES {
        end = (0..=SHOWN_BYTES)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
    }
    let (shown, rest) = text.split_at(end);
    if rest.trim().is_empty() {
        return html! { pre { (text) } };
    }
    let more_lines = rest.lines().count();
    html! {
        pre { (shown) }
        details.more {
            summary { "show more (" (more_lines) @if more_lines == 1 { " more line)" } @else { " more lines)" } }
            pre { (rest) }
        }
    }
}

/// What a transcript entry is, in words: who said it, or what it is.
fn kind_label(kind: MessageKind) -> &'static str {
    match kind {
        MessageKind::UserInput => "You",
        MessageKind::Text => "Agent",
        MessageKind::Final => "Reply",
        MessageKind::Thinking => "Thinking",
        MessageKind::Plan => "Plan",
        MessageKind::Question => "Question",
        MessageKind::ToolUse => "Tool",
        MessageKind::ToolResult => "Tool result",
        MessageKind::Error => "Error",
    }
}

/// A run's entries, in order; a tool call followed at once by the result of the same tool is
/// one row, the call with its result.
fn transcript(messages: &[RunMessage]) -> Markup {
    let mut rows = Vec::with_capacity(messages.len());
    let mut messages = messages.iter().peekable();
    while let Some(message) = messages.next() {
        let result = match message.kind {
            MessageKind::ToolUse => messages.next_if(|next| is_result_of(next, message)),
            _ => None,
        };
        rows.push(entry_view(message, result));
    }
    html! { @for row in rows { (row) } }
}

fn is_result_of(result: &RunMessage, call: &RunMessage) -> bool {
    result.kind == MessageKind::ToolResult && result.tool == call.tool
}

fn message_key(message: &RunMessage) -> String {
    format!("{}/{}", message.source, message.source_key)
}

/// One transcript entry, as the live updates send it (the page puts a tool's result that
/// comes in after its call into the call's row).
pub(crate) fn message_view(message: &RunMessage) -> Markup {
    entry_view(message, None)
}

/// One transcript entry; for a tool call, with its result when there is one. `data-key`
/// (source and source key, unique in a run; `data-result-key` for the result in the row)
/// lets the live updates skip an entry the page already shows.
fn entry_view(message: &RunMessage, result: Option<&RunMessage>) -> Markup {
    let content = message.content.as_deref().unwrap_or("");
    html! {
        li class={"msg " (message.kind.as_str())} data-key=(message_key(message))
            data-result-key=[result.map(message_key)] data-tool=[message.tool.as_deref()] {
            @match message.kind {
                MessageKind::Text => { div.prose { (markdown(content)) } }
                MessageKind::UserInput | MessageKind::Final | MessageKind::Thinking
                | MessageKind::Question | MessageKind::Plan => {
                    div.label { (kind_label(message.kind)) }
                    div.prose { (markdown(content)) }
                }
                MessageKind::ToolUse | MessageKind::ToolResult => {
                    details {
                        summary {
                            @if message.kind == MessageKind::ToolResult { "Result of " }
                            @else { "Tool " }
                            code { (message.tool.as_deref().unwrap_or("tool")) }
                            @if let Some(gist) = message.input.as_ref().and_then(tool_gist) {
                                " " code.gist { (gist) }
                            }
                        }
                        @if message.kind == MessageKind::ToolResult {
                            (tool_result(message))
                        } @else {
                            (tool_text(message))
                            @if let Some(result) = result { (tool_result(result)) }
                        }
                    }
                }
                MessageKind::Error => {
                    div.label role="alert" { (kind_label(message.kind)) }
                    pre { (content) }
                }
            }
        }
    }
}

/// A tool message's input, text and output.
fn tool_text(message: &RunMessage) -> Markup {
    let content = message.content.as_deref().unwrap_or("");
    html! {
        @if let Some(input) = &message.input {
            div.label { "Input" }
            pre { (pretty_json(input)) }
        }
        @if !content.is_empty() { (capped(content)) }
        @if let Some(output) = &message.output {
            div.label { "Output" }
            (capped(output))
        }
    }
}

/// A tool's result, in its own row or in its call's.
fn tool_result(result: &RunMessage) -> Markup {
    html! {
        div.tool-result {
            div.label { (kind_label(MessageKind::ToolResult)) }
            (tool_text(result))
        }
    }
}

pub(crate) fn discussion_list(viewer: &Viewer, discussions: &[Discussion]) -> Markup {
    layout(
        "Discussions",
        Some(viewer),
        html! {
            h1 { "Discussions" }
            @if discussions.is_empty() {
                p.muted { "No discussions yet. Start one with " code { "wujie discuss -- PROVIDER" } "." }
            } @else {
                ul.issues {
                    @for d in discussions {
                        li {
                            a href={"/discussions/" (d.id)} {
                                span.key { (short_id(&d.id)) } " "
                                span.title { (d.provider) " in " (d.cwd) }
                            }
                            " " (discussion_badge(d))
                            span.when { (short_time(&d.created_at)) }
                        }
                    }
                }
            }
        },
    )
}

fn discussion_badge(d: &Discussion) -> Markup {
    match (&d.status, &d.issue_key) {
        (DiscussionStatus::Promoted, Some(key)) => {
            html! { span.badge.status-done { "promoted to " (key) } }
        }
        (DiscussionStatus::Promoted, None) => html! { span.badge.status-done { "promoted" } },
        (DiscussionStatus::Open, _) => html! { span.badge.status-open { "open" } },
    }
}

pub(crate) fn discussion_page(
    viewer: &Viewer,
    d: &Discussion,
    draft: &IssueDraft,
    prices: &PriceTable,
) -> Markup {
    layout(
        "Discussion",
        Some(viewer),
        html! {
            h1 { "Discussion " span.key { (short_id(&d.id)) } " " (discussion_badge(d)) }
            p.muted {
                (d.provider) " in " code { (d.cwd) } " · started " (short_time(&d.created_at))
                " · " (usage_text(&d.usage)) " · cost " (prices.cost(&d.usage).text())
            }
            @if let Some(key) = &d.issue_key {
                p { "Continued as issue " a href={"/issues/" (key)} { (key) } "." }
            }
            ol.transcript {
                @for e in &d.entries {
                    li class={"msg " (e.kind.as_str())} {
                        div.label { (kind_label(e.kind)) }
                        div.prose { (markdown(&e.content)) }
                    }
                }
            }
            @if d.status == DiscussionStatus::Open {
                form.card #promote-form method="post" action={"/discussions/" (d.id) "/promote"} {
                    h2 { "Promote to an issue" }
                    p.muted { "Creates the issue with this discussion attached. Continue the work with " code { "wujie run KEY -- " (d.provider) } "." }
                    (csrf_field(viewer))
                    label for="promote-title" { "Title" }
                    input #promote-title type="text" name="title" required maxlength="500" value=(draft.title);
                    label for="promote-description" { "Description (Markdown)" }
                    textarea #promote-description name="description" rows="8" { (draft.description) }
                    p.muted { "A last line naming this discussion is added to the description." }
                    button type="submit" { "Promote" }
                }
            }
        },
    )
}
