//! The ContourConfiguration resource (`--contour-config-name`), applied to the settings the
//! flags did not give.

use std::net::IpAddr;

use api::contourconfig::ContourConfigurationSpec;

use crate::checks::{
    apply_envoy_metrics, apply_policy, ip, listen_address, secret_ref, split_addresses, static_gateway,
};
use crate::services::{geo_databases, global_ext_auth, rate_limit_service, tracing};
use crate::{Explicit, Result, Settings, Source};

impl Settings {
    /// Applies the ContourConfiguration's `spec` (named `name`, such as `projectcontour/contour`)
    /// to the settings the flags did not give; a bad value is an error naming the resource and
    /// the field.
    pub fn apply_resource(&mut self, spec: &ContourConfigurationSpec, name: &str, explicit: &Explicit) -> Result<()> {
        apply(self, explicit, spec).map_err(|e| e.within(format!("ContourConfiguration {name}")))
    }
}

/// Checks a ContourConfiguration `spec` as contour-serve would read it at start-up: the error
/// contour-serve would stop with, naming the field (`spec.envoy.listener.tls.minimumProtocolVersion`).
pub fn check_resource(spec: &ContourConfigurationSpec) -> Result<()> {
    apply(&mut Settings::defaults(), &Explicit::new(), spec)
}

