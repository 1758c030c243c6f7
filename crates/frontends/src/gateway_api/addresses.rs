//! A Gateway's addresses: what its Service (or the Envoy Service, or its own spec in host mode
//! and standalone) offers, matched against what `spec.addresses` asks for, routability
//! (`Cluster`, the conformance sentinel) included. The outcome is the status's `addresses` and
//! its `AddressesAssigned` condition.
//!
//! A Gateway none of whose addresses asks for a routability gets the addresses it always got
//! (every load-balancer address of its Service), as upstream reports them. One that asks for a
//! routability gets exactly one address per satisfied entry.

use std::net::IpAddr;

use ir::reason;
use objects::gateway::AddressRequest;
use objects::{ObjectKey, Snapshot};

use super::Options;

/// The label the provisioner puts on a Gateway's Service.
pub const GATEWAY_NAME_LABEL: &str = "gateway.networking.k8s.io/gateway-name";

pub use objects::gateway::{CLUSTER, SENTINEL};

/// One address of `status.addresses`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusAddress {
    /// `IPAddress` or `Hostname`.
    pub type_: &'static str,
    /// The address.
    pub value: String,
    /// Its reachability scope: empty (no portable guarantee), `Cluster`, or the sentinel.
    pub routability: String,
}

/// What the status says about a Gateway's addresses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    /// `status.addresses`.
    pub addresses: Vec<StatusAddress>,
    /// The `AddressesAssigned` condition, once assignment has an outcome: `(status, reason,
    /// message)`. `None` while every address is still awaited.
    pub assigned: Option<(bool, &'static str, String)>,
}

/// Why an entry has no address.
enum Unmet {
    /// Not yet: the Service has not been given one.
    Awaited,
    /// Never, as the Gateway stands: the message says why.
    Unsupported(String),
}

/// The Gateway's addresses and their `AddressesAssigned` condition.
pub(super) fn assign(
    snapshot: &Snapshot,
    options: &Options,
    key: &ObjectKey,
    gateway: &objects::types::Gateway,
) -> Assignment {
    let requests = gateway.address_requests();
    let services = services(snapshot, options, key);
    let offered = offered(&services, gateway);
    // Host mode runs the Gateway's Envoy on this host, which no ClusterIP reaches; standalone
    // has no Service at all.
    let cluster = if options.host_mode {
        Err("the Gateway's Envoy runs on the host (host mode), which no Service ClusterIP reaches".to_string())
    } else {
        Ok(cluster_ips(&services))
    };
    decide(&requests, offered, cluster, !services.is_empty())
}

