//! What one client may hold of the server: connections per peer address and live feeds per
//! token, over real TCP on 127.0.0.1 (a second peer address is 127.0.0.2, which Linux routes
//! to the loopback interface too). The waits are generous bounds for a condition, never timing
//! assertions.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use wujie_server::ServerConfig;

use super::harness::{Harness, eventually, status_of};

/// Far longer than answering a request takes: a request still unanswered then never will be.
const GENEROUS: Duration = Duration::from_secs(30);

/// A connection to `server` from the local address `from`.
async fn connect_from(from: &str, server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{from}:0").parse().expect("address"))
        .expect("bind the peer address");
    socket.connect(server).await.expect("connect")
}

/// What the server sent on `stream` before closing it; None while it holds it open.
fn answered_and_closed(stream: &mut TcpStream) -> Option<String> {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.try_read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&all).into_owned()),
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
            Err(e) => panic!("reading a refused connection: {e}"),
        }
    }
}

#[tokio::test]
async fn one_peers_idle_connections_leave_room_for_another_peers_request() {
    let h = Harness::with_config(ServerConfig {
        max_connections: 8,
        max_connections_per_peer: 2,
        // Nothing but the per-peer limit lets go of an idle connection during the test.
        header_read_timeout: Duration::from_secs(3600),
        ..ServerConfig::default()
    })
    .await;
    let addr = h.server.as_ref().expect("server running").addr();
    let mut hog = Vec::new();
    for _ in 0..20 {
        hog.push(connect_from("127.0.0.2", addr).await);
    }
    let mut other = connect_from("127.0.0.1", addr).await;
    other
        .write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("request");
    let mut answer = Vec::new();
    tokio::time::timeout(GENEROUS, other.read_to_end(&mut answer))
        .await
        .expect("another peer's request is answered while the first holds its connections")
        .expect("read the answer");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Every connection of the first peer was accepted before the other peer's: its share is
    // held, the rest were answered in words and closed.
    let refused: Vec<String> = hog.iter_mut().filter_map(answered_and_closed).collect();
    assert_eq!(refused.len(), 18, "{refused:?}");
    for text in &refused {
        assert!(text.starts_with("HTTP/1.1 503"), "{text}");
        assert!(
            text.contains("too many connections from your address: at most 2"),
            "{text}"
        );
    }
    h.stop().await;
}

#[tokio::test]
async fn a_token_over_its_live_feeds_is_answered_429_and_other_tokens_still_follow() {
    let h = Harness::with_config(ServerConfig {
        max_feeds_per_token: 3,
        ..ServerConfig::default()
    })
    .await;
    let issue = h.issue("followed a lot").await;
    let run = h.run_on(&issue.key).await;
    let adapter = h.client(&run.token);
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(
            adapter
                .follow_issue(&issue.key, None)
                .await
                .expect("a feed within the token's share"),
        );
    }
    let refused = adapter
        .follow_issue(&issue.key, None)
        .await
        .expect_err("one feed more than the token may have");
    assert_eq!(status_of(&refused), 429);
    let words = refused.to_string();
    assert!(
        words.contains("3 live feeds are open with this token already")
            && words.contains("close one"),
        "{words}"
    );
    let _admins = h
        .admin
        .follow_issue(&issue.key, None)
        .await
        .expect("another token's feed opens");
    // A feed closed gives its place back.
    open.pop();
    eventually("the closed feed's place to come free", || async {
        adapter.follow_issue(&issue.key, None).await.ok()
    })
    .await;
    h.stop().await;
}