fn apply(args: &mut Settings, explicit: &Explicit, spec: &ContourConfigurationSpec) -> Result<()> {
    let set_addr = |field: &str, value: &Option<String>, target: &mut IpAddr, flag: &str| -> Result<()> {
        if let Some(v) = value
            && !explicit.contains(flag)
        {
            *target = ip(v, field)?;
        }
        Ok(())
    };
    let set_port = |field: &str, value: Option<i64>, target: &mut u16, flag: &str| -> Result<()> {
        if let Some(v) = value
            && !explicit.contains(flag)
        {
            match u16::try_from(v) {
                Ok(p) if p != 0 => *target = p,
                _ => invalid!("{field}: {v} is not a port"),
            }
        }
        Ok(())
    };
    if let Some(x) = &spec.xds_server {
        set_addr("spec.xdsServer.address", &x.address, &mut args.xds_address, "xds_address")?;
        set_port("spec.xdsServer.port", x.port, &mut args.xds_port, "xds_port")?;
    }
    if let Some(d) = &spec.debug {
        set_addr("spec.debug.address", &d.address, &mut args.debug_http_address, "debug_http_address")?;
        set_port("spec.debug.port", d.port, &mut args.debug_http_port, "debug_http_port")?;
    }
    if let Some(h) = &spec.health {
        set_addr("spec.health.address", &h.address, &mut args.health_address, "health_address")?;
        set_port("spec.health.port", h.port, &mut args.health_port, "health_port")?;
    }
    if let Some(m) = &spec.metrics {
        set_addr("spec.metrics.address", &m.address, &mut args.http_address, "http_address")?;
        set_port("spec.metrics.port", m.port, &mut args.http_port, "http_port")?;
        if let Some(t) = &m.tls {
            let (Some(cert), Some(key)) = (t.cert_file.clone(), t.key_file.clone()) else {
                invalid!("spec.metrics.tls: both the certificate and the key files are needed");
            };
            args.metrics_tls =
                Some((cert.into(), key.into(), t.ca_file.clone().filter(|c| !c.is_empty()).map(Into::into)));
        }
    }
    if let Some(h) = spec.envoy.as_ref().and_then(|e| e.health.as_ref()) {
        set_addr("spec.envoy.health.address", &h.address, &mut args.stats_address, "stats_address")?;
        set_port("spec.envoy.health.port", h.port, &mut args.stats_port, "stats_port")?;
    }
    if let Some(m) = spec.envoy.as_ref().and_then(|e| e.metrics.as_ref()) {
        apply_envoy_metrics(args, m, "spec.envoy.metrics")?;
    }
    if let Some(h) = spec.envoy.as_ref().and_then(|e| e.om_enforced_health.as_ref()) {
        args.om_enforced_health = Some(listen_address("spec.envoy.omEnforcedHealth", h.address.as_deref(), h.port)?);
    }
    if let Some(v) = spec.envoy.as_ref().and_then(|e| e.enable_stat_prefix) {
        args.enable_stat_prefix = v;
    }
    if let Some(c) = spec.envoy.as_ref().and_then(|e| e.client_certificate.as_ref()) {
        args.envoy_client_certificate = Some(secret_ref("spec.envoy.clientCertificate", &c.namespace, &c.name)?);
    }
    if let Some(v) = spec.enable_external_name_service {
        args.enable_external_name_service = v;
    }
    if let Some(p) = &spec.policy {
        apply_policy(args, p, "spec.policy")?;
    }
    if let Some(g) = &spec.global_ext_auth {
        args.global_ext_auth = global_ext_auth(g.clone(), "spec.globalExtAuth")?;
    }
    if let Some(r) = spec.rate_limit_service.as_ref().filter(|r| !r.extension_service.name.is_empty()) {
        args.rate_limit_service = Some(rate_limit_service(r));
    }
    if let Some(m) = spec.geo_ip.as_ref().and_then(|g| g.provider.as_ref()).and_then(|p| p.max_mind.as_ref()) {
        args.geoip = geo_databases(m, "spec.geoIP.provider.maxMind")?;
    }
    if let Some(t) = &spec.tracing {
        args.tracing = Some(tracing(t, "spec.tracing")?);
    }
    if let Some(i) = &spec.ingress {
        if let Some(classes) = i.class_names.clone().filter(|_| !explicit.contains("ingress_class_name")) {
            args.ingress_class_name = classes;
        }
        if let Some(a) = i.status_address.as_deref().filter(|_| !explicit.contains("ingress_status_address")) {
            args.ingress_status_address = split_addresses(a);
        }
    }
    if let Some(service) = spec.envoy.as_ref().and_then(|e| e.service.as_ref()) {
        if !explicit.contains("envoy_service_name") {
            args.envoy_service_name = service.name.clone();
        }
        if !explicit.contains("envoy_service_namespace") {
            args.envoy_service_namespace = service.namespace.clone();
        }
    }
    if let Some(g) = &spec.gateway {
        let r = &g.gateway_ref;
        args.gateway_ref = Some(static_gateway("spec.gateway.gatewayRef", &r.namespace, &r.name)?);
    }
    if let Some(h) = &spec.httpproxy {
        if let Some(v) = h.disable_permit_insecure {
            args.disable_permit_insecure = v;
        }
        if let Some(roots) = &h.root_namespaces
            && !explicit.contains("root_namespaces")
        {
            args.root_namespaces = roots.clone();
        }
        if let Some(f) = &h.fallback_certificate {
            args.fallback_certificate = Some(ir::ObjectRef { namespace: f.namespace.clone(), name: f.name.clone() });
        }
    }
    if let Some(e) = &spec.envoy {
        crate::envoy::apply(&mut args.listener, e, Source::Resource)?;
        crate::envoy::apply_cluster(&mut args.cluster, e, Source::Resource)?;
        if let Some(v) = e.network.as_ref().and_then(|n| n.admin_port) {
            match u16::try_from(v) {
                Ok(p) if p != 0 => args.envoy_admin_port = p,
                _ => invalid!("spec.envoy.network.adminPort: {v} is not a port"),
            }
        }
        if let Some(v) = e.listener.as_ref().and_then(|l| l.disable_merge_slashes) {
            args.disable_merge_slashes = v;
        }
        if let Some(l) = &e.http {
            set_addr(
                "spec.envoy.http.address",
                &l.address,
                &mut args.envoy_service_http_address,
                "envoy_service_http_address",
            )?;
            set_port("spec.envoy.http.port", l.port, &mut args.envoy_service_http_port, "envoy_service_http_port")?;
        }
        if let Some(l) = &e.https {
            set_addr(
                "spec.envoy.https.address",
                &l.address,
                &mut args.envoy_service_https_address,
                "envoy_service_https_address",
            )?;
            set_port("spec.envoy.https.port", l.port, &mut args.envoy_service_https_port, "envoy_service_https_port")?;
        }
    }
    Ok(())
}
