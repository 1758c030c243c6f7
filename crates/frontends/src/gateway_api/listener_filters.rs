//! A Gateway listener's pre-routing filters (Gateway API 1.7 experimental `filters.requests`):
//! each `ExternalAuth` filter becomes a check of every request of the listener by its
//! authorization server, in order, before a route is chosen. A listener whose filters cannot
//! all be honoured is not served: serving it without its checks would let unchecked requests
//! through.

use std::sync::Arc;

use gateway_api::experimental::httproutes::HttpRouteRulesFiltersExternalAuthProtocol as AuthProtocol;
use ir::{Diagnostic, Protocol, reason};
use objects::Snapshot;
use objects::gateway::{ExternalAuth, ListenerFilters};

use super::{GROUP, error, refs};

/// Adds `filters` to `listener` (declared by `owner`, a Gateway or a ListenerSet, at `field`),
/// and their authorization servers' clusters to `extensions`. A filter that cannot be honoured leaves the listener
/// unserved (port 0), with a diagnostic naming it.
pub(super) fn apply(
    snapshot: &Snapshot,
    owner: &ir::Origin,
    filters: &ListenerFilters,
    listener: &mut ir::Listener,
    field: &str,
    extensions: &mut Vec<Arc<ir::ExtensionService>>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if !matches!(listener.protocol, Protocol::Http | Protocol::Https) {
        // The API server allows filters on HTTP and HTTPS listeners only.
        return;
    }
    let mut checks = Vec::new();
    let mut refused = false;
    for (j, filter) in filters.requests.iter().enumerate() {
        let at = format!("{field}.filters.requests[{j}]");
        let outcome = match (filter.type_.as_str(), &filter.external_auth) {
            ("ExternalAuth", Some(auth)) => external_auth(snapshot, owner, auth, &at),
            ("ExtensionRef", _) => Err((
                format!("{at}.extensionRef"),
                reason::INVALID,
                "an ExtensionRef listener filter is not supported; the listener is not served without it".to_string(),
            )),
            (other, _) => {
                Err((format!("{at}.type"), reason::INVALID, format!("listener filter type {other:?} is not supported")))
            }
        };
        match outcome {
            Ok((authorization, extension)) => {
                if extensions.iter().all(|e| e.cluster_name() != extension.cluster_name()) {
                    extensions.push(Arc::new(extension));
                }
                checks.push(authorization);
            }
            Err((field, reason, message)) => {
                diagnostics.push(error(owner, field, reason, format!("listener {}: {message}", listener.name)));
                refused = true;
            }
        }
    }
    if refused {
        listener.port = 0;
    } else {
        listener.pre_routing = checks;
    }
}

type Refusal = (String, &'static str, String);

/// An ExternalAuth filter's check and its server's cluster: a Service port of the owner's
/// namespace, or of another one that grants it to the owner, spoken to over gRPC (HTTP/2 in
/// clear text) or HTTP/1.1.
fn external_auth(
    snapshot: &Snapshot,
    owner: &ir::Origin,
    auth: &ExternalAuth,
    at: &str,
) -> Result<(ir::Authorization, ir::ExtensionService), Refusal> {
    let backend = &auth.backend_ref;
    let field = format!("{at}.externalAuth.backendRef");
    let (group, kind) = (backend.group.as_deref().unwrap_or_default(), backend.kind.as_deref().unwrap_or("Service"));
    if !group.is_empty() || kind != "Service" {
        let message = format!("{group}/{kind} {} is not a Service", backend.name);
        return Err((field, reason::INVALID_KIND, message));
    }
    let namespace = owner.namespace.as_str();
    let target = backend.namespace.as_deref().unwrap_or(namespace);
    if target != namespace
        && !refs::granted(snapshot, GROUP, owner.kind, namespace, "", "Service", target, &backend.name)
    {
        let message =
            format!("Service {target}/{} is in another namespace and no ReferenceGrant allows it", backend.name);
        return Err((field, reason::REF_NOT_PERMITTED, message));
    }
    let port = backend.port.and_then(|p| u16::try_from(p).ok()).filter(|p| *p != 0);
    let service = snapshot.services.get(&objects::ObjectKey::new(target, &backend.name));
    let has_port = |p: u16| {
        service.and_then(|s| s.spec.as_ref()).and_then(|s| s.ports.as_ref()).is_some_and(|ports| {
            ports.iter().any(|sp| sp.port == i32::from(p) && sp.protocol.as_deref().is_none_or(|t| t == "TCP"))
        })
    };
    let Some(port) = port.filter(|p| has_port(*p)) else {
        let message = match (service, port) {
            (None, _) => format!("Service {target}/{} does not exist", backend.name),
            (Some(_), None) => format!("Service {target}/{}: a port is required", backend.name),
            (Some(_), Some(p)) => format!("Service {target}/{} has no TCP port {p}", backend.name),
        };
        return Err((field, reason::BACKEND_NOT_FOUND, message));
    };
    let service_port = ir::ServicePort { namespace: target.to_string(), name: backend.name.clone(), port };
    let grpc = matches!(auth.protocol, AuthProtocol::Grpc);
    let cluster = ir::external_auth_cluster_name(&service_port, if grpc { "grpc" } else { "http" });
    let http = auth.http.as_ref();
    let exact = |names: Option<&Vec<String>>| -> Vec<ir::HeaderNameMatch> {
        names
            .into_iter()
            .flatten()
            .map(|n| ir::HeaderNameMatch { pattern: ir::StringMatch::Exact(n.to_ascii_lowercase()), ignore_case: true })
            .collect()
    };
    let authorization = ir::Authorization {
        cluster: cluster.clone(),
        authority: format!("{}.{target}", backend.name),
        fail_open: false,
        response_timeout_ms: None,
        with_request_body: auth.forward_body.as_ref().and_then(|b| b.max_size).filter(|m| *m > 0).map(|max| {
            ir::AuthorizationBody {
                max_request_bytes: u32::try_from(max).unwrap_or(u32::MAX),
                allow_partial_message: false,
                pack_as_bytes: false,
            }
        }),
        http: (!grpc).then(|| ir::HttpAuthorization {
            path_prefix: http.and_then(|h| h.path.clone()).unwrap_or_default(),
            allowed_headers: exact(http.and_then(|h| h.allowed_headers.as_ref())),
            allowed_upstream_headers: exact(http.and_then(|h| h.allowed_response_headers.as_ref())),
        }),
        grpc_allowed_headers: exact(auth.grpc.as_ref().and_then(|g| g.allowed_headers.as_ref())),
    };
    let extension = ir::ExtensionService {
        origin: ir::ObjectRef { namespace: target.to_string(), name: backend.name.clone() },
        services: vec![service_port],
        protocol: grpc.then_some(ir::UpstreamProtocol::H2c),
        validation: None,
        response_timeout_ms: None,
        idle_connection_timeout_ms: None,
        load_balancer: ir::LoadBalancer::default(),
        circuit_breakers: [None; 5],
        cluster: Some(cluster),
    };
    Ok((authorization, extension))
}
