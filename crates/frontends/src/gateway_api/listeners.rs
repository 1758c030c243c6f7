//! Gateway listeners into IR listeners: protocol, port, hostname, TLS and who may attach.

use std::collections::BTreeMap;
use std::net::IpAddr;

use gateway_api::gateways::{
    GatewayListeners, GatewayListenersAllowedRoutesNamespacesFrom as From, GatewayListenersTlsMode,
};
use ir::{Diagnostic, ListenerTls, ObjectRef, Protocol, TlsMode, reason};
use objects::Snapshot;
use objects::types::Gateway;

use super::refs::{self, CaCertificate};
use super::{error, listener_set, origin};

/// Who declared a listener of a fleet, for the routes that attach to it.
#[derive(Debug, Clone)]
pub(super) struct Source {
    /// The ListenerSet that declared it; `None` for the Gateway's own.
    pub set: Option<objects::ObjectKey>,
    /// The declaring object's namespace (`allowedRoutes` `Same`).
    pub namespace: String,
    /// The listener as declared.
    pub spec: GatewayListeners,
}

/// Translates a Gateway into a fleet: its own listeners, then those of the ListenerSets it
/// allows (each listener's [`Source`] at the same index). Listeners that cannot be served are
/// still present (so listener indices line up with the spec) but carry no TLS and are flagged
/// by a diagnostic; the DAG skips listeners whose `port` is 0.
pub(super) fn translate_gateway(
    snapshot: &Snapshot,
    key: &objects::ObjectKey,
    gateway: &Gateway,
    options: &super::Options,
    diagnostics: &mut Vec<Diagnostic>,
) -> (ir::Fleet, Vec<Source>) {
    let host_mode = options.host_mode;
    let origin = origin("Gateway", &gateway.metadata);
    let mut address = None;
    for (i, a) in gateway.spec.addresses.iter().flatten().enumerate() {
        // An address of a scope is the Service's to give (`addresses::assign` matches it), not
        // one this Gateway's Envoy binds.
        let routability = gateway.v1_7.routability(i);
        if routability.is_some_and(|r| r != super::addresses::SENTINEL) {
            continue;
        }
        let kind = a.r#type.as_deref().unwrap_or("IPAddress");
        let value = a.value.as_deref().unwrap_or_default();
        let field = format!("spec.addresses[{i}]");
        match (kind, value.parse::<IpAddr>()) {
            // An empty value asks for any address.
            ("IPAddress", _) if value.is_empty() => {}
            // In host mode the Gateway's Envoy binds the address itself: only loopback addresses
            // exist on every host.
            ("IPAddress", Ok(ip)) if host_mode && !ip.is_loopback() => diagnostics.push(error(
                &origin,
                field,
                reason::ADDRESS_NOT_USABLE,
                format!("{ip} cannot be bound on this host (host mode uses loopback addresses)"),
            )),
            ("IPAddress", Ok(ip)) => {
                address.get_or_insert(ip);
            }
            ("IPAddress", Err(_)) => diagnostics.push(error(
                &origin,
                format!("{field}.value"),
                reason::UNSUPPORTED_ADDRESS,
                format!("{value:?} is not an IP address"),
            )),
            ("Hostname", _) => diagnostics.push(error(
                &origin,
                field,
                reason::ADDRESS_NOT_USABLE,
                format!("hostname {value:?} cannot be assigned: only IP addresses are"),
            )),
            (other, _) => diagnostics.push(error(
                &origin,
                format!("{field}.type"),
                reason::UNSUPPORTED_ADDRESS,
                format!("address type {other:?} is not supported"),
            )),
        }
    }
    if host_mode {
        address = super::addresses::assign(snapshot, options, key, gateway)
            .addresses
            .iter()
            .find_map(|a| a.value.parse().ok());
    }

    if let Some(p) = gateway.spec.infrastructure.as_ref().and_then(|i| i.parameters_ref.as_ref()) {
        // Only upstream's ContourDeployment parameterizes a Gateway.
        if p.group != "projectcontour.io" || p.kind != "ContourDeployment" {
            diagnostics.push(error(
                &origin,
                "spec.infrastructure.parametersRef".into(),
                reason::INVALID_PARAMETERS,
                format!("{}/{} {} is not a projectcontour.io/ContourDeployment", p.group, p.kind, p.name),
            ));
        }
    }
    let mut listeners: Vec<ir::Listener> = Vec::new();
    let mut extensions = Vec::new();
    for (i, spec) in gateway.spec.listeners.iter().enumerate() {
        let field = format!("spec.listeners[{i}]");
        let mut listener =
            translate_listener(snapshot, &origin, gateway, spec, spec.name.clone(), &field, options, diagnostics);
        if let Some(filters) = gateway.v1_7.listener_filters.get(&spec.name) {
            let (at, out) = (field.as_str(), &mut extensions);
            super::listener_filters::apply(snapshot, &origin, filters, &mut listener, at, out, diagnostics);
        }
        listeners.push(listener);
    }
    flag_conflicts(&origin, &mut listeners, diagnostics);
    let mut sources: Vec<Source> = gateway
        .spec
        .listeners
        .iter()
        .map(|spec| Source { set: None, namespace: key.namespace.clone(), spec: spec.clone() })
        .collect();
    let own = listeners.len();
    let mut owners = Vec::new();
    for child in listener_set::children(snapshot, key, gateway).into_iter().filter(|c| c.allowed) {
        let set_origin = super::origin("ListenerSet", &child.set.metadata);
        for (j, spec) in child.listeners.into_iter().enumerate() {
            let name = listener_set::listener_name(child.key, &spec.name);
            let field = format!("spec.listeners[{j}]");
            let mut listener =
                translate_listener(snapshot, &set_origin, gateway, &spec, name, &field, options, diagnostics);
            if let Some(filters) = child.set.v1_7.listener_filters.get(&spec.name) {
                let (at, out) = (field.as_str(), &mut extensions);
                super::listener_filters::apply(snapshot, &set_origin, filters, &mut listener, at, out, diagnostics);
            }
            listeners.push(listener);
            owners.push((set_origin.clone(), j));
            sources.push(Source { set: Some(child.key.clone()), namespace: child.key.namespace.clone(), spec });
        }
    }
    listener_set::refuse_conflicts(&mut listeners, own, &owners, diagnostics);
    let backend_certificate = backend_certificate(snapshot, gateway, &origin, diagnostics);
    let fleet = ir::Fleet {
        id: options.fleet_id(key),
        address,
        origin: Some(origin),
        listeners,
        extensions,
        backend_certificate,
    };
    (fleet, sources)
}

