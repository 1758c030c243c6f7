//! What a Gateway gets: an address and a Service that carries it.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use objects::gateway::CLUSTER;
use objects::types::Gateway;
use serde_json::{Value, json};

/// The label naming the Gateway a Service (or any generated object) belongs to; contour-serve
/// finds the Gateway's address through it.
pub use frontends::gateway_api::status::GATEWAY_NAME_LABEL;
/// The label marking objects this provisioner manages.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "contour-provisioner");

/// The load-balancer class of host mode's Services, whose addresses the provisioner publishes.
pub const HOST_LOAD_BALANCER_CLASS: &str = "projectcontour.io/host-provisioner";

/// The Service's name: upstream's `envoy-<gateway>`, shortened with a hash when that is longer
/// than a Service name may be.
pub fn service_name(gateway: &str) -> String {
    let name = format!("envoy-{gateway}");
    if name.len() <= 63 {
        return name;
    }
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    format!("{}-{:08x}", name[..50].trim_end_matches('-'), hash as u32)
}

/// The address a Gateway asks for: its first `spec.addresses` entry of type IPAddress (or no
/// type) that is an IP address, of no particular scope (a `Cluster` one is a ClusterIP).
pub fn requested_address(gateway: &Gateway) -> Option<IpAddr> {
    gateway.address_requests().iter().filter(|r| r.unscoped()).find_map(|r| r.ip())
}

/// Whether every address the Gateway asks for (at least one) is a ClusterIP
/// (`routability: Cluster`): its Service then needs no load balancer.
pub fn cluster_only(gateway: &Gateway) -> bool {
    let requests = gateway.address_requests();
    !requests.is_empty() && requests.iter().all(|r| r.routability == Some(CLUSTER))
}

/// The ClusterIP a Gateway asks for: the value of its first `Cluster` address that has one.
pub fn requested_cluster_ip(gateway: &Gateway) -> Option<IpAddr> {
    gateway.address_requests().iter().filter(|r| r.routability == Some(CLUSTER)).find_map(|r| r.ip())
}

/// The Service for `gateway` at `address` (server-side apply body): no selector, one port per
/// distinct listener port, owned by the Gateway, with the Gateway's infrastructure labels and
/// annotations.
pub fn service(gateway: &Gateway) -> Value {
    let name = gateway.metadata.name.clone().unwrap_or_default();
    let infra = gateway.spec.infrastructure.as_ref();
    let mut labels: BTreeMap<String, String> = infra.and_then(|i| i.labels.clone()).unwrap_or_default();
    labels.insert(GATEWAY_NAME_LABEL.into(), name.clone());
    labels.insert(MANAGED_BY.0.into(), MANAGED_BY.1.into());
    let annotations: BTreeMap<String, String> = infra.and_then(|i| i.annotations.clone()).unwrap_or_default();
    let mut ports: BTreeMap<(i32, &str), ()> = BTreeMap::new();
    for l in &gateway.spec.listeners {
        let protocol = if l.protocol == "UDP" { "UDP" } else { "TCP" };
        if (1..=65535).contains(&l.port) {
            ports.insert((l.port, protocol), ());
        }
    }
    let mut ports: Vec<Value> = ports
        .keys()
        .map(|(port, protocol)| {
            json!({"name": format!("{}-{port}", protocol.to_lowercase()), "port": port, "protocol": protocol, "targetPort": port})
        })
        .collect();
    if ports.is_empty() {
        // A Service needs a port; a Gateway without a usable listener still gets its address.
        ports.push(json!({"name": "none", "port": 1, "protocol": "TCP", "targetPort": 1}));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(&name),
            "namespace": gateway.metadata.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "Gateway",
                "name": name,
                "uid": gateway.metadata.uid,
                "controller": true,
            }],
        },
        "spec": {
            "type": "LoadBalancer",
            // This provisioner is the Service's load balancer (it writes the address): a class of
            // its own keeps the cluster's load-balancer controller, if any, from writing another.
            "loadBalancerClass": HOST_LOAD_BALANCER_CLASS,
            "allocateLoadBalancerNodePorts": false,
            "ports": ports,
        },
    })
}

/// The Service status that publishes `address`.
pub fn service_status(address: IpAddr) -> Value {
    json!({"status": {"loadBalancer": {"ingress": [{"ip": address.to_string()}]}}})
}

/// Host addresses handed to Gateways that ask for none: every host address of an IPv4 block,
/// each held by one Gateway at a time.
#[derive(Debug, Clone)]
pub struct AddressPool {
    first: u32,
    last: u32,
    held: BTreeMap<IpAddr, String>,
}

