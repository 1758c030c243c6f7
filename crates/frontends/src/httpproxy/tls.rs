//! A root's `virtualhost.tls`: certificate, delegation, protocol versions, client validation,
//! fallback certificate, checked in upstream's order with upstream's words.

use api::httpproxy::{TLS, VirtualHost};
use ir::{ClientValidation, ForwardClientCert, ListenerTls, ObjectRef, Origin, TlsMode, TlsVersion, reason};

use super::Translator;
use crate::delegation;

const FIELD: &str = "spec.virtualhost.tls";

/// The virtual host's TLS, `None` without TLS; `Err` when an error stops the root (recorded).
pub(super) fn virtual_host(
    t: &mut Translator<'_>,
    origin: &Origin,
    vhost: &VirtualHost,
) -> Result<Option<ListenerTls>, ()> {
    let Some(tls) = &vhost.tls else { return Ok(None) };
    let stop = |t: &mut Translator<'_>, reason, message: String| {
        t.error(origin, "TLSError", FIELD, reason, message);
        Err(())
    };
    let passthrough = tls.passthrough.unwrap_or(false);
    let secret_name = tls.secret_name.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let fallback = tls.enable_fallback_certificate.unwrap_or(false);
    if passthrough && fallback {
        let message = "Spec.VirtualHost.TLS: both Passthrough and enableFallbackCertificate were specified".into();
        t.error(origin, "TLSError", FIELD, reason::TLS_INCOMPATIBLE_FEATURES, message);
    }
    match (secret_name, passthrough) {
        (Some(_), true) => {
            let message = "Spec.VirtualHost.TLS: both Passthrough and SecretName were specified".into();
            return stop(t, reason::TLS_CONFIG_NOT_VALID, message);
        }
        (None, false) => {
            let message = "Spec.VirtualHost.TLS: neither Passthrough nor SecretName were specified".into();
            return stop(t, reason::TLS_CONFIG_NOT_VALID, message);
        }
        _ => {}
    }
    // HTTP/3 asked for by the host itself must be served as asked (the installation-wide
    // setting leaves out the hosts QUIC cannot serve, silently).
    if tls.http3 == Some(true) {
        let clash = if passthrough {
            Some("passthrough")
        } else if tls.client_validation.is_some() {
            Some("clientValidation")
        } else if tls.maximum_protocol_version.as_deref() == Some("1.2") {
            Some("maximumProtocolVersion 1.2 (QUIC is TLS 1.3)")
        } else {
            None
        };
        if let Some(what) = clash {
            let message = format!("Spec.VirtualHost.TLS http3 cannot be combined with {what}");
            return stop(t, reason::TLS_INCOMPATIBLE_FEATURES, message);
        }
    }
    if passthrough {
        if tls.client_validation.is_some() {
            let message = "Spec.VirtualHost.TLS passthrough cannot be combined with tls.clientValidation".into();
            return stop(t, reason::TLS_INCOMPATIBLE_FEATURES, message);
        }
        return Ok(Some(ListenerTls::new(TlsMode::Passthrough, Vec::new())));
    }
    let raw = secret_name.expect("checked above");
    let (namespace, name) = delegation::resolve(raw, &origin.namespace);
    if !delegation::permitted(t.snapshot, namespace, name, &origin.namespace) {
        let message = format!("Spec.VirtualHost.TLS Secret {raw:?} certificate delegation not permitted");
        return stop(t, reason::DELEGATION_NOT_PERMITTED, message);
    }
    let secret = t.secret(namespace, name);
    if let Err(e) = objects::secrets::tls_pair(secret.map(|s| &**s)) {
        return stop(t, reason::SECRET_NOT_VALID, format!("Spec.VirtualHost.TLS Secret {raw:?} is invalid: {e}"));
    }
    let certificate = ObjectRef { namespace: namespace.into(), name: name.into() };
    let version = |v: &Option<String>| match v.as_deref() {
        Some("1.2") => Some(TlsVersion::V1_2),
        Some("1.3") => Some(TlsVersion::V1_3),
        _ => None,
    };
    let (min, max) = (version(&tls.minimum_protocol_version), version(&tls.maximum_protocol_version));
    if min.unwrap_or(TlsVersion::V1_2) > max.unwrap_or(TlsVersion::V1_3) {
        let message =
            "Spec.Virtualhost.TLS the minimum protocol version is greater than the maximum protocol version".into();
        return stop(t, reason::TLS_CONFIG_NOT_VALID, message);
    }
    if fallback {
        if tls.client_validation.is_some() {
            let message = "Spec.Virtualhost.TLS fallback & client validation are incompatible".into();
            return stop(t, reason::TLS_INCOMPATIBLE_FEATURES, message);
        }
        if vhost.authorization.is_some() {
            let message = "Spec.Virtualhost.TLS fallback & client authorization are incompatible".into();
            return stop(t, reason::TLS_INCOMPATIBLE_FEATURES, message);
        }
        // The fallback chain serves every fallback virtual host's routes to clients without a
        // known SNI, where one virtual host's JWT providers cannot all apply: a request there
        // could reach a backend without a token. Upstream refuses the combination too.
        if vhost.jwt_providers.as_ref().is_some_and(|p| !p.is_empty()) {
            let message = "Spec.Virtualhost.TLS fallback & JWT providers are incompatible".into();
            return stop(t, reason::TLS_INCOMPATIBLE_FEATURES, message);
        }
        let Some(fallback) = t.options.fallback_certificate.clone() else {
            let message = "Spec.Virtualhost.TLS enabled fallback but the fallback Certificate Secret is not configured in Contour configuration file".into();
            return stop(t, reason::FALLBACK_NOT_PRESENT, message);
        };
        let name = format!("{}/{}", fallback.namespace, fallback.name);
        if !delegation::permitted(t.snapshot, &fallback.namespace, &fallback.name, &origin.namespace) {
            let message = format!("Spec.VirtualHost.TLS Secret {name:?} is not configured for certificate delegation");
            return stop(t, reason::FALLBACK_NOT_DELEGATED, message);
        }
        let secret = t.secret(&fallback.namespace, &fallback.name);
        if let Err(e) = objects::secrets::tls_pair(secret.map(|s| &**s)) {
            let message = format!("Spec.Virtualhost.TLS Secret {name:?} fallback certificate is invalid: {e}");
            return stop(t, reason::FALLBACK_NOT_VALID, message);
        }
    }
    let client_validation = match &tls.client_validation {
        None => None,
        Some(_) => Some(client_validation(t, origin, tls)?),
    };
    Ok(Some(ListenerTls {
        mode: TlsMode::Terminate,
        certificates: vec![certificate],
        min_version: min,
        max_version: max,
        client_validation,
        http3: tls.http3,
    }))
}

