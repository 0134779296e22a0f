//! Timestamps as fixed-width UTC text, so that comparing the text compares the times.

use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::FormatItem;
use time::macros::format_description;

const FORMAT: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");

pub(crate) fn now() -> String {
    format(OffsetDateTime::now_utc())
}

/// The timestamp `ago` before now.
pub(crate) fn before_now(ago: Duration) -> String {
    let ago = time::Duration::try_from(ago).unwrap_or(time::Duration::MAX);
    let at = OffsetDateTime::now_utc()
        .checked_sub(ago)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format(at)
}

fn format(at: OffsetDateTime) -> String {
    // Formatting a UTC date with a four-digit year cannot fail; the fallback only avoids a panic.
    at.format(FORMAT)
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_order_is_time_order() {
        let earlier = before_now(Duration::from_secs(90));
        let later = now();
        assert!(earlier < later, "{earlier} !< {later}");
        assert_eq!(later.len(), "2026-01-01T00:00:00.000000Z".len());
    }
}
