//! MaxMind DB files (`.mmdb`, format 2.0) written by the tests: nothing real builds from a registry
//! here, and MaxMind's own test databases are not reachable. An IPv4 database with 24-bit records,
//! one data record per network, in the layouts MaxMind's City, Country, ASN, ISP and Anonymous IP
//! databases use (so Envoy's MaxMind provider reads them as it reads the real ones).

use std::net::Ipv4Addr;

/// A value of the data section.
#[derive(Debug, Clone)]
pub enum Value {
    /// UTF-8 text.
    Str(String),
    /// An unsigned 16-bit number.
    U16(u16),
    /// An unsigned 32-bit number.
    U32(u32),
    /// An unsigned 64-bit number.
    U64(u64),
    /// True or false.
    Bool(bool),
    /// Keys and values, in order.
    Map(Vec<(String, Value)>),
    /// Values, in order.
    Array(Vec<Value>),
}

/// `{key: value, ...}` with text keys.
pub fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Map(entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A City database record: country ISO code, first subdivision ISO code, English city name.
pub fn city(country: &str, region: &str, name: &str) -> Value {
    map([
        ("city", map([("names", map([("en", Value::Str(name.into()))]))])),
        ("country", map([("iso_code", Value::Str(country.into()))])),
        ("subdivisions", Value::Array(vec![map([("iso_code", Value::Str(region.into()))])])),
    ])
}

/// An Anonymous IP database record with every flag as given.
pub fn anonymous(vpn: bool, tor: bool, hosting: bool, proxy: bool) -> Value {
    map([
        ("is_anonymous", Value::Bool(vpn || tor || hosting || proxy)),
        ("is_anonymous_vpn", Value::Bool(vpn)),
        ("is_hosting_provider", Value::Bool(hosting)),
        ("is_public_proxy", Value::Bool(proxy)),
        ("is_tor_exit_node", Value::Bool(tor)),
    ])
}

/// The bytes of a database of `database_type` (such as `GeoLite2-City`) mapping each network
/// (address, prefix length) to its record. Networks must not overlap.
pub fn database(database_type: &str, networks: &[((Ipv4Addr, u8), Value)]) -> Vec<u8> {
    /// A record of the search tree: a node, a data record, or nothing.
    #[derive(Clone, Copy)]
    enum Record {
        Empty,
        Node(usize),
        Data(usize),
    }
    let mut data = Vec::new();
    let mut nodes: Vec<[Record; 2]> = vec![[Record::Empty; 2]];
    for ((address, prefix_len), value) in networks {
        let offset = data.len();
        encode(value, &mut data);
        let bits = u32::from(*address);
        let depth = u32::from((*prefix_len).clamp(1, 32));
        let mut node = 0;
        for i in 0..depth {
            let bit = ((bits >> (31 - i)) & 1) as usize;
            if i + 1 == depth {
                nodes[node][bit] = Record::Data(offset);
            } else {
                node = match nodes[node][bit] {
                    Record::Node(next) => next,
                    _ => {
                        nodes.push([Record::Empty; 2]);
                        nodes[node][bit] = Record::Node(nodes.len() - 1);
                        nodes.len() - 1
                    }
                };
            }
        }
    }
    let count = nodes.len();
    let mut out = Vec::new();
    for node in &nodes {
        for record in node {
            let value = match *record {
                Record::Empty => count,
                Record::Node(n) => n,
                // Data pointers count from the start of the data section, after the 16-byte
                // separator.
                Record::Data(offset) => count + 16 + offset,
            };
            out.extend_from_slice(&(value as u32).to_be_bytes()[1..]);
        }
    }
    out.extend_from_slice(&[0; 16]);
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\xAB\xCD\xEFMaxMind.com");
    let metadata = map([
        ("binary_format_major_version", Value::U16(2)),
        ("binary_format_minor_version", Value::U16(0)),
        ("build_epoch", Value::U64(1_700_000_000)),
        ("database_type", Value::Str(database_type.into())),
        ("description", map([("en", Value::Str("contour-rs test database".into()))])),
        ("ip_version", Value::U16(4)),
        ("languages", Value::Array(vec![Value::Str("en".into())])),
        ("node_count", Value::U32(count as u32)),
        ("record_size", Value::U16(24)),
    ]);
    encode(&metadata, &mut out);
    out
}

/// Appends a value in the data section's encoding.
fn encode(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Str(s) => {
            control(2, s.len(), out);
            out.extend_from_slice(s.as_bytes());
        }
        Value::U16(n) => unsigned(5, u64::from(*n), out),
        Value::U32(n) => unsigned(6, u64::from(*n), out),
        Value::U64(n) => unsigned(9, *n, out),
        Value::Bool(b) => control(14, usize::from(*b), out),
        Value::Map(entries) => {
            control(7, entries.len(), out);
            for (key, value) in entries {
                encode(&Value::Str(key.clone()), out);
                encode(value, out);
            }
        }
        Value::Array(values) => {
            control(11, values.len(), out);
            for v in values {
                encode(v, out);
            }
        }
    }
}

/// An unsigned number: as few big-endian bytes as it needs.
fn unsigned(kind: u8, n: u64, out: &mut Vec<u8>) {
    let bytes = n.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    control(kind, 8 - skip, out);
    out.extend_from_slice(&bytes[skip..]);
}

/// The control byte (and extended type byte) of a value of `kind` and `size`.
fn control(kind: u8, size: usize, out: &mut Vec<u8>) {
    let (bits, extra): (u8, Vec<u8>) = match size {
        0..29 => (size as u8, Vec::new()),
        29..285 => (29, vec![(size - 29) as u8]),
        285..65821 => (30, ((size - 285) as u16).to_be_bytes().to_vec()),
        _ => (31, ((size - 65821) as u32).to_be_bytes()[1..].to_vec()),
    };
    if kind <= 7 {
        out.push((kind << 5) | bits);
    } else {
        out.push(bits);
        out.push(kind - 7);
    }
    out.extend_from_slice(&extra);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_encode_as_the_format_says() {
        let mut out = Vec::new();
        encode(&map([("a", Value::Bool(true)), ("n", Value::U32(256))]), &mut out);
        // map of 2; "a"; true (extended type 14); "n"; uint32 of 2 bytes.
        assert_eq!(out, [0xE2, 0x41, b'a', 0x01, 0x07, 0x41, b'n', 0xC2, 0x01, 0x00]);
    }

    #[test]
    fn a_database_has_its_tree_separator_data_and_metadata() {
        let db = database("GeoLite2-Country", &[((Ipv4Addr::new(128, 0, 0, 0), 1), Value::U16(1))]);
        // One node: left empty (node count 1), right the first data record (1 + 16 + 0).
        assert_eq!(&db[..6], &[0, 0, 1, 0, 0, 17]);
        assert_eq!(&db[6..22], &[0; 16]);
        assert_eq!(&db[22..24], &[0xA1, 0x01], "the record");
        assert!(db.windows(14).any(|w| w == b"\xAB\xCD\xEFMaxMind.com"));
    }
}
