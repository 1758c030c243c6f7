//! The hostile values a field change puts in place of a string or a number.

use serde_json::Value;

/// Strings that break things: empty and blank, control characters, header injection, unicode
/// and IDN hosts, wildcards in odd places, paths that climb, Envoy's own format operators,
/// regexes RE2 refuses or that blow up, and names of things that do not exist or belong to
/// another namespace. [`string`] adds long ones built at run time.
pub const STRINGS: &[&str] = &[
    "",
    " ",
    "a\u{0}b",
    "\u{7f}\u{1b}[31m",
    "x\r\nInjected: 1",
    "\r\n",
    "tab\there",
    "ünïcödé.例え.テスト",
    "bücher.example.com",
    "xn--bcher-kva.example.com",
    "EXAMPLE.COM",
    "*",
    "*.",
    ".",
    "..",
    "-",
    "*.*.example.com",
    "foo.*.example.com",
    "example.com.",
    "-bad-.example.com",
    "a_b.example.com",
    "/",
    "//",
    "/../..",
    "/%2F%00",
    "/a?b#c",
    "noslash",
    "(unclosed",
    "(a+)+$",
    "(?=lookahead)",
    "(?<name>x)\\1",
    "\\p{Nope}",
    "[z-a]",
    "a{1001}",
    "a{1000}{1000}",
    "%REQ(x-a)%",
    "%REQ(",
    "%DOWNSTREAM_REMOTE_ADDRESS%",
    "%%",
    "%UNKNOWN_OPERATOR%",
    "${HOME}",
    "'\"`<script>",
    "missing",
    "other",
    "kube-system",
    "default",
    "0",
    "-1",
    "65536",
    "4294967295",
    "99999999999999999999",
    "1.5",
    "-5s",
    "0s",
    "1000000h",
    "infinity",
    "NaN",
    "0.0.0.0",
    "255.255.255.255",
    "::",
    "fe80::1%eth0",
    "169.254.169.254",
    "1.2.3.4.5",
    "10.0.0.0/33",
    "::1/129",
    "Terminate",
    "Passthrough",
    "HTTP",
    "TLS",
    "UDP",
    "1.0",
    "1.4",
    "GET\r\n",
    "h2c",
    "http/1.1",
    "kubernetes.io/wss",
];

/// Numbers at and past every edge a field has: zero, negatives, the 16-, 32- and 64-bit
/// limits, and fractions where integers belong.
pub const NUMBERS: &[Number] = &[
    Number::I(0),
    Number::I(-1),
    Number::I(i32::MIN as i64),
    Number::I(i32::MAX as i64),
    Number::I(65535),
    Number::I(65536),
    Number::I(u32::MAX as i64),
    Number::I(u32::MAX as i64 + 1),
    Number::I(i64::MAX),
    Number::U(u64::MAX),
    Number::F(1.5),
    Number::F(-0.5),
    Number::F(1e300),
    Number::I(1),
    Number::I(100),
    Number::I(599),
    Number::I(1000),
];

/// A JSON number of one of the three kinds JSON decoders tell apart.
#[derive(Debug, Clone, Copy)]
pub enum Number {
    /// A signed integer.
    I(i64),
    /// An unsigned integer beyond `i64`.
    U(u64),
    /// A float.
    F(f64),
}

impl Number {
    /// The number as a JSON value.
    pub fn clone_value(&self) -> Value {
        match *self {
            Number::I(i) => Value::from(i),
            Number::U(u) => Value::from(u),
            Number::F(f) => Value::from(f),
        }
    }
}

/// How many long strings [`string`] adds to [`STRINGS`].
const LONG: usize = 5;

/// The hostile string for a pick: one of [`STRINGS`], or one of the long ones.
pub fn string(pick: usize) -> String {
    let i = pick % (STRINGS.len() + LONG);
    if let Some(s) = STRINGS.get(i) {
        return s.to_string();
    }
    match i - STRINGS.len() {
        // 64 KiB.
        0 => "a".repeat(64 * 1024),
        // A host name of 127 labels (over DNS's 253 characters).
        1 => "a.".repeat(127) + "com",
        // A regex over Envoy's program size limit.
        2 => format!("({})", (0..3000).map(|i| format!("x{i}")).collect::<Vec<_>>().join("|")),
        // A thousand emoji.
        3 => "🙂".repeat(1000),
        // A header name of 10k characters.
        _ => "x-".to_string() + &"h".repeat(10_000),
    }
}
