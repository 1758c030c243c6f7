//! Timeouts as upstream writes them: Go durations, `infinity`, or empty for the default.

use api::httpproxy::TimeoutPolicy;

/// A Go duration (`1h2m`, `1.5s`, `250ms`, `10us`), `infinity`/`infinite` (disabled: `Some(0)`),
/// or empty/`0` for the default (`None`).
pub(crate) fn timeout(text: Option<&str>) -> Result<Option<u64>, String> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty() && *t != "0") else { return Ok(None) };
    if matches!(text, "infinity" | "infinite") {
        return Ok(Some(0));
    }
    go_duration_ms(text)
        .map(Some)
        .ok_or_else(|| format!("unable to parse timeout string {text:?}: time: invalid duration {text:?}"))
}

/// Milliseconds of a Go duration, rounded up so that a small non-zero value stays non-zero.
pub(crate) fn go_duration_ms(text: &str) -> Option<u64> {
    duration::parse(text).map(|d| d.as_nanos().div_ceil(1_000_000) as u64)
}

/// Response, idle and idle-connection timeouts.
#[derive(Default)]
pub(crate) struct Timeouts {
    pub response: Option<u64>,
    pub idle: Option<u64>,
    pub idle_connection: Option<u64>,
}

/// The timeouts of an HTTPProxy route or an ExtensionService, with upstream's messages.
pub(crate) fn timeouts(policy: Option<&TimeoutPolicy>) -> Result<Timeouts, String> {
    let Some(p) = policy else { return Ok(Timeouts { response: None, idle: None, idle_connection: None }) };
    Ok(Timeouts {
        response: timeout(p.response.as_deref()).map_err(|e| format!("error parsing response timeout: {e}"))?,
        idle: timeout(p.idle.as_deref()).map_err(|e| format!("error parsing idle timeout: {e}"))?,
        idle_connection: timeout(p.idle_connection.as_deref())
            .map_err(|e| format!("error parsing idle connection timeout: {e}"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration_ms("1h2m3s"), Some(3_723_000));
        assert_eq!(go_duration_ms("1.5s"), Some(1500));
        assert_eq!(go_duration_ms("250ms"), Some(250));
        assert_eq!(go_duration_ms("10us"), Some(1));
        assert_eq!(go_duration_ms("5m"), Some(300_000));
        assert_eq!(go_duration_ms("s"), None);
        assert_eq!(go_duration_ms("10x"), None);
        assert_eq!(go_duration_ms("2562047h"), Some(9_223_369_200_000));
        assert_eq!(go_duration_ms("100000000h"), None, "beyond Go's range");
        assert_eq!(timeout(Some("infinity")), Ok(Some(0)));
        assert_eq!(timeout(Some("0")), Ok(None));
        assert!(timeout(Some("forever")).unwrap_err().contains("unable to parse timeout string \"forever\""));
    }
}
