//! A cluster's endpoints from the EndpointSlices of its Service. Kept apart from the build so an
//! endpoint-only change can skip it.

use std::net::{IpAddr, SocketAddr};

use objects::Snapshot;

use crate::Cluster;

/// The ready endpoints of a cluster, sorted and without duplicates.
pub fn endpoints(cluster: &Cluster, snapshot: &Snapshot) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for slice in snapshot.endpoint_slices_of(&cluster.service.namespace, &cluster.service.name) {
        let Some(port) = slice
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref().unwrap_or_default() == cluster.port_name)
            .and_then(|p| p.port)
            .and_then(|p| u16::try_from(p).ok())
        else {
            continue;
        };
        for endpoint in slice.endpoints.iter().flatten() {
            if endpoint.conditions.as_ref().and_then(|c| c.ready) == Some(false) {
                continue;
            }
            for address in &endpoint.addresses {
                if let Ok(ip) = address.parse::<IpAddr>() {
                    out.push(SocketAddr::new(ip, port));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}
