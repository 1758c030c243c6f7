//! The `envoy` section of the configuration, as the ContourConfiguration spells it: contour.yaml's
//! keys are turned into it (upstream's own mapping), so the file and the resource are read by
//! the same code, and a bad value is named in the form the user wrote it.

use crate::Result;
use api::contourconfig::{
    AccessLogFilter, ClusterParameters, EnvoyCompression, EnvoyConfig, EnvoyHttp3, EnvoyListenerConfig, EnvoyLogging,
    EnvoyTLS, NetworkParameters, SocketOptions, TimeoutParameters, TlsFingerprint,
};
use api::extensionservice::CircuitBreakers;
use xds::accesslog::{self, AccessLog};
use xds::settings::{
    ClusterOptions, Compression, DnsLookupFamily, HttpVersion, ListenerOptions, RuntimeValue, ServerHeader, Timeout,
    Timeouts,
};

/// Where the values came from, so errors name the key as the user wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// contour.yaml.
    File,
    /// The ContourConfiguration resource.
    Resource,
}

impl Source {
    fn key(self, file: &str, resource: &str) -> String {
        match self {
            Source::File => file.to_string(),
            Source::Resource => format!("spec.envoy.{resource}"),
        }
    }
}

/// contour.yaml's keys that upstream maps into `spec.envoy`.
pub fn from_file(file: &config::ContourConfig) -> EnvoyConfig {
    use config::{AccessLogFormat, AccessLogLevel, CompressionAlgorithm, HttpVersion as V, ServerHeaderTransformation};
    let logging = EnvoyLogging {
        access_log_format: file.accesslog_format.map(|f| {
            match f {
                AccessLogFormat::Envoy => "envoy",
                AccessLogFormat::Json => "json",
            }
            .into()
        }),
        access_log_format_string: file.accesslog_format_string.clone(),
        access_log_json_fields: file.json_fields.clone(),
        access_log_level: file.accesslog_level.map(|l| {
            match l {
                AccessLogLevel::Info => "info",
                AccessLogLevel::Error => "error",
                AccessLogLevel::Critical => "critical",
                AccessLogLevel::Disabled => "disabled",
            }
            .into()
        }),
        access_log_filter: file.accesslog_filter.as_ref().map(|f| AccessLogFilter {
            status_codes: f.status_codes.as_ref().map(|c| c.iter().map(config::StatusCode::text).collect()),
            min_duration: f.min_duration.clone(),
            sample_percent: f.sample_percent,
        }),
    };
    let tls = file.tls.as_ref().map(|t| EnvoyTLS {
        minimum_protocol_version: t.minimum_protocol_version.clone(),
        maximum_protocol_version: t.maximum_protocol_version.clone(),
        cipher_suites: t.cipher_suites.clone(),
        ecdh_curves: t.ecdh_curves.clone(),
        fingerprint: t.fingerprint.map(|f| TlsFingerprint { ja3: f.ja3, ja4: f.ja4 }),
    });
    let l = file.listener.clone().unwrap_or_default();
    let listener = EnvoyListenerConfig {
        use_proxy_protocol: None,
        compression: file.compression.as_ref().and_then(|c| c.algorithm).map(|a| EnvoyCompression {
            algorithm: Some(
                match a {
                    CompressionAlgorithm::Gzip => "gzip",
                    CompressionAlgorithm::Brotli => "brotli",
                    CompressionAlgorithm::Zstd => "zstd",
                    CompressionAlgorithm::Disabled => "disabled",
                }
                .into(),
            ),
        }),
        disable_allow_chunked_length: file.disable_allow_chunked_length,
        disable_merge_slashes: file.disable_merge_slashes,
        server_header_transformation: file.server_header_transformation.map(|s| {
            match s {
                ServerHeaderTransformation::Overwrite => "overwrite",
                ServerHeaderTransformation::AppendIfAbsent => "append_if_absent",
                ServerHeaderTransformation::PassThrough => "pass_through",
            }
            .into()
        }),
        connection_balancer: l.connection_balancer,
        max_requests_per_connection: l.max_requests_per_connection,
        per_connection_buffer_limit_bytes: l.per_connection_buffer_limit_bytes,
        tls,
        socket_options: l.socket_options.map(|s| SocketOptions { tos: s.tos, traffic_class: s.traffic_class }),
        max_requests_per_io_cycle: l.max_requests_per_io_cycle,
        http_max_concurrent_streams: l.http2_max_concurrent_streams,
        max_connections_per_listener: l.max_connections_per_listener,
        max_connections_to_accept_per_socket_event: l.max_connections_to_accept_per_socket_event,
        http3: l.http3.map(|h| EnvoyHttp3 { enabled: h.enabled, advertised_port: h.advertised_port }),
    };
    let timeouts = file.timeouts.as_ref().map(|t| TimeoutParameters {
        request_timeout: t.request_timeout.clone(),
        connection_idle_timeout: t.connection_idle_timeout.clone(),
        stream_idle_timeout: t.stream_idle_timeout.clone(),
        max_connection_duration: t.max_connection_duration.clone(),
        delayed_close_timeout: t.delayed_close_timeout.clone(),
        connection_shutdown_grace_period: t.connection_shutdown_grace_period.clone(),
        connect_timeout: t.connect_timeout.clone(),
    });
    let network = file.network.as_ref().map(|n| NetworkParameters {
        num_trusted_hops: n.num_trusted_hops,
        admin_port: n.admin_port.map(i64::from),
        strip_trailing_host_dot: n.strip_trailing_host_dot,
    });
    let cluster = file.cluster.as_ref().map(|c| ClusterParameters {
        dns_lookup_family: c.dns_lookup_family.clone(),
        max_requests_per_connection: c.max_requests_per_connection,
        per_connection_buffer_limit_bytes: c.per_connection_buffer_limit_bytes,
        circuit_breakers: c.circuit_breakers.as_ref().map(|b| CircuitBreakers {
            max_connections: b.max_connections,
            max_pending_requests: b.max_pending_requests,
            max_requests: b.max_requests,
            max_retries: b.max_retries,
            per_host_max_connections: b.per_host_max_connections,
        }),
        upstream_tls: c.upstream_tls.as_ref().map(|t| EnvoyTLS {
            minimum_protocol_version: t.minimum_protocol_version.clone(),
            maximum_protocol_version: t.maximum_protocol_version.clone(),
            cipher_suites: t.cipher_suites.clone(),
            ecdh_curves: t.ecdh_curves.clone(),
            fingerprint: None,
        }),
        outlier_detection: c.outlier_detection.as_ref().map(|o| api::httpproxy::OutlierDetection {
            disabled: o.disabled,
            consecutive_server_errors: o.consecutive_server_errors,
            interval: o.interval.clone(),
            base_ejection_time: o.base_ejection_time.clone(),
            max_ejection_time: o.max_ejection_time.clone(),
            split_external_local_origin_errors: o.split_external_local_origin_errors,
            consecutive_local_origin_failure: o.consecutive_local_origin_failure,
            max_ejection_percent: o.max_ejection_percent,
            max_ejection_time_jitter: o.max_ejection_time_jitter.clone(),
        }),
    });
    let runtime_settings = file.runtime_settings.as_ref().map(|m| {
        m.iter()
            .map(|(k, v)| {
                let v = match v {
                    config::RuntimeValue::Bool(b) => serde_json::Value::Bool(*b),
                    config::RuntimeValue::Number(n) => serde_json::json!(n),
                    config::RuntimeValue::Text(t) => serde_json::Value::String(t.clone()),
                };
                (k.clone(), v)
            })
            .collect()
    });
    EnvoyConfig {
        listener: Some(listener),
        cluster,
        runtime_settings,
        logging: Some(logging),
        default_http_versions: file.default_http_versions.as_ref().map(|vs| {
            vs.iter()
                .map(|v| {
                    match v {
                        V::Http11 => "HTTP/1.1",
                        V::Http2 => "HTTP/2",
                    }
                    .to_string()
                })
                .collect()
        }),
        timeouts,
        network,
        ..Default::default()
    }
}

