//! A run's transcript read in pieces bounded in bytes, never whole: a forward page after a
//! position (`GET /runs/{id}/messages`, what `wujie issue show` streams), and the latest
//! messages before a position (what an issue's or a run's answer and the issue page hold).
//!
//! Each read first scans the sizes of the candidate messages (their lengths only: both
//! SQLite and PostgreSQL answer `octet_length` of a stored text without reading it), decides
//! where the budget ends, and only then reads the messages up to there. So a read holds at
//! most its budget of message text, plus one message when the first alone is bigger.

use sqlx::AnyConnection;
use wujie_protocol::api::{RunMessage, RunMessagePage};

use crate::rows::{MESSAGE_COLUMNS, MessageRow, message_from_row, run_not_found};
use crate::{Store, StoreError};

/// The page of `GET /runs/{id}/messages` when the client names none.
pub const DEFAULT_MESSAGE_PAGE_BYTES: u64 = 1 << 20;

/// The largest page a client may ask for.
pub const MAX_MESSAGE_PAGE_BYTES: u64 = 16 << 20;

/// Bytes of messages one answer holding whole runs (an issue, a run) carries, the latest ones
/// first; an issue's runs share it, the newest run first.
pub const ANSWER_MESSAGE_BYTES: u64 = 1 << 20;

/// Most messages one read returns however small they are, so a size scan reads a bounded
/// number of rows too.
pub(crate) const MAX_PAGE_MESSAGES: usize = 1000;

/// A message's size as the budgets count it: the bytes of its stored texts.
/// (BIGINT: PostgreSQL's `octet_length` is a 4-byte integer, which the Any driver does not
/// widen.)
pub(crate) const MESSAGE_BYTES: &str = "CAST(COALESCE(octet_length(content), 0) \
     + COALESCE(octet_length(tool), 0) + COALESCE(octet_length(input), 0) \
     + COALESCE(octet_length(output), 0) + octet_length(source) + octet_length(source_key) \
     AS BIGINT)";

/// How many of `sizes` (in reading order) fit in `budget` bytes, and their bytes: at least the
/// first whatever its size (a page always moves on), unless the budget is 0; at most
/// [`MAX_PAGE_MESSAGES`].
pub(crate) fn fitting(sizes: &[(i64, i64)], budget: u64) -> (usize, u64) {
    let mut used = 0u64;
    let mut taken = 0;
    for &(_, bytes) in sizes.iter().take(MAX_PAGE_MESSAGES) {
        let bytes = u64::try_from(bytes).unwrap_or(0);
        if budget == 0 || (taken > 0 && used + bytes > budget) {
            break;
        }
        used += bytes;
        taken += 1;
    }
    (taken, used)
}

/// The latest messages of a run before a position, within a budget.
#[derive(Debug, Clone, PartialEq)]
pub struct LatestMessages {
    /// In arrival order.
    pub messages: Vec<RunMessage>,
    /// Whether every message before the position is in `messages`.
    pub complete: bool,
    /// When not complete: the position of the first message in `messages` (the next position
    /// to read before); the ones left out are before it.
    pub before: Option<i64>,
    /// The bytes of `messages` as the budgets count them.
    pub bytes: u64,
}

async fn messages_between(
    conn: &mut AnyConnection,
    run_id: &str,
    from: i64,
    to: i64,
) -> Result<Vec<RunMessage>, StoreError> {
    let rows: Vec<MessageRow> = sqlx::query_as(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM run_messages \
         WHERE run_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq"
    ))
    .bind(run_id)
    .bind(from)
    .bind(to)
    .fetch_all(conn)
    .await?;
    rows.into_iter().map(message_from_row).collect()
}

/// The latest messages of `run_id` before `before` (all positions when `None`) that fit in
/// `budget` bytes.
pub(crate) async fn latest_messages(
    conn: &mut AnyConnection,
    run_id: &str,
    before: Option<i64>,
    budget: u64,
) -> Result<LatestMessages, StoreError> {
    let before = before.unwrap_or(i64::MAX);
    let sizes: Vec<(i64, i64)> = sqlx::query_as(&format!(
        "SELECT seq, {MESSAGE_BYTES} AS bytes FROM run_messages \
         WHERE run_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3"
    ))
    .bind(run_id)
    .bind(before)
    .bind(page_rows())
    .fetch_all(&mut *conn)
    .await?;
    let (taken, bytes) = fitting(&sizes, budget);
    let complete = taken == sizes.len();
    let Some(taken_last) = taken.checked_sub(1) else {
        return Ok(LatestMessages {
            messages: Vec::new(),
            complete,
            // Nothing fits: every message up to the newest one is left out.
            before: sizes.first().map(|&(seq, _)| seq + 1),
            bytes: 0,
        });
    };
    let first = sizes[taken_last].0;
    let messages = messages_between(conn, run_id, first, before - 1).await?;
    Ok(LatestMessages {
        messages,
        complete,
        before: (!complete).then_some(first),
        bytes,
    })
}

