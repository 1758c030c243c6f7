//! The global services of the default fleet, as contour.yaml and the ContourConfiguration name
//! them, checked: external authorization, the rate-limit service, tracing, and the GeoIP
//! databases of location rules.

use crate::Result;

/// contour.yaml's `globalExtAuth` as the ContourConfiguration's (an `extensionRef` instead of
/// `extensionService: namespace/name`); `None` without an extension service, as upstream.
pub(crate) fn global_ext_auth_of_file(
    g: &config::GlobalExtAuth,
) -> Result<Option<api::httpproxy::AuthorizationServer>> {
    use api::httpproxy::{AuthorizationPolicy, AuthorizationServer, AuthorizationServerBufferSettings};
    let Some(service) = g.extension_service.as_deref().filter(|s| !s.is_empty()) else { return Ok(None) };
    let Some((namespace, name)) = service.split_once('/') else {
        invalid!("globalExtAuth.extensionService: {service:?} is not namespace/name");
    };
    let server = AuthorizationServer {
        extension_ref: Some(api::httpproxy::ExtensionServiceReference {
            api_version: None,
            namespace: Some(namespace.into()),
            name: Some(name.into()),
        }),
        service_type: g.service_type.clone(),
        http_settings: g.http_settings.as_ref().map(|h| {
            let names = |list: &Option<Vec<config::AllowedHeader>>| {
                list.as_ref().map(|l| {
                    l.iter()
                        .map(|a| api::httpproxy::HTTPAuthorizationServerAllowedHeaders {
                            exact: a.exact.clone(),
                            prefix: a.prefix.clone(),
                            suffix: a.suffix.clone(),
                            contains: a.contains.clone(),
                            ignore_case: a.ignore_case,
                        })
                        .collect()
                })
            };
            api::httpproxy::HTTPAuthorizationServerSettings {
                path_prefix: h.path_prefix.clone(),
                allowed_authorization_headers: names(&h.allowed_authorization_headers),
                allowed_upstream_headers: names(&h.allowed_upstream_headers),
            }
        }),
        auth_policy: g
            .auth_policy
            .as_ref()
            .map(|p| AuthorizationPolicy { disabled: p.disabled, context: p.context.clone() }),
        response_timeout: g.response_timeout.clone(),
        fail_open: g.fail_open,
        with_request_body: g.with_request_body.as_ref().map(|b| AuthorizationServerBufferSettings {
            max_request_bytes: b.max_request_bytes,
            allow_partial_message: b.allow_partial_message,
            pack_as_bytes: b.pack_as_bytes,
        }),
    };
    global_ext_auth(server, "globalExtAuth")
}

/// The MaxMind database paths (contour.yaml's mapped into the ContourConfiguration's shape, as
/// the other keys are), checked to be absolute paths Envoy can be given; `None` when none is set.
pub(crate) fn geo_databases(m: &api::contourconfig::MaxMindConfig, key: &str) -> Result<Option<ir::GeoDatabases>> {
    let names = ["cityDbPath", "countryDbPath", "asnDbPath", "ispDbPath", "anonDbPath"];
    let paths = [&m.city_db_path, &m.country_db_path, &m.asn_db_path, &m.isp_db_path, &m.anon_db_path];
    let mut set = paths.map(|p| p.clone().filter(|p| !p.is_empty()));
    for (path, name) in set.iter().zip(names) {
        if let Some(p) = path
            && (!p.starts_with('/') || p.chars().any(char::is_control))
        {
            invalid!("{key}.{name}: {p:?} is not an absolute path");
        }
    }
    if set.iter().all(Option::is_none) {
        return Ok(None);
    }
    let [city, country, asn, isp, anon] = std::mem::take(&mut set);
    Ok(Some(ir::GeoDatabases { city, country, asn, isp, anon }))
}

