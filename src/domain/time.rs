//! Timestamps: stored as milliseconds since the Unix epoch, shown as RFC 3339
//! in UTC with `Z` and exactly three fractional digits
//! (`2026-05-01T12:00:00.000Z`), as `docs/decisions.md` section 1 requires.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// A point in time with millisecond precision, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// 0001-01-01T00:00:00.000Z: the four-digit year of the wire format
/// cannot show anything earlier.
const MIN_MILLIS: i64 = -62_135_596_800_000;
/// 9999-12-31T23:59:59.999Z.
const MAX_MILLIS: i64 = 253_402_300_799_999;

impl Timestamp {
    pub fn now() -> Self {
        let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
        Self((nanos / 1_000_000) as i64)
    }

    /// `None` when the instant cannot be written with a four-digit year.
    pub fn from_millis(millis: i64) -> Option<Self> {
        (MIN_MILLIS..=MAX_MILLIS)
            .contains(&millis)
            .then_some(Self(millis))
    }

    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Parses RFC 3339 with any offset; the result is normalised to UTC and
    /// truncated to whole milliseconds.
    pub fn parse(text: &str) -> Result<Self, InvalidTimestamp> {
        let parsed = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| InvalidTimestamp)?;
        let millis = parsed.unix_timestamp_nanos().div_euclid(1_000_000);
        i64::try_from(millis)
            .ok()
            .and_then(Self::from_millis)
            .ok_or(InvalidTimestamp)
    }

    /// `self + seconds`, `None` past year 9999.
    pub fn plus_seconds(self, seconds: i64) -> Option<Self> {
        seconds
            .checked_mul(1000)
            .and_then(|millis| self.0.checked_add(millis))
            .and_then(Self::from_millis)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "must be an RFC 3339 timestamp between years 0001 and 9999, such as 2026-05-01T12:00:00.000Z"
)]
pub struct InvalidTimestamp;

impl Timestamp {
    /// The wire format's 24 ASCII bytes, written by hand: listings write
    /// several per item, and a formatter's machinery costs several times
    /// more.
    fn wire_bytes(self) -> [u8; 24] {
        let instant = OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000)
            .expect("a Timestamp is within years 1 to 9999");
        let (year, month, day) = instant.to_calendar_date();
        let (hour, minute, second, milli) = instant.to_hms_milli();
        let mut out = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, width: usize, mut value: u32| {
            for i in (at..at + width).rev() {
                out[i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(0, 4, year as u32);
        put(5, 2, u8::from(month).into());
        put(8, 2, day.into());
        put(11, 2, hour.into());
        put(14, 2, minute.into());
        put(17, 2, second.into());
        put(20, 3, milli.into());
        out
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.wire_bytes();
        f.write_str(std::str::from_utf8(&bytes).expect("ASCII digits and separators"))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes = self.wire_bytes();
        serializer.serialize_str(std::str::from_utf8(&bytes).expect("ASCII digits and separators"))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds_and_z() {
        let t = Timestamp::parse("2026-05-01T12:00:00Z").unwrap();
        assert_eq!(t.to_string(), "2026-05-01T12:00:00.000Z");
        assert_eq!(
            Timestamp::from_millis(0).unwrap().to_string(),
            "1970-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn normalises_offsets_and_truncates_to_millis() {
        let t = Timestamp::parse("2026-05-01T14:00:00.123987+02:00").unwrap();
        assert_eq!(t.to_string(), "2026-05-01T12:00:00.123Z");
        let before_epoch = Timestamp::parse("1969-12-31T23:59:59.9999Z").unwrap();
        assert_eq!(before_epoch.to_string(), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn refuses_what_is_not_rfc3339_or_out_of_range() {
        for bad in [
            "",
            "2026-05-01",
            "2026-05-01T12:00:00",
            "yesterday",
            "2026-13-01T00:00:00Z",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
        assert!(Timestamp::from_millis(MAX_MILLIS + 1).is_none());
        assert!(Timestamp::from_millis(MIN_MILLIS - 1).is_none());
        assert_eq!(
            Timestamp::from_millis(MAX_MILLIS).unwrap().to_string(),
            "9999-12-31T23:59:59.999Z"
        );
    }

    #[test]
    fn the_hand_written_format_is_the_library_format() {
        use time::macros::format_description;
        let wire_format = format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
        );
        // An odd stride through the whole range: every field takes many values.
        let stride = (MAX_MILLIS - MIN_MILLIS) / 300_007;
        let samples = (0..=300_007).map(|i| MIN_MILLIS + i * stride);
        for millis in samples.chain([MIN_MILLIS, MAX_MILLIS, -1, 0, 1, 951_782_400_000]) {
            let instant =
                OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000).unwrap();
            let t = Timestamp::from_millis(millis).unwrap();
            assert_eq!(
                t.to_string(),
                instant.format(wire_format).unwrap(),
                "{millis}"
            );
        }
    }

    #[test]
    fn round_trips_through_json() {
        let t = Timestamp::parse("2026-05-01T12:00:00.5Z").unwrap();
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"2026-05-01T12:00:00.500Z\"");
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
    }
}
