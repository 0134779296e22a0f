//! The axum HTTP API under `/api/v1`: bearer-token auth with per-token scopes, the OpenAPI
//! document, and the stale-run sweeper. This is the only crate that knows HTTP routing.

mod auth;
mod error;
mod openapi;
mod routes;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use wujie_store::Store;

pub use openapi::openapi_document;

/// Largest request body accepted (a batch of events); bigger bodies get 413.
pub const MAX_BODY_BYTES: usize = wujie_protocol::limits::MAX_BATCH_BODY_BYTES;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// A running run whose reporter has not been heard from for this long is failed with
    /// "reporter stopped".
    pub stale_after: Duration,
    /// Largest serialized event accepted by ingest; bigger items are rejected one by one. The
    /// default is the reader's limit, so that whatever `wujie` read is stored.
    pub max_event_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            stale_after: Duration::from_secs(10 * 60),
            max_event_bytes: wujie_protocol::limits::MAX_EVENT_BYTES,
        }
    }
}

#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) store: Store,
    pub(crate) config: ServerConfig,
}

/// The whole API as a router (no sweeper; `serve` adds it).
pub fn router(store: Store, config: ServerConfig) -> Router {
    routes::router(AppState { store, config })
}

/// Serves the API on `listener` until `shutdown` resolves, running the stale-run sweeper
/// alongside.
pub async fn serve(
    listener: TcpListener,
    store: Store,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let sweeper = tokio::spawn(sweep_stale_runs(store.clone(), config.stale_after));
    let result = axum::serve(listener, router(store, config))
        .with_graceful_shutdown(shutdown)
        .await;
    sweeper.abort();
    result
}

/// How often the sweeper looks: often enough that a run is failed soon after it goes stale,
/// rarely enough to cost nothing.
fn sweep_interval(stale_after: Duration) -> Duration {
    (stale_after / 4).clamp(Duration::from_millis(50), Duration::from_secs(30))
}

async fn sweep_stale_runs(store: Store, stale_after: Duration) {
    let mut tick = tokio::time::interval(sweep_interval(stale_after));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match store.mark_stale_runs(stale_after).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(runs = n, "failed runs whose reporter stopped"),
            Err(e) => tracing::warn!(error = %e, "stale-run sweep failed"),
        }
    }
}

/// An in-process server on 127.0.0.1 with an ephemeral port, for the CLI's embedded mode and
/// for tests.
pub struct EmbeddedServer {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<io::Result<()>>,
}

impl std::fmt::Debug for EmbeddedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl EmbeddedServer {
    pub async fn start(store: Store, config: ServerConfig) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, store, config, async move {
            // A dropped sender also means stop.
            let _ = stopped.await;
        }));
        Ok(EmbeddedServer { addr, stop, task })
    }

    /// Base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets in-flight requests finish, and waits for the server to end.
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "embedded server ended with an error"),
            Err(e) => tracing::warn!(error = %e, "embedded server task failed"),
        }
    }
}