/// The matching itself, apart from where addresses come from: `offered` are the addresses of no
/// particular scope, `cluster` the ClusterIPs (or why there can be none), `have_service` whether
/// a Service serves the Gateway yet.
fn decide(
    requests: &[AddressRequest],
    offered: Vec<(&'static str, String)>,
    cluster: Result<Vec<String>, String>,
    have_service: bool,
) -> Assignment {
    let untagged = |(type_, value): (&'static str, String)| StatusAddress { type_, value, routability: String::new() };
    if requests.is_empty() {
        let addresses: Vec<StatusAddress> = offered.into_iter().map(untagged).collect();
        let assigned =
            (!addresses.is_empty()).then(|| (true, reason::ADDRESSES_ASSIGNED, "Addresses assigned".to_string()));
        return Assignment { addresses, assigned };
    }
    let scoped = requests.iter().any(|r| r.routability.is_some());
    let mut used = vec![false; offered.len()];
    let mut used_cluster: Vec<String> = Vec::new();
    let mut chosen = Vec::new();
    let mut unmet: Vec<(usize, Unmet)> = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let pick_offered = |used: &mut Vec<bool>| {
            let found = offered
                .iter()
                .enumerate()
                .find(|(j, (t, v))| !used[*j] && *t == r.type_ && r.value.is_none_or(|want| want == v))?
                .0;
            used[found] = true;
            Some(offered[found].clone())
        };
        let outcome = match r.routability {
            None => pick_offered(&mut used).map(untagged).ok_or(Unmet::Awaited),
            Some(SENTINEL) => pick_offered(&mut used)
                .map(|(type_, value)| StatusAddress { type_, value, routability: SENTINEL.into() })
                .ok_or(Unmet::Awaited),
            Some(CLUSTER) if r.type_ != "IPAddress" => Err(Unmet::Unsupported(format!(
                "Cluster routability is offered for IPAddress addresses, not {}",
                r.type_
            ))),
            Some(CLUSTER) => match &cluster {
                Err(why) => Err(Unmet::Unsupported(why.clone())),
                Ok(ips) => match ips.iter().find(|ip| !used_cluster.contains(ip) && r.value.is_none_or(|v| v == *ip)) {
                    Some(ip) => {
                        used_cluster.push(ip.clone());
                        Ok(StatusAddress { type_: "IPAddress", value: ip.clone(), routability: CLUSTER.into() })
                    }
                    None if !have_service => Err(Unmet::Awaited),
                    None => Err(Unmet::Unsupported(match r.value {
                        Some(v) => format!("{v} is not a ClusterIP of the Gateway's Service"),
                        None => "the Gateway's Service has no ClusterIP left".to_string(),
                    })),
                },
            },
            Some(other) => Err(Unmet::Unsupported(format!("routability {other:?} is not supported"))),
        };
        match outcome {
            Ok(a) => chosen.push(a),
            Err(why) => unmet.push((i, why)),
        }
    }
    let satisfied = chosen.len();
    let addresses = if scoped {
        chosen
    } else {
        // No entry asks for a scope: every address the Service has, as before routability.
        offered.into_iter().map(untagged).collect()
    };
    let definitive = unmet.iter().any(|(_, u)| matches!(u, Unmet::Unsupported(_)));
    let assigned = if unmet.is_empty() {
        Some((true, reason::ADDRESSES_ASSIGNED, "Addresses assigned".to_string()))
    } else if satisfied == 0 && !definitive {
        None
    } else {
        let message = unmet
            .iter()
            .map(|(i, u)| match u {
                Unmet::Awaited => format!("spec.addresses[{i}]: no matching address yet"),
                Unmet::Unsupported(why) => format!("spec.addresses[{i}]: {why}"),
            })
            .collect::<Vec<_>>()
            .join("; ");
        let reason = if satisfied == 0 { reason::NOT_ASSIGNED } else { reason::PARTIALLY_ASSIGNED };
        Some((false, reason, message))
    };
    Assignment { addresses, assigned }
}

/// The Services whose addresses are the Gateway's: the Envoy Service for a static Gateway, else
/// the Gateway's own (labelled with its name, as the provisioner creates it).
fn services<'a>(snapshot: &'a Snapshot, options: &Options, key: &ObjectKey) -> Vec<&'a objects::types::Service> {
    let start = ObjectKey::new(key.namespace.clone(), "");
    match (&options.static_gateway, &options.envoy_service) {
        (Some(_), Some(envoy)) => snapshot.services.get(envoy).map(|s| &**s).into_iter().collect(),
        (Some(_), None) => Vec::new(),
        (None, _) => snapshot
            .services
            .range(start..)
            .take_while(|(k, _)| k.namespace == key.namespace)
            .filter(|(_, s)| s.metadata.labels.as_ref().and_then(|l| l.get(GATEWAY_NAME_LABEL)) == Some(&key.name))
            .map(|(_, s)| &**s)
            .collect(),
    }
}

