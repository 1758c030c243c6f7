//! JWT verification of a root's virtual host (`jwtProviders`) and its routes
//! (`jwtVerificationPolicy`), with upstream's checks, reasons and messages.

use api::httpproxy::{JWTVerificationPolicy, VirtualHost};
use ir::{Jwks, JwtProvider, Origin, RemoteJwks, reason};

use super::Translator;

/// What the routes of a root with providers inherit: the provider names, and the default one.
#[derive(Debug, Clone, Default)]
pub(super) struct Inherited {
    pub(super) names: Vec<String>,
    default: Option<String>,
}

impl Inherited {
    /// The provider a route requires: its own `require`, none when `disabled`, else the default.
    pub(super) fn route(&self, policy: Option<&JWTVerificationPolicy>) -> Result<Option<String>, String> {
        let require = policy.and_then(|p| p.require.clone()).filter(|r| !r.is_empty());
        match (require, policy.and_then(|p| p.disabled) == Some(true)) {
            (Some(_), true) => Err("route's JWT verification policy cannot specify both require and disabled".into()),
            (Some(name), false) => Ok(Some(name)),
            (None, true) => Ok(None),
            (None, false) => Ok(self.default.clone()),
        }
    }
}

/// Fails a root that has providers but does not terminate TLS (checked early, as upstream).
pub(super) fn require_tls(t: &mut Translator<'_>, origin: &Origin, vhost: &VirtualHost) -> Result<(), ()> {
    let any = vhost.jwt_providers.as_ref().is_some_and(|p| !p.is_empty());
    let terminates = vhost.tls.as_ref().and_then(|t| t.secret_name.as_deref()).is_some_and(|s| !s.is_empty());
    if any && !terminates {
        let message =
            "Spec.VirtualHost.JWTProviders can only be defined for root HTTPProxies that terminate TLS".into();
        t.error(
            origin,
            "JWTVerificationError",
            "spec.virtualhost.jwtProviders",
            reason::JWT_VERIFICATION_NOT_PERMITTED,
            message,
        );
        return Err(());
    }
    Ok(())
}