/// Applies the cluster settings of `envoy` (`cluster.*` and `timeouts.connect-timeout`) on top of
/// `out`.
pub fn apply_cluster(out: &mut ClusterOptions, envoy: &EnvoyConfig, source: Source) -> Result<()> {
    let key = |file: &str, resource: &str| source.key(&format!("cluster.{file}"), &format!("cluster.{resource}"));
    if let Some(text) = envoy.timeouts.as_ref().and_then(|t| t.connect_timeout.as_deref()).filter(|t| !t.is_empty()) {
        // As upstream: a duration only, `infinity` is no connect timeout Envoy would take.
        out.connect_timeout = duration::parse(text).filter(|d| !d.is_zero()).ok_or_else(|| {
            crate::Error::Invalid(format!(
                "{}: {text:?} is not a duration such as 2s",
                source.key("timeouts.connect-timeout", "timeouts.connectTimeout")
            ))
        })?;
    }
    let Some(c) = &envoy.cluster else { return Ok(()) };
    if let Some(o) = &c.outlier_detection {
        out.default_outlier_detection = match o.disabled {
            Some(true) => None,
            _ => Some(frontends::httpproxy::outlier_detection(o).map_err(|e| {
                crate::Error::Invalid(format!("{}: {e}", key("outlier-detection", "outlierDetection")))
            })?),
        };
    }
    if let Some(family) = c.dns_lookup_family.as_deref().filter(|f| !f.is_empty()) {
        out.dns_lookup_family = match family {
            "auto" => DnsLookupFamily::Auto,
            "v4" => DnsLookupFamily::V4,
            "v6" => DnsLookupFamily::V6,
            "all" => DnsLookupFamily::All,
            other => invalid!("{}: {other:?} is not auto, v4, v6 or all", key("dns-lookup-family", "dnsLookupFamily")),
        };
    }
    match c.max_requests_per_connection {
        Some(0) => invalid!("{}: must be at least 1", key("max-requests-per-connection", "maxRequestsPerConnection")),
        Some(v) => out.max_requests_per_connection = Some(v),
        None => {}
    }
    match c.per_connection_buffer_limit_bytes {
        Some(0) => invalid!(
            "{}: must be at least 1",
            key("per-connection-buffer-limit-bytes", "per-connection-buffer-limit-bytes")
        ),
        Some(v) => out.per_connection_buffer_limit_bytes = Some(v),
        None => {}
    }
    if let Some(b) = &c.circuit_breakers {
        // Zero means unset, as upstream reads it.
        let set = |v: Option<u32>| v.filter(|n| *n != 0);
        out.circuit_breakers = dag::CircuitBreakers {
            max_connections: set(b.max_connections),
            max_pending_requests: set(b.max_pending_requests),
            max_requests: set(b.max_requests),
            max_retries: set(b.max_retries),
            per_host_max_connections: set(b.per_host_max_connections),
        };
    }
    if let Some(tls) = &c.upstream_tls {
        let name =
            |file: &str, resource: &str| key(&format!("upstream-tls.{file}"), &format!("upstreamTLS.{resource}"));
        apply_tls_with(&mut out.upstream_tls, tls, &name)?;
    }
    Ok(())
}

