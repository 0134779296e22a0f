//! Why the terminal host could not start.

// Each cause is part of the message and so not also a `source()`: a chain printer would print
// it twice.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("could not switch the terminal to raw mode: {0}")]
    RawMode(std::io::Error),
    #[error("could not relay the adapter's terminal: {0}")]
    Relay(std::io::Error),
    #[error("signal handler: {0}")]
    Signal(std::io::Error),
}