/// Addresses of no particular scope: the Services' load-balancer addresses when there are any,
/// else the IP addresses the Gateway asks for (standalone and host mode).
fn offered(services: &[&objects::types::Service], gateway: &objects::types::Gateway) -> Vec<(&'static str, String)> {
    let from_service: Vec<(&'static str, String)> = services
        .iter()
        .flat_map(|s| s.status.iter().flat_map(|st| st.load_balancer.iter().flat_map(|lb| lb.ingress.iter().flatten())))
        .filter_map(|i| match (&i.ip, &i.hostname) {
            (Some(ip), _) => Some(("IPAddress", ip.clone())),
            (None, Some(host)) => Some(("Hostname", host.clone())),
            _ => None,
        })
        .collect();
    if !from_service.is_empty() {
        return from_service;
    }
    // An address asked for with a scope is no address of no particular scope.
    gateway
        .address_requests()
        .iter()
        .filter(|r| r.unscoped())
        .filter_map(|r| r.ip())
        .map(|ip| ("IPAddress", ip.to_string()))
        .collect()
}

/// The Services' ClusterIPs (none for a headless Service).
fn cluster_ips(services: &[&objects::types::Service]) -> Vec<String> {
    services
        .iter()
        .filter_map(|s| s.spec.as_ref())
        .flat_map(|spec| spec.cluster_ips.clone().unwrap_or_else(|| spec.cluster_ip.clone().into_iter().collect()))
        .filter(|ip| ip.parse::<IpAddr>().is_ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(type_: &'a str, value: Option<&'a str>, routability: Option<&'a str>) -> AddressRequest<'a> {
        AddressRequest { type_, value, routability }
    }

    fn lb(ips: &[&str]) -> Vec<(&'static str, String)> {
        ips.iter().map(|ip| ("IPAddress", ip.to_string())).collect()
    }

    /// The addresses as `(value, routability)`, and the condition's status and reason.
    type Summary = (Vec<(String, String)>, Option<(bool, &'static str)>);

    fn summary(a: &Assignment) -> Summary {
        let addresses = a.addresses.iter().map(|s| (s.value.clone(), s.routability.clone())).collect();
        (addresses, a.assigned.as_ref().map(|(s, r, _)| (*s, *r)))
    }

    #[test]
    fn no_request_reports_every_load_balancer_address_unscoped() {
        let a = decide(&[], lb(&["192.0.2.1", "192.0.2.2"]), Ok(vec!["10.96.0.9".into()]), true);
        let expected = vec![("192.0.2.1".into(), String::new()), ("192.0.2.2".into(), String::new())];
        assert_eq!(summary(&a), (expected, Some((true, "AddressesAssigned"))));
        // Nothing yet: no condition at all.
        assert_eq!(summary(&decide(&[], vec![], Ok(vec![]), false)), (vec![], None));
    }

    #[test]
    fn cluster_is_the_services_cluster_ip() {
        let requests = [request("IPAddress", None, Some(CLUSTER))];
        let a = decide(&requests, vec![], Ok(vec!["10.96.0.9".into()]), true);
        assert_eq!(summary(&a), (vec![("10.96.0.9".into(), CLUSTER.into())], Some((true, "AddressesAssigned"))));
        // A requested ClusterIP must be the Service's.
        let requests = [request("IPAddress", Some("10.96.0.8"), Some(CLUSTER))];
        let a = decide(&requests, vec![], Ok(vec!["10.96.0.9".into()]), true);
        assert_eq!(summary(&a), (vec![], Some((false, "NotAssigned"))));
        assert!(a.assigned.unwrap().2.contains("10.96.0.8 is not a ClusterIP"));
        // No Service yet: awaited, no condition.
        assert_eq!(summary(&decide(&requests, vec![], Ok(vec![]), false)), (vec![], None));
    }

    #[test]
    fn host_mode_cannot_offer_cluster_and_keeps_the_others() {
        let requests = [request("IPAddress", None, Some(CLUSTER)), request("IPAddress", None, Some(SENTINEL))];
        let a = decide(&requests, lb(&["127.0.1.5"]), Err("host mode".into()), true);
        assert_eq!(summary(&a), (vec![("127.0.1.5".into(), SENTINEL.into())], Some((false, "PartiallyAssigned"))));
        assert_eq!(a.assigned.unwrap().2, "spec.addresses[0]: host mode");
    }

    #[test]
    fn unknown_scopes_and_hostnames_in_cluster_are_unmet() {
        let requests = [
            request("IPAddress", None, Some("example.com/CorpWan")),
            request("Hostname", None, Some(CLUSTER)),
            request("IPAddress", None, Some("testing.x-k8s.io/other")),
        ];
        let a = decide(&requests, lb(&["192.0.2.1"]), Ok(vec!["10.96.0.9".into()]), true);
        assert_eq!(summary(&a), (vec![], Some((false, "NotAssigned"))));
        let message = a.assigned.unwrap().2;
        assert!(
            message.contains("spec.addresses[0]: routability \"example.com/CorpWan\" is not supported"),
            "{message}"
        );
        assert!(message.contains("spec.addresses[1]: Cluster routability is offered for IPAddress"), "{message}");
        assert!(message.contains("spec.addresses[2]"), "{message}");
    }

    #[test]
    fn each_scoped_entry_gets_one_distinct_address() {
        let requests = [
            request("IPAddress", None, Some(CLUSTER)),
            request("IPAddress", None, None),
            request("IPAddress", Some("192.0.2.2"), None),
        ];
        let a = decide(&requests, lb(&["192.0.2.1", "192.0.2.2", "192.0.2.3"]), Ok(vec!["10.96.0.9".into()]), true);
        let expected = vec![
            ("10.96.0.9".into(), CLUSTER.into()),
            ("192.0.2.1".into(), String::new()),
            ("192.0.2.2".into(), String::new()),
        ];
        assert_eq!(summary(&a), (expected, Some((true, "AddressesAssigned"))));
    }

    #[test]
    fn unscoped_requests_keep_every_address_and_say_what_is_missing() {
        let requests = [request("IPAddress", Some("192.0.2.9"), None), request("IPAddress", None, None)];
        let a = decide(&requests, lb(&["192.0.2.1", "192.0.2.2"]), Ok(vec![]), true);
        let expected = vec![("192.0.2.1".into(), String::new()), ("192.0.2.2".into(), String::new())];
        assert_eq!(summary(&a), (expected, Some((false, "PartiallyAssigned"))));
        assert_eq!(a.assigned.unwrap().2, "spec.addresses[0]: no matching address yet");
    }
}
