//! External authorization of a root's virtual host (`virtualhost.authorization`) and its routes
//! (`authPolicy`), with upstream's checks, reasons and messages.

use std::collections::BTreeMap;

use api::httpproxy::{AuthorizationPolicy, VirtualHost};
use ir::{
    Authorization, AuthorizationBody, HeaderNameMatch, HttpAuthorization, Origin, RouteAuthorization, StringMatch,
    reason,
};
use objects::{Kind, ObjectKey};

use super::Translator;

/// The API version an `extensionRef` may name (the default when unset).
const EXTENSION_API_VERSION: &str = "projectcontour.io/v1alpha1";
/// `withRequestBody.maxRequestBytes` when unset (upstream's).
const DEFAULT_MAX_REQUEST_BYTES: u32 = 1024;

/// `withRequestBody`, with upstream's default size.
fn body(b: &api::httpproxy::AuthorizationServerBufferSettings) -> AuthorizationBody {
    AuthorizationBody {
        max_request_bytes: b.max_request_bytes.filter(|m| *m != 0).unwrap_or(DEFAULT_MAX_REQUEST_BYTES),
        allow_partial_message: b.allow_partial_message == Some(true),
        pack_as_bytes: b.pack_as_bytes == Some(true),
    }
}

/// The filter settings of the global authorization server (`globalExtAuth`), which every
/// connection manager of the default fleet carries; `None` when it names no ExtensionService
/// with its namespace. The settings come from configuration, not from the ExtensionService:
/// the call's authority is the cluster name, and the timeout Envoy's unless `responseTimeout`
/// sets one.
pub fn global_authorization(server: &api::httpproxy::AuthorizationServer) -> Option<Authorization> {
    let reference = server.extension_ref.as_ref()?;
    let cluster = ir::extension_cluster_name(reference.namespace.as_deref()?, reference.name.as_deref()?);
    let response_timeout_ms = server.response_timeout.as_deref().and_then(|t| super::check_timeout(t).ok()?);
    Some(Authorization {
        authority: cluster.replace('/', "."),
        cluster,
        fail_open: server.fail_open == Some(true),
        response_timeout_ms,
        with_request_body: server.with_request_body.as_ref().map(body),
        http: http_settings(server).ok()?,
        grpc_allowed_headers: Vec::new(),
    })
}

/// `serviceType` and `httpSettings`, checked: the HTTP protocol's settings for `http`, `None`
/// for gRPC (the default). `Err` names the field at fault.
pub fn http_settings(server: &api::httpproxy::AuthorizationServer) -> Result<Option<HttpAuthorization>, String> {
    match server.service_type.as_deref() {
        None | Some("") | Some("grpc") if server.http_settings.is_some() => {
            Err("httpSettings can only be set when serviceType is 'http'".into())
        }
        None | Some("") | Some("grpc") => Ok(None),
        Some("http") => {
            let settings = server.http_settings.clone().unwrap_or_default();
            let path_prefix = settings.path_prefix.unwrap_or_default();
            if !path_prefix.is_empty()
                && (!path_prefix.starts_with('/') || !path_prefix.chars().all(|c| c.is_ascii_graphic()))
            {
                return Err(format!("httpSettings.pathPrefix {path_prefix:?} must be a path starting with /"));
            }
            Ok(Some(HttpAuthorization {
                path_prefix,
                allowed_headers: header_names(settings.allowed_authorization_headers, "allowedAuthorizationHeaders")?,
                allowed_upstream_headers: header_names(settings.allowed_upstream_headers, "allowedUpstreamHeaders")?,
            }))
        }
        Some(other) => Err(format!("serviceType {other:?} is not one of grpc or http")),
    }
}

/// How a header name condition is built from its value.
type Pattern = fn(String) -> StringMatch;

/// A list of header name conditions, each with exactly one non-empty pattern.
fn header_names(
    list: Option<Vec<api::httpproxy::HTTPAuthorizationServerAllowedHeaders>>,
    field: &str,
) -> Result<Vec<HeaderNameMatch>, String> {
    let mut out = Vec::new();
    for (i, h) in list.unwrap_or_default().into_iter().enumerate() {
        let patterns: [(Pattern, Option<String>); 4] = [
            (StringMatch::Exact, h.exact),
            (StringMatch::Prefix, h.prefix),
            (StringMatch::Suffix, h.suffix),
            (StringMatch::Contains, h.contains),
        ];
        let mut set = patterns.into_iter().filter_map(|(make, v)| v.map(|v| (make, v)));
        let (Some((make, value)), None) = (set.next(), set.next()) else {
            return Err(format!(
                "httpSettings.{field}[{i}]: exactly one of exact, prefix, suffix and contains must be set"
            ));
        };
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!("httpSettings.{field}[{i}]: {value:?} is not part of a header name"));
        }
        let pattern = make(value);
        out.push(HeaderNameMatch { pattern, ignore_case: h.ignore_case == Some(true) });
    }
    Ok(out)
}

/// What the routes of a root with an authorization server inherit: whether checks are off by
/// default, and the context every check carries.
#[derive(Debug, Clone, Default)]
pub(super) struct Inherited {
    disabled: bool,
    context: BTreeMap<String, String>,
}

impl Inherited {
    /// A route's authorization: its own `authPolicy` over the virtual host's.
    pub(super) fn route(&self, policy: Option<&AuthorizationPolicy>) -> RouteAuthorization {
        let mut context = self.context.clone();
        context.extend(policy.and_then(|p| p.context.clone()).unwrap_or_default());
        RouteAuthorization { disabled: policy.and_then(|p| p.disabled).unwrap_or(self.disabled), context }
    }
}

