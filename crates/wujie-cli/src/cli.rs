//! Command-line definitions (with `cli_docs`, which generates completions and manual pages from
//! them, the only modules that know clap).

use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "wujie",
    version = env!("WUJIE_VERSION"),
    about = "An issue tracker whose issues are worked on by coding agents in your own terminal",
    after_help = "Start with `wujie demo`. Everything lives in the profile's files (WUJIE_HOME when set)."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Parses the command line. A mistake the habits of other tools lead to is answered with what
/// to write here instead, as a tip under clap's own message.
pub fn parse() -> Cli {
    Cli::try_parse().unwrap_or_else(|error| with_tip(error).exit())
}

fn with_tip(mut error: clap::Error) -> clap::Error {
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(text)) => text.clone(),
        _ => String::new(),
    };
    let (subcommand, arg) = (
        text(ContextKind::InvalidSubcommand),
        text(ContextKind::InvalidArg),
    );
    let usage = match error.get(ContextKind::Usage) {
        Some(ContextValue::StyledStr(usage)) => usage.to_string(),
        _ => String::new(),
    };
    let tip = match error.kind() {
        ErrorKind::InvalidSubcommand if subcommand == "view" && usage.contains("wujie issue") => {
            "to see an issue, use `wujie issue show KEY`".to_owned()
        }
        ErrorKind::InvalidSubcommand
            if subcommand == "view" && usage.contains("wujie discussion") =>
        {
            "to see a discussion, use `wujie discussion show ID`".to_owned()
        }
        ErrorKind::UnknownArgument if arg == "--json" || arg.starts_with("--json=") => {
            "to print JSON, use `--output json`".to_owned()
        }
        ErrorKind::UnknownArgument if !arg.starts_with('-') && usage.contains("wujie run ") => {
            format!("put `--` before the provider: `wujie run ISSUE -- {arg}`")
        }
        ErrorKind::UnknownArgument if !arg.starts_with('-') && usage.contains("wujie discuss ") => {
            format!("put `--` before the provider: `wujie discuss -- {arg}`")
        }
        _ => return error,
    };
    error.insert(
        ContextKind::Suggested,
        ContextValue::StyledStrs(vec![tip.into()]),
    );
    error
}