/// The virtual host's providers, checked in upstream's order. `Err` after recording why the
/// virtual host cannot be served.
pub(super) fn providers(
    t: &mut Translator<'_>,
    origin: &Origin,
    vhost: &VirtualHost,
) -> Result<(Vec<JwtProvider>, Inherited), ()> {
    let field = "spec.virtualhost.jwtProviders";
    let mut out: Vec<JwtProvider> = Vec::new();
    let mut inherited = Inherited::default();
    let fail = |t: &mut Translator<'_>, reason: &'static str, message: String| {
        t.error(origin, "JWTVerificationError", field, reason, message);
        Err(())
    };
    for p in vhost.jwt_providers.iter().flatten() {
        if out.iter().any(|o| o.name == p.name) {
            return fail(
                t,
                reason::DUPLICATE_PROVIDER_NAME,
                format!("Spec.VirtualHost.JWTProviders is invalid: duplicate name {}", p.name),
            );
        }
        if p.default == Some(true) {
            if inherited.default.is_some() {
                let message =
                    "Spec.VirtualHost.JWTProviders is invalid: at most one provider can be set as the default";
                return fail(t, reason::MULTIPLE_DEFAULT_PROVIDERS_SPECIFIED, message.into());
            }
            inherited.default = Some(p.name.clone());
        }
        let remote = match (&p.remote_jwks, &p.local_jwks) {
            (Some(_), Some(_)) => {
                let message = "Spec.VirtualHost.JWTProviders: only one of remoteJWKS and localJWKS can be set".into();
                return fail(t, reason::JWKS_SOURCE_CONFLICT, message);
            }
            (None, None) => {
                let message = "Spec.VirtualHost.JWTProviders: one of remoteJWKS or localJWKS must be set".into();
                return fail(t, reason::JWKS_SOURCE_MISSING, message);
            }
            (None, Some(local)) => match local_jwks(t, &origin.namespace, &local.secret_name, &local.key) {
                Ok(jwks) => {
                    out.push(JwtProvider {
                        name: p.name.clone(),
                        issuer: p.issuer.clone().unwrap_or_default(),
                        audiences: p.audiences.clone().unwrap_or_default(),
                        jwks: Jwks::Local(jwks),
                        forward: p.forward_jwt == Some(true),
                    });
                    continue;
                }
                Err(e) => {
                    return fail(
                        t,
                        reason::LOCAL_JWKS_INVALID,
                        format!("Spec.VirtualHost.JWTProviders.LocalJWKS is invalid: {e}"),
                    );
                }
            },
            (Some(r), None) => r,
        };
        let Some((tls, host, port)) = parse_uri(&remote.uri) else {
            let message = format!("Spec.VirtualHost.JWTProviders.RemoteJWKS.URI is invalid: {:?}", remote.uri);
            return fail(t, reason::REMOTE_JWKS_URI_INVALID, message);
        };
        let Some(tls) = tls else {
            let scheme = remote.uri.split("://").next().unwrap_or_default();
            let message = format!(
                "Spec.VirtualHost.JWTProviders.RemoteJWKS.URI has invalid scheme {scheme:?}, must be http or https"
            );
            return fail(t, reason::REMOTE_JWKS_SCHEME_INVALID, message);
        };
        let Some(port) = port else {
            let message = format!("Spec.VirtualHost.JWTProviders.RemoteJWKS.URI has an invalid port: {:?}", remote.uri);
            return fail(t, reason::REMOTE_JWKS_PORT_INVALID, message);
        };
        let validation = match &remote.validation {
            None => None,
            Some(_) if !tls => {
                let message =
                    "Spec.VirtualHost.JWTProviders.RemoteJWKS.UpstreamValidation must not be specified when URI scheme is http."
                        .into();
                return fail(t, reason::REMOTE_JWKS_UPSTREAM_VALIDATION_INVALID, message);
            }
            Some(v) => {
                let (namespace, name) = crate::delegation::resolve(&v.ca_secret, &origin.namespace);
                if !crate::delegation::permitted(t.snapshot, namespace, name, &origin.namespace) {
                    let message = format!(
                        "Spec.VirtualHost.JWTProviders.RemoteJWKS.UpstreamValidation.CACertificate Secret \"{namespace}/{name}\" is not configured for certificate delegation"
                    );
                    return fail(t, reason::REMOTE_JWKS_CA_CERTIFICATE_NOT_DELEGATED, message);
                }
                let secret = t.secret(namespace, name);
                if let Err(e) = objects::secrets::ca_bundle(secret.map(|s| &**s)) {
                    let message =
                        format!("Spec.VirtualHost.JWTProviders.RemoteJWKS.UpstreamValidation is invalid: {e}");
                    return fail(t, reason::REMOTE_JWKS_UPSTREAM_VALIDATION_INVALID, message);
                }
                let subject_names = match crate::shared::subject_names(v) {
                    Ok(names) => names,
                    Err(e) => {
                        let message =
                            format!("Spec.VirtualHost.JWTProviders.RemoteJWKS.UpstreamValidation is invalid: {e}");
                        return fail(t, reason::REMOTE_JWKS_UPSTREAM_VALIDATION_INVALID, message);
                    }
                };
                let ca = ir::ObjectRef { namespace: namespace.into(), name: name.into() };
                Some(ir::UpstreamValidation {
                    ca,
                    ca_kind: ir::CaKind::Secret,
                    subject_names,
                    subject_uris: Vec::new(),
                })
            }
        };
        let duration = |text: &Option<String>| -> Result<Option<u64>, String> {
            match text.as_deref().filter(|s| !s.is_empty()) {
                None => Ok(None),
                Some(s) => duration::parse(s)
                    .map(|d| Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
                    .ok_or_else(|| format!("time: invalid duration {s:?}")),
            }
        };
        let timeout_ms = match duration(&remote.timeout) {
            Ok(t) => t.unwrap_or(1000),
            Err(e) => {
                return fail(
                    t,
                    reason::REMOTE_JWKS_TIMEOUT_INVALID,
                    format!("Spec.VirtualHost.JWTProviders.RemoteJWKS.Timeout is invalid: {e}"),
                );
            }
        };
        let cache_duration_ms = match duration(&remote.cache_duration) {
            Ok(c) => c,
            Err(e) => {
                let message = format!("Spec.VirtualHost.JWTProviders.RemoteJWKS.CacheDuration is invalid: {e}");
                return fail(t, reason::REMOTE_JWKS_CACHE_DURATION_INVALID, message);
            }
        };
        let dns_lookup_family = match remote.dns_lookup_family.as_deref() {
            None | Some("") => None,
            Some(f @ ("auto" | "v4" | "v6" | "all")) => Some(f.to_string()),
            Some(other) => {
                let message = format!(
                    "Spec.VirtualHost.JWTProviders.RemoteJWKS.DNSLookupFamily has an invalid value {other:?}, must be auto, all, v4 or v6"
                );
                return fail(t, reason::REMOTE_JWKS_DNS_LOOKUP_FAMILY_INVALID, message);
            }
        };
        out.push(JwtProvider {
            name: p.name.clone(),
            issuer: p.issuer.clone().unwrap_or_default(),
            audiences: p.audiences.clone().unwrap_or_default(),
            jwks: Jwks::Remote(RemoteJwks {
                uri: remote.uri.clone(),
                tls,
                host,
                port,
                validation,
                timeout_ms,
                cache_duration_ms,
                dns_lookup_family,
            }),
            forward: p.forward_jwt == Some(true),
        });
    }
    inherited.names = out.iter().map(|p| p.name.clone()).collect();
    Ok((out, inherited))
}

/// The JWKS document under `key` of the Secret `name` in the proxy's namespace: a JSON object
/// with a non-empty `keys` array whose entries name their key type (Envoy refuses anything
/// else, and with it the whole listener).
fn local_jwks(t: &mut Translator<'_>, namespace: &str, name: &str, key: &str) -> Result<String, String> {
    let secret = t.secret(namespace, name).ok_or_else(|| format!("Secret \"{namespace}/{name}\" not found"))?;
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .ok_or_else(|| format!("Secret \"{namespace}/{name}\" has no key {key:?}"))?;
    let text = std::str::from_utf8(&data.0).map_err(|_| format!("key {key:?} is not UTF-8"))?;
    let document: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("key {key:?} is not JSON: {e}"))?;
    let keys = document.get("keys").and_then(|k| k.as_array()).filter(|k| !k.is_empty());
    let keys = keys.ok_or_else(|| format!("key {key:?} holds no JWKS (a \"keys\" array)"))?;
    if keys.iter().any(|k| k.get("kty").and_then(|t| t.as_str()).is_none()) {
        return Err(format!("key {key:?}: every JWK needs its \"kty\""));
    }
    Ok(text.to_string())
}