/// One more than [`MAX_PAGE_MESSAGES`]: a size scan reads one row past a full page to tell
/// whether more follow.
/// Where a forward page ends (see [`forward_page`]).
pub(crate) struct PageEnd {
    /// The position of the page's last row; `None` when it has none.
    pub(crate) last: Option<i64>,
    /// Whether rows after the page were stored.
    pub(crate) more: bool,
}

/// Where the page after position `after` of a log ends within `max_bytes`, from its rows'
/// sizes alone: `sizes` selects `(seq, bytes)` of the rows of `$1` after `$2`, in order, at
/// most `$3`. The caller then reads the rows up to [`PageEnd::last`].
pub(crate) async fn forward_page(
    conn: &mut AnyConnection,
    sizes: &str,
    of: &str,
    after: i64,
    max_bytes: u64,
) -> Result<PageEnd, StoreError> {
    let sizes: Vec<(i64, i64)> = sqlx::query_as(sizes)
        .bind(of)
        .bind(after)
        .bind(page_rows())
        .fetch_all(&mut *conn)
        .await?;
    let (taken, _) = fitting(&sizes, max_bytes);
    Ok(PageEnd {
        last: taken.checked_sub(1).map(|i| sizes[i].0),
        more: taken < sizes.len(),
    })
}

fn page_rows() -> i64 {
    i64::try_from(MAX_PAGE_MESSAGES + 1).unwrap_or(i64::MAX)
}

impl Store {
    /// The messages of `run_id` after position `after`, in arrival order, as many as fit in
    /// `max_bytes` (one bigger than that comes alone).
    pub async fn run_messages_after(
        &self,
        run_id: &str,
        after: i64,
        max_bytes: u64,
    ) -> Result<RunMessagePage, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let sizes = format!(
            "SELECT seq, {MESSAGE_BYTES} AS bytes FROM run_messages \
             WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
        );
        let page = forward_page(&mut conn, &sizes, run_id, after, max_bytes).await?;
        let Some(last) = page.last else {
            let found: Option<(i64,)> = sqlx::query_as("SELECT 1 FROM runs WHERE id = $1")
                .bind(run_id)
                .fetch_optional(&mut *conn)
                .await?;
            found.ok_or_else(|| run_not_found(run_id))?;
            return Ok(RunMessagePage {
                messages: Vec::new(),
                next_after: after,
                more: page.more,
            });
        };
        let messages = messages_between(&mut conn, run_id, after + 1, last).await?;
        Ok(RunMessagePage {
            messages,
            next_after: last,
            more: page.more,
        })
    }

    /// The latest messages of `run_id` before position `before` (the newest when `None`) that
    /// fit in `max_bytes`: the earlier pages of a transcript an answer holds the end of.
    pub async fn run_messages_before(
        &self,
        run_id: &str,
        before: Option<i64>,
        max_bytes: u64,
    ) -> Result<LatestMessages, StoreError> {
        let mut conn = self.pool().acquire().await?;
        latest_messages(&mut conn, run_id, before, max_bytes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_takes_what_the_budget_holds() {
        let sizes = [(1, 400), (2, 400), (3, 400)];
        assert_eq!(fitting(&sizes, 1000), (2, 800));
        assert_eq!(fitting(&sizes, 1200), (3, 1200));
        assert_eq!(fitting(&sizes, 0), (0, 0));
    }

    #[test]
    fn a_first_message_bigger_than_the_budget_comes_alone() {
        let sizes = [(1, 5000), (2, 1)];
        assert_eq!(fitting(&sizes, 1000), (1, 5000));
    }

    #[test]
    fn fitting_stops_at_the_most_messages_a_page_holds() {
        let sizes: Vec<(i64, i64)> = (0..2000).map(|seq| (seq, 1)).collect();
        assert_eq!(fitting(&sizes, u64::MAX).0, MAX_PAGE_MESSAGES);
    }
}
