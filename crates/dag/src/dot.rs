//! The DAG as Graphviz DOT, for `/debug/dag`: fleets, listeners, virtual hosts, routes, clusters.

use std::fmt::Write;

use crate::{Dag, ListenerKind, RouteAction, RouteTable, TlsAction, WeightedCluster};

/// Renders the DAG as a DOT digraph.
pub fn to_dot(dag: &Dag) -> String {
    let mut out = String::from("digraph DAG {\n  rankdir=\"LR\";\n");
    let mut next = 0usize;
    let mut node = |out: &mut String, label: &str| {
        next += 1;
        let _ = writeln!(out, "  n{next} [label={}];", quote(label));
        next
    };
    for fleet in dag.fleets.values() {
        let f = node(&mut out, &format!("fleet {}", fleet.id));
        let mut clusters = std::collections::BTreeMap::new();
        for c in fleet.clusters.values() {
            clusters.insert(c.name.as_str(), node(&mut out, &format!("cluster {}", c.name)));
        }
        let edge = |out: &mut String, a: usize, b: usize| {
            let _ = writeln!(out, "  n{a} -> n{b};");
        };
        let to_clusters = |out: &mut String, from: usize, backends: &[WeightedCluster]| {
            for b in backends {
                if let Some(c) = b.cluster.as_deref().and_then(|c| clusters.get(c)) {
                    let _ = writeln!(out, "  n{from} -> n{c} [label={}];", quote(&format!("weight {}", b.weight)));
                }
            }
        };
        for l in &fleet.listeners {
            let ln = node(&mut out, &format!("listener {} :{}", l.name, l.port));
            edge(&mut out, f, ln);
            let mut tables: Vec<(usize, &RouteTable)> = Vec::new();
            match &l.kind {
                ListenerKind::Http(t) => tables.push((ln, t)),
                ListenerKind::Tls(chains) => {
                    for chain in chains {
                        let sni =
                            if chain.server_names.is_empty() { "*".to_string() } else { chain.server_names.join(",") };
                        let cn = node(&mut out, &format!("sni {sni}"));
                        edge(&mut out, ln, cn);
                        match &chain.action {
                            TlsAction::Terminate { routes, .. } => tables.push((cn, routes)),
                            TlsAction::Passthrough { backends } | TlsAction::TerminateTcp { backends, .. } => {
                                to_clusters(&mut out, cn, backends)
                            }
                        }
                    }
                }
                ListenerKind::Tcp(backends) => to_clusters(&mut out, ln, backends),
                ListenerKind::Udp(cluster) => {
                    if let Some(c) = cluster.as_deref().and_then(|c| clusters.get(c)) {
                        edge(&mut out, ln, *c);
                    }
                }
            }
            for (parent, table) in tables {
                for vh in &table.virtual_hosts {
                    let vn = node(&mut out, &format!("vhost {}", vh.hostname));
                    edge(&mut out, parent, vn);
                    for route in &vh.routes {
                        let rn = node(&mut out, &format!("{:?} ({})", route.matcher.path, route.origin));
                        edge(&mut out, vn, rn);
                        match &route.action {
                            RouteAction::Forward { backends, .. } => to_clusters(&mut out, rn, backends),
                            RouteAction::Redirect(r) => {
                                let n = node(&mut out, &format!("redirect {}", r.status));
                                edge(&mut out, rn, n);
                            }
                            RouteAction::Direct { status, .. } => {
                                let n = node(&mut out, &format!("respond {status}"));
                                edge(&mut out, rn, n);
                            }
                        }
                    }
                }
            }
        }
    }
    out.push_str("}\n");
    out
}

/// A DOT string literal.
fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}
