//! `wujie notify [KEY…]`: the user is told, as it happens, when a run ends or an agent asks a
//! question, of every issue of the workspace or only of the issues named.
//!
//! What happened before the command started is history and is never told: each feed replays
//! it first, and only what comes once the feed is live is told (or, of a run that started
//! after that, everything). Questions are messages, which only an issue's own feed carries;
//! so, for the whole workspace, the workspace's feed says which issues have a run running and
//! which runs start, and each such issue's feed is followed (and told from, in its order) until
//! it has shown those runs end, then followed again from where it stopped when the next starts.

mod follow;
mod notifier;

use std::collections::{HashMap, HashSet};

use anyhow::{Context as _, Result};
use tokio::sync::mpsc;
use wujie_client::{Client, FeedEvent};
use wujie_protocol::api::{IssueChange, IssueEvent, RunMessageEvent};
use wujie_protocol::event::MessageKind;
use wujie_protocol::notice;

use self::follow::{Feed, Happened, Update};
use self::notifier::{Notice, Notifier, What};
use super::stop_signals::StopSignals;
use crate::cli::NotifyArgs;
use crate::context::Context;

/// The config.json key of the command run for each notice (as `--command`).
const COMMAND_KEY: &str = "notify_command";

pub async fn run(ctx: &Context, args: NotifyArgs) -> Result<()> {
    let command = match args.command {
        Some(command) => Some(command),
        None => configured_command(ctx)?,
    };
    let notifier = Notifier::new(ctx.json(), args.no_bell, command, args.no_desktop);
    // Listening before anything is followed: a Ctrl+C from now on ends the command cleanly.
    let mut stop = StopSignals::install().context("listening for Ctrl+C and SIGTERM")?;
    let conn = ctx.connect().await?;
    let result = async {
        let (to, mut updates) = mpsc::unbounded_channel();
        let mut notify = Notify::new(conn.client.clone(), to, notifier);
        if args.keys.is_empty() {
            notify.follow_workspace();
        }
        for key in &args.keys {
            let issue = match conn.client.get_issue(key).await {
                Ok(issue) => issue,
                Err(e) => {
                    let e = anyhow::Error::new(e);
                    return Err(if super::missing_issue::is_not_found(&e) {
                        super::missing_issue::error(&conn.client, key).await
                    } else {
                        e
                    });
                }
            };
            notify.titles.insert(issue.key.clone(), issue.title);
            notify.follow_issue(&issue.key);
        }
        loop {
            tokio::select! {
                _ = stop.recv() => return Ok(()),
                update = updates.recv() => match update {
                    Some(update) => notify.update(update).await?,
                    // Not while `notify` holds a sender.
                    None => return Ok(()),
                },
            }
        }
    }
    .await;
    conn.close().await;
    result
}

/// `notify_command` of the profile's config, if set.
fn configured_command(ctx: &Context) -> Result<Option<String>> {
    let config = ctx.profile.load_config()?;
    match config.other.get(COMMAND_KEY) {
        None => Ok(None),
        Some(serde_json::Value::String(command)) if !command.trim().is_empty() => {
            Ok(Some(command.clone()))
        }
        Some(_) => anyhow::bail!(
            "`{COMMAND_KEY}` in {} is not a command; write it as a string, e.g. \
             \"{COMMAND_KEY}\": \"notify-send \\\"$WUJIE_NOTIFY_TITLE\\\" \\\"$WUJIE_NOTIFY_BODY\\\"\"",
            ctx.profile.config_path().display()
        ),
    }
}

/// What is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The issues named, each by its feed.
    Issues,
    /// The whole workspace: its feed says which issues' feeds to follow (`live`: past its
    /// history).
    Workspace { live: bool },
}

/// An issue's feed being followed.
struct Followed {
    /// Which follower of the issue this is: what an earlier one sent is not this one's.
    follower: u64,
    task: tokio::task::JoinHandle<()>,
    /// Past its history.
    live: bool,
}

impl Drop for Followed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the command knows, from the feeds it follows. Everything of one issue is told from
/// its own feed, so in the order it happened (a question before the end of its run); the
/// workspace's feed only says which issues to follow, and it may be ahead of or behind them.
struct Notify {
    client: Client,
    to: mpsc::UnboundedSender<Update>,
    notifier: Notifier,
    scope: Scope,
    titles: HashMap<String, String>,
    providers: HashMap<String, String>,
    /// Per issue, its runs running as the workspace's feed's history says.
    running: HashMap<String, HashSet<String>>,
    /// Runs that started once the workspace's feed was live: nothing they say is history.
    fresh: HashSet<String>,
    /// Per issue, the runs whose end is news and that its feed has not shown ending yet: the
    /// feed is followed until it has.
    awaited: HashMap<String, HashSet<String>>,
    /// Runs whose end an issue's feed has shown.
    ended: HashSet<String>,
    issues: HashMap<String, Followed>,
    /// Per issue, the id of the last event of its feed, to resume from.
    last_ids: HashMap<String, String>,
    followers: u64,
    /// The feeds whose connection is lost, being opened again.
    lost: HashSet<Feed>,
    ready_said: bool,
}

