//! The cluster DNS stand-in the pods' resolv.conf names: on the bridge address, it answers
//! `<service>.<namespace>.svc.cluster.local` with the Service's cluster IP when the runner
//! forwards Services (services.rs), else (and for headless Services) with the ready endpoint
//! addresses of its EndpointSlices, says a
//! name in the cluster domain that no Service has does not exist, and refuses everything else,
//! so no query ever leaves the machine.

use std::net::{Ipv4Addr, SocketAddr};

use crate::net::DOMAIN;
use crate::services::Table;

/// Serves until the task is dropped; binds UDP 53 on `address`.
pub async fn serve(table: Table, address: Ipv4Addr) -> anyhow::Result<()> {
    let socket = tokio::net::UdpSocket::bind(SocketAddr::from((address, 53))).await?;
    tracing::info!(%address, "cluster DNS: {DOMAIN} Services to their cluster IPs or ready endpoints; refusing the rest");
    let mut buf = [0u8; 1500];
    loop {
        let (n, from) = socket.recv_from(&mut buf).await?;
        if let Some(reply) = answer(&buf[..n], |service, namespace| table.resolve(service, namespace)) {
            let _ = socket.send_to(&reply, from).await;
        }
    }
}

/// The reply to a query: A records for a Service's addresses, no data for other types of a
/// known name, NXDOMAIN inside the cluster domain, REFUSED outside it.
fn answer(packet: &[u8], lookup: impl Fn(&str, &str) -> Vec<Ipv4Addr>) -> Option<Vec<u8>> {
    let (name, end) = crate::dns::question(packet)?;
    let qtype = u16::from_be_bytes([packet[end - 4], packet[end - 3]]);
    let mut out = packet[..end].to_vec();
    let rd = packet[2] & 0x01;
    out[2] = 0x84 | rd; // response, authoritative
    out[3] = 0;
    out[6..12].copy_from_slice(&[0, 0, 0, 0, 0, 0]);
    let suffix = format!(".svc.{DOMAIN}.");
    let Some(rest) = name.strip_suffix(&suffix).or_else(|| name.strip_suffix(&format!(".{DOMAIN}.")).map(|_| ""))
    else {
        out[2] = 0x80 | rd;
        out[3] = 5; // REFUSED
        return Some(out);
    };
    let addresses = match rest.split_once('.') {
        Some((service, namespace)) if !namespace.contains('.') => lookup(service, namespace),
        _ => Vec::new(),
    };
    if addresses.is_empty() {
        out[3] = 3; // NXDOMAIN
        return Some(out);
    }
    if qtype == 1 {
        for a in &addresses {
            out.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4]); // A IN TTL 5
            out.extend_from_slice(&a.octets());
        }
        out[7] = u8::try_from(addresses.len()).unwrap_or(u8::MAX);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &str, qtype: u8) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.').filter(|l| !l.is_empty()) {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, qtype, 0, 1]);
        q
    }

    fn lookup(service: &str, namespace: &str) -> Vec<Ipv4Addr> {
        match (service, namespace) {
            ("echo", "apps") => vec![Ipv4Addr::new(10, 244, 1, 5), Ipv4Addr::new(10, 244, 1, 6)],
            _ => vec![],
        }
    }

    #[test]
    fn services_resolve_to_their_ready_endpoints() {
        let reply = answer(&query("Echo.apps.svc.cluster.local.", 1), lookup).expect("answered");
        assert_eq!(reply[3] & 0x0f, 0, "NOERROR");
        assert_eq!(reply[7], 2, "two A records");
        assert!(reply.windows(4).any(|w| w == [10, 244, 1, 6]));
        let aaaa = answer(&query("echo.apps.svc.cluster.local.", 28), lookup).expect("answered");
        assert_eq!((aaaa[3] & 0x0f, aaaa[7]), (0, 0), "a known name has no IPv6 data");
        let absent = answer(&query("other.apps.svc.cluster.local.", 1), lookup).expect("answered");
        assert_eq!(absent[3] & 0x0f, 3, "NXDOMAIN, so the resolver tries the next search domain");
        let search = answer(&query("echo.apps.apps.svc.cluster.local.", 1), lookup).expect("answered");
        assert_eq!(search[3] & 0x0f, 3);
    }

    #[test]
    fn names_outside_the_cluster_are_refused() {
        let reply = answer(&query("example.com.", 1), lookup).expect("answered");
        assert_eq!(reply[3] & 0x0f, 5, "REFUSED, never forwarded");
    }
}
