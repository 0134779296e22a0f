//! The MCP server: `commondev_branch_{open,prompt,state,close,list}` over stdio, each answering
//! one JSON document as text. It is long-lived, so branch sidecars stay alive between calls.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use wujie_protocol::error_text::with_causes;

use crate::sessions::{BranchSessions, OpenRequest};

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct OpenArgs {
    /// Project name.
    pub project: String,
    /// Branch name (e.g. `feat/a`).
    pub branch: String,
    /// Agent CLI: the name of a driver directory `runtime/<agent_cli>/` (e.g. `pi`).
    pub agent_cli: String,
    /// Working directory of the agent (on the remote host for ssh runtimes).
    pub workdir: String,
    /// Issue this branch works on, kept with the branch.
    #[serde(default)]
    pub issue: Option<String>,
    /// `local` (default) or `ssh://[user@]host[:port]`.
    #[serde(default)]
    pub runtime: Option<String>,
    /// Work in `workdir` itself rather than in the branch's own git worktree (made when
    /// `workdir` is in a local git repository).
    #[serde(default)]
    pub no_worktree: bool,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct PromptArgs {
    pub project: String,
    pub branch: String,
    /// The message to send to the branch's agent.
    pub text: String,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct BranchArgs {
    pub project: String,
    pub branch: String,
}

#[derive(Clone)]
pub struct CommondevServer {
    sessions: Arc<BranchSessions>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for CommondevServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommondevServer")
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

/// Runs a tool call until it finishes or the client cancels it (`notifications/cancelled`, or
/// the connection ends): dropping the call drops the sidecar it holds, which stops that
/// sidecar's process tree (the branch's next call starts a fresh one on the same session).
async fn answer<T: Serialize>(
    ct: CancellationToken,
    call: impl Future<Output = crate::error::Result<T>>,
) -> CallToolResult {
    let result = tokio::select! {
        result = call => result,
        () = ct.cancelled() => {
            return CallToolResult::error(vec![ContentBlock::text(
                serde_json::json!({"ok": false, "error": "cancelled by the client; the branch's sidecar was stopped"})
                    .to_string(),
            )]);
        }
    };
    match result {
        Ok(value) => CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string(&value).unwrap_or_default(),
        )]),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(
            serde_json::json!({"ok": false, "error": with_causes(&error)}).to_string(),
        )]),
    }
}

#[tool_router]
impl CommondevServer {
    pub fn new(sessions: Arc<BranchSessions>) -> Self {
        Self {
            sessions,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Open (or re-open, resuming its backend session) a project branch driven by an agent CLI chosen by its driver.json."
    )]
    async fn commondev_branch_open(
        &self,
        Parameters(args): Parameters<OpenArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        answer(
            ct,
            self.sessions.open(OpenRequest {
                project: args.project,
                branch: args.branch,
                agent_cli: args.agent_cli,
                workdir: PathBuf::from(args.workdir),
                issue: args.issue,
                runtime: args.runtime,
                no_worktree: args.no_worktree,
            }),
        )
        .await
    }

    #[tool(description = "Send a prompt to the branch's agent session and return its reply.")]
    async fn commondev_branch_prompt(
        &self,
        Parameters(args): Parameters<PromptArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        answer(
            ct,
            self.sessions
                .prompt(&args.project, &args.branch, &args.text),
        )
        .await
    }

    #[tool(description = "Return the branch's session id and its messages.")]
    async fn commondev_branch_state(
        &self,
        Parameters(args): Parameters<BranchArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        answer(ct, self.sessions.state(&args.project, &args.branch)).await
    }

    #[tool(description = "Close the branch's sidecar; the branch can be opened again to resume.")]
    async fn commondev_branch_close(
        &self,
        Parameters(args): Parameters<BranchArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        answer(ct, self.sessions.close(&args.project, &args.branch)).await
    }

    #[tool(description = "List known branches with their session ids and status.")]
    async fn commondev_branch_list(&self) -> CallToolResult {
        let list = self
            .sessions
            .list()
            .map(|branches| serde_json::json!({"branches": branches}));
        answer(CancellationToken::new(), std::future::ready(list)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CommondevServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "wujie-commondev",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "One agent session per project branch. Open a branch with an agent CLI (a driver \
                 name such as `pi`), then prompt it; re-opening resumes the same backend session.",
            )
    }
}

/// Error of the MCP transport itself.
#[derive(Debug, thiserror::Error)]
#[error("MCP server: {0}")]
pub struct McpError(String);

/// Serves the tools on any transport until the client disconnects, then closes every sidecar.
pub async fn serve<T, E, A>(sessions: Arc<BranchSessions>, transport: T) -> Result<(), McpError>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let server = CommondevServer::new(sessions.clone());
    let running = server
        .serve(transport)
        .await
        .map_err(|e| McpError(e.to_string()));
    let result = match running {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| McpError(e.to_string())),
        Err(e) => Err(e),
    };
    sessions.shutdown().await;
    result
}

/// Serves the tools on this process's stdin/stdout.
pub async fn serve_stdio(sessions: Arc<BranchSessions>) -> Result<(), McpError> {
    serve(sessions, rmcp::transport::stdio()).await
}
