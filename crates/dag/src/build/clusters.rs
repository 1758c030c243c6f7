//! Clusters of the DAG: a route backend's Service and port, its upstream settings and CA, and
//! the cluster name upstream would give it.

use super::*;

impl<'a> Builder<'a> {
    pub(super) fn cluster(
        &mut self,
        origin: &Origin,
        sp: &ir::ServicePort,
        options: Option<&ir::BackendOptions>,
        policy: &ClusterPolicy,
        field: String,
        out: &mut FleetDag,
    ) -> Option<String> {
        let key = ObjectKey::new(&sp.namespace, &sp.name);
        self.read(Kind::Service, &key);
        let Some(service) = self.snapshot.services.get(&key) else {
            self.error(
                origin,
                field,
                reason::BACKEND_NOT_FOUND,
                format!("Service {}/{} does not exist", sp.namespace, sp.name),
            );
            return None;
        };
        let spec = service.spec.as_ref();
        let external_name = match objects::services::external_name(service, self.cache.options.external_names) {
            Ok(name) => name,
            Err(why) => {
                self.error(
                    origin,
                    field,
                    reason::UNSUPPORTED_VALUE,
                    format!("Service {}/{} {why}", sp.namespace, sp.name),
                );
                return None;
            }
        };
        let udp = self.udp;
        let Some(port) = spec
            .and_then(|s| s.ports.as_ref())
            .and_then(|ports| ports.iter().find(|p| p.port == i32::from(sp.port) && transport_matches(p, udp)))
        else {
            self.error(
                origin,
                field,
                reason::BACKEND_NOT_FOUND,
                format!("Service {}/{} has no port {}", sp.namespace, sp.name, sp.port),
            );
            return None;
        };
        let mut protocol = options.and_then(|o| o.protocol).or_else(|| {
            objects::services::app_protocol(service, port).map(|p| match p {
                objects::services::AppProtocol::H2 => UpstreamProtocol::H2,
                objects::services::AppProtocol::H2c => UpstreamProtocol::H2c,
                objects::services::AppProtocol::Tls => UpstreamProtocol::Tls,
            })
        });
        // A BackendTLSPolicy on the Service (port) makes Gateway API routes speak TLS to it: HTTP
        // and gRPC routes, and TLSRoutes behind a listener that terminated the client's TLS.
        let mut sni = options.and_then(|o| o.sni.clone());
        let mut validation = options.and_then(|o| o.validation.as_ref());
        let policy_applies = match origin.kind {
            "HTTPRoute" | "GRPCRoute" => true,
            "TLSRoute" => self.terminated,
            _ => false,
        };
        if policy_applies && let Some(policy) = self.backend_tls_of(sp, port.name.as_deref()) {
            // A policy without a usable CA: no cluster, so requests to it fail (500).
            let tls = policy.tls.as_ref()?;
            let http2 = matches!(protocol, Some(UpstreamProtocol::H2 | UpstreamProtocol::H2c));
            protocol = Some(if http2 { UpstreamProtocol::H2 } else { UpstreamProtocol::Tls });
            sni = Some(tls.sni.clone());
            validation = Some(&tls.validation);
        }
        let validation = match validation {
            None => None,
            Some(v) => {
                let Some(bundle) = self.ca_bundle(&v.ca, v.ca_kind) else {
                    self.error(
                        origin,
                        field,
                        reason::TLS_UPSTREAM_VALIDATION,
                        format!("{} has no PEM CA", ca_source(v)),
                    );
                    return None;
                };
                let key = bundle.name.clone();
                out.validation.entry(key.clone()).or_insert(bundle);
                Some(Verify { ca: key, names: v.subject_names.clone(), uris: v.subject_uris.clone() })
            }
        };
        let mut cluster = Cluster {
            name: format!("{}/{}/{}", sp.namespace, sp.name, sp.port),
            service: sp.clone(),
            port_name: port.name.clone().unwrap_or_default(),
            protocol,
            policy: policy.clone(),
            validation,
            slow_start: options.and_then(|o| o.slow_start),
            outlier_detection: options.and_then(|o| o.outlier_detection),
            health_port_name: options.and_then(|o| o.health_port).filter(|hp| *hp != sp.port).map(|hp| {
                let ports = spec.and_then(|s| s.ports.as_ref());
                ports
                    .and_then(|ps| ps.iter().find(|p| p.port == i32::from(hp)))
                    .and_then(|p| p.name.clone())
                    .unwrap_or_default()
            }),
            circuit_breakers: circuit_breakers(service),
            sni,
            external_name,
            client_certificate: None,
            dns_lookup_family: None,
            more_services: Vec::new(),
            locality_weights: Vec::new(),
        };
        if cluster.speaks_tls() {
            cluster.client_certificate = self.client_certificate(out);
        }
        // Upstream's cluster names: `namespace/service/port/` and ten hex digits of the SHA-1 of
        // the settings that make another cluster of the same Service port (of nothing for the
        // defaults, so a plain cluster is named exactly as upstream names it).
        // An ExternalName Service's cluster is its own kind (DNS, not EDS): it gets the DNS
        // name in its settings, so it never shares a name with an EDS cluster.
        let settings = if cluster.protocol.is_some()
            || cluster.external_name.is_some()
            || cluster.client_certificate.is_some()
            || cluster.policy != ClusterPolicy::default()
            || cluster.validation.is_some()
            || cluster.slow_start.is_some()
            || cluster.outlier_detection.is_some()
            || cluster.health_port_name.is_some()
            || cluster.sni.is_some()
        {
            let settings = (&cluster.protocol, &cluster.policy, &cluster.validation, &cluster.slow_start);
            let more = (&cluster.external_name, &cluster.client_certificate);
            let mut all = format!("{:?}", (settings, &cluster.health_port_name, &cluster.sni, more));
            // Only a cluster with passive health checks has them in its name: the others keep
            // the names they had before the field existed.
            if let Some(o) = &cluster.outlier_detection {
                all.push_str(&format!(" {o:?}"));
            }
            all
        } else {
            String::new()
        };
        cluster.name = format!("{}/{}", cluster.name, settings_hash(&settings));
        let name = cluster.name.clone();
        if !out.clusters.contains_key(&name) {
            out.clusters.insert(name.clone(), Arc::new(cluster));
        }
        Some(name)
    }

