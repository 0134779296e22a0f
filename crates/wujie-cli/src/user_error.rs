//! How a failed command reads to its user: sentences about issues, runs and servers. A request
//! to the server that failed is told by what it means to the user (which server, what to do),
//! never by its HTTP method, path or status; those go to the debug log (`WUJIE_LOG=debug`),
//! for whoever looks into the server itself.

use std::error::Error;
use std::sync::OnceLock;

use wujie_client::{ClientError, StatusCode};
use wujie_protocol::error_text::with_causes_shown_by;

/// The server this command talks to, when it is not the profile's embedded one: one per
/// process, as a command talks to one server.
static SERVER: OnceLock<String> = OnceLock::new();

/// Records the server this command talks to, for the messages of requests that fail.
pub fn talking_to(url: &str) {
    let _ = SERVER.set(url.to_owned());
}

/// `error` and its causes, each once (`error_text::with_causes`), with every failed request
/// told in the user's words.
pub fn text(error: &(dyn Error + 'static)) -> String {
    with_causes_shown_by(error, |e| match e.downcast_ref::<ClientError>() {
        Some(client) => client_error(client),
        None => e.to_string(),
    })
}

/// A failed request as the user can act on it.
pub fn client_error(error: &ClientError) -> String {
    tracing::debug!("request failed: {error}");
    let server = SERVER.get().map(String::as_str);
    let at = match server {
        Some(url) => format!("the server at {url}"),
        None => "the server".to_owned(),
    };
    match error {
        ClientError::InvalidUrl { .. } | ClientError::Build(_) => error.to_string(),
        ClientError::Network { timeout: true, .. } => format!(
            "{at} did not answer in time; check that it is running and reachable, or choose \
             another server with `--server URL`"
        ),
        ClientError::Network { .. } => format!(
            "cannot reach {at}; start it with `wujie server`, or choose another server with \
             `--server URL` (`wujie login --server URL` keeps it in the profile)"
        ),
        ClientError::Status {
            status, message, ..
        } => match *status {
            StatusCode::UNAUTHORIZED => format!(
                "{at} did not accept the token ({message}); sign in again with `wujie login \
                 --server {} --token TOKEN`",
                server.unwrap_or("URL")
            ),
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS => {
                format!("{at} is busy ({message}); try again in a moment")
            }
            status if status.is_server_error() => format!(
                "{at} failed ({message}); try again, and if it fails again see the server's log"
            ),
            // The server's own message says what was wrong with what was asked.
            _ => message.clone(),
        },
        ClientError::Decode { message, .. } => format!(
            "the server's answer cannot be read ({message}); is the server the same version as \
             this wujie (`wujie --version`)?"
        ),
    }
}
