//! The pages' times: stored timestamps (RFC 3339, UTC) shown short, and run durations.

use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `2026-12-01 10:49 UTC`; text that is not a stored timestamp is shown as it is.
pub(crate) fn short_time(stamp: &str) -> String {
    match OffsetDateTime::parse(stamp, &Rfc3339) {
        Ok(_) => format!("{} UTC", stamp.get(..16).unwrap_or(stamp).replace('T', " ")),
        Err(_) => stamp.to_owned(),
    }
}

fn parse(stamp: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(stamp, &Rfc3339).ok()
}

/// `850 ms`, `12.3 s`, `4 min 5 s`, `2 h 3 min`.
pub(crate) fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if secs == 0 {
        format!("{} ms", d.as_millis())
    } else if secs < 60 {
        format!("{:.1} s", d.as_secs_f64())
    } else if secs < 3600 {
        format!("{} min {} s", secs / 60, secs % 60)
    } else {
        format!("{} h {} min", secs / 3600, (secs % 3600) / 60)
    }
}

fn between(start: OffsetDateTime, end: OffsetDateTime) -> Duration {
    Duration::try_from(end - start).unwrap_or(Duration::ZERO)
}

/// How long from `start` to `end`; `?` when either is not a timestamp.
pub(crate) fn duration_between(start: &str, end: &str) -> String {
    match (parse(start), parse(end)) {
        (Some(s), Some(e)) => human(between(s, e)),
        _ => "?".to_owned(),
    }
}

/// How long since `start`, for a run still running.
pub(crate) fn elapsed_since(start: &str) -> String {
    match parse(start) {
        Some(s) => human(between(s, OffsetDateTime::now_utc())),
        None => "?".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human(Duration::from_millis(850)), "850 ms");
        assert_eq!(human(Duration::from_millis(12_340)), "12.3 s");
        assert_eq!(human(Duration::from_secs(245)), "4 min 5 s");
        assert_eq!(human(Duration::from_secs(7380)), "2 h 3 min");
        assert_eq!(
            duration_between("2026-12-01T10:00:00.000000Z", "2026-12-01T10:00:01.500000Z"),
            "1.5 s"
        );
        assert_eq!(duration_between("x", "2026-12-01T10:00:01.500000Z"), "?");
        assert_eq!(
            short_time("2026-12-01T10:49:04.123456Z"),
            "2026-12-01 10:49 UTC"
        );
    }
}