    /// The cluster of a UDPRoute, `udproute/<namespace>/<name>`: the UDP ports of its backends'
    /// Services, each a locality with the backend's weight (Envoy's UDP proxy sends a session
    /// to one cluster). `None` when no backend with a weight resolves.
    pub(super) fn udp_cluster(&mut self, route: &ir::L4Route, out: &mut FleetDag) -> Option<String> {
        let name = format!("udproute/{}/{}", route.origin.namespace, route.origin.name);
        if out.clusters.contains_key(&name) {
            return Some(name);
        }
        let mut scratch = FleetDag::default();
        // The built clusters of the backends with a weight, and their weights.
        let mut parts: Vec<(String, u32)> = Vec::new();
        self.udp = true;
        for (i, j, backend) in route.backends() {
            let BackendTarget::Service(sp) = &backend.target else { continue };
            let field = format!("spec.rules[{i}].backendRefs[{j}]");
            let policy = ClusterPolicy::default();
            let Some(built) = self.cluster(&route.origin, sp, None, &policy, field.clone(), &mut scratch) else {
                continue;
            };
            if scratch.clusters.get(&built).is_some_and(|c| c.external_name.is_some()) {
                // Envoy resolves an ExternalName itself, one name per cluster: it cannot be one
                // weighted locality among others.
                let message = format!("Service {}/{} is an ExternalName Service", sp.namespace, sp.name);
                self.error(
                    &route.origin,
                    field,
                    reason::INVALID_KIND,
                    format!("{message}, which a UDPRoute cannot use"),
                );
                continue;
            }
            if backend.weight > 0 {
                parts.push((built, backend.weight));
            }
        }
        self.udp = false;
        let ((first, _), rest) = parts.split_first()?;
        let mut cluster = Cluster::clone(scratch.clusters.get(first)?);
        cluster.name = name.clone();
        // Datagrams: no HTTP protocol or TLS towards the backends.
        (cluster.protocol, cluster.validation, cluster.sni, cluster.client_certificate) = (None, None, None, None);
        cluster.more_services = rest
            .iter()
            .filter_map(|(built, _)| scratch.clusters.get(built))
            .map(|c| (c.service.clone(), c.port_name.clone()))
            .collect();
        cluster.locality_weights = parts.iter().map(|(_, weight)| *weight).collect();
        out.clusters.insert(name.clone(), Arc::new(cluster));
        Some(name)
    }

