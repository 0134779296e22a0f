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

/// The timestamp `ahead` after now (the far future if that does not fit).
pub(crate) fn after_now(ahead: Duration) -> String {
    let ahead = time::Duration::try_from(ahead).unwrap_or(time::Duration::MAX);
    let at = OffsetDateTime::now_utc()
        .checked_add(ahead)
        .filter(|at| at.year() <= 9999)
        .unwrap_or(time::macros::datetime!(9999-12-31 23:59:59 UTC));
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
        let ahead = after_now(Duration::from_secs(90));
        assert!(later < ahead, "{later} !< {ahead}");
        assert_eq!(after_now(Duration::MAX), "9999-12-31T23:59:59.000000Z");
    }
}
