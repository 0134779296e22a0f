//! "There is no such issue", with the keys the workspace does have, nearest first, so that a
//! mistyped key is one look away from the right one.

use wujie_client::{Client, ClientError, StatusCode};
use wujie_protocol::api::IssueSummary;

use crate::output::inline;

/// How many keys the message suggests.
const SUGGESTED: usize = 3;

/// Whether `error` is the server saying that what was asked for does not exist.
pub fn is_not_found(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<ClientError>())
        .any(|e| e.status() == Some(StatusCode::NOT_FOUND))
}

/// The error for `key`, which names no issue of the workspace `client` talks to.
pub async fn error(client: &Client, key: &str) -> anyhow::Error {
    let key = key.to_ascii_uppercase();
    let key = inline(&key);
    let (Ok(workspace), Ok(issues)) = (client.workspace().await, client.list_issues().await) else {
        return anyhow::anyhow!(
            "no issue {key} in this workspace; `wujie issue list` shows the existing ones"
        );
    };
    let workspace = inline(&workspace.name);
    if issues.is_empty() {
        return anyhow::anyhow!(
            "no issue {key} in workspace {workspace}, which has no issues yet; create one with \
             `wujie issue create --title \"…\"`"
        );
    }
    let nearest = nearest_keys(&key, &issues).join(", ");
    anyhow::anyhow!(
        "no issue {key} in workspace {workspace}; the nearest keys: {nearest} (`wujie issue \
         list` shows them all)"
    )
}

/// The keys nearest to `key` by number (WUJ-12 is near WUJ-11), or the newest when `key` has
/// no number.
fn nearest_keys(key: &str, issues: &[IssueSummary]) -> Vec<String> {
    let mut keys: Vec<(u64, &str)> = issues
        .iter()
        .map(|issue| {
            let distance = match (number_of(key), number_of(&issue.key)) {
                (Some(wanted), Some(number)) => wanted.abs_diff(number),
                // The listing is newest first; a stable sort keeps that order.
                _ => 0,
            };
            (distance, issue.key.as_str())
        })
        .collect();
    keys.sort_by_key(|(distance, _)| *distance);
    keys.into_iter()
        .take(SUGGESTED)
        .map(|(_, key)| inline(key).into_owned())
        .collect()
}

fn number_of(key: &str) -> Option<u64> {
    key.rsplit('-').next()?.parse().ok()
}