#[derive(Debug, Args)]
pub struct Global {
    /// Output format: text for people, json for scripts (one JSON document on stdout).
    #[arg(long, global = true, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Profile to use (its own config, credentials and database).
    #[arg(long, global = true, env = "WUJIE_PROFILE", default_value = "default")]
    pub profile: String,
    /// Talk to this Wujie server instead of the profile's default. Replicas of one team
    /// server as URL,URL,…: a replica that does not answer is skipped.
    #[arg(long, global = true)]
    pub server: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, list and show issues.
    #[command(subcommand)]
    Issue(IssueCommand),
    /// Run a provider (agent adapter) on an issue and sync what it does into the issue.
    #[command(after_help = "Example: wujie run WUJ-12 -- fake-provider --model demo")]
    Run(RunArgs),
    /// List the jobs queued with `wujie issue assign`, newest first.
    #[command(after_help = "Example: wujie jobs --status queued --status running")]
    Jobs(JobsArgs),
    /// Take queued jobs and run their agents on this machine, as `wujie run` does.
    #[command(
        after_help = "Ctrl+C stops taking jobs and lets the running ones finish; a second Ctrl+C \
                      cancels them and gives them back to the queue. With --output json, one \
                      JSON object per line on stdout for each job started and ended: \
                      {\"event\": \"started\" | \"ended\", \"job_id\", \"issue_key\", …}.\n\
                      Example: wujie worker --repo ~/src/app --max-jobs 4 --label build-box"
    )]
    Worker(WorkerArgs),
    /// Queue the issue's latest job again (or the job given), as it was asked for.
    #[command(after_help = "Example: wujie rerun WUJ-12")]
    Rerun {
        /// The issue key (e.g. WUJ-12).
        key: String,
        /// This job of the issue instead of its latest.
        #[arg(long, value_name = "ID")]
        job: Option<String>,
    },
    /// Plan with a v2 provider before an issue exists; promote the plan into an issue in place.
    #[command(after_help = "Example: wujie discuss -- grok")]
    Discuss(DiscussArgs),
    /// List, show and promote discussions.
    #[command(subcommand)]
    Discussion(DiscussionCommand),
    /// Local-run providers and the delivery outbox.
    #[command(name = "local-run", subcommand)]
    LocalRun(LocalRunCommand),
    /// Serve the profile's database over HTTP (loopback by default).
    Server(ServerArgs),
    /// Token usage and cost across the workspace, per provider and model.
    Cost,
    /// Mint API tokens for other machines.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Store a remote server and its token in the profile.
    Login(LoginArgs),
    /// Create and list profiles (each its own config, credentials and database).
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// commondev: one headless agent session per project branch.
    #[command(subcommand)]
    Branch(crate::commands::branch::BranchCommand),
    /// Serve the commondev tools over MCP on stdin/stdout (for an orchestrating agent).
    Mcp,
    /// Create an issue, install the bundled fake provider, run it and show the synced transcript.
    Demo,
    /// Open the web UI: serves the profile's database on loopback, prints a one-time login
    /// link and opens it in a browser when there is a display. Stays up until Ctrl+C.
    Ui(UiArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    #[command(
        after_help = "Example: wujie completions bash > ~/.local/share/bash-completion/completions/wujie\n\
                            \x20        wujie completions zsh > \"${fpath[1]}/_wujie\""
    )]
    Completions {
        /// The shell the script is for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (wujie.1), or write one per command into a directory.
    #[command(after_help = "Example: wujie man --dir ~/.local/share/man/man1 && man wujie-run")]
    Man {
        /// Write wujie.1 and a page per command (wujie-issue-list.1, …) into this directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Tell you when a run ends or an agent asks a question, as it happens: a line, the
    /// terminal's bell and a desktop notification. The whole workspace, or only the issues named.
    #[command(
        after_help = "Runs until Ctrl+C; what happened before it started is not told. \
                      The desktop notification is notify-send's (with a graphical session) or \
                      osascript's (macOS); --command, or `notify_command` in config.json, runs \
                      yours instead, through sh, with WUJIE_NOTIFY_TITLE, WUJIE_NOTIFY_BODY and \
                      WUJIE_NOTIFY_ISSUE set. With --output json, one JSON object per line \
                      (NDJSON) and no bell.\n\
                      Example: wujie notify WUJ-12 --command 'logger \"$WUJIE_NOTIFY_BODY\"'"
    )]
    Notify(NotifyArgs),
    /// The issues' worktrees that `wujie run --worktree` made in this repository.
    #[command(subcommand)]
    Worktree(WorktreeCommand),
    /// Run a built-in provider's adapter (what `wujie run` starts; prints NDJSON events).
    #[command(hide = true)]
    Adapter(AdapterArgs),
    /// Wait for the end of standard input, then end the processes that carry a mark of the
    /// `wujie` that started this guard (what `wujie run` starts; see `wujie_process::marks`).
    #[command(name = "process-guard", hide = true)]
    ProcessGuard {
        /// The marks' prefix of the guarded `wujie`.
        prefix: String,
    },
}

/// `NAME ARGS…` as one list: once the name is read, everything after it (even `--output`,
/// `--help` or `--`) belongs to the provider's agent, not to `wujie`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct AdapterArgs {
    /// The built-in provider, then the arguments for its agent.
    #[arg(
        value_name = "NAME [ARGS]",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub name_and_args: Vec<String>,
}

/// Issues `issue list` shows unless told otherwise, as many as `gh issue list` does.
pub const DEFAULT_ISSUE_LIST: u32 = 30;

