//! A TCP proxy in front of a server that loses one answer: the first request for which `lose`
//! holds (on the bytes the client sent in one read) goes on to the server, but instead of its
//! answer the client's connection is closed, as when a balancer or a replica dies after the
//! server committed. Every other request and answer passes.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the bytes a client sent are the request whose answer is to be lost.
type Matcher = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

pub struct LossyProxy {
    pub url: String,
    /// Whether the answer was lost (the request it belonged to reached the server).
    pub lost: Arc<AtomicBool>,
}

impl LossyProxy {
    pub fn start(
        upstream: &str,
        lose: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
    ) -> LossyProxy {
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy port");
        let url = format!("http://{}", listener.local_addr().expect("proxy address"));
        let lost = Arc::new(AtomicBool::new(false));
        let lost_once = lost.clone();
        let lose: Matcher = Arc::new(lose);
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                relay(client, server, lose.clone(), lost_once.clone());
            }
        });
        LossyProxy { url, lost }
    }
}

fn relay(client: TcpStream, server: TcpStream, lose: Matcher, lost_once: Arc<AtomicBool>) {
    let losing = Arc::new(AtomicBool::new(false));
    let (mut from_client, mut to_server) = (
        client.try_clone().expect("clone the client socket"),
        server.try_clone().expect("clone the server socket"),
    );
    let losing_here = losing.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n @ 1..) = from_client.read(&mut buf) {
            // Decided before the request goes on, so before its answer can come back.
            if lose(&buf[..n]) && !lost_once.swap(true, Ordering::SeqCst) {
                losing_here.store(true, Ordering::SeqCst);
            }
            if to_server.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to_server.shutdown(Shutdown::Write);
    });
    let (mut from_server, mut to_client) = (server, client);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        // The first bytes of the answer mean the server is done with the request.
        while let Ok(n @ 1..) = from_server.read(&mut buf) {
            if losing.load(Ordering::SeqCst) || to_client.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to_client.shutdown(Shutdown::Both);
        let _ = from_server.shutdown(Shutdown::Both);
    });
}