impl Notify {
    fn new(client: Client, to: mpsc::UnboundedSender<Update>, notifier: Notifier) -> Notify {
        Notify {
            client,
            to,
            notifier,
            scope: Scope::Issues,
            titles: HashMap::new(),
            providers: HashMap::new(),
            running: HashMap::new(),
            fresh: HashSet::new(),
            awaited: HashMap::new(),
            ended: HashSet::new(),
            issues: HashMap::new(),
            last_ids: HashMap::new(),
            followers: 0,
            lost: HashSet::new(),
            ready_said: false,
        }
    }

    /// The workspace's feed is followed as long as the command runs.
    fn follow_workspace(&mut self) {
        self.scope = Scope::Workspace { live: false };
        drop(follow::start(
            self.client.clone(),
            Feed::Workspace,
            0,
            None,
            self.to.clone(),
        ));
    }

    /// Follows the issue's feed, unless it is followed already: from where an earlier follower
    /// stopped (all of it new then), or from its start.
    fn follow_issue(&mut self, key: &str) {
        if self.issues.contains_key(key) {
            return;
        }
        self.followers += 1;
        let last_id = self.last_ids.get(key).cloned();
        let followed = Followed {
            follower: self.followers,
            live: last_id.is_some(),
            task: follow::start(
                self.client.clone(),
                Feed::Issue(key.to_owned()),
                self.followers,
                last_id,
                self.to.clone(),
            ),
        };
        self.issues.insert(key.to_owned(), followed);
    }

    async fn update(&mut self, update: Update) -> Result<()> {
        let Update {
            feed,
            follower,
            what,
        } = update;
        // What a follower let go of sent before it stopped is not news.
        if let Feed::Issue(key) = &feed
            && self.issues.get(key).is_none_or(|f| f.follower != follower)
        {
            return Ok(());
        }
        match what {
            Happened::Event(event) => match &feed {
                Feed::Workspace => self.workspace_event(event),
                Feed::Issue(key) => self.issue_event(key, event).await?,
            },
            Happened::Lost(error) => {
                if let Some(error) = error {
                    tracing::debug!(
                        "a feed was lost: {}",
                        wujie_protocol::error_text::with_causes(&error)
                    );
                }
                if self.lost.is_empty() {
                    wujie_process::stderr_line!(
                        "wujie: lost the connection to the server; trying again until it \
                         answers (what happens meanwhile is told then)"
                    );
                }
                self.lost.insert(feed);
            }
            Happened::Back => {
                if self.lost.remove(&feed) && self.lost.is_empty() {
                    wujie_process::stderr_line!(
                        "wujie: connected again; what happened meanwhile follows"
                    );
                }
            }
            Happened::Refused(error) => {
                let what = match feed {
                    Feed::Workspace => "the workspace".to_owned(),
                    Feed::Issue(key) => key,
                };
                return Err(error).with_context(|| format!("cannot follow {what}"));
            }
        }
        Ok(())
    }

    /// The workspace's feed: which issues have a run running once it is live, and which
    /// runs start after.
    fn workspace_event(&mut self, event: FeedEvent) {
        let live = self.scope == (Scope::Workspace { live: true });
        match event {
            FeedEvent::Live if !live => {
                self.scope = Scope::Workspace { live: true };
                for (key, runs) in std::mem::take(&mut self.running) {
                    if !runs.is_empty() {
                        self.awaited.insert(key.clone(), runs);
                        self.follow_issue(&key);
                    }
                }
                self.say_ready();
            }
            FeedEvent::Issue { event, .. } => {
                self.learn(&event);
                let key = &event.issue_key;
                match &event.change {
                    IssueChange::RunStarted { run_id, .. } if live => {
                        self.fresh.insert(run_id.clone());
                        // Unless the issue's feed, ahead, showed it ending already.
                        if !self.ended.contains(run_id) {
                            let awaited = self.awaited.entry(key.clone()).or_default();
                            awaited.insert(run_id.clone());
                        }
                        self.follow_issue(key);
                    }
                    IssueChange::RunStarted { run_id, .. } => {
                        let runs = self.running.entry(key.clone()).or_default();
                        runs.insert(run_id.clone());
                    }
                    IssueChange::RunFinished { run_id, .. } if !live => {
                        if let Some(runs) = self.running.get_mut(key) {
                            runs.remove(run_id);
                        }
                    }
                    _ => {}
                }
            }
            // The workspace's feed carries no messages; `live` comes once per connection.
            FeedEvent::Live | FeedEvent::Message { .. } => {}
        }
    }

