//! The axum HTTP API under `/api/v1`: bearer-token auth with per-token scopes, the OpenAPI
//! document, and the stale-run sweeper. This is the only crate that knows HTTP routing.

mod auth;
mod error;
mod openapi;
mod request_log;
mod routes;
mod sse;

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
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// A running run whose reporter has not been heard from for this long is failed with
    /// "reporter stopped".
    pub stale_after: Duration,
    /// Largest serialized event accepted by ingest; bigger items are rejected one by one.
    pub max_event_bytes: usize,
    /// Events a live-feed client may have queued; a client that lets its queue stay full for
    /// [`ServerConfig::slow_client_after`] is dropped (it may reconnect with Last-Event-ID).
    pub feed_queue: usize,
    pub slow_client_after: Duration,
    /// Counts the live feeds being served; clones share the count, so the embedder can read it.
    pub open_feeds: OpenFeeds,
}

/// The live feeds a server is serving: how many are open, and the signal that ends them all
/// when the server shuts down (a graceful shutdown waits for every open response).
#[derive(Debug, Clone)]
pub struct OpenFeeds(std::sync::Arc<FeedsState>);

#[derive(Debug)]
struct FeedsState {
    open: std::sync::atomic::AtomicUsize,
    closing: tokio::sync::watch::Sender<bool>,
}

impl Default for OpenFeeds {
    fn default() -> Self {
        OpenFeeds(std::sync::Arc::new(FeedsState {
            open: std::sync::atomic::AtomicUsize::new(0),
            closing: tokio::sync::watch::channel(false).0,
        }))
    }
}

impl OpenFeeds {
    pub fn count(&self) -> usize {
        self.0.open.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts one feed until the returned guard is dropped.
    pub(crate) fn open(&self) -> OpenFeed {
        self.0
            .open
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        OpenFeed(self.clone())
    }

    fn close_all(&self) {
        self.0.closing.send_replace(true);
    }

    /// Resolves once the server is shutting down.
    pub(crate) async fn closing(&self) {
        let mut closing = self.0.closing.subscribe();
        // An error means the sender is gone, which cannot happen while `self` holds it.
        let _ = closing.wait_for(|closing| *closing).await;
    }
}

pub(crate) struct OpenFeed(OpenFeeds);

impl Drop for OpenFeed {
    fn drop(&mut self) {
        (self.0)
            .0
            .open
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            stale_after: Duration::from_secs(10 * 60),
            max_event_bytes: 8 * 1024 * 1024,
            feed_queue: 256,
            slow_client_after: Duration::from_secs(10),
            open_feeds: OpenFeeds::default(),
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
        .layer(axum::middleware::from_fn(request_log::log_request))
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
    let feeds = config.open_feeds.clone();
    let result = axum::serve(listener, router(store, config))
        .with_graceful_shutdown(async move {
            shutdown.await;
            feeds.close_all();
        })
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