/// A Secret reference of the client validation block, resolved and checked for delegation;
/// `Err` after recording upstream's DelegationNotPermitted.
fn delegated<'a>(
    t: &mut Translator<'_>,
    origin: &'a Origin,
    raw: &'a str,
    what: &str,
) -> Result<(&'a str, &'a str), ()> {
    let (namespace, name) = delegation::resolve(raw, &origin.namespace);
    if delegation::permitted(t.snapshot, namespace, name, &origin.namespace) {
        return Ok((namespace, name));
    }
    let message =
        format!("Spec.VirtualHost.TLS {what} Secret {raw:?} is invalid: Certificate delegation not permitted");
    t.error(origin, "TLSError", "spec.virtualhost.tls.clientValidation", reason::DELEGATION_NOT_PERMITTED, message);
    Err(())
}

fn client_validation(t: &mut Translator<'_>, origin: &Origin, tls: &TLS) -> Result<ClientValidation, ()> {
    let cv = tls.client_validation.as_ref().expect("caller checked");
    let field = "spec.virtualhost.tls.clientValidation";
    let invalid = |t: &mut Translator<'_>, detail: String| {
        let message = format!("Spec.VirtualHost.TLS client validation is invalid: {detail}");
        t.error(origin, "TLSError", field, reason::CLIENT_VALIDATION_INVALID, message);
    };
    let skip = cv.skip_client_cert_validation.unwrap_or(false);
    let on = |b: Option<bool>| b.unwrap_or(false);
    let forward = cv.forward_client_certificate.as_ref();
    let mut out = ClientValidation {
        skip_verify: skip,
        optional: on(cv.optional_client_certificate),
        crl_only_leaf: on(cv.crl_only_verify_leaf_cert),
        forward: forward.map_or_else(ForwardClientCert::default, |f| ForwardClientCert {
            subject: on(f.subject),
            cert: on(f.cert),
            chain: on(f.chain),
            dns: on(f.dns),
            uri: on(f.uri),
        }),
        ..Default::default()
    };
    match cv.ca_secret.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(raw) => {
            let (namespace, name) = delegated(t, origin, raw, "CA")?;
            let secret = t.secret(namespace, name);
            if let Err(e) = objects::secrets::ca_bundle(secret.map(|s| &**s)) {
                invalid(t, format!("invalid CA Secret \"{namespace}/{name}\": {e}"));
                return Err(());
            }
            out.ca = Some(ObjectRef { namespace: namespace.into(), name: name.into() });
        }
        None if !skip => invalid(t, "CA Secret must be specified".into()),
        None => {}
    }
    if let Some(raw) = cv.crl_secret.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        let (namespace, name) = delegated(t, origin, raw, "CRL")?;
        let secret = t.secret(namespace, name);
        let crl = secret.and_then(|s| s.data.as_ref()?.get("crl.pem")).filter(|b| !b.0.is_empty());
        let problem = match crl {
            None if secret.is_none() => Some("Secret not found"),
            None => Some("empty \"crl.pem\" key"),
            Some(b) if !String::from_utf8_lossy(&b.0).contains("-----BEGIN X509 CRL-----") => {
                Some("failed to locate CRL")
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            invalid(t, format!("invalid CRL Secret \"{namespace}/{name}\": {problem}"));
            return Err(());
        }
        out.crl = Some(ObjectRef { namespace: namespace.into(), name: name.into() });
    }
    Ok(out)
}
