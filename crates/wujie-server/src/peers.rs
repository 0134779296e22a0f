//! Connections per peer address: one address (a client, a script gone wrong, someone slow on
//! purpose) may hold at most `max_connections_per_peer` of the server's connections, so that
//! it cannot take every slot and keep everyone else waiting in the listen backlog. A connection
//! over its address's share is answered 503 at once and closed, without taking a slot.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::net::TcpStream;

/// How many connections each peer address holds.
#[derive(Clone)]
pub(crate) struct PeerConnections {
    max: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection counted against its peer's share until dropped.
pub(crate) struct PeerConnection {
    peers: PeerConnections,
    ip: IpAddr,
}

impl PeerConnections {
    pub(crate) fn new(max_per_peer: usize) -> PeerConnections {
        PeerConnections {
            max: max_per_peer.max(1),
            open: Arc::default(),
        }
    }

    /// Counts a connection from `ip`, unless that address holds its share already.
    pub(crate) fn admit(&self, ip: IpAddr) -> Option<PeerConnection> {
        // An IPv4 client of a dual-stack listener is the same peer as over IPv4.
        let ip = ip.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let held = open.entry(ip).or_default();
        if *held >= self.max {
            return None;
        }
        *held += 1;
        Some(PeerConnection {
            peers: self.clone(),
            ip,
        })
    }

    /// Answers a connection over its peer's share with 503 and closes it. Best effort and never
    /// waiting: a new connection's send buffer is empty, and a peer that does not read the
    /// answer still sees the connection closed.
    pub(crate) fn refuse(&self, stream: TcpStream) {
        let body = serde_json::json!({
            "error": format!(
                "too many connections from your address: at most {} are served at once; close \
                 some (or reuse one) and try again",
                self.max
            ),
        })
        .to_string();
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.try_write(answer.as_bytes());
    }
}

impl Drop for PeerConnection {
    fn drop(&mut self) {
        let mut open = self
            .peers
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = open.get_mut(&self.ip) {
            *held -= 1;
            if *held == 0 {
                open.remove(&self.ip);
            }
        }
    }
}