#[derive(Debug, Subcommand)]
pub enum IssueCommand {
    /// Create an issue.
    #[command(
        after_help = "Example: wujie issue create -t \"Fix the flaky test\" -b \"It fails one run in ten.\""
    )]
    Create {
        #[arg(short, long)]
        title: String,
        #[arg(short = 'b', long, visible_alias = "body", default_value = "")]
        description: String,
    },
    /// List issues, newest first: the newest 30 unless --limit or --all says otherwise.
    #[command(after_help = "Example: wujie issue list -s open -S parser -L 20")]
    List {
        /// Only issues with this status.
        #[arg(short, long, value_parser = ["open", "in_progress", "done", "closed"])]
        status: Option<String>,
        /// Text to find in titles, descriptions and comments (case-insensitive).
        #[arg(short = 'S', long)]
        search: Option<String>,
        /// At most this many issues (1 to 1000).
        #[arg(
            short = 'L',
            long,
            default_value_t = DEFAULT_ISSUE_LIST,
            value_parser = clap::value_parser!(u32).range(1..=1000),
            conflicts_with = "all"
        )]
        limit: u32,
        /// Every issue that matches, up to the server's most (1000).
        #[arg(long)]
        all: bool,
    },
    /// Show an issue with its comments and runs.
    Show {
        key: String,
        /// Only the last N messages of each run's transcript.
        #[arg(long, value_name = "N")]
        tail: Option<usize>,
        /// Print straight to the terminal, not through the pager ($WUJIE_PAGER, $PAGER or
        /// less) used when stdout is a terminal.
        #[arg(long)]
        no_pager: bool,
    },
    /// Print what a run changed in the code as a patch that `git apply` accepts on the run's
    /// base (the files as they were when the run started).
    Diff {
        key: String,
        /// The run (default: the issue's latest run that recorded code changes).
        #[arg(long)]
        run: Option<String>,
        /// Only what turn N changed (the Nth final reply of the run, from 1): a patch `git
        /// apply` accepts on the files as they were after the turn before.
        #[arg(long, value_name = "N")]
        turn: Option<u32>,
        /// Only the list of files, with their added and deleted lines.
        #[arg(long)]
        stat: bool,
    },
    /// Comment on an issue: TEXT, or `-` (or no TEXT with input piped in) to read stdin, or
    /// no TEXT on a terminal to write it in $EDITOR.
    Comment { key: String, text: Option<String> },
    /// Change an issue's title and/or description.
    Edit {
        key: String,
        #[arg(short, long)]
        title: Option<String>,
        #[arg(short = 'b', long, visible_alias = "body")]
        description: Option<String>,
    },
    /// Close an issue as done (or, with --not-planned, as closed without being done).
    Close {
        key: String,
        #[arg(long)]
        not_planned: bool,
    },
    /// Reopen a done or closed issue.
    Reopen { key: String },
    /// List an issue's runs.
    Runs { key: String },
    /// Follow an issue live: its runs' messages, comments, status and usage, until its runs end.
    #[command(
        after_help = "With --output json, one JSON object per line (NDJSON), as they arrive: \
                      {\"event\": \"message\" | \"issue\", \"id\": …, \"data\": …}, and \
                      {\"event\": \"live\"} once the history is replayed.\n\
                      Example: wujie issue watch WUJ-12 --next"
    )]
    Watch {
        key: String,
        /// When no run of the issue is running, wait for the next one to start, then follow it
        /// to its end (without it, watch ends at once).
        #[arg(long)]
        next: bool,
    },
    /// Cancel the issue's running runs (or the one --run names), wherever they run.
    ///
    /// A `wujie run` on any machine stops its agent within seconds, as Ctrl+C would, and
    /// records the run as cancelled, naming who cancelled it.
    #[command(after_help = "Example: wujie issue cancel WUJ-12")]
    Cancel {
        key: String,
        /// Only this run (default: every running run of the issue).
        #[arg(long)]
        run: Option<String>,
    },
    /// Queue a run of an agent on the issue, for a `wujie worker` to take.
    #[command(
        after_help = "The provider must work without a terminal: pi, acp (the ACP agent's command \
                      after `--`), or a plugin whose provider.json says \"interactive_pty\": \
                      false. Its arguments go after `--`; the task reaches pi and acp as `-p \
                      TASK`, a plugin in WUJIE_TASK_PROMPT.\n\
                      Example: wujie issue assign WUJ-12 --agent pi -- --model sonnet\n\
                      \x20        wujie issue assign WUJ-12 --agent acp -- --allow once -- gemini --acp"
    )]
    Assign(AssignArgs),
}