/// Translates one listener of a Gateway, or of a ListenerSet attached to it (`owner` is the
/// object that declares it: its namespace is where certificates are found and ReferenceGrants
/// are asked from). A listener that cannot be served keeps port 0 and gets a diagnostic.
#[allow(clippy::too_many_arguments)]
pub(super) fn translate_listener(
    snapshot: &Snapshot,
    owner: &ir::Origin,
    gateway: &Gateway,
    spec: &GatewayListeners,
    name: String,
    field: &str,
    options: &super::Options,
    diagnostics: &mut Vec<Diagnostic>,
) -> ir::Listener {
    let mut listener = ir::Listener {
        name,
        port: 0,
        protocol: Protocol::Http,
        hostname: spec.hostname.clone().filter(|h| !h.is_empty()).map(|h| h.to_ascii_lowercase()),
        tls: None,
        http_routes: Vec::new(),
        tls_routes: Vec::new(),
        l4_routes: Vec::new(),
        pre_routing: Vec::new(),
    };
    let protocol = match spec.protocol.as_str() {
        "HTTP" => Some(Protocol::Http),
        "HTTPS" => Some(Protocol::Https),
        "TLS" => Some(Protocol::Tls),
        "TCP" => Some(Protocol::Tcp),
        "UDP" => Some(Protocol::Udp),
        _ => None,
    };
    let Some(protocol) = protocol else {
        diagnostics.push(error(
            owner,
            format!("{field}.protocol"),
            reason::UNSUPPORTED_PROTOCOL,
            format!("listener {}: protocol {} is not supported", spec.name, spec.protocol),
        ));
        return listener;
    };
    listener.protocol = protocol;
    if let Some(message) = listener.hostname.as_deref().and_then(ir::hostname::problem) {
        diagnostics.push(error(
            owner,
            format!("{field}.hostname"),
            reason::INVALID,
            format!("listener {}: {message}", spec.name),
        ));
        return listener;
    }
    if supported_kinds(spec).1 {
        diagnostics.push(error(
            owner,
            format!("{field}.allowedRoutes.kinds"),
            reason::INVALID_ROUTE_KINDS,
            format!(
                "listener {}: allowedRoutes.kinds names a kind a {} listener cannot carry",
                spec.name, spec.protocol
            ),
        ));
    }
    let Ok(port) = u16::try_from(spec.port).map_err(drop).and_then(|p| if p == 0 { Err(()) } else { Ok(p) }) else {
        diagnostics.push(error(
            owner,
            format!("{field}.port"),
            reason::PORT_UNAVAILABLE,
            format!("port {} is out of range", spec.port),
        ));
        return listener;
    };
    if let Ok(tls) = tls(snapshot, owner, gateway, spec, protocol, field, diagnostics) {
        listener.tls = tls;
        listener.port = if options.static_gateway.is_some() { super::container_port(port) } else { port };
    }
    listener
}