/// Upstream's `tracing`, checked (its rules, and a sampling rate Envoy accepts) and with its
/// defaults: service name `contour`, every request sampled (upstream reads an unparsable or zero
/// rate as 100; an unparsable one is refused here), paths tagged up to 256 bytes, and the Envoy
/// pod's name and namespace as tags unless `includePodDetail` is false.
pub(crate) fn tracing(t: &api::contourconfig::TracingConfig, key: &str) -> Result<xds::Tracing> {
    let service = &t.extension_service;
    if service.name.is_empty() || service.namespace.is_empty() {
        invalid!("{key}.extensionService must name an ExtensionService as namespace/name");
    }
    let sampling = t.overall_sampling.as_deref().unwrap_or("100");
    let overall_sampling = match sampling.trim().parse::<f64>() {
        Ok(0.0) => 100.0,
        Ok(rate) if (0.0..=100.0).contains(&rate) => rate,
        _ => invalid!("{key}.overallSampling: {sampling:?} is not a percentage from 0 to 100"),
    };
    let mut custom_tags = Vec::new();
    if t.include_pod_detail != Some(false) {
        for (name, variable) in [("podName", "HOSTNAME"), ("podNamespace", "CONTOUR_NAMESPACE")] {
            custom_tags.push(xds::CustomTag { name: name.into(), value: xds::TagValue::Environment(variable.into()) });
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, tag) in t.custom_tags.iter().flatten().enumerate() {
        let field = format!("{key}.customTags[{i}]");
        if tag.tag_name.is_empty() {
            invalid!("{field}.tagName must be defined");
        }
        if !names.insert(tag.tag_name.as_str()) {
            invalid!("{field}.tagName {:?} is duplicate", tag.tag_name);
        }
        let value = match (tag.literal.as_deref().filter(|v| !v.is_empty()), tag.request_header_name.as_deref()) {
            (Some(literal), None | Some("")) => xds::TagValue::Literal(literal.into()),
            (None, Some(header)) if !header.is_empty() => {
                if header.bytes().any(|b| !b.is_ascii_graphic() || b == b':') {
                    invalid!("{field}.requestHeaderName {header:?} is not a header name");
                }
                xds::TagValue::RequestHeader(header.to_ascii_lowercase())
            }
            _ => invalid!("{field}: must set exactly one of literal or requestHeaderName"),
        };
        custom_tags.push(xds::CustomTag { name: tag.tag_name.clone(), value });
    }
    Ok(xds::Tracing {
        cluster: ir::extension_cluster_name(&service.namespace, &service.name),
        service_name: t.service_name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "contour".into()),
        overall_sampling,
        max_path_tag_length: t.max_path_tag_length.unwrap_or(256),
        custom_tags,
    })
}

/// Upstream's `rateLimitService` as the filter's settings and the default policy.
pub(crate) fn rate_limit_service(
    r: &api::contourconfig::RateLimitServiceConfig,
) -> (xds::RateLimitService, Option<api::httpproxy::GlobalRateLimitPolicy>) {
    let service = xds::RateLimitService {
        cluster: ir::extension_cluster_name(&r.extension_service.namespace, &r.extension_service.name),
        domain: r.domain.clone().unwrap_or_default(),
        fail_open: r.fail_open == Some(true),
        timeout_ms: None,
        x_ratelimit_headers: r.enable_x_rate_limit_headers == Some(true),
        resource_exhausted: r.enable_resource_exhausted_code == Some(true),
    };
    (service, r.default_global_rate_limit_policy.clone())
}

/// A global authorization server, checked: it names an ExtensionService with its namespace,
/// its `serviceType` and `httpSettings` agree, and its timeout is valid.
pub(crate) fn global_ext_auth(
    server: api::httpproxy::AuthorizationServer,
    key: &str,
) -> Result<Option<api::httpproxy::AuthorizationServer>> {
    let reference = server.extension_ref.clone().unwrap_or_default();
    let Some(_) = reference.name.as_deref().filter(|n| !n.is_empty()) else { return Ok(None) };
    if reference.namespace.as_deref().is_none_or(str::is_empty) {
        invalid!("{key}: the extension service needs its namespace");
    }
    frontends::httpproxy::http_settings(&server).map_err(|e| crate::Error::Invalid(format!("{key}.{e}")))?;
    if let Some(t) = server.response_timeout.as_deref().filter(|t| !t.is_empty()) {
        frontends::httpproxy::check_timeout(t)
            .map_err(|e| crate::Error::Invalid(format!("{key}.responseTimeout: {e}")))?;
    }
    Ok(Some(server))
}

/// contour.yaml's `tracing` in the ContourConfiguration's shape (`extensionService` as
/// `namespace/name`; without a slash it names no namespace, which [`tracing`] refuses).
pub(crate) fn tracing_of_file(t: &config::Tracing) -> api::contourconfig::TracingConfig {
    let service = t.extension_service.as_deref().unwrap_or_default();
    let (namespace, name) = service.split_once('/').unwrap_or(("", service));
    api::contourconfig::TracingConfig {
        include_pod_detail: t.include_pod_detail,
        service_name: t.service_name.clone(),
        overall_sampling: t.overall_sampling.clone(),
        max_path_tag_length: t.max_path_tag_length,
        custom_tags: t.custom_tags.as_ref().map(|tags| {
            tags.iter()
                .map(|c| api::contourconfig::CustomTag {
                    tag_name: c.tag_name.clone(),
                    literal: c.literal.clone(),
                    request_header_name: c.request_header_name.clone(),
                })
                .collect()
        }),
        extension_service: api::contourconfig::NamespacedName { name: name.into(), namespace: namespace.into() },
    }
}