/// Applies `envoy` on top of `out`: every value given replaces what is there, and a bad one
/// stops start-up naming its key.
pub fn apply(out: &mut ListenerOptions, envoy: &EnvoyConfig, source: Source) -> Result<()> {
    if let Some(logging) = &envoy.logging {
        apply_logging(&mut out.access_log, logging, source)?;
    }
    for (listener, path) in
        [(&envoy.http, &mut out.access_log.http_path), (&envoy.https, &mut out.access_log.https_path)]
    {
        if let Some(p) = listener.as_ref().and_then(|l| l.access_log.clone()).filter(|p| !p.is_empty()) {
            *path = p;
        }
    }
    if let Some(l) = &envoy.listener {
        apply_listener(out, l, source)?;
    }
    if let Some(versions) = &envoy.default_http_versions {
        out.http_versions = versions
            .iter()
            .map(|v| match v.to_ascii_uppercase().as_str() {
                "HTTP/1.1" => Ok(HttpVersion::Http1),
                "HTTP/2" => Ok(HttpVersion::Http2),
                _ => invalid!(
                    "{}: {v:?} is not HTTP/1.1 or HTTP/2",
                    source.key("default-http-versions", "defaultHTTPVersions")
                ),
            })
            .collect::<Result<_>>()?;
    }
    if let Some(t) = &envoy.timeouts {
        apply_timeouts(&mut out.timeouts, t, source)?;
    }
    if let Some(settings) = &envoy.runtime_settings {
        let key = source.key("runtime-settings", "runtimeSettings");
        out.runtime = settings
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    serde_json::Value::Bool(b) => RuntimeValue::Bool(*b),
                    serde_json::Value::Number(n) => RuntimeValue::Number(n.as_f64().unwrap_or_default()),
                    serde_json::Value::String(t) => RuntimeValue::Text(t.clone()),
                    other => invalid!("{key}.{k}: {other} is not a number, a string or a boolean"),
                };
                Ok((k.clone(), value))
            })
            .collect::<Result<_>>()?;
    }
    if let Some(n) = &envoy.network {
        if let Some(hops) = n.num_trusted_hops {
            out.xff_num_trusted_hops = hops;
        }
        if let Some(strip) = n.strip_trailing_host_dot {
            out.strip_trailing_host_dot = strip;
        }
    }
    Ok(())
}

