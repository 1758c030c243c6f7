//! contour.yaml (`--config-path`), applied to the settings the flags did not give.

use crate::checks::{
    apply_envoy_metrics, apply_policy, ip, listen_address, secret_ref, split_addresses, static_gateway,
};
use crate::services::{geo_databases, global_ext_auth_of_file, rate_limit_service, tracing, tracing_of_file};
use crate::{Explicit, Result, Settings, Source};

impl Settings {
    /// Applies contour.yaml (`file`, read from `name`) to the settings the flags did not give; a
    /// bad value is an error naming `name` and the key.
    pub fn apply_file(&mut self, file: &config::ContourConfig, name: &str, explicit: &Explicit) -> Result<()> {
        apply(self, file, explicit).map_err(|e| e.within(name))
    }
}

fn apply(args: &mut Settings, file: &config::ContourConfig, explicit: &Explicit) -> Result<()> {
    let envoy = crate::envoy::from_file(file);
    crate::envoy::apply(&mut args.listener, &envoy, Source::File)?;
    crate::envoy::apply_cluster(&mut args.cluster, &envoy, Source::File)?;
    if !explicit.contains("incluster") {
        args.incluster = file.incluster.unwrap_or(false);
    }
    if !explicit.contains("kubeconfig") {
        args.kubeconfig = file.kubeconfig.clone().map(Into::into).or(args.kubeconfig.take());
    }
    if !explicit.contains("kubernetes_client_qps") {
        args.kubernetes_client_qps = file.kubernetes_client_qps.map(|q| q as f32).or(args.kubernetes_client_qps);
    }
    if !explicit.contains("kubernetes_client_burst") {
        args.kubernetes_client_burst = file.kubernetes_client_burst.or(args.kubernetes_client_burst);
    }
    // As upstream, the file's `debug: true` turns debug logging on and the flag cannot turn it off.
    args.debug |= file.debug.unwrap_or(false);
    args.disable_permit_insecure = file.disable_permit_insecure.unwrap_or(false);
    args.disable_merge_slashes = file.disable_merge_slashes.unwrap_or(false);
    if let Some(port) = file.network.as_ref().and_then(|n| n.admin_port) {
        args.envoy_admin_port = port;
    }
    if let Some(r) = file.gateway.as_ref().and_then(|g| g.gateway_ref.clone()) {
        args.gateway_ref = Some(static_gateway("gateway.gatewayRef", &r.namespace, &r.name)?);
    }
    if let Some(addresses) = &file.ingress_status_address
        && !explicit.contains("ingress_status_address")
    {
        args.ingress_status_address = split_addresses(addresses);
    }
    if let Some(name) = file.envoy_service_name.clone().filter(|_| !explicit.contains("envoy_service_name")) {
        args.envoy_service_name = name;
    }
    if let Some(ns) = file.envoy_service_namespace.clone().filter(|_| !explicit.contains("envoy_service_namespace")) {
        args.envoy_service_namespace = ns;
    }
    if let Some(m) = file.metrics.as_ref().and_then(|m| m.envoy.as_ref()) {
        let tls = match (&m.server_certificate_path, &m.server_key_path) {
            (Some(cert), Some(key)) if !cert.is_empty() && !key.is_empty() => Some(api::contourconfig::MetricsTLS {
                cert_file: Some(cert.clone()),
                key_file: Some(key.clone()),
                ca_file: m.ca_certificate_path.clone(),
            }),
            _ => None,
        };
        let envoy = api::contourconfig::MetricsConfig { address: m.address.clone(), port: m.port.map(i64::from), tls };
        apply_envoy_metrics(args, &envoy, "metrics.envoy")?;
    }
    if let Some(m) = file.metrics.as_ref().and_then(|m| m.contour.as_ref()) {
        if let (Some(cert), Some(key)) = (&m.server_certificate_path, &m.server_key_path)
            && !cert.is_empty()
            && !key.is_empty()
        {
            let ca = m.ca_certificate_path.clone().filter(|c| !c.is_empty()).map(Into::into);
            args.metrics_tls = Some((cert.into(), key.into(), ca));
        }
        if let Some(a) = m.address.as_deref().filter(|_| !explicit.contains("http_address")) {
            args.http_address = ip(a, "metrics.contour.address")?;
        }
        if let Some(p) = m.port.filter(|p| *p != 0 && !explicit.contains("http_port")) {
            args.http_port = p;
        }
    }
    if let Some(h) = &file.om_enforced_health_listener {
        let port = h.port.map(i64::from);
        args.om_enforced_health = Some(listen_address("omEnforcedHealthListener", h.address.as_deref(), port)?);
    }
    if let Some(v) = file.enable_external_name_service {
        args.enable_external_name_service = v;
    }
    if let Some(p) = &file.policy {
        let policy = api::contourconfig::PolicyConfig {
            request_headers: p
                .request_headers
                .as_ref()
                .map(|h| api::contourconfig::HeadersPolicy { set: h.set.clone(), remove: h.remove.clone() }),
            response_headers: p
                .response_headers
                .as_ref()
                .map(|h| api::contourconfig::HeadersPolicy { set: h.set.clone(), remove: h.remove.clone() }),
            apply_to_ingress: p.apply_to_ingress,
        };
        apply_policy(args, &policy, "policy")?;
    }
    if let Some(r) = &file.rate_limit_service
        && let Some(service) = r.extension_service.as_deref().filter(|s| !s.is_empty())
    {
        let Some((namespace, name)) = service.split_once('/') else {
            invalid!("rateLimitService.extensionService: {service:?} is not namespace/name");
        };
        let default = r
            .default_policy()
            .map_err(|e| crate::Error::Invalid(format!("rateLimitService.defaultGlobalRateLimitPolicy: {e}")))?;
        let config = api::contourconfig::RateLimitServiceConfig {
            extension_service: api::contourconfig::NamespacedName { name: name.into(), namespace: namespace.into() },
            domain: r.domain.clone(),
            fail_open: r.fail_open,
            enable_x_rate_limit_headers: r.enable_x_rate_limit_headers,
            enable_resource_exhausted_code: r.enable_resource_exhausted_code,
            default_global_rate_limit_policy: default,
        };
        args.rate_limit_service = Some(rate_limit_service(&config));
    }
    if let Some(g) = &file.global_ext_auth {
        args.global_ext_auth = global_ext_auth_of_file(g)?;
    }
    if let Some(t) = &file.tracing {
        args.tracing = Some(tracing(&tracing_of_file(t), "tracing")?);
    }
    if let Some(m) = file.geo_ip.as_ref().and_then(|g| g.provider.as_ref()).and_then(|p| p.max_mind.as_ref()) {
        let max_mind = api::contourconfig::MaxMindConfig {
            city_db_path: m.city_db_path.clone(),
            country_db_path: m.country_db_path.clone(),
            asn_db_path: m.asn_db_path.clone(),
            isp_db_path: m.isp_db_path.clone(),
            anon_db_path: m.anon_db_path.clone(),
        };
        args.geoip = geo_databases(&max_mind, "geoIP.provider.maxMind")?;
    }
    if let Some(c) = file.tls.as_ref().and_then(|t| t.envoy_client_certificate.clone()) {
        args.envoy_client_certificate = Some(secret_ref("tls.envoy-client-certificate", &c.namespace, &c.name)?);
    }
    if let Some(f) = file.tls.as_ref().and_then(|t| t.fallback_certificate.as_ref()) {
        args.fallback_certificate = Some(ir::ObjectRef { namespace: f.namespace.clone(), name: f.name.clone() });
    }
    Ok(())
}