    /// An issue's feed: its questions and run ends, told once they are news.
    async fn issue_event(&mut self, key: &str, event: FeedEvent) -> Result<()> {
        let live = self.issues.get(key).is_some_and(|f| f.live);
        match event {
            FeedEvent::Live => {
                if let Some(followed) = self.issues.get_mut(key) {
                    followed.live = true;
                }
                self.say_ready();
                self.let_go_if_done(key);
            }
            FeedEvent::Message { id, event } => {
                self.last_ids.insert(key.to_owned(), id);
                if event.message.kind == MessageKind::Question
                    && (live || self.fresh.contains(&event.run_id))
                {
                    self.tell_question(key, &event).await?;
                }
            }
            FeedEvent::Issue { id, event } => {
                self.last_ids.insert(key.to_owned(), id);
                self.learn(&event);
                if let IssueChange::RunFinished { run_id, .. } = &event.change {
                    let awaited = self
                        .awaited
                        .get_mut(key)
                        .is_some_and(|runs| runs.remove(run_id));
                    if self.scope != Scope::Issues {
                        self.ended.insert(run_id.clone());
                    }
                    if live || awaited {
                        self.tell_run_end(&event).await?;
                    }
                    self.let_go_if_done(key);
                }
            }
        }
        Ok(())
    }

    /// Following the whole workspace, an issue's feed is let go once it is live and has shown
    /// the end of every run whose end was awaited; the workspace's feed follows it again,
    /// from there, when its next run starts.
    fn let_go_if_done(&mut self, key: &str) {
        let done = self.scope != Scope::Issues
            && self.issues.get(key).is_some_and(|f| f.live)
            && self.awaited.get(key).is_none_or(HashSet::is_empty);
        if done {
            self.issues.remove(key);
            self.awaited.remove(key);
            self.lost.remove(&Feed::Issue(key.to_owned()));
        }
    }

    /// Titles and providers, for the notices.
    fn learn(&mut self, event: &IssueEvent) {
        match &event.change {
            IssueChange::Created { title }
            | IssueChange::Edited {
                title: Some(title), ..
            } => {
                self.titles.insert(event.issue_key.clone(), title.clone());
            }
            IssueChange::RunStarted { run_id, provider } => {
                self.providers.insert(run_id.clone(), provider.clone());
            }
            _ => {}
        }
    }

    /// Once, when every feed followed from the start is past its history.
    fn say_ready(&mut self) {
        if self.ready_said {
            return;
        }
        let what = match self.scope {
            Scope::Workspace { live: true } => "the workspace".to_owned(),
            Scope::Workspace { live: false } => return,
            Scope::Issues if self.issues.values().all(|f| f.live) => {
                let mut keys: Vec<&str> = self.issues.keys().map(String::as_str).collect();
                keys.sort_unstable();
                keys.join(", ")
            }
            Scope::Issues => return,
        };
        self.ready_said = true;
        wujie_process::stderr_line!(
            "wujie: following {what}: run ends and questions are told ({}) until Ctrl+C",
            self.notifier.describe()
        );
    }

    async fn title(&mut self, key: &str) -> String {
        if let Some(title) = self.titles.get(key) {
            return title.clone();
        }
        // An issue whose creation the feed did not show; without its title the notice is
        // still worth telling.
        let title = self
            .client
            .get_issue(key)
            .await
            .map(|issue| issue.title)
            .unwrap_or_default();
        self.titles.insert(key.to_owned(), title.clone());
        title
    }

    async fn tell_run_end(&mut self, event: &IssueEvent) -> Result<()> {
        let IssueChange::RunFinished {
            run_id,
            status,
            exit_code,
            error,
        } = &event.change
        else {
            return Ok(());
        };
        let provider = self.providers.get(run_id).map(String::as_str);
        let text = notice::run_ended(run_id, provider, *status, error.as_deref());
        let notice = Notice {
            issue: event.issue_key.clone(),
            title: self.title(&event.issue_key).await,
            run_id: run_id.clone(),
            what: What::RunEnded {
                status: *status,
                exit_code: *exit_code,
                error: error.clone(),
            },
            text,
        };
        self.notifier.tell(&notice)
    }

    async fn tell_question(&mut self, key: &str, event: &RunMessageEvent) -> Result<()> {
        let question = event.message.content.clone().unwrap_or_default();
        let notice = Notice {
            issue: key.to_owned(),
            title: self.title(key).await,
            run_id: event.run_id.clone(),
            text: notice::question(&question),
            what: What::Question { question },
        };
        self.notifier.tell(&notice)
    }
}