impl AddressPool {
    /// The pool of `cidr` (e.g. `127.0.1.0/24`), without its network and broadcast addresses.
    pub fn new(cidr: &str) -> Result<Self, crate::Error> {
        let bad = || crate::Error::Pool(format!("{cidr:?} is not an IPv4 CIDR block"));
        let (ip, prefix) = cidr.split_once('/').ok_or_else(bad)?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| bad())?;
        let prefix: u32 = prefix.parse().map_err(|_| bad())?;
        if !(8..=30).contains(&prefix) {
            return Err(bad());
        }
        let mask = u32::MAX << (32 - prefix);
        let network = u32::from(ip) & mask;
        Ok(Self { first: network + 1, last: (network | !mask) - 1, held: BTreeMap::new() })
    }

    /// An address for `owner`: `requested` when it is free (or already `owner`'s), else the
    /// lowest free pool address.
    pub fn take(&mut self, owner: &str, requested: Option<IpAddr>) -> Result<IpAddr, crate::Error> {
        if let Some(ip) = requested {
            return match self.held.get(&ip) {
                Some(o) if o != owner => Err(crate::Error::Pool(format!("{ip} is held by {o}"))),
                _ => {
                    self.held.insert(ip, owner.into());
                    Ok(ip)
                }
            };
        }
        let free = (self.first..=self.last)
            .map(|n| IpAddr::V4(Ipv4Addr::from(n)))
            .find(|ip| !self.held.contains_key(ip))
            .ok_or_else(|| crate::Error::Pool("no free address".into()))?;
        self.held.insert(free, owner.into());
        Ok(free)
    }

    /// Gives `address` back.
    pub fn release(&mut self, address: IpAddr) {
        self.held.remove(&address);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(yaml: &str) -> Gateway {
        serde_yaml::from_str(yaml).expect("valid Gateway")
    }

    #[test]
    fn service_carries_labels_ports_and_owner() {
        let gw = gateway(
            "metadata: {name: gw, namespace: ns, uid: u1}\n\
             spec:\n  gatewayClassName: c\n  infrastructure: {labels: {team: a}, annotations: {note: b}}\n  listeners:\n\
             \x20 - {name: a, port: 80, protocol: HTTP}\n  - {name: b, port: 80, protocol: HTTP, hostname: x.example}\n\
             \x20 - {name: c, port: 443, protocol: HTTPS}\n",
        );
        let s = service(&gw);
        assert_eq!(s["metadata"]["name"], "envoy-gw");
        assert_eq!(s["metadata"]["labels"][GATEWAY_NAME_LABEL], "gw");
        assert_eq!(s["metadata"]["labels"]["team"], "a");
        assert_eq!(s["metadata"]["annotations"]["note"], "b");
        assert_eq!(s["metadata"]["ownerReferences"][0]["uid"], "u1");
        let ports: Vec<i64> =
            s["spec"]["ports"].as_array().unwrap().iter().map(|p| p["port"].as_i64().unwrap()).collect();
        assert_eq!(ports, [80, 443]);
        assert_eq!(
            service_status("127.0.1.1".parse().unwrap())["status"]["loadBalancer"]["ingress"][0]["ip"],
            "127.0.1.1"
        );
    }

    #[test]
    fn long_names_are_shortened_stably() {
        let long = "g".repeat(80);
        let a = service_name(&long);
        assert!(a.len() <= 63 && a.starts_with("envoy-g"));
        assert_eq!(a, service_name(&long));
        assert_ne!(a, service_name(&format!("{long}x")));
    }

    #[test]
    fn requested_addresses() {
        let gw = gateway(
            "metadata: {name: gw}\nspec:\n  gatewayClassName: c\n  listeners: []\n  addresses:\n\
             \x20 - {type: Hostname, value: unusable.example.com}\n  - {type: IPAddress, value: 127.0.2.250}\n",
        );
        assert_eq!(requested_address(&gw), Some("127.0.2.250".parse().unwrap()));
        let none = gateway("metadata: {name: gw}\nspec: {gatewayClassName: c, listeners: []}");
        assert_eq!(requested_address(&none), None);
        // A ClusterIP asked for is no address to bind on the host.
        let scoped = gateway(
            "metadata: {name: gw}\nspec:\n  gatewayClassName: c\n  listeners: []\n  addresses:\n\
             \x20 - {value: 127.0.2.9, routability: Cluster}\n  - {value: 127.0.2.8, routability: testing.x-k8s.io/sentinel}\n",
        );
        assert_eq!(requested_address(&scoped), Some("127.0.2.8".parse().unwrap()));
        assert_eq!(requested_cluster_ip(&scoped), Some("127.0.2.9".parse().unwrap()));
        assert!(!cluster_only(&scoped));
    }

    #[test]
    fn pool_hands_out_distinct_addresses_and_reuses_released_ones() {
        let mut pool = AddressPool::new("127.0.1.0/30").expect("valid");
        let a = pool.take("ns/a", None).unwrap();
        let b = pool.take("ns/b", None).unwrap();
        assert_eq!((a.to_string().as_str(), b.to_string().as_str()), ("127.0.1.1", "127.0.1.2"));
        assert!(pool.take("ns/c", None).is_err(), "a /30 has two host addresses");
        assert!(pool.take("ns/c", Some(a)).is_err(), "held by another Gateway");
        assert_eq!(pool.take("ns/a", Some(a)).unwrap(), a, "its own");
        pool.release(a);
        assert_eq!(pool.take("ns/c", None).unwrap(), a);
        assert!(AddressPool::new("127.0.1.0").is_err());
    }
}