    /// An ExtensionService's cluster, `extension/<namespace>/<name>`: HTTP/2 (over TLS unless
    /// `h2c`) or HTTP/1.1 in clear text (`http/1.1`) to its Service port, with its own load balancing, timeouts and limits. False when
    /// a Service of it cannot be resolved (no cluster then).
    pub(super) fn extension_cluster(&mut self, ext: &ir::ExtensionService, out: &mut FleetDag) -> bool {
        let origin = Origin {
            kind: "ExtensionService",
            namespace: ext.origin.namespace.clone(),
            name: ext.origin.name.clone(),
            generation: 0,
        };
        let options = ir::BackendOptions {
            protocol: ext.protocol,
            validation: ext.validation.clone(),
            sni: ext.validation.as_ref().and_then(|v| v.subject_names.first().cloned()),
            ..Default::default()
        };
        let policy = ClusterPolicy {
            load_balancer: ext.load_balancer,
            health_check: None,
            idle_connection_timeout_ms: ext.idle_connection_timeout_ms,
        };
        let mut scratch = FleetDag::default();
        let mut built = Vec::new();
        for (i, service) in ext.services.iter().enumerate() {
            let field = format!("spec.services[{i}]");
            let Some(name) = self.cluster(&origin, service, Some(&options), &policy, field, &mut scratch) else {
                return false;
            };
            built.push(name);
        }
        let Some((first, rest)) = built.split_first() else { return false };
        let mut cluster = Cluster::clone(scratch.clusters.get(first).expect("just built"));
        cluster.more_services = rest
            .iter()
            .filter(|name| *name != first)
            .filter_map(|name| scratch.clusters.get(name))
            .map(|c| (c.service.clone(), c.port_name.clone()))
            .collect();
        cluster.name = ext.cluster_name();
        let [max_connections, max_pending_requests, max_requests, max_retries, per_host_max_connections] =
            ext.circuit_breakers;
        let own = CircuitBreakers {
            max_connections,
            max_pending_requests,
            max_requests,
            max_retries,
            per_host_max_connections,
        };
        cluster.circuit_breakers = own.or(&cluster.circuit_breakers);
        out.validation.append(&mut scratch.validation);
        out.secrets.append(&mut scratch.secrets);
        out.clusters.insert(cluster.name.clone(), Arc::new(cluster));
        true
    }

    /// The DNS cluster of a remote JWKS server (HTTP/1.1, over TLS for `https`, verified when
    /// asked), added to the fleet; its name is [`jwks_cluster_name`].
    pub(super) fn jwks_cluster(&mut self, jwks: &ir::RemoteJwks, out: &mut FleetDag) {
        let name = jwks_cluster_name(jwks);
        if out.clusters.contains_key(&name) {
            return;
        }
        let validation = match &jwks.validation {
            None => None,
            Some(v) => {
                // Checked by the front end; a CA gone since is a cluster without verification
                // no more than it is a broken one: leave the cluster out.
                let Some(bundle) = self.ca_bundle(&v.ca, v.ca_kind) else { return };
                let key = bundle.name.clone();
                out.validation.entry(key.clone()).or_insert(bundle);
                Some(Verify { ca: key, names: v.subject_names.clone(), uris: v.subject_uris.clone() })
            }
        };
        let cluster = Cluster {
            name: name.clone(),
            service: ir::ServicePort { namespace: String::new(), name: jwks.host.clone(), port: jwks.port },
            port_name: String::new(),
            protocol: jwks.tls.then_some(UpstreamProtocol::Tls),
            policy: ClusterPolicy::default(),
            validation,
            slow_start: None,
            outlier_detection: None,
            health_port_name: None,
            // An IP address is not a server name (SNI carries DNS names only).
            sni: jwks.tls.then(|| jwks.host.clone()).filter(|h| h.parse::<std::net::IpAddr>().is_err()),
            circuit_breakers: CircuitBreakers::default(),
            external_name: Some(jwks.host.clone()),
            client_certificate: None,
            dns_lookup_family: jwks.dns_lookup_family.clone(),
            more_services: Vec::new(),
            locality_weights: Vec::new(),
        };
        out.clusters.insert(name, Arc::new(cluster));
    }