/// `scheme://host[:port][/path]`: whether the scheme is https (`None` for another scheme), the
/// host (without IPv6 brackets) and the port (the scheme's by default; `None` when invalid).
/// `None` when it is not a URI with a host.
pub(super) fn parse_uri(uri: &str) -> Option<(Option<bool>, String, Option<u16>)> {
    let (scheme, rest) = uri.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') || authority.bytes().any(|b| b.is_ascii_whitespace()) {
        return None;
    }
    let tls = match scheme {
        "https" => Some(true),
        "http" => Some(false),
        _ => None,
    };
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']')?;
            (host.to_string(), after.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), Some(port)),
            None => (authority.to_string(), None),
        },
    };
    let port = match port {
        None => Some(if tls == Some(false) { 80 } else { 443 }),
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0),
    };
    Some((tls, host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_give_scheme_host_and_port() {
        assert_eq!(parse_uri("https://idp.example.com/keys"), Some((Some(true), "idp.example.com".into(), Some(443))));
        assert_eq!(parse_uri("http://127.0.0.1:8080/jwks.json"), Some((Some(false), "127.0.0.1".into(), Some(8080))));
        assert_eq!(parse_uri("https://[::1]:9443/k"), Some((Some(true), "::1".into(), Some(9443))));
        assert_eq!(parse_uri("ftp://x/y").map(|u| u.0), Some(None));
        assert_eq!(parse_uri("https://x:99999/").map(|u| u.2), Some(None));
        assert_eq!(parse_uri("not a uri"), None);
    }
}
