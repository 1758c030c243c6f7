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

/// Limits counted by the rate-limit service (HTTPProxy's `rateLimitPolicy.global`): each
/// descriptor, a list of entries, is sent to the service, which counts and decides.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash)]
pub struct GlobalRateLimit {
    /// The descriptors, each a list of entries.
    pub descriptors: Vec<Vec<DescriptorEntry>>,
}

/// One entry of a rate-limit descriptor.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub enum DescriptorEntry {
    /// A fixed key and value (`generic_key` when the key is empty).
    GenericKey {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// A request header's value under a key; without the header, the descriptor is not sent.
    RequestHeader {
        /// The header.
        header_name: String,
        /// The key.
        descriptor_key: String,
    },
    /// `header_match` with this value when the headers match (or do not, with `expect_match`
    /// false).
    HeaderValueMatch {
        /// The header conditions, AND-ed.
        headers: Vec<crate::HeaderMatch>,
        /// Whether the conditions must hold (true) or fail (false).
        expect_match: bool,
        /// The value.
        value: String,
    },
    /// The client's address (`remote_address`).
    RemoteAddress,
}