    /// Envoy's client certificate towards TLS backends, added to the fleet's secrets; `None` when
    /// none is configured or its Secret holds no usable pair (the connection is then made
    /// without one, and a backend that requires one refuses it).
    fn client_certificate(&mut self, out: &mut FleetDag) -> Option<String> {
        let r = self.cache.options.client_certificate.clone()?;
        self.tls_secret(&r, out)
    }

    /// A `kubernetes.io/tls` Secret added to the fleet's secrets, by its `namespace/name`; `None`
    /// when it holds no usable pair.
    pub(super) fn tls_secret(&mut self, r: &ir::ObjectRef, out: &mut FleetDag) -> Option<String> {
        let key = ObjectKey::new(&r.namespace, &r.name);
        self.read(Kind::Secret, &key);
        let (crt, pem_key) = objects::secrets::tls_pair(self.snapshot.secrets.get(&key).map(|s| &**s)).ok()?;
        let name = format!("{}/{}", r.namespace, r.name);
        out.secrets.entry(name.clone()).or_insert_with(|| TlsSecret {
            name: name.clone(),
            certificate_chain: crt.to_vec(),
            private_key: pem_key.to_vec(),
            generic: false,
        });
        Some(name)
    }

    /// A CA bundle from the `ca.crt` of a Secret or of a ConfigMap, or from a
    /// ClusterTrustBundle, as `kind` says.
    pub(super) fn ca_bundle(&mut self, r: &ir::ObjectRef, kind: ir::CaKind) -> Option<CaBundle> {
        let key = ObjectKey::new(&r.namespace, &r.name);
        let (ca, name) = match kind {
            ir::CaKind::Secret => {
                self.read(Kind::Secret, &key);
                let pem = objects::secrets::ca_bundle(self.snapshot.secrets.get(&key).map(|s| &**s)).ok()?;
                (pem.to_vec(), format!("{}/{}/ca", r.namespace, r.name))
            }
            ir::CaKind::ConfigMap => {
                self.read(Kind::ConfigMap, &key);
                let text = self.snapshot.config_maps.get(&key)?.data.as_ref()?.get("ca.crt")?;
                objects::secrets::ca_certificates(text.as_bytes()).ok()?;
                let pem = text.clone().into_bytes();
                // Named apart from a Secret's bundle of the same name.
                (pem, format!("{}/{}/configmap/ca", r.namespace, r.name))
            }
            ir::CaKind::ClusterTrustBundle => {
                let key = ObjectKey::new("", &r.name);
                self.read(Kind::ClusterTrustBundle, &key);
                let text = &self.snapshot.cluster_trust_bundles.get(&key)?.spec.trust_bundle;
                objects::secrets::ca_certificates(text.as_bytes()).ok()?;
                // Upper case: no namespace (so no Secret's bundle) can be named so.
                (text.clone().into_bytes(), format!("ClusterTrustBundle/{}/ca", r.name))
            }
            ir::CaKind::System => {
                let name = "system/ca".to_string();
                return Some(CaBundle {
                    name,
                    ca: Vec::new(),
                    crl: None,
                    crl_only_leaf: false,
                    accept_untrusted: false,
                    system: true,
                });
            }
        };
        Some(CaBundle { name, ca, crl: None, crl_only_leaf: false, accept_untrusted: false, system: false })
    }

