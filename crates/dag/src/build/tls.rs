//! TLS of the DAG's listeners: a port's filter chains (terminate or pass through, per SNI), the
//! downstream settings of a terminating chain, and the certificates each one serves.

use std::cmp::Reverse;

use super::*;

impl Builder<'_> {
    pub(super) fn tls_chains(
        &mut self,
        fleet: &ir::Fleet,
        port: u16,
        listeners: &[(usize, &ir::Listener)],
        out: &mut FleetDag,
    ) -> Vec<TlsChain> {
        let mut chains = Vec::new();
        let mut used: BTreeSet<String> = BTreeSet::new();
        for &(index, listener) in listeners {
            let Some(tls) = &listener.tls else { continue };
            match tls.mode {
                TlsMode::Terminate => {
                    let secrets = self.secrets(fleet, index, tls, out);
                    if secrets.is_empty() {
                        self.check_routes(listener);
                        continue;
                    }
                    let sni = listener.hostname.clone().unwrap_or_default();
                    if !used.insert(sni.clone()) {
                        continue;
                    }
                    let settings = self.downstream(tls, out);
                    let server_names = if sni.is_empty() { Vec::new() } else { vec![sni] };
                    let action = if let Some(route) = listener.tls_routes.first() {
                        self.terminated = true;
                        let backends = self.backends(&route.origin, 0, &route.backends, &route.policy, out);
                        self.terminated = false;
                        TlsAction::TerminateTcp { secrets, settings, backends }
                    } else {
                        self.listener = (port, "https");
                        let name = format!("https-{port}-{}", listener.name);
                        let mut routes = self.route_table(name, &[(index, listener)], out);
                        misdirected(&mut routes, fleet.origin.as_ref(), listener, listeners);
                        TlsAction::Terminate { secrets, settings, routes }
                    };
                    chains.push(TlsChain { server_names, action });
                }
                TlsMode::Passthrough => {
                    // Each server name goes to the route whose own hostname is most specific for
                    // it, then to the older route, then by namespace/name.
                    let mut claims: Vec<(usize, String)> = Vec::new();
                    for (i, route) in listener.tls_routes.iter().enumerate() {
                        let names = ir::hostname::effective(listener.hostname.as_deref(), &route.hostnames);
                        claims.extend(names.into_iter().map(|sni| (i, sni)));
                    }
                    let routes = &listener.tls_routes;
                    let rank = |i: usize, sni: &str| ir::hostname::route_specificity(&routes[i].hostnames, sni);
                    claims.sort_by_cached_key(|(i, sni)| {
                        let route = &routes[*i];
                        let (namespace, name) = (route.origin.namespace.clone(), route.origin.name.clone());
                        (sni.clone(), Reverse(rank(*i, sni)), route.created, namespace, name)
                    });
                    // The rank of the route each server name went to; a route with a less
                    // specific hostname is outranked there, not in conflict.
                    let mut won: FxHashMap<String, (u8, usize)> = FxHashMap::default();
                    // Every route's backends are checked, served or not.
                    let backends: Vec<_> =
                        routes.iter().map(|r| self.backends(&r.origin, 0, &r.backends, &r.policy, out)).collect();
                    for (i, sni) in claims {
                        let route = &routes[i];
                        let mine = rank(i, &sni);
                        let key = if sni == "*" { String::new() } else { sni };
                        if !used.insert(key.clone()) {
                            if won.get(&key).is_some_and(|winner| *winner > mine) {
                                continue;
                            }
                            self.error(
                                &route.origin,
                                "spec.hostnames".into(),
                                reason::HOSTNAME_CONFLICT,
                                format!("SNI {key:?} on port {port} is served by another route"),
                            );
                            continue;
                        }
                        won.insert(key.clone(), mine);
                        let server_names = if key.is_empty() { Vec::new() } else { vec![key] };
                        let backends = backends[i].clone();
                        chains.push(TlsChain { server_names, action: TlsAction::Passthrough { backends } });
                    }
                }
            }
        }
        // Envoy picks the most specific server name itself; a stable order keeps versions stable.
        chains.sort_by(|a, b| a.server_names.cmp(&b.server_names));
        chains
    }

    /// Versions and client certificate checks of a terminating listener. The front end checked
    /// the Secrets; one that vanished since leaves the CA out, which refuses every client
    /// certificate rather than accepting any.
    fn downstream(&mut self, tls: &ir::ListenerTls, out: &mut FleetDag) -> DownstreamTls {
        let client = tls.client_validation.as_ref().map(|cv| {
            // Skipping verification asks for a certificate and accepts any (upstream's
            // ACCEPT_UNTRUSTED); with a CA named, Envoy still requires one unless it is optional.
            let validation = cv.ca.as_ref().map(|ca| {
                // An unusable CA refuses every client: an empty bundle, named apart from every
                // real one (the kind's upper case cannot start an object's name).
                let mut bundle = self.ca_bundle(ca, cv.ca_kind).unwrap_or_else(|| CaBundle {
                    name: format!("unusable/{:?}/{}/{}", cv.ca_kind, ca.namespace, ca.name),
                    ca: Vec::new(),
                    crl: None,
                    crl_only_leaf: false,
                    accept_untrusted: false,
                    system: false,
                });
                if let Some(crl) = &cv.crl {
                    let key = ObjectKey::new(&crl.namespace, &crl.name);
                    let pem = self.snapshot.secrets.get(&key).and_then(|s| s.data.as_ref()?.get("crl.pem"));
                    bundle.crl = Some(pem.map(|b| b.0.clone()).unwrap_or_default());
                    bundle.crl_only_leaf = cv.crl_only_leaf;
                    bundle.name = format!("{}/{}/{}", bundle.name, crl.namespace, crl.name);
                    if cv.crl_only_leaf {
                        bundle.name.push_str("/leaf-crl");
                    }
                }
                if cv.skip_verify {
                    bundle.accept_untrusted = true;
                    bundle.name.push_str("/untrusted");
                }
                let name = bundle.name.clone();
                out.validation.entry(name.clone()).or_insert(bundle);
                name
            });
            ClientAuth { validation, optional: cv.optional, forward: cv.forward }
        });
        DownstreamTls { min_version: tls.min_version, max_version: tls.max_version, client, http3: tls.http3 }
    }

    fn secrets(&mut self, fleet: &ir::Fleet, index: usize, tls: &ir::ListenerTls, out: &mut FleetDag) -> Vec<String> {
        let mut names = Vec::new();
        for (i, cert) in tls.certificates.iter().enumerate() {
            let name = format!("{}/{}", cert.namespace, cert.name);
            let secret = self.snapshot.secrets.get(&ObjectKey::new(&cert.namespace, &cert.name));
            match objects::secrets::tls_pair(secret.map(|s| &**s)) {
                Ok((crt, key)) => {
                    out.secrets.insert(
                        name.clone(),
                        TlsSecret {
                            name: name.clone(),
                            certificate_chain: crt.to_vec(),
                            private_key: key.to_vec(),
                            generic: false,
                        },
                    );
                    names.push(name);
                }
                Err(why) => {
                    if let Some(origin) = &fleet.origin {
                        self.error(
                            origin,
                            format!("spec.listeners[{index}].tls.certificateRefs[{i}]"),
                            reason::INVALID_CERTIFICATE_REF,
                            format!("Secret {name}: {why}"),
                        );
                    }
                }
            }
        }
        names
    }
}