/// Listeners on one port must agree on the protocol family, and their hostnames must differ. UDP
/// listeners have ports of their own (another transport); a TCP or UDP listener has no hostname
/// to tell it apart, so it must be alone on its port.
fn flag_conflicts(origin: &ir::Origin, listeners: &mut [ir::Listener], diagnostics: &mut Vec<Diagnostic>) {
    let mut by_port: BTreeMap<(u16, bool), Vec<usize>> = BTreeMap::new();
    for (i, l) in listeners.iter().enumerate() {
        if l.port != 0 {
            by_port.entry((l.port, l.protocol == Protocol::Udp)).or_default().push(i);
        }
    }
    let mut refused = Vec::new();
    for indices in by_port.values() {
        let first = listeners[indices[0]].protocol.port_family();
        if indices.iter().any(|&i| listeners[i].protocol.port_family() != first) {
            for &i in indices {
                let message = "listeners on one port mix protocols that cannot share it (HTTP, HTTPS or TLS, TCP)";
                refused.push((i, reason::PROTOCOL_CONFLICT, message.to_string()));
            }
            continue;
        }
        for (n, &i) in indices.iter().enumerate() {
            if first == 2 && n > 0 {
                let message = format!("another {:?} listener uses port {}", listeners[i].protocol, listeners[i].port);
                refused.push((i, reason::PROTOCOL_CONFLICT, message));
                continue;
            }
            let dup = indices[..n].iter().any(|&j| listeners[j].hostname == listeners[i].hostname);
            if dup {
                refused.push((
                    i,
                    reason::HOSTNAME_CONFLICT,
                    format!("another listener on port {} has the same hostname", listeners[i].port),
                ));
            }
        }
    }
    for (i, reason, message) in refused {
        diagnostics.push(error(
            origin,
            format!("spec.listeners[{i}]"),
            reason,
            format!("listener {}: {message}", listeners[i].name),
        ));
        listeners[i].port = 0;
    }
}