fn apply_logging(out: &mut AccessLog, logging: &EnvoyLogging, source: Source) -> Result<()> {
    let key = |file, resource| source.key(file, &format!("logging.{resource}"));
    let json = match logging.access_log_format.as_deref() {
        None | Some("") => matches!(out.format, accesslog::Format::Json(_)),
        Some("envoy") => false,
        Some("json") => true,
        Some(other) => invalid!("{}: {other:?} is not envoy or json", key("accesslog-format", "accessLogFormat")),
    };
    let format_string = logging.access_log_format_string.clone().filter(|s| !s.is_empty());
    if let Some(text) = &format_string {
        accesslog::validate_format_string(text).map_err(|e| {
            crate::Error::Invalid(format!("{}: {e}", key("accesslog-format-string", "accessLogFormatString")))
        })?;
    }
    let fields = match &logging.access_log_json_fields {
        Some(fields) if !fields.is_empty() => Some(
            accesslog::json_fields(fields)
                .map_err(|e| crate::Error::Invalid(format!("{}: {e}", key("json-fields", "accessLogJSONFields"))))?,
        ),
        _ => None,
    };
    out.format = match (json, &out.format) {
        (true, _) if fields.is_some() => accesslog::Format::Json(fields.unwrap_or_default()),
        (true, accesslog::Format::Json(kept)) => accesslog::Format::Json(kept.clone()),
        (true, _) => accesslog::Format::Json(accesslog::json_fields(&accesslog::DEFAULT_JSON_FIELDS).expect("valid")),
        (false, accesslog::Format::Envoy(kept)) if format_string.is_none() => accesslog::Format::Envoy(kept.clone()),
        (false, _) => accesslog::Format::Envoy(format_string),
    };
    if let Some(level) = logging.access_log_level.as_deref().filter(|l| !l.is_empty()) {
        out.level = match level {
            "info" => accesslog::Level::Info,
            "error" => accesslog::Level::Error,
            "critical" => accesslog::Level::Critical,
            "disabled" => accesslog::Level::Disabled,
            other => {
                invalid!(
                    "{}: {other:?} is not info, error, critical or disabled",
                    key("accesslog-level", "accessLogLevel")
                )
            }
        };
    }
    if let Some(f) = &logging.access_log_filter {
        let mut filter = accesslog::Filter::default();
        for text in f.status_codes.iter().flatten() {
            let code = |s: &str| s.trim().parse::<u16>().ok().filter(|c| (100..=599).contains(c));
            let range = match text.split_once('-') {
                Some((a, b)) => code(a).zip(code(b)).filter(|(a, b)| a <= b),
                None => code(text).map(|c| (c, c)),
            };
            let Some(range) = range else {
                invalid!(
                    "{}: {text:?} is not a status code or an ascending range within 100-599",
                    key("accesslog-filter.status-codes", "accessLogFilter.statusCodes")
                )
            };
            filter.status_codes.push(range);
        }
        if let Some(text) = f.min_duration.as_deref().filter(|t| !t.is_empty()) {
            let Some(d) = duration::parse(text) else {
                invalid!(
                    "{}: {text:?} is not a duration such as 500ms",
                    key("accesslog-filter.min-duration", "accessLogFilter.minDuration")
                )
            };
            filter.min_duration_ms = Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        }
        match f.sample_percent {
            Some(p) if p > 100 => invalid!(
                "{}: {p} is more than 100",
                key("accesslog-filter.sample-percent", "accessLogFilter.samplePercent")
            ),
            p => filter.sample_percent = p,
        }
        out.filter = filter;
    }
    Ok(())
}

