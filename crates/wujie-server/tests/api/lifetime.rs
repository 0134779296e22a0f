//! How long the server holds a connection, and that shutdown is bounded: real TCP clients on
//! 127.0.0.1. The waits are generous bounds for a condition, never timing assertions.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wujie_server::{EmbeddedServer, ServerConfig};
use wujie_store::Store;

/// Far longer than any timeout configured here: the server must act well before.
const GENEROUS: Duration = Duration::from_secs(60);

fn quick() -> ServerConfig {
    ServerConfig {
        header_read_timeout: Duration::from_secs(1),
        body_read_timeout: Duration::from_secs(1),
        shutdown_grace: Duration::from_secs(1),
        ..ServerConfig::default()
    }
}

/// A server and a user token for it.
async fn start(config: ServerConfig) -> (tempfile::TempDir, EmbeddedServer, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("w.db")).await.expect("store");
    let token = store.create_user_token("t").await.expect("token").token;
    let server = EmbeddedServer::start(store, config).await.expect("server");
    (dir, server, token)
}

/// The start of a request to create an issue whose body of 1000 bytes never fully arrives.
fn partial_post(token: &str) -> Vec<u8> {
    format!(
        "POST /api/v1/issues HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"ti"
    )
    .into_bytes()
}

/// Reads until the server closes the connection; what it sent.
async fn until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(GENEROUS, stream.read(&mut buf)).await {
            Err(_) => panic!("the server still holds the connection after {GENEROUS:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => return all,
            Ok(Ok(n)) => all.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn idle_silent_and_trickling_connections_are_closed_by_the_server() {
    let (_dir, server, _) = start(quick()).await;
    let addr = server.addr();

    // Kept alive after an answered request, then idle.
    let mut idle = TcpStream::connect(addr).await.expect("connect");
    idle.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("request");
    // Connected and never a byte.
    let mut silent: Vec<TcpStream> = Vec::new();
    for _ in 0..50 {
        silent.push(TcpStream::connect(addr).await.expect("connect"));
    }
    // Headers one byte at a time, never finished.
    let mut trickling = TcpStream::connect(addr).await.expect("connect");
    let trickle = tokio::spawn(async move {
        for byte in b"GET /api/v1/health HTTP/1.1\r\nX-Slow: ".iter().cycle() {
            if trickling.write_all(&[*byte]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    });

    let answered = until_closed(&mut idle).await;
    assert!(
        String::from_utf8_lossy(&answered).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answered)
    );
    for stream in &mut silent {
        until_closed(stream).await;
    }
    let cut_off = tokio::time::timeout(GENEROUS, trickle)
        .await
        .expect("the trickling client is cut off")
        .expect("trickle task");
    assert!(cut_off);
    server.shutdown().await;
}

#[tokio::test]
async fn a_body_that_does_not_arrive_is_answered_408() {
    let (_dir, server, token) = start(quick()).await;
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    stream
        .write_all(&partial_post(&token))
        .await
        .expect("partial request");
    let answer = until_closed(&mut stream).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("did not arrive within 1 s"), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_even_with_a_half_open_request() {
    let (_dir, server, token) = start(ServerConfig {
        // Only the shutdown grace can end the half-open request.
        body_read_timeout: Duration::from_secs(3600),
        header_read_timeout: Duration::from_secs(3600),
        ..quick()
    })
    .await;
    let addr = server.addr();
    let mut half_open = TcpStream::connect(addr).await.expect("connect");
    half_open
        .write_all(&partial_post(&token))
        .await
        .expect("partial request");
    let mut idle = TcpStream::connect(addr).await.expect("connect");
    idle.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("request");
    // The request is in the handler, waiting for its body, before shutdown begins.
    let mut answered = [0u8; 12];
    idle.read_exact(&mut answered)
        .await
        .expect("health answered");
    tokio::time::timeout(GENEROUS, server.shutdown())
        .await
        .expect("shutdown completes");
    until_closed(&mut half_open).await;
    until_closed(&mut idle).await;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "nothing listens any more"
    );
}