/// Fails a root without TLS that names an authorization server (upstream checks this before
/// anything about TLS).
pub(super) fn require_tls(t: &mut Translator<'_>, origin: &Origin, vhost: &VirtualHost) -> Result<(), ()> {
    let named = vhost.authorization.as_ref().and_then(|a| a.extension_ref.as_ref()).and_then(|r| r.name.as_deref());
    if vhost.tls.is_none() && named.is_some_and(|n| !n.is_empty()) {
        let message =
            "Spec.VirtualHost.Authorization.ExtensionServiceRef can only be defined for root HTTPProxies that terminate TLS"
                .into();
        t.error(origin, "AuthError", "spec.virtualhost.authorization", reason::AUTH_NOT_PERMITTED, message);
        return Err(());
    }
    Ok(())
}

/// The virtual host's authorization server, checked; `Ok(None)` without one. `Err` after
/// recording why the virtual host cannot be served.
pub(super) fn virtual_host(
    t: &mut Translator<'_>,
    origin: &Origin,
    vhost: &VirtualHost,
) -> Result<Option<(Authorization, Inherited)>, ()> {
    let Some(auth) = &vhost.authorization else { return Ok(None) };
    server(t, origin, auth)
}

/// The global authorization server (`globalExtAuth`) as it applies to a root without a server
/// of its own: what its routes inherit (the global policy, turned off by the virtual host's
/// `authorization.authPolicy.disabled`). The connection managers carry the global filter; an
/// unusable global server fails the root, as upstream. `Ok(None)` without a global server.
pub(super) fn global(
    t: &mut Translator<'_>,
    origin: &Origin,
    vhost: &VirtualHost,
    own: bool,
) -> Result<Option<Inherited>, ()> {
    let Some(global) = t.options.global_authorization.clone() else { return Ok(None) };
    if own {
        return Ok(None);
    }
    let opted_out = vhost.authorization.as_ref().and_then(|a| a.auth_policy.as_ref()).and_then(|p| p.disabled);
    let Some((_, mut inherited)) = server(t, origin, &global)? else { return Ok(None) };
    if let Some(disabled) = opted_out {
        inherited.disabled = disabled;
    }
    Ok(Some(inherited))
}

/// An authorization server, checked.
fn server(
    t: &mut Translator<'_>,
    origin: &Origin,
    auth: &api::httpproxy::AuthorizationServer,
) -> Result<Option<(Authorization, Inherited)>, ()> {
    let field = "spec.virtualhost.authorization";
    let reference = auth.extension_ref.clone().unwrap_or_default();
    let Some(name) = reference.name.filter(|n| !n.is_empty()) else { return Ok(None) };
    let http = match http_settings(auth) {
        Ok(http) => http,
        Err(e) => {
            t.error(origin, "AuthError", field, reason::AUTH_HTTP_SETTINGS_INVALID, format!("{field}.{e}"));
            return Err(());
        }
    };
    let version = reference.api_version.filter(|v| !v.is_empty()).unwrap_or_else(|| EXTENSION_API_VERSION.into());
    if version != EXTENSION_API_VERSION {
        let message = format!(
            "Spec.Virtualhost.Authorization.extensionRef specifies an unsupported resource version {version:?}"
        );
        t.error(origin, "AuthError", field, reason::AUTH_BAD_RESOURCE_VERSION, message);
        return Err(());
    }
    let namespace = reference.namespace.filter(|n| !n.is_empty()).unwrap_or_else(|| origin.namespace.clone());
    let key = ObjectKey::new(&namespace, &name);
    t.reads.get_mut().record(t.snapshot, Kind::ExtensionService, &key);
    // Its Services' changes can change whether it is valid: remember those reads too.
    if let Some(object) = t.snapshot.extension_services.get(&key) {
        for target in &object.spec.services {
            t.reads.get_mut().record(t.snapshot, Kind::Service, &ObjectKey::new(&namespace, &target.name));
        }
    }
    let Some(Ok(ext)) = crate::shared::extension_service::resolve(t.snapshot, &namespace, &name) else {
        let message =
            format!("Spec.Virtualhost.Authorization.ServiceRef extension service \"{namespace}/{name}\" not found");
        t.error(origin, "AuthError", field, reason::EXTENSION_SERVICE_NOT_FOUND, message);
        return Err(());
    };
    let response_timeout_ms = match auth.response_timeout.as_deref().filter(|s| !s.is_empty()) {
        None => ext.response_timeout_ms,
        Some(text) => match crate::shared::timeouts::timeout(Some(text)) {
            Ok(ms) => ms,
            Err(e) => {
                let message = format!("Spec.Virtualhost.Authorization.ResponseTimeout is invalid: {e}");
                t.error(origin, "AuthError", field, reason::AUTH_RESPONSE_TIMEOUT_INVALID, message);
                return Err(());
            }
        },
    };
    let with_request_body = auth.with_request_body.as_ref().map(body);
    let authorization = Authorization {
        cluster: ext.cluster_name(),
        authority: ext.authority(),
        fail_open: auth.fail_open == Some(true),
        response_timeout_ms,
        with_request_body,
        http,
        grpc_allowed_headers: Vec::new(),
    };
    let policy = auth.auth_policy.as_ref();
    let inherited = Inherited {
        disabled: policy.and_then(|p| p.disabled).unwrap_or(false),
        context: policy.and_then(|p| p.context.clone()).unwrap_or_default(),
    };
    Ok(Some((authorization, inherited)))
}