fn apply_listener(out: &mut ListenerOptions, l: &EnvoyListenerConfig, source: Source) -> Result<()> {
    let key = |file: &str, resource: &str| source.key(file, &format!("listener.{resource}"));
    if let Some(v) = l.use_proxy_protocol {
        out.use_proxy_protocol = v;
    }
    if let Some(algorithm) = l.compression.as_ref().and_then(|c| c.algorithm.as_deref()).filter(|a| !a.is_empty()) {
        out.compression = match algorithm {
            "gzip" => Compression::Gzip,
            "brotli" => Compression::Brotli,
            "zstd" => Compression::Zstd,
            "disabled" => Compression::Disabled,
            other => invalid!(
                "{}: {other:?} is not gzip, brotli, zstd or disabled",
                key("compression.algorithm", "compression.algorithm")
            ),
        };
    }
    if let Some(v) = l.disable_allow_chunked_length {
        out.allow_chunked_length = !v;
    }
    if let Some(v) = l.server_header_transformation.as_deref().filter(|v| !v.is_empty()) {
        out.server_header = match v {
            "overwrite" => ServerHeader::Overwrite,
            "append_if_absent" => ServerHeader::AppendIfAbsent,
            "pass_through" => ServerHeader::PassThrough,
            other => invalid!(
                "{}: {other:?} is not overwrite, append_if_absent or pass_through",
                key("serverHeaderTransformation", "serverHeaderTransformation")
            ),
        };
    }
    match l.connection_balancer.as_deref() {
        None => {}
        Some("") => out.exact_connection_balancer = false,
        Some("exact") => out.exact_connection_balancer = true,
        Some(other) => {
            invalid!("{}: {other:?} is not exact or empty", key("listener.connection-balancer", "connectionBalancer"))
        }
    }
    let positive = |v: Option<u32>, file: &str, resource: &str| -> Result<Option<u32>> {
        match v {
            Some(0) => invalid!("{}: must be at least 1", key(file, resource)),
            v => Ok(v),
        }
    };
    if let Some(v) =
        positive(l.max_requests_per_connection, "listener.max-requests-per-connection", "maxRequestsPerConnection")?
    {
        out.max_requests_per_connection = Some(v);
    }
    if let Some(v) = positive(
        l.per_connection_buffer_limit_bytes,
        "listener.per-connection-buffer-limit-bytes",
        "per-connection-buffer-limit-bytes",
    )? {
        out.per_connection_buffer_limit_bytes = Some(v);
    }
    if let Some(v) =
        positive(l.http_max_concurrent_streams, "listener.http2-max-concurrent-streams", "httpMaxConcurrentStreams")?
    {
        out.http2_max_concurrent_streams = Some(v);
    }
    for (value, target, file, resource) in [
        (
            l.max_requests_per_io_cycle,
            &mut out.max_requests_per_io_cycle,
            "listener.max-requests-per-io-cycle",
            "maxRequestsPerIOCycle",
        ),
        (
            l.max_connections_per_listener,
            &mut out.max_connections_per_listener,
            "listener.max-connections-per-listener",
            "maxConnectionsPerListener",
        ),
        (
            l.max_connections_to_accept_per_socket_event,
            &mut out.max_connections_to_accept_per_socket_event,
            "listener.max-connections-to-accept-per-socket-event",
            "maxConnectionsToAcceptPerSocketEvent",
        ),
    ] {
        if let Some(v) = positive(value, file, resource)? {
            *target = Some(v);
        }
    }
    if let Some(s) = &l.socket_options {
        let byte = |v: Option<i32>, file: &str, resource: &str| -> Result<Option<u8>> {
            v.map(|v| {
                u8::try_from(v)
                    .map_err(|_| crate::Error::Invalid(format!("{}: {v} is not within 0-255", key(file, resource))))
            })
            .transpose()
        };
        if let Some(v) = byte(s.tos, "listener.socket-options.tos", "socketOptions.tos")? {
            out.socket_options.tos = v;
        }
        if let Some(v) = byte(s.traffic_class, "listener.socket-options.traffic-class", "socketOptions.trafficClass")? {
            out.socket_options.traffic_class = v;
        }
    }
    if let Some(tls) = &l.tls {
        apply_tls(&mut out.tls, tls, source)?;
    }
    if let Some(h) = &l.http3 {
        if let Some(enabled) = h.enabled {
            out.http3.enabled = enabled;
        }
        match h.advertised_port {
            Some(0) => {
                invalid!("{}: must be at least 1", key("listener.http3.advertised-port", "http3.advertisedPort"))
            }
            Some(port) => out.http3.advertised_port = Some(port),
            None => {}
        }
    }
    Ok(())
}