#[derive(Debug, Args)]
pub struct AssignArgs {
    /// The issue key (e.g. WUJ-12).
    pub key: String,
    /// The provider that runs the agent (e.g. pi).
    #[arg(long, value_name = "PROVIDER")]
    pub agent: String,
    /// The agent's task (default: the issue's title and description when the job starts).
    #[arg(long)]
    pub prompt: Option<String>,
    /// Only a worker started with `--label LABEL` takes it.
    #[arg(long, value_name = "LABEL")]
    pub worker: Option<String>,
    /// Arguments for the provider, as after `wujie run KEY -- PROVIDER`.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// Jobs `wujie jobs` shows unless told otherwise.
pub const DEFAULT_JOB_LIST: u32 = 30;

#[derive(Debug, Args)]
pub struct JobsArgs {
    /// Only the jobs of this issue.
    #[arg(long, value_name = "KEY")]
    pub issue: Option<String>,
    /// Only jobs with this status (repeat for several).
    #[arg(short, long, value_parser = ["queued", "running", "succeeded", "failed", "cancelled"])]
    pub status: Vec<String>,
    /// At most this many, newest first (1 to 1000).
    #[arg(
        short = 'L',
        long,
        default_value_t = DEFAULT_JOB_LIST,
        value_parser = clap::value_parser!(u32).range(1..=1000)
    )]
    pub limit: u32,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Take jobs queued for this label too (repeat for several); jobs without a label are
    /// always taken.
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Run at most this many jobs at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_jobs: u32,
    /// The git repository whose issue worktrees the agents work in (default: the current
    /// directory). Outside a git repository the agents work in the directory itself.
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Only these providers (repeat for several; default: every installed provider that
    /// works without a terminal).
    #[arg(long = "provider", value_name = "PROVIDER")]
    pub providers: Vec<String>,
    /// How the worker is shown on jobs (default: HOST:PID).
    #[arg(long)]
    pub name: Option<String>,
    /// Seconds a job stays this worker's without news from it; after that, another worker
    /// takes it again.
    #[arg(long, value_name = "SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u32).range(3..=3600))]
    pub lease: u32,
    /// Stop once no job is running and none waits (for scripts and cron).
    #[arg(long)]
    pub exit_when_idle: bool,
}

