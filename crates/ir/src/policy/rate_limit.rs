//! Rate limits counted by each Envoy on its own (HTTPProxy's `rateLimitPolicy.local`).

/// A token bucket: `tokens_per_fill` requests per `fill_interval_s`, up to `max_tokens` at once
/// (the requests plus the burst). Requests beyond it get `status` (429 by default).
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct LocalRateLimit {
    /// The bucket's size.
    pub max_tokens: u32,
    /// Tokens added per interval.
    pub tokens_per_fill: u32,
    /// The interval, in seconds.
    pub fill_interval_s: u32,
    /// The status of limited requests; `None` is 429.
    pub status: Option<u16>,
    /// Headers added to limited answers.
    pub response_headers: Vec<(String, String)>,
    /// The prefix of the limiter's statistics, such as `vhost.example.com` (upstream's).
    pub stat_prefix: String,
}
