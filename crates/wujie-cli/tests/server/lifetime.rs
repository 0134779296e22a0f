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