    /// The BackendTLSPolicy for a Service port: the port's own (by name), else the Service's.
    fn backend_tls_of(&self, sp: &ir::ServicePort, port_name: Option<&str>) -> Option<&'a ir::BackendTlsPolicy> {
        let policies: &'a [ir::BackendTlsPolicy] = self.backend_tls;
        let find = |section: Option<&str>| {
            let key = (sp.namespace.as_str(), sp.name.as_str(), section);
            let at =
                policies.partition_point(|p| (p.namespace.as_str(), p.service.as_str(), p.section.as_deref()) < key);
            policies.get(at).filter(|p| (p.namespace.as_str(), p.service.as_str(), p.section.as_deref()) == key)
        };
        port_name.filter(|n| !n.is_empty()).and_then(|n| find(Some(n))).or_else(|| find(None))
    }

    /// Records that the route being built read an object (outside routes: nothing to record).
    fn read(&mut self, kind: Kind, key: &ObjectKey) {
        if let Some(reads) = &mut self.reads {
            reads.record(self.snapshot, kind, key);
        }
    }
}

/// Whether a Service port carries UDP (`udp`) or TCP (no protocol means TCP; SCTP neither).
pub(super) fn transport_matches(port: &k8s_openapi::api::core::v1::ServicePort, udp: bool) -> bool {
    port.protocol.as_deref().unwrap_or("TCP") == if udp { "UDP" } else { "TCP" }
}

/// Ten hex digits of the SHA-1 of `settings`, as upstream names clusters.
fn settings_hash(settings: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, settings.as_bytes());
    digest.as_ref()[..5].iter().map(|b| format!("{b:02x}")).collect()
}

/// A Service's circuit-breaker annotations; a value that is not a number counts as unset.
fn circuit_breakers(service: &k8s_openapi::api::core::v1::Service) -> CircuitBreakers {
    let annotations = service.metadata.annotations.as_ref();
    let get = |key: &str| annotations.and_then(|a| a.get(key)).and_then(|v| v.trim().parse::<u32>().ok());
    CircuitBreakers {
        max_connections: get("projectcontour.io/max-connections"),
        max_pending_requests: get("projectcontour.io/max-pending-requests"),
        max_requests: get("projectcontour.io/max-requests"),
        max_retries: get("projectcontour.io/max-retries"),
        per_host_max_connections: get("projectcontour.io/per-host-max-connections"),
    }
}

/// The DNS cluster reaching a remote JWKS server, named as upstream names it:
/// `dnsname/<scheme>/<host>/<port>/` and twenty hex digits of the SHA-256 of its settings.
pub fn jwks_cluster_name(jwks: &ir::RemoteJwks) -> String {
    let scheme = if jwks.tls { "https" } else { "http" };
    let mut settings = format!("{scheme:?}{:?}{:?}{:?}", jwks.host, jwks.port.to_string(), jwks.dns_lookup_family);
    if let Some(v) = &jwks.validation {
        settings.push_str(&format!("{:?}{:?}{:?}", v.ca.namespace, v.ca.name, v.subject_names));
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, settings.as_bytes());
    let hash: String = digest.as_ref()[..10].iter().map(|b| format!("{b:02x}")).collect();
    format!("dnsname/{scheme}/{}/{}/{hash}", jwks.host, jwks.port)
}

/// The object a CA bundle comes from and where in it, for messages.
fn ca_source(v: &ir::UpstreamValidation) -> String {
    let (kind, at) = match v.ca_kind {
        ir::CaKind::Secret => ("Secret", "ca.crt"),
        ir::CaKind::ConfigMap => ("ConfigMap", "ca.crt"),
        ir::CaKind::ClusterTrustBundle => return format!("ClusterTrustBundle {} (spec.trustBundle)", v.ca.name),
        ir::CaKind::System => return "the system's trust store".to_string(),
    };
    format!("CA {kind} {}/{} ({at})", v.ca.namespace, v.ca.name)
}
