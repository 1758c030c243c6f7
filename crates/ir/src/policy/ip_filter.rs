//! IP and location allow and deny lists (HTTPProxy's `ipAllowPolicy`, `ipDenyPolicy`,
//! `geoAllowPolicy` and `geoDenyPolicy`).

use std::net::IpAddr;

/// Requests are allowed or denied by the client's address and its location. With `allow`,
/// only requests matching a rule (any address range or location) get through; otherwise those
/// are refused. Refused requests get 403.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct IpFilter {
    /// An allow list (true) or a deny list (false).
    pub allow: bool,
    /// The address ranges.
    pub rules: Vec<IpRule>,
    /// The locations, looked up in the GeoIP databases (TLS virtual hosts only).
    pub geo: Vec<GeoRule>,
}

/// One location condition: a dimension equal to a value.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct GeoRule {
    /// What is compared.
    pub dimension: GeoDimension,
    /// The value it must equal (`true` or `false` for the anonymity dimensions).
    pub value: String,
}

/// What a location rule compares, each carried to the backend in a request header of its own.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GeoDimension {
    Country,
    Region,
    City,
    Asn,
    Isp,
    Anon,
    AnonVpn,
    AnonTor,
    AnonHosting,
    AnonProxy,
}

impl GeoDimension {
    /// Every dimension.
    pub const ALL: [GeoDimension; 10] = [
        Self::Country,
        Self::Region,
        Self::City,
        Self::Asn,
        Self::Isp,
        Self::Anon,
        Self::AnonVpn,
        Self::AnonTor,
        Self::AnonHosting,
        Self::AnonProxy,
    ];

    /// The API's name (`country`, `anonVpn`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Country => "country",
            Self::Region => "region",
            Self::City => "city",
            Self::Asn => "asn",
            Self::Isp => "isp",
            Self::Anon => "anon",
            Self::AnonVpn => "anonVpn",
            Self::AnonTor => "anonTor",
            Self::AnonHosting => "anonHosting",
            Self::AnonProxy => "anonProxy",
        }
    }

    /// The request header the lookup fills (upstream's fixed names).
    pub fn header(self) -> &'static str {
        match self {
            Self::Country => "x-contour-geo-country",
            Self::Region => "x-contour-geo-region",
            Self::City => "x-contour-geo-city",
            Self::Asn => "x-contour-geo-asn",
            Self::Isp => "x-contour-geo-isp",
            Self::Anon => "x-contour-geo-anon",
            Self::AnonVpn => "x-contour-geo-anon-vpn",
            Self::AnonTor => "x-contour-geo-anon-tor",
            Self::AnonHosting => "x-contour-geo-anon-hosting",
            Self::AnonProxy => "x-contour-geo-anon-proxy",
        }
    }
}

/// The MaxMind databases Envoy reads (paths on Envoy's file system; ContourConfiguration
/// `geoIP.provider.maxMind`). Each fills the dimensions it knows.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash)]
pub struct GeoDatabases {
    /// GeoIP2/GeoLite2 City: country, region, city.
    pub city: Option<String>,
    /// GeoIP2/GeoLite2 Country: country.
    pub country: Option<String>,
    /// GeoLite2 ASN: the autonomous system number.
    pub asn: Option<String>,
    /// GeoIP2 ISP: the ISP and the autonomous system number.
    pub isp: Option<String>,
    /// GeoIP2 Anonymous IP: the anonymity flags.
    pub anon: Option<String>,
}

impl GeoDatabases {
    /// Whether a configured database fills `dimension`.
    pub fn fills(&self, dimension: GeoDimension) -> bool {
        use GeoDimension::*;
        match dimension {
            Country => self.city.is_some() || self.country.is_some(),
            Region | City => self.city.is_some(),
            Asn => self.asn.is_some() || self.isp.is_some(),
            Isp => self.isp.is_some(),
            Anon | AnonVpn | AnonTor | AnonHosting | AnonProxy => self.anon.is_some(),
        }
    }
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
