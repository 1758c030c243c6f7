//! IP allow and deny lists (HTTPProxy's `ipAllowPolicy` and `ipDenyPolicy`).

use std::net::IpAddr;

/// Requests are allowed or denied by the client's address. With `allow`, only addresses in
/// `rules` get through; otherwise those addresses are refused. Refused requests get 403.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct IpFilter {
    /// An allow list (true) or a deny list (false).
    pub allow: bool,
    /// The address ranges.
    pub rules: Vec<IpRule>,
}

/// One address range and which client address it is compared with.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpRule {
    /// Compare with the client address Envoy computes from `X-Forwarded-For` (trusting the
    /// configured number of hops) and the PROXY protocol (`Remote`), instead of the address of
    /// the connection's peer (`Peer`).
    pub remote: bool,
    /// The range's first address (host bits cleared).
    pub address: IpAddr,
    /// The prefix length.
    pub prefix_len: u8,
}
