//! Cancelling a run from anywhere, and the run's control state its reporter polls.

use reqwest::Method;
use wujie_protocol::api::{RunCancel, RunControl};

use crate::{Client, ClientError, segment};

impl Client {
    /// Asks for a run to be cancelled (a user token only); asking again answers the first
    /// request.
    pub async fn cancel_run(&self, run_id: &str) -> Result<RunCancel, ClientError> {
        let path = format!("/runs/{}/cancel", segment(run_id));
        self.call(Method::POST, &path, None).await
    }

    /// What the run's reporter is asked to do (whether someone cancelled the run).
    pub async fn run_control(&self, run_id: &str) -> Result<RunControl, ClientError> {
        let path = format!("/runs/{}/control", segment(run_id));
        self.call(Method::GET, &path, None).await
    }
}
