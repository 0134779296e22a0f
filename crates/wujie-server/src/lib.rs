//! The axum HTTP API under `/api/v1`: bearer-token auth with per-token scopes, the OpenAPI
//! document, and the stale-run sweeper. This is the only crate that knows HTTP routing.

mod auth;
mod error;
mod fanout;
mod feed_queue;
mod openapi;
mod peers;
mod request_log;
mod ring;
mod routes;
mod sse;
mod web;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;

use axum::Router;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};
use tokio::task::{JoinHandle, JoinSet};
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
    /// A connection must deliver a request's complete headers within this long, counted from
    /// when it is ready for one: so it also bounds how long an idle keep-alive connection, or
    /// one trickling its headers byte by byte, is held.
    pub header_read_timeout: Duration,
    /// A request's body must arrive within this long (408 otherwise).
    pub body_read_timeout: Duration,
    /// Most connections held at once; more wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// Most connections one peer address holds at once; more are answered 503 and closed at
    /// once, so that one address cannot take every connection. Behind a reverse proxy every
    /// client is the proxy's address: raise it to `max_connections` there.
    pub max_connections_per_peer: usize,
    /// Most live feeds (API and web) open at once with one token, run tokens included; one
    /// more is answered 429.
    pub max_feeds_per_token: usize,
    /// After the shutdown signal, how long requests in flight get to finish before their
    /// connections are dropped (a half-open client must not hold the server up).
    pub shutdown_grace: Duration,
    /// Bytes of events (their entries' JSON) a live-feed client may have queued in the server;
    /// an event larger than that waits for an empty queue. A client that lets its queue stay
    /// full for [`ServerConfig::slow_client_after`] is dropped (it may reconnect with
    /// Last-Event-ID).
    pub feed_queue_bytes: usize,
    pub slow_client_after: Duration,
    /// How long a caught-up live feed waits for the store's change signal before it reads the
    /// store anyway. Only a safety net: the store signals every commit, other processes' too.
    pub reread_interval: Duration,
    /// Most bytes of entries (their JSON) an issue's relay keeps for the feeds that follow it
    /// live and have not taken them yet; a feed left further behind reads the store again.
    pub relay_bytes: usize,
    /// Counts the live feeds being served; clones share the count, so the embedder can read it.
    pub open_feeds: OpenFeeds,
    /// What usage costs, for the web UI (the profile's `prices` over the defaults).
    pub prices: wujie_protocol::pricing::PriceTable,
}

/// The live feeds a server is serving: how many are open, and the signal that ends them all
/// when the server shuts down (a graceful shutdown waits for every open response).
#[derive(Debug, Clone)]
pub struct OpenFeeds(std::sync::Arc<FeedsState>);

#[derive(Debug)]
struct FeedsState {
    open: std::sync::atomic::AtomicUsize,
    /// The feeds open with each token, by token id.
    by_token: std::sync::Mutex<std::collections::HashMap<String, usize>>,
    closing: tokio::sync::watch::Sender<bool>,
    access_changed: tokio::sync::watch::Sender<u64>,
}

impl Default for OpenFeeds {
    fn default() -> Self {
        OpenFeeds(std::sync::Arc::new(FeedsState {
            open: std::sync::atomic::AtomicUsize::new(0),
            by_token: std::sync::Mutex::default(),
            closing: tokio::sync::watch::channel(false).0,
            access_changed: tokio::sync::watch::channel(0).0,
        }))
    }
}

