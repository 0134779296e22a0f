//! `wujie server` with its default settings holds no connection for ever and stops on SIGTERM
//! even while a client has a request half sent. Real TCP clients on 127.0.0.1; the waits are
//! generous bounds for a condition, not timing assertions.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use wujie_testkit::*;

/// Far past the server's own timeouts (30 s for headers, 5 s of shutdown grace).
const GENEROUS: Duration = Duration::from_secs(150);

/// Blocks until the server closes `stream`; panics if it still holds it after `GENEROUS`.
fn until_closed(stream: &mut TcpStream) {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("read timeout");
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
        assert!(
            started.elapsed() < GENEROUS,
            "the server still holds the connection after {GENEROUS:?}"
        );
    }
}

#[test]
fn the_server_drops_silent_connections_and_stops_on_sigterm_despite_a_half_open_client() {
    let env = Env::new();
    let mut server = Server::start(&env, &[]);
    let token = env.ok(&["token", "create"]).trim().to_owned();
    let addr = server.url.trim_start_matches("http://").to_owned();

    let mut silent = TcpStream::connect(&addr).expect("connect");
    let mut half_open = TcpStream::connect(&addr).expect("connect");
    write!(
        half_open,
        "POST /api/v1/issues HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"ti"
    )
    .expect("partial request");
    until_closed(&mut silent);

    let pid = i32::try_from(server.child.id()).expect("pid");
    assert!(signal_pid(pid, nix::sys::signal::Signal::SIGTERM));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < GENEROUS,
            "wujie server did not stop within {GENEROUS:?} of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
    until_closed(&mut half_open);
}

#[test]
fn the_connection_limits_are_set_with_flags_and_a_share_above_the_whole_is_refused() {
    let env = Env::new();
    let server = Server::start(
        &env,
        &[
            "--max-connections",
            "8",
            "--max-connections-per-address",
            "2",
        ],
    );
    let addr = server.url.trim_start_matches("http://").to_owned();
    let held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(&addr).expect("connect"))
        .collect();
    // The two held ones are accepted before the third, which is refused in words and closed.
    let mut third = TcpStream::connect(&addr).expect("connect");
    third
        .set_read_timeout(Some(GENEROUS))
        .expect("read timeout");
    let mut answer = String::new();
    third.read_to_string(&mut answer).expect("the refusal");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.contains("too many connections from your address: at most 2"),
        "{answer}"
    );
    drop(held);

    let refused = env.fails(&[
        "server",
        "--listen",
        "127.0.0.1:0",
        "--max-connections",
        "4",
        "--max-connections-per-address",
        "8",
    ]);
    assert_eq!(
        refused.trim(),
        "wujie: error: --max-connections-per-address 8 is more than --max-connections 4; one \
         address can never hold more connections than the server serves"
    );
}
