//! OpenID Connect login of a root's virtual host (`virtualhost.oidc`) and its routes
//! (`oidcPolicy`), a contour-rs extension.

use api::httpproxy::VirtualHost;
use ir::{Oidc, Origin, Redacted, RemoteJwks, reason};
use sha2::{Digest, Sha256};

use super::Translator;
use super::jwt::parse_uri;

/// The Secret key holding the client's secret.
const CLIENT_SECRET_KEY: &str = "client-secret";

/// The login of `vhost`, checked; `Err` after recording why the virtual host cannot be served
/// (it is never served without the login it asks for).
pub(super) fn virtual_host(
    t: &mut Translator<'_>,
    origin: &Origin,
    vhost: &VirtualHost,
    fqdn: &str,
) -> Result<Option<Oidc>, ()> {
    let Some(o) = vhost.oidc.as_deref() else { return Ok(None) };
    let tls = vhost.tls.as_deref();
    let terminates = tls.and_then(|t| t.secret_name.as_deref()).is_some_and(|s| !s.is_empty());
    if !terminates || tls.and_then(|t| t.passthrough) == Some(true) {
        let message = "Spec.VirtualHost.OIDC can only be defined for root HTTPProxies that terminate TLS".into();
        return fail(t, origin, reason::OIDC_NOT_PERMITTED, "", message);
    }
    if tls.and_then(|t| t.enable_fallback_certificate) == Some(true) {
        // The fallback chain serves clients without SNI, where the login would not run.
        let message = "Spec.Virtualhost.TLS fallback & OIDC are incompatible".into();
        return fail(t, origin, reason::OIDC_NOT_PERMITTED, "", message);
    }
    let url = |t: &mut Translator<'_>, field: &str, value: &str| -> Result<(bool, String, u16), ()> {
        match parse_uri(value) {
            Some((Some(tls), host, Some(port))) if !host.is_empty() => Ok((tls, host, port)),
            _ => {
                let message = format!("Spec.VirtualHost.OIDC.{field} is not an http or https URL: {value:?}");
                fail(t, origin, reason::OIDC_ENDPOINT_INVALID, &format!(".{field}"), message)
            }
        }
    };
    url(t, "authorizationEndpoint", &o.authorization_endpoint)?;
    let (tls, host, port) = url(t, "tokenEndpoint", &o.token_endpoint)?;
    if let Some(end) = o.end_session_endpoint.as_deref().filter(|e| !e.is_empty()) {
        url(t, "endSessionEndpoint", end)?;
    }
    if o.client_id.is_empty() || o.client_id.chars().any(char::is_whitespace) {
        let message = format!("Spec.VirtualHost.OIDC.ClientID is invalid: {:?}", o.client_id);
        return fail(t, origin, reason::OIDC_INVALID, ".clientID", message);
    }
    let name = format!("{}/{}", origin.namespace, o.client_secret_name);
    let secret = t.secret(&origin.namespace, &o.client_secret_name);
    let Some(client_secret) = secret.and_then(|s| s.data.as_ref()?.get(CLIENT_SECRET_KEY)).map(|b| b.0.clone()) else {
        let message = format!(
            "Spec.VirtualHost.OIDC.ClientSecretName: Secret {name:?} not found or has no key {CLIENT_SECRET_KEY:?}"
        );
        return fail(t, origin, reason::OIDC_CLIENT_SECRET_INVALID, ".clientSecretName", message);
    };
    if client_secret.is_empty() {
        let message =
            format!("Spec.VirtualHost.OIDC.ClientSecretName: Secret {name:?} has an empty {CLIENT_SECRET_KEY:?}");
        return fail(t, origin, reason::OIDC_CLIENT_SECRET_INVALID, ".clientSecretName", message);
    }
    let path = |t: &mut Translator<'_>, field: &str, value: Option<&str>, default: &str| -> Result<String, ()> {
        let p = value.filter(|p| !p.is_empty()).unwrap_or(default);
        if !p.starts_with('/') || p.len() > 1024 || p.bytes().any(|b| b.is_ascii_whitespace() || b"?#%".contains(&b)) {
            let message = format!("Spec.VirtualHost.OIDC.{field} is not a plain absolute path: {p:?}");
            return fail(t, origin, reason::OIDC_INVALID, &format!(".{field}"), message);
        }
        Ok(p.to_string())
    };
    let redirect_path = path(t, "redirectPath", o.redirect_path.as_deref(), "/oauth2/callback")?;
    let logout_path = path(t, "logoutPath", o.logout_path.as_deref(), "/logout")?;
    if redirect_path == logout_path {
        let message = format!("Spec.VirtualHost.OIDC: redirectPath and logoutPath are both {redirect_path:?}");
        return fail(t, origin, reason::OIDC_INVALID, ".logoutPath", message);
    }
    let mut scopes = vec!["openid".to_string()];
    for s in o.scopes.iter().flatten() {
        if s.is_empty() || s.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control() || b == b'"' || b == b'\\')
        {
            let message = format!("Spec.VirtualHost.OIDC.Scopes has an invalid scope {s:?}");
            return fail(t, origin, reason::OIDC_INVALID, ".scopes", message);
        }
        if !scopes.contains(s) {
            scopes.push(s.clone());
        }
    }
    // The cookies' key: stable across restarts and the same for every Envoy of the fleet,
    // secret as long as the client's secret is, and renewed with it.
    let hmac = Sha256::new()
        .chain_update(b"contour-rs oidc session key\n")
        .chain_update(format!("{}/{}\n{fqdn}\n", origin.namespace, origin.name))
        .chain_update(&client_secret)
        .finalize()
        .to_vec();
    let validation = tls.then(|| ir::UpstreamValidation {
        ca: ir::ObjectRef { namespace: String::new(), name: "system".into() },
        ca_kind: ir::CaKind::System,
        subject_names: vec![host.clone()],
        subject_uris: Vec::new(),
    });
    Ok(Some(Oidc {
        authorization_endpoint: o.authorization_endpoint.clone(),
        token_endpoint: RemoteJwks {
            uri: o.token_endpoint.clone(),
            tls,
            host,
            port,
            validation,
            timeout_ms: 5000,
            cache_duration_ms: None,
            dns_lookup_family: None,
        },
        end_session_endpoint: o.end_session_endpoint.clone().filter(|e| !e.is_empty()),
        client_id: o.client_id.clone(),
        secret_name: format!("oidc/{}/{}", origin.namespace, origin.name),
        client_secret: Redacted(client_secret),
        hmac_secret: Redacted(hmac),
        scopes,
        redirect_path,
        logout_path,
        forward_access_token: o.forward_access_token == Some(true),
        refresh_tokens: o.refresh_tokens != Some(false),
    }))
}

/// Records why the login cannot be served, at `spec.virtualhost.oidc<field>`.
fn fail<T>(
    t: &mut Translator<'_>,
    origin: &Origin,
    reason: &'static str,
    field: &str,
    message: String,
) -> Result<T, ()> {
    t.error(origin, "OIDCError", &format!("spec.virtualhost.oidc{field}"), reason, message);
    Err(())
}