fn tls(
    snapshot: &Snapshot,
    origin: &ir::Origin,
    gateway: &Gateway,
    spec: &GatewayListeners,
    protocol: Protocol,
    field: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Option<ListenerTls>, ()> {
    if matches!(protocol, Protocol::Http | Protocol::Tcp | Protocol::Udp) {
        return Ok(None);
    }
    let Some(tls) = &spec.tls else {
        diagnostics.push(error(
            origin,
            format!("{field}.tls"),
            reason::INVALID_TLS_CONFIG,
            format!("listener {}: {:?} needs tls", spec.name, protocol),
        ));
        return Err(());
    };
    let mode = match tls.mode {
        Some(GatewayListenersTlsMode::Passthrough) => TlsMode::Passthrough,
        _ => TlsMode::Terminate,
    };
    if mode == TlsMode::Passthrough {
        if protocol == Protocol::Https {
            diagnostics.push(error(
                origin,
                format!("{field}.tls.mode"),
                reason::UNSUPPORTED_VALUE,
                format!("listener {}: HTTPS cannot pass TLS through", spec.name),
            ));
            return Err(());
        }
        return Ok(Some(ListenerTls::new(mode, Vec::new())));
    }
    let mut certificates = Vec::new();
    for (i, cert) in tls.certificate_refs.iter().flatten().enumerate() {
        let (group, kind) = (cert.group.as_deref(), cert.kind.as_deref());
        match secret_ref(snapshot, origin, group, kind, cert.namespace.as_deref(), &cert.name) {
            // The same Secret twice is one certificate (Envoy would stall on a thousand).
            Ok(r) if certificates.contains(&r) => {}
            Ok(r) => certificates.push(r),
            Err((reason, message)) => {
                let reason = if reason == reason::REF_NOT_PERMITTED { reason } else { reason::INVALID_CERTIFICATE_REF };
                diagnostics.push(error(origin, format!("{field}.tls.certificateRefs[{i}]"), reason, message));
            }
        }
    }
    if certificates.is_empty() {
        diagnostics.push(error(
            origin,
            format!("{field}.tls.certificateRefs"),
            reason::INVALID_CERTIFICATE_REF,
            format!("listener {}: no usable certificate", spec.name),
        ));
        return Err(());
    }
    let mut listener_tls = ListenerTls::new(mode, certificates);
    if let Some(validation) = frontend_validation(gateway, spec.port) {
        listener_tls.client_validation =
            Some(client_validation(snapshot, origin, &validation, spec, field, diagnostics)?);
    }
    Ok(Some(listener_tls))
}

/// A Gateway's check of client certificates on one port (`spec.tls.frontend`): the port's own
/// (`perPort`) or else the default.
struct FrontendValidation<'a> {
    /// Where it is in the Gateway, for messages.
    field: String,
    /// `(group, kind, namespace, name)` of each CA certificate reference.
    refs: Vec<(&'a str, &'a str, Option<&'a str>, &'a str)>,
    /// `AllowInsecureFallback`: clients without a valid certificate are let in too.
    insecure: bool,
}

fn frontend_validation(gateway: &Gateway, port: i32) -> Option<FrontendValidation<'_>> {
    use gateway_api::gateways::{
        GatewayTlsFrontendDefaultValidationMode as DefaultMode, GatewayTlsFrontendPerPortTlsValidationMode as PortMode,
    };
    let frontend = gateway.spec.tls.as_ref()?.frontend.as_ref()?;
    let per_port = frontend.per_port.iter().flatten().enumerate().find(|(_, p)| p.port == port);
    if let Some((i, p)) = per_port {
        let v = p.tls.validation.as_ref()?;
        return Some(FrontendValidation {
            field: format!("spec.tls.frontend.perPort[{i}].tls.validation"),
            refs: v
                .ca_certificate_refs
                .iter()
                .map(|r| (r.group.as_str(), r.kind.as_str(), r.namespace.as_deref(), r.name.as_str()))
                .collect(),
            insecure: v.mode == Some(PortMode::AllowInsecureFallback),
        });
    }
    let v = frontend.default.validation.as_ref()?;
    Some(FrontendValidation {
        field: "spec.tls.frontend.default.validation".into(),
        refs: v
            .ca_certificate_refs
            .iter()
            .map(|r| (r.group.as_str(), r.kind.as_str(), r.namespace.as_deref(), r.name.as_str()))
            .collect(),
        insecure: v.mode == Some(DefaultMode::AllowInsecureFallback),
    })
}

/// Whether any of a Gateway's frontend validations lets clients in without a valid certificate
/// (the Gateway's `InsecureFrontendValidationMode` condition).
pub(super) fn insecure_frontend(gateway: &Gateway) -> bool {
    use gateway_api::gateways::{
        GatewayTlsFrontendDefaultValidationMode as DefaultMode, GatewayTlsFrontendPerPortTlsValidationMode as PortMode,
    };
    let Some(frontend) = gateway.spec.tls.as_ref().and_then(|t| t.frontend.as_ref()) else { return false };
    let default = frontend.default.validation.as_ref().and_then(|v| v.mode.as_ref());
    default == Some(&DefaultMode::AllowInsecureFallback)
        || frontend
            .per_port
            .iter()
            .flatten()
            .any(|p| p.tls.validation.as_ref().and_then(|v| v.mode.as_ref()) == Some(&PortMode::AllowInsecureFallback))
}

