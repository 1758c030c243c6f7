//! Go's duration syntax (`1h2m`, `1.5s`, `250ms`, `10us`, `0`), which upstream Contour's flags
//! and HTTPProxy fields use.

use std::time::Duration;

/// Parses a Go duration; `None` for anything Go would refuse, including values beyond its range
/// (`i64` nanoseconds, about 2562047h) and negative values.
pub fn parse(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut nanos = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if number_len == 0 {
            return None;
        }
        let value: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let (scale, len) = [("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9)]
            .into_iter()
            .find(|(unit, _)| rest.starts_with(unit) && !(*unit == "m" && rest.starts_with("ms")))
            .map(|(unit, scale)| (scale, unit.len()))?;
        nanos += value * scale;
        rest = &rest[len..];
    }
    (nanos.is_finite() && nanos <= i64::MAX as f64).then(|| Duration::from_nanos(nanos as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let ms = |t: &str| parse(t).map(|d| d.as_millis());
        assert_eq!(ms("1h2m3s"), Some(3_723_000));
        assert_eq!(ms("1.5s"), Some(1500));
        assert_eq!(ms("250ms"), Some(250));
        assert_eq!(parse("10us"), Some(Duration::from_micros(10)));
        assert_eq!(ms("0"), Some(0));
        assert_eq!(ms("5m"), Some(300_000));
        for bad in ["s", "10x", "", "-1s", "100000000h"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