fn apply_tls(out: &mut xds::settings::TlsOptions, tls: &EnvoyTLS, source: Source) -> Result<()> {
    let key = |file: &str, resource: &str| source.key(&format!("tls.{file}"), &format!("listener.tls.{resource}"));
    apply_tls_with(out, tls, &key)
}

/// TLS versions, cipher suites and curves, each error named by `key(file form, resource form)`.
fn apply_tls_with(
    out: &mut xds::settings::TlsOptions,
    tls: &EnvoyTLS,
    key: &dyn Fn(&str, &str) -> String,
) -> Result<()> {
    let version = |v: &Option<String>, file: &str, resource: &str| -> Result<Option<ir::TlsVersion>> {
        match v.as_deref() {
            None | Some("") => Ok(None),
            Some("1.2") => Ok(Some(ir::TlsVersion::V1_2)),
            Some("1.3") => Ok(Some(ir::TlsVersion::V1_3)),
            Some(other) => invalid!("{}: {other:?} is not 1.2 or 1.3", key(file, resource)),
        }
    };
    if let Some(v) = version(&tls.minimum_protocol_version, "minimum-protocol-version", "minimumProtocolVersion")? {
        out.min_version = v;
    }
    if let Some(v) = version(&tls.maximum_protocol_version, "maximum-protocol-version", "maximumProtocolVersion")? {
        out.max_version = v;
    }
    if out.max_version < out.min_version {
        invalid!(
            "{}: the maximum TLS version is below the minimum",
            key("maximum-protocol-version", "maximumProtocolVersion")
        );
    }
    if let Some(suites) = &tls.cipher_suites {
        let bad: Vec<&String> = suites.iter().filter(|c| !xds::settings::valid_cipher_suite(c)).collect();
        if !bad.is_empty() {
            invalid!("{}: invalid cipher suites {bad:?}", key("cipher-suites", "cipherSuites"));
        }
        out.cipher_suites = xds::settings::cipher_suites(suites);
    }
    if let Some(curves) = &tls.ecdh_curves {
        out.ecdh_curves = curves.clone();
    }
    if let Some(f) = &tls.fingerprint {
        out.ja3_fingerprint = f.ja3.unwrap_or(out.ja3_fingerprint);
        out.ja4_fingerprint = f.ja4.unwrap_or(out.ja4_fingerprint);
    }
    Ok(())
}

fn apply_timeouts(out: &mut Timeouts, t: &TimeoutParameters, source: Source) -> Result<()> {
    let all = [
        (&t.request_timeout, &mut out.request, "request-timeout", "requestTimeout"),
        (&t.connection_idle_timeout, &mut out.connection_idle, "connection-idle-timeout", "connectionIdleTimeout"),
        (&t.stream_idle_timeout, &mut out.stream_idle, "stream-idle-timeout", "streamIdleTimeout"),
        (
            &t.max_connection_duration,
            &mut out.max_connection_duration,
            "max-connection-duration",
            "maxConnectionDuration",
        ),
        (&t.delayed_close_timeout, &mut out.delayed_close, "delayed-close-timeout", "delayedCloseTimeout"),
        (
            &t.connection_shutdown_grace_period,
            &mut out.connection_shutdown_grace_period,
            "connection-shutdown-grace-period",
            "connectionShutdownGracePeriod",
        ),
    ];
    for (value, target, file, resource) in all {
        if let Some(text) = value {
            *target = Timeout::parse(text).ok_or_else(|| {
                crate::Error::Invalid(format!(
                    "{}: {text:?} is not a duration (such as 30s or 1m) or infinity",
                    source.key(&format!("timeouts.{file}"), &format!("timeouts.{resource}"))
                ))
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