impl OpenFeeds {
    pub fn count(&self) -> usize {
        self.0.open.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts one feed opened with `token_id` until the returned guard is dropped; `None` when
    /// that token has `max_per_token` open already.
    pub(crate) fn open(&self, token_id: String, max_per_token: usize) -> Option<OpenFeed> {
        let mut by_token = self.by_token();
        let held = by_token.entry(token_id.clone()).or_default();
        if *held >= max_per_token.max(1) {
            return None;
        }
        *held += 1;
        self.0
            .open
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        drop(by_token);
        Some(OpenFeed {
            feeds: self.clone(),
            token_id,
        })
    }

    fn by_token(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, usize>> {
        self.0
            .by_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn close_all(&self) {
        self.0.closing.send_replace(true);
    }

    /// Says that a token was revoked or a browser session closed through this server, so that
    /// the feeds check now whether they may go on rather than at their next regular check.
    pub(crate) fn access_changed(&self) {
        self.0
            .access_changed
            .send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Changes whenever [`OpenFeeds::access_changed`] is called.
    pub(crate) fn access_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.access_changed.subscribe()
    }

    /// Resolves once the server is shutting down.
    pub(crate) async fn closing(&self) {
        let mut closing = self.0.closing.subscribe();
        // An error means the sender is gone, which cannot happen while `self` holds it.
        let _ = closing.wait_for(|closing| *closing).await;
    }
}

pub(crate) struct OpenFeed {
    feeds: OpenFeeds,
    token_id: String,
}

impl OpenFeed {
    /// The feeds this one is counted among.
    pub(crate) fn feeds(&self) -> &OpenFeeds {
        &self.feeds
    }
}

impl Drop for OpenFeed {
    fn drop(&mut self) {
        self.feeds
            .0
            .open
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        let mut by_token = self.feeds.by_token();
        if let Some(held) = by_token.get_mut(&self.token_id) {
            *held -= 1;
            if *held == 0 {
                by_token.remove(&self.token_id);
            }
        }
    }
}

const MAX_CONNECTIONS: usize = 1024;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            stale_after: Duration::from_secs(10 * 60),
            max_event_bytes: wujie_protocol::limits::MAX_EVENT_BYTES,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(120),
            max_connections: MAX_CONNECTIONS,
            // A quarter: three more such peers still leave room for everyone else.
            max_connections_per_peer: MAX_CONNECTIONS / 4,
            // Far more than a user's pages (one connection per browser) and watches use.
            max_feeds_per_token: 64,
            shutdown_grace: Duration::from_secs(5),
            // Two of the largest events: a client reading at all is never dropped for one.
            feed_queue_bytes: 2 * wujie_protocol::limits::MAX_EVENT_BYTES,
            slow_client_after: Duration::from_secs(10),
            reread_interval: Duration::from_secs(10),
            relay_bytes: 64 * 1024 * 1024,
            open_feeds: OpenFeeds::default(),
            prices: wujie_protocol::pricing::PriceTable::defaults(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) store: Store,
    pub(crate) config: ServerConfig,
    /// The web UI's unused login codes (its sessions are in the store).
    pub(crate) login_codes: web::LoginCodes,
    /// The relays of the issues followed live.
    pub(crate) fanout: fanout::Fanout,
}

/// The whole API as a router (no sweeper; `serve` adds it).
pub fn router(store: Store, config: ServerConfig) -> Router {
    let fanout = fanout::Fanout::new(config.reread_interval, config.relay_bytes);
    routes::router(AppState {
        store,
        config,
        login_codes: web::LoginCodes::default(),
        fanout,
    })
    .layer(axum::middleware::from_fn(request_log::log_request))
}

/// Serves the API on `listener` until `shutdown` resolves, running the stale-run sweeper
/// alongside. Then it stops accepting, gives requests in flight `shutdown_grace` to finish,
/// and drops whatever connections are left.
pub async fn serve(
    listener: TcpListener,
    store: Store,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let sweeper = tokio::spawn(sweep_stale_runs(store.clone(), config.stale_after));
    let feeds = config.open_feeds.clone();
    let app = router(store, config.clone());
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let peers = peers::PeerConnections::new(config.max_connections_per_peer);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        while connections.try_join_next().is_some() {}
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.map_err(io::Error::other)?,
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Refused before it is served: the slot goes to the next connection.
        let Some(peer) = peers.admit(peer.ip()) else {
            peers.refuse(stream);
            continue;
        };
        let app = app.clone();
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let mut app = app.clone();
            tower::Service::call(&mut app, req.map(axum::body::Body::new))
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        connections.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop((slot, peer));
        });
    }
    drop(listener);
    // Live feeds never end by themselves: they are told to, or the grace period would always
    // run out while one is open.
    feeds.close_all();
    if tokio::time::timeout(config.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            open = connections.len(),
            "requests still in flight after the shutdown grace period; dropping their connections"
        );
    }
    connections.shutdown().await;
    sweeper.abort();
    Ok(())
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
            Err(e) => {
                tracing::warn!(error = %wujie_protocol::error_text::with_causes(&e), "stale-run sweep failed")
            }
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

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_server;
#[cfg(test)]
#[path = "../tests/api/main.rs"]
mod suite;