impl IssueCommand {
    /// The issue the command names, if it names one.
    pub fn key(&self) -> Option<&str> {
        match self {
            IssueCommand::Create { .. } | IssueCommand::List { .. } => None,
            IssueCommand::Show { key, .. }
            | IssueCommand::Diff { key, .. }
            | IssueCommand::Comment { key, .. }
            | IssueCommand::Edit { key, .. }
            | IssueCommand::Close { key, .. }
            | IssueCommand::Reopen { key }
            | IssueCommand::Runs { key }
            | IssueCommand::Watch { key, .. }
            | IssueCommand::Assign(AssignArgs { key, .. })
            | IssueCommand::Cancel { key, .. } => Some(key),
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The issue key (e.g. WUJ-12) or id.
    pub issue: String,
    /// Give up waiting for undelivered events after this many seconds without progress; they
    /// stay in the outbox for `wujie local-run sync`.
    #[arg(long, default_value_t = 15)]
    pub drain_timeout: u64,
    /// The provider, then the arguments passed to its adapter.
    #[arg(last = true, required = true, num_args = 1..)]
    pub provider_and_args: Vec<String>,
    /// Write delivery statistics (JSON) to this file when done (used by benchmarks).
    #[arg(long, hide = true)]
    pub stats_file: Option<PathBuf>,
    /// Run the agent in the issue's own git worktree, on branch `wujie/<key>` (made on the
    /// first run, reused after), so that agents on other issues and your checkout are untouched.
    #[arg(long)]
    pub worktree: bool,
    /// What a new worktree's branch starts from (default: the current branch).
    #[arg(long, value_name = "REF", requires = "worktree")]
    pub base: Option<String>,
    /// The job attempt (ID:ATTEMPT) this run is for (what `wujie worker` starts).
    #[arg(long, hide = true, value_name = "ID:ATTEMPT")]
    pub job: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum WorktreeCommand {
    /// List the issue worktrees of the repository of the current directory.
    List,
    /// Remove an issue's worktree (refused while it holds uncommitted changes).
    #[command(after_help = "Example: wujie worktree remove WUJ-12 --delete-branch")]
    Remove {
        /// The issue key (e.g. WUJ-12).
        key: String,
        /// Remove it even with uncommitted changes, which are lost.
        #[arg(long)]
        force: bool,
        /// Delete its branch `wujie/<key>` too (kept by default: it holds the agent's commits).
        #[arg(long)]
        delete_branch: bool,
    },
}

#[derive(Debug, Args)]
pub struct DiscussArgs {
    /// Continue this open discussion (its id stays the adapter's WUJIE_LOCALRUN_SESSION_ID).
    #[arg(long)]
    pub resume: Option<String>,
    /// How to answer a provider's native plan handoff: ask on the terminal, or decide up front.
    #[arg(long, value_enum, default_value_t = Confirm::Ask)]
    pub confirm: Confirm,
    /// Give up waiting for undelivered events after this many seconds without progress.
    #[arg(long, default_value_t = 15)]
    pub drain_timeout: u64,
    #[command(flatten)]
    pub worktree: PromotionWorktree,
    /// The provider (v2), then the arguments passed to its adapter.
    #[arg(last = true, required = true, num_args = 1..)]
    pub provider_and_args: Vec<String>,
}

/// Whether a discussion promoted into an issue gets the issue's git worktree.
#[derive(Debug, Args)]
pub struct PromotionWorktree {
    /// When the discussion becomes an issue, make the issue's own git worktree (branch
    /// `wujie/<key>`, as `wujie run KEY --worktree` makes it) and say where it is; must be run
    /// inside the repository.
    #[arg(long)]
    pub worktree: bool,
    /// What the worktree's branch starts from (default: the current branch).
    #[arg(long, value_name = "REF", requires = "worktree")]
    pub base: Option<String>,
}

impl PromotionWorktree {
    /// These flags as given on the command line (` --worktree --base REF`, or nothing), for a
    /// command to suggest.
    pub fn flags(&self) -> String {
        match (&self.worktree, &self.base) {
            (false, _) => String::new(),
            (true, None) => " --worktree".to_owned(),
            (true, Some(base)) => format!(" --worktree --base {}", crate::output::inline(base)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Confirm {
    Ask,
    Accept,
    Reject,
}

#[derive(Debug, Subcommand)]
pub enum DiscussionCommand {
    /// List discussions, newest first.
    List,
    /// Show a discussion with its entries and native session ids.
    Show { id: String },
    /// Turn a discussion whose adapter is no longer running into an issue.
    Promote {
        id: String,
        /// Use this title instead of the one taken from the plan.
        #[arg(long)]
        title: Option<String>,
        #[command(flatten)]
        worktree: PromotionWorktree,
    },
}

#[derive(Debug, Subcommand)]
pub enum LocalRunCommand {
    /// Install, list, enable, disable and remove providers.
    #[command(subcommand)]
    Provider(ProviderCommand),
    /// Deliver every pending outbox event of this profile (all runs).
    Sync {
        /// Also retry events the server refused before.
        #[arg(long)]
        retry_failed: bool,
        /// Give up after this many seconds without progress.
        #[arg(long, default_value_t = 30)]
        idle_timeout: u64,
    },
    /// Show runs with undelivered or refused events.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum ProviderCommand {
    /// Validate a plugin directory and copy it into the profile.
    Install { dir: PathBuf },
    /// List built-in and plugin providers.
    List,
    /// Enable a plugin.
    Enable { name: String },
    /// Disable a plugin (kept installed).
    Disable { name: String },
    /// Remove a plugin (its installed copy is deleted).
    Remove { name: String },
    /// Run the plugin checklist on a plugin directory: validate the manifest and command, run
    /// the adapter in a scratch profile as a run and a discussion would, report each rule.
    #[command(after_help = "Example: wujie local-run provider check ./my-plugin -- --model demo")]
    Check {
        dir: PathBuf,
        /// The longest one start of the adapter may take, in seconds.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
        /// A line the user types (repeatable, in order), for adapters that wait for input.
        #[arg(long = "input", value_name = "LINE")]
        input: Vec<String>,
        /// Arguments for the adapter, as after `wujie run ISSUE -- NAME`.
        #[arg(last = true)]
        args: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address to listen on. Binding beyond loopback exposes the API: use a token-protected
    /// network you trust.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub listen: String,
    /// Mark runs whose reporter has been silent this long (seconds) as failed.
    #[arg(long, default_value_t = 600)]
    pub stale_after: u64,
    /// Refuse single events larger than this many bytes.
    #[arg(long, default_value_t = 8 * 1024 * 1024)]
    pub max_event_bytes: usize,
    /// The database to serve: a postgres://USER:PASSWORD@HOST:PORT/DB URL (several servers
    /// may share one) or a SQLite file. Default: WUJIE_DATABASE_URL, else the profile config's
    /// `database`, else the profile's SQLite file.
    #[arg(long)]
    pub database: Option<String>,
    /// Most connections to a PostgreSQL database (each is a process on the database server;
    /// default 16). A request waits up to 10 s for a free one and is then answered 503, to be
    /// retried. PostgreSQL only.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub database_max_connections: Option<u32>,
    /// Most connections served at once; more wait until one closes.
    #[arg(long, value_name = "N", default_value_t = 1024,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Most connections from one address at once (default: a quarter of --max-connections);
    /// more are refused. Behind a load balancer every client has the balancer's address:
    /// raise it to --max-connections there.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_address: Option<u32>,
    /// Most live feeds (web pages, `issue watch`) open at once with one token.
    #[arg(long, value_name = "N", default_value_t = 64,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub max_feeds_per_token: u32,
}

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Create a profile, to use with `--profile NAME` (or WUJIE_PROFILE).
    #[command(
        after_help = "Example: wujie profile create team && wujie --profile team login --server URL --token TOKEN"
    )]
    Create {
        /// The new profile's name: letters, digits, '-' and '_'.
        name: String,
    },
    /// The profiles there are.
    List,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Mint a user token (shown once) for `wujie login` on another machine.
    Create {
        /// Who or what it is for (a person, a laptop); `token list` shows it.
        #[arg(long, default_value = "cli")]
        name: String,
        /// Stop working after this long: a number and s, m, h, d or w (e.g. 30d, 12h).
        #[arg(long, value_parser = crate::commands::auth::parse_expiry)]
        expires: Option<std::time::Duration>,
    },
    /// The user tokens: names, created, last used, expiry, status (never the secrets).
    List,
    /// Revoke a token, by the id or the name `token list` shows; refused at once everywhere.
    Revoke {
        /// The token's id, or its name if no other token has it.
        token: String,
    },
}

/// `wujie login --server URL --token TOKEN` (the URL comes from the global `--server`).
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The token (or set WUJIE_LOGIN_TOKEN to keep it out of shell history).
    #[arg(long, env = "WUJIE_LOGIN_TOKEN", hide_env_values = true)]
    pub token: String,
}

#[derive(Debug, Args)]
pub struct UiArgs {
    /// Address to serve the UI on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
    /// Only print the login link; do not start a browser.
    #[arg(long)]
    pub no_browser: bool,
}

#[derive(Debug, Args)]
pub struct NotifyArgs {
    /// Issues to follow (keys such as WUJ-12); without any, every issue of the workspace.
    pub keys: Vec<String>,
    /// Do not ring the terminal's bell.
    #[arg(long)]
    pub no_bell: bool,
    /// Run this shell command for each notification instead of the desktop notifier.
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// No desktop notification and no command: only the line (and the bell).
    #[arg(long, conflicts_with = "command")]
    pub no_desktop: bool,
}
