//! A time in UTC for `repath.log`: the proleptic Gregorian calendar, to the millisecond. No
//! date crate is in the tree; this is the one calendar weft needs (days since the epoch to a
//! civil date, in eras of 400 years counted from March), held to known dates by its tests.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` in UTC, to the millisecond: `2026-11-27T16:20:01.123Z` (a time before the epoch reads
/// as the epoch).
pub fn utc_of(t: SystemTime) -> String {
    utc(t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis())
}

/// `ms` milliseconds after the Unix epoch, in UTC.
pub fn utc(ms: u128) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_times() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(utc(1_795_796_401_123), "2026-11-27T16:20:01.123Z");
        assert_eq!(utc(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
        // 1900 and 2100 are not leap years, 2000 is: the day after 28 February.
        assert_eq!(utc(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
        assert_eq!(utc(951_868_799_999), "2000-02-29T23:59:59.999Z");
        assert_eq!(utc(978_307_199_000), "2000-12-31T23:59:59.000Z");
        assert_eq!(
            utc_of(UNIX_EPOCH + Duration::from_millis(1_795_796_401_123)),
            "2026-11-27T16:20:01.123Z"
        );
        assert_eq!(
            utc_of(UNIX_EPOCH - Duration::from_secs(1)),
            "1970-01-01T00:00:00.000Z"
        );
    }
}