/// A terminating listener's client certificate check. Every reference that does not resolve is
/// reported; the first that does is the CA (Envoy takes one bundle per filter chain). With none,
/// the listener is not served (`NoValidCACertificate`), so no client gets in unchecked.
fn client_validation(
    snapshot: &Snapshot,
    origin: &ir::Origin,
    validation: &FrontendValidation<'_>,
    spec: &GatewayListeners,
    field: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<ir::ClientValidation, ()> {
    let mut ca = None;
    for (i, &(group, kind, namespace, name)) in validation.refs.iter().enumerate() {
        let at = format!("{}.caCertificateRefs[{i}]", validation.field);
        // A ClusterTrustBundle is cluster-scoped: no namespace, no grant.
        let cluster_scoped = refs::cluster_trust_bundle(group, kind);
        let namespace = if cluster_scoped { "" } else { namespace.unwrap_or(&origin.namespace) };
        let mut problem = |reason, detail: String| {
            let message = format!("listener {}: {at}: {detail}", spec.name);
            diagnostics.push(error(origin, format!("{field}.tls"), reason, message));
        };
        let permitted = cluster_scoped
            || namespace == origin.namespace
            || refs::granted(snapshot, super::GROUP, origin.kind, &origin.namespace, group, kind, namespace, name);
        match refs::ca_certificate(snapshot, group, kind, namespace, name) {
            CaCertificate::WrongKind => {
                problem(reason::INVALID_CA_CERTIFICATE_KIND, format!("{group}/{kind} is not {}", refs::CA_KINDS))
            }
            _ if !permitted => {
                problem(reason::REF_NOT_PERMITTED, format!("no ReferenceGrant in {namespace} allows {kind} {name}"))
            }
            CaCertificate::Unusable => {
                let object = if cluster_scoped { name.to_string() } else { format!("{namespace}/{name}") };
                let at = refs::ca_location(kind);
                problem(reason::INVALID_CA_CERTIFICATE_REF, format!("{kind} {object} has no PEM CA certificate {at}"))
            }
            CaCertificate::Usable(ca_kind) => {
                ca.get_or_insert((ObjectRef { namespace: namespace.to_string(), name: name.to_string() }, ca_kind));
            }
        }
    }
    let Some((ca, ca_kind)) = ca else {
        let message = format!("listener {}: no CA certificate of {} resolves", spec.name, validation.field);
        diagnostics.push(error(origin, format!("{field}.tls"), reason::NO_VALID_CA_CERTIFICATE, message));
        return Err(());
    };
    // The insecure fallback asks for a certificate but lets clients in without one or with one
    // that does not verify; the backend decides (the certificate is forwarded when asked).
    Ok(ir::ClientValidation {
        ca: Some(ca),
        ca_kind,
        skip_verify: validation.insecure,
        optional: validation.insecure,
        ..Default::default()
    })
}

/// The certificate a Gateway's Envoys present to TLS backends (`spec.tls.backend
/// .clientCertificateRef`): a `kubernetes.io/tls` Secret in the Gateway's namespace or granted
/// to it. A reference that does not resolve is reported and no certificate is presented.
fn backend_certificate(
    snapshot: &Snapshot,
    gateway: &Gateway,
    origin: &ir::Origin,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ObjectRef> {
    let r = gateway.spec.tls.as_ref()?.backend.as_ref()?.client_certificate_ref.as_ref()?;
    let field = "spec.tls.backend.clientCertificateRef".to_string();
    let checked = secret_ref(snapshot, origin, r.group.as_deref(), r.kind.as_deref(), r.namespace.as_deref(), &r.name)
        .and_then(|found| {
            let secret = snapshot.secrets.get(&objects::ObjectKey::new(&found.namespace, &found.name));
            match objects::secrets::tls_pair(secret.map(|s| &**s)) {
                Ok(_) => Ok(found),
                Err(why) => Err(("", format!("Secret {}/{}: {why}", found.namespace, found.name))),
            }
        });
    match checked {
        Ok(found) => Some(found),
        Err((reason, message)) => {
            let reason =
                if reason == reason::REF_NOT_PERMITTED { reason } else { reason::INVALID_CLIENT_CERTIFICATE_REF };
            diagnostics.push(error(origin, field.clone(), reason, format!("{field}: {message}")));
            None
        }
    }
}

/// A reference to a Secret from `origin` (a Gateway or ListenerSet): a core Secret, in the
/// origin's namespace or granted to it. The error is `("RefNotPermitted", message)` without a
/// grant, `("", message)` for another kind (each caller has its own reason for that).
fn secret_ref(
    snapshot: &Snapshot,
    origin: &ir::Origin,
    group: Option<&str>,
    kind: Option<&str>,
    namespace: Option<&str>,
    name: &str,
) -> Result<ObjectRef, (&'static str, String)> {
    let (group, kind) = (group.unwrap_or(""), kind.unwrap_or("Secret"));
    let namespace = namespace.unwrap_or(&origin.namespace);
    if !group.is_empty() || kind != "Secret" {
        return Err(("", format!("{group}/{kind} is not a Secret")));
    }
    if namespace != origin.namespace
        && !refs::granted(snapshot, super::GROUP, origin.kind, &origin.namespace, "", "Secret", namespace, name)
    {
        return Err((reason::REF_NOT_PERMITTED, format!("no ReferenceGrant in {namespace} allows Secret {name}")));
    }
    Ok(ObjectRef { namespace: namespace.to_string(), name: name.to_string() })
}

/// The route kinds a listener's protocol can carry.
fn protocol_kinds(protocol: &str) -> &'static [&'static str] {
    match protocol {
        "HTTP" | "HTTPS" => &["HTTPRoute", "GRPCRoute"],
        "TLS" => &["TLSRoute"],
        "TCP" => &["TCPRoute"],
        "UDP" => &["UDPRoute"],
        _ => &[],
    }
}

/// The route kinds a listener accepts (its `allowedRoutes.kinds` that its protocol can carry, or
/// every kind its protocol can carry), and whether `allowedRoutes.kinds` names any other.
pub(super) fn supported_kinds(spec: &GatewayListeners) -> (Vec<&'static str>, bool) {
    let possible = protocol_kinds(&spec.protocol);
    match spec.allowed_routes.as_ref().and_then(|a| a.kinds.as_ref()).filter(|k| !k.is_empty()) {
        None => (possible.to_vec(), false),
        Some(kinds) => {
            let mut out = Vec::new();
            let mut invalid = false;
            for k in kinds {
                let ours = k.group.as_deref().unwrap_or(super::GROUP) == super::GROUP;
                match possible.iter().find(|p| ours && **p == k.kind) {
                    Some(p) if !out.contains(p) => out.push(*p),
                    Some(_) => {}
                    None => invalid = true,
                }
            }
            (out, invalid)
        }
    }
}

/// Whether a listener lets a route of `kind` from `namespace` attach.
pub(super) fn allows(
    snapshot: &Snapshot,
    owner_namespace: &str,
    spec: &GatewayListeners,
    kind: &str,
    namespace: &str,
) -> bool {
    let allowed = spec.allowed_routes.as_ref();
    if !supported_kinds(spec).0.contains(&kind) {
        return false;
    }
    let namespaces = allowed.and_then(|a| a.namespaces.as_ref());
    match namespaces.and_then(|n| n.from.as_ref()) {
        None | Some(From::Same) => namespace == owner_namespace,
        Some(From::All) => true,
        Some(From::Selector) => {
            let Some(selector) = namespaces.and_then(|n| n.selector.as_ref()) else {
                return false;
            };
            let labels = refs::namespace_labels(snapshot, namespace);
            let expressions = selector
                .match_expressions
                .iter()
                .flatten()
                .map(|e| (e.key.as_str(), e.operator.as_str(), e.values.as_deref().unwrap_or_default()));
            refs::selects(selector.match_labels.as_ref(), expressions, labels)
        }
    }
}
