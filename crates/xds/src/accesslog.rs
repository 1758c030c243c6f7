//! Envoy's file access log (`envoy.access_loggers.file`) on every traffic listener, in upstream
//! Contour's formats: Envoy's text format (its default, or `accesslog-format-string`) or JSON
//! with upstream's field names (`json-fields`), filtered by `accesslog-level` and, a contour-rs
//! extension, `accesslog-filter` (status codes, a minimum duration, a sample).

use envoy_types::pb::envoy::config::accesslog::v3::{
    AccessLog as EnvoyAccessLog, AccessLogFilter, AndFilter, ComparisonFilter, DurationFilter, OrFilter,
    ResponseFlagFilter, RuntimeFilter, StatusCodeFilter, access_log, access_log_filter, comparison_filter,
};
use envoy_types::pb::envoy::config::core::v3::{
    DataSource, RuntimeUInt32, SubstitutionFormatString, TypedExtensionConfig, data_source, substitution_format_string,
};
use envoy_types::pb::envoy::extensions::access_loggers::file::v3::{FileAccessLog, file_access_log};
use envoy_types::pb::envoy::extensions::formatter::metadata::v3::Metadata as MetadataFormatter;
use envoy_types::pb::envoy::extensions::formatter::req_without_query::v3::ReqWithoutQuery;
use envoy_types::pb::envoy::r#type::v3::{FractionalPercent, fractional_percent};
use envoy_types::pb::google::protobuf::{Any, Value, value};
use envoy_types::util::pack_any;
use prost::{Message, Name};

use crate::ordered::{OrderedStruct, StructEntry};

/// Upstream's default access log path for both listeners.
pub const DEFAULT_PATH: &str = "/dev/stdout";

/// What every traffic listener logs, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessLog {
    /// The file of plain-HTTP listeners (`--envoy-http-access-log`).
    pub http_path: String,
    /// The file of TLS listeners (`--envoy-https-access-log`).
    pub https_path: String,
    /// The line format.
    pub format: Format,
    /// Which requests are logged.
    pub level: Level,
    /// Which of those are logged (`accesslog-filter`, a contour-rs extension).
    pub filter: Filter,
}

/// `accesslog-filter`: every condition given must hold for a request to be logged, beside the
/// level's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    /// Status code ranges, both ends included: the status must be in one.
    pub status_codes: Vec<(u16, u16)>,
    /// The request must have taken at least this long, in milliseconds.
    pub min_duration_ms: Option<u64>,
    /// Of the requests that pass, this percentage (0-100) is logged, each drawn at random.
    pub sample_percent: Option<u32>,
}

impl Default for AccessLog {
    fn default() -> Self {
        Self {
            http_path: DEFAULT_PATH.into(),
            https_path: DEFAULT_PATH.into(),
            format: Format::Envoy(None),
            level: Level::Info,
            filter: Filter::default(),
        }
    }
}

/// A log line's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// Envoy's text format: its default line, or this format string (ending in a newline).
    Envoy(Option<String>),
    /// One JSON object per line: these keys with these command operators, in this order.
    Json(Vec<(String, String)>),
}

/// `accesslog-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Level {
    /// Every request.
    #[default]
    Info,
    /// Responses of 300 and above, and any request Envoy flagged.
    Error,
    /// Responses of 500 and above, and any request Envoy flagged.
    Critical,
    /// Nothing.
    Disabled,
}

/// Upstream's default JSON fields.
pub const DEFAULT_JSON_FIELDS: [&str; 23] = [
    "@timestamp",
    "authority",
    "bytes_received",
    "bytes_sent",
    "downstream_local_address",
    "downstream_remote_address",
    "duration",
    "method",
    "path",
    "protocol",
    "request_id",
    "requested_server_name",
    "response_code",
    "response_flags",
    "uber_trace_id",
    "upstream_cluster",
    "upstream_host",
    "upstream_local_address",
    "upstream_service_time",
    "user_agent",
    "x_forwarded_for",
    "grpc_status",
    "grpc_status_number",
];

/// JSON field names upstream translates to an operator that is not their upper-cased name.
const NAMED_FIELDS: [(&str, &str); 16] = [
    ("@timestamp", "%START_TIME%"),
    ("ts", "%START_TIME%"),
    ("authority", "%REQ(:AUTHORITY)%"),
    ("method", "%REQ(:METHOD)%"),
    ("path", "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%"),
    ("request_id", "%REQ(X-REQUEST-ID)%"),
    ("uber_trace_id", "%REQ(UBER-TRACE-ID)%"),
    ("upstream_service_time", "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%"),
    ("user_agent", "%REQ(USER-AGENT)%"),
    ("x_forwarded_for", "%REQ(X-FORWARDED-FOR)%"),
    ("x_trace_id", "%REQ(X-TRACE-ID)%"),
    ("contour_config_kind", "%METADATA(ROUTE:envoy.access_loggers.file:io.projectcontour.kind)%"),
    ("contour_config_namespace", "%METADATA(ROUTE:envoy.access_loggers.file:io.projectcontour.namespace)%"),
    ("contour_config_name", "%METADATA(ROUTE:envoy.access_loggers.file:io.projectcontour.name)%"),
    ("tls_ja3_fingerprint", "%TLS_JA3_FINGERPRINT%"),
    ("tls_ja4_fingerprint", "%TLS_JA4_FINGERPRINT%"),
];

/// Command operators without arguments that a JSON field may name in lower case, as upstream
/// allows.
const SIMPLE_OPERATORS: [&str; 78] = [
    "BYTES_RECEIVED",
    "BYTES_SENT",
    "CONNECTION_ID",
    "CONNECTION_TERMINATION_DETAILS",
    "DOWNSTREAM_DIRECT_REMOTE_ADDRESS",
    "DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT",
    "DOWNSTREAM_DIRECT_REMOTE_PORT",
    "DOWNSTREAM_HEADER_BYTES_RECEIVED",
    "DOWNSTREAM_HEADER_BYTES_SENT",
    "DOWNSTREAM_LOCAL_ADDRESS",
    "DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT",
    "DOWNSTREAM_LOCAL_PORT",
    "DOWNSTREAM_LOCAL_SUBJECT",
    "DOWNSTREAM_LOCAL_URI_SAN",
    "DOWNSTREAM_PEER_CERT",
    "DOWNSTREAM_PEER_CERT_V_END",
    "DOWNSTREAM_PEER_CERT_V_START",
    "DOWNSTREAM_PEER_FINGERPRINT_1",
    "DOWNSTREAM_PEER_FINGERPRINT_256",
    "DOWNSTREAM_PEER_ISSUER",
    "DOWNSTREAM_PEER_SERIAL",
    "DOWNSTREAM_PEER_SUBJECT",
    "DOWNSTREAM_PEER_URI_SAN",
    "DOWNSTREAM_REMOTE_ADDRESS",
    "DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT",
    "DOWNSTREAM_REMOTE_PORT",
    "DOWNSTREAM_TLS_CIPHER",
    "DOWNSTREAM_TLS_SESSION_ID",
    "DOWNSTREAM_TLS_VERSION",
    "DOWNSTREAM_WIRE_BYTES_RECEIVED",
    "DOWNSTREAM_WIRE_BYTES_SENT",
    "DURATION",
    "FILTER_CHAIN_NAME",
    "GRPC_STATUS",
    "GRPC_STATUS_NUMBER",
    "HOSTNAME",
    "LOCAL_REPLY_BODY",
    "PROTOCOL",
    "REQUEST_HEADERS_BYTES",
    "REQUESTED_SERVER_NAME",
    "REQUEST_DURATION",
    "REQUEST_TX_DURATION",
    "RESPONSE_CODE",
    "RESPONSE_CODE_DETAILS",
    "RESPONSE_DURATION",
    "RESPONSE_FLAGS",
    "RESPONSE_HEADERS_BYTES",
    "RESPONSE_TRAILERS_BYTES",
    "RESPONSE_TX_DURATION",
    "ROUTE_NAME",
    "START_TIME",
    "TLS_JA3_FINGERPRINT",
    "TLS_JA4_FINGERPRINT",
    "UPSTREAM_CLUSTER",
    "UPSTREAM_FILTER_STATE",
    "UPSTREAM_HEADER_BYTES_RECEIVED",
    "UPSTREAM_HEADER_BYTES_SENT",
    "UPSTREAM_HOST",
    "UPSTREAM_LOCAL_ADDRESS",
    "UPSTREAM_LOCAL_ADDRESS_WITHOUT_PORT",
    "UPSTREAM_LOCAL_PORT",
    "UPSTREAM_PEER_CERT",
    "UPSTREAM_PEER_CERT_V_END",
    "UPSTREAM_PEER_CERT_V_START",
    "UPSTREAM_PEER_ISSUER",
    "UPSTREAM_PEER_SUBJECT",
    "UPSTREAM_PROTOCOL",
    "UPSTREAM_REMOTE_ADDRESS",
    "UPSTREAM_REMOTE_ADDRESS_WITHOUT_PORT",
    "UPSTREAM_REMOTE_PORT",
    "UPSTREAM_REQUEST_ATTEMPT_COUNT",
    "UPSTREAM_TLS_CIPHER",
    "UPSTREAM_TLS_SESSION_ID",
    "UPSTREAM_TLS_VERSION",
    "UPSTREAM_TRANSPORT_FAILURE_REASON",
    "UPSTREAM_WIRE_BYTES_RECEIVED",
    "UPSTREAM_WIRE_BYTES_SENT",
    "VIRTUAL_CLUSTER_NAME",
];

/// Operators that take arguments: (name, arguments optional, truncation allowed).
const COMPLEX_OPERATORS: [(&str, bool, bool); 7] = [
    ("ENVIRONMENT", false, true),
    ("METADATA", false, true),
    ("REQ", false, true),
    ("REQ_WITHOUT_QUERY", false, true),
    ("RESP", false, true),
    ("START_TIME", true, false),
    ("TRAILER", false, true),
];

/// Turns upstream's `json-fields` entries into (key, operator) pairs: a known field name
/// (`method`), a simple operator in lower case (`bytes_sent`), or `key=%OPERATOR%`. A later
/// entry for the same key replaces the earlier one. The error names the bad entry.
pub fn json_fields(entries: &[impl AsRef<str>]) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(entries.len());
    for entry in entries {
        let entry = entry.as_ref();
        let (key, operator) = match entry.split_once('=') {
            Some((key, operator)) => {
                validate_operators(operator).map_err(|e| format!("invalid JSON field {entry:?}: {e}"))?;
                (key.to_string(), operator.to_string())
            }
            None => match NAMED_FIELDS.iter().find(|(k, _)| *k == entry) {
                Some((_, operator)) => (entry.to_string(), operator.to_string()),
                None if SIMPLE_OPERATORS.contains(&entry.to_ascii_uppercase().as_str()) => {
                    (entry.to_string(), format!("%{}%", entry.to_ascii_uppercase()))
                }
                None => return Err(format!("invalid JSON log field name {entry:?}")),
            },
        };
        if operator.is_empty() {
            return Err(format!("invalid JSON log field name {key:?}"));
        }
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some(existing) => existing.1 = operator,
            None => out.push((key, operator)),
        }
    }
    Ok(out)
}

/// Checks `accesslog-format-string` as upstream does: known command operators with the
/// arguments they need, and a trailing newline.
pub fn validate_format_string(format: &str) -> Result<(), String> {
    validate_operators(format).map_err(|e| format!("invalid access log format: {e}"))?;
    if !format.ends_with('\n') {
        return Err("invalid access log format: must end in newline".into());
    }
    Ok(())
}

/// One `%OPERATOR(args):N%` after another; a lone `%` is refused, as upstream refuses it.
fn validate_operators(format: &str) -> Result<(), String> {
    let bytes = format.as_bytes();
    let mut i = 0;
    while let Some(offset) = format[i..].find('%') {
        let start = i + offset;
        let (name, args, truncation, end) =
            operator_at(bytes, start).ok_or_else(|| format!("invalid Envoy format at {:?}", &format[start..]))?;
        let name = &format[name.0..name.1];
        let complex = COMPLEX_OPERATORS.iter().find(|(n, ..)| *n == name);
        match complex {
            None if SIMPLE_OPERATORS.contains(&name) => {}
            None => return Err(format!("invalid Envoy operator {name}")),
            Some((_, optional, _)) if !optional && !args => {
                return Err(format!("arguments required for operator {name}"));
            }
            Some((_, _, truncate)) if !truncate && truncation => {
                return Err(format!("operator {name} cannot have truncation length"));
            }
            Some(_) => {}
        }
        i = end;
    }
    Ok(())
}

/// The operator starting with the `%` at `start`: its name's span, whether it has arguments and
/// a truncation length, and where the text after its closing `%` starts.
fn operator_at(bytes: &[u8], start: usize) -> Option<((usize, usize), bool, bool, usize)> {
    let mut at = start + 1;
    while at < bytes.len() && (bytes[at].is_ascii_uppercase() || bytes[at] == b'_') {
        at += 1;
    }
    let name = (start + 1, at);
    if name.0 == name.1 {
        return None;
    }
    let (mut args, mut truncation) = (false, false);
    if bytes.get(at) == Some(&b'(') {
        let close = at + 1 + bytes[at + 1..].iter().position(|b| *b == b')')?;
        if close == at + 1 {
            return None;
        }
        args = true;
        at = close + 1;
        if bytes.get(at) == Some(&b':') && bytes.get(at + 1).is_some_and(u8::is_ascii_digit) {
            at += 1;
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            truncation = true;
        }
    }
    (bytes.get(at) == Some(&b'%')).then_some((name, args, truncation, at + 1))
}

impl AccessLog {
    /// The loggers of a listener; `secure` picks the TLS listeners' file.
    pub(crate) fn loggers(&self, secure: bool) -> Vec<EnvoyAccessLog> {
        let level = match self.level {
            Level::Disabled => return Vec::new(),
            Level::Info => None,
            Level::Error => Some(errors_from(300)),
            Level::Critical => Some(errors_from(500)),
        };
        let mut all: Vec<AccessLogFilter> = level.into_iter().chain(self.filter.filters()).collect();
        let filter = match all.len() {
            0 => None,
            1 => all.pop(),
            _ => Some(AccessLogFilter {
                filter_specifier: Some(access_log_filter::FilterSpecifier::AndFilter(AndFilter { filters: all })),
            }),
        };
        let path = if secure { &self.https_path } else { &self.http_path }.clone();
        let config = match &self.format {
            Format::Envoy(format) => {
                let log_format = format.as_ref().map(|text| {
                    file_access_log::AccessLogFormat::LogFormat(SubstitutionFormatString {
                        format: Some(substitution_format_string::Format::TextFormatSource(DataSource {
                            specifier: Some(data_source::Specifier::InlineString(text.clone())),
                            ..Default::default()
                        })),
                        formatters: formatters([text.as_str()]),
                        ..Default::default()
                    })
                });
                pack_any(FileAccessLog { path, access_log_format: log_format })
            }
            Format::Json(fields) => json_logger(path, fields),
        };
        vec![EnvoyAccessLog {
            name: "envoy.access_loggers.file".into(),
            filter,
            config_type: Some(access_log::ConfigType::TypedConfig(config)),
        }]
    }

    /// Whether a line names the route's object (`contour_config_*`, or `%METADATA(ROUTE:...)%`),
    /// so routes must carry it as metadata.
    pub fn uses_route_metadata(&self) -> bool {
        let uses = |text: &str| text.contains("%METADATA(ROUTE:");
        self.level != Level::Disabled
            && match &self.format {
                Format::Envoy(format) => format.as_deref().is_some_and(uses),
                Format::Json(fields) => fields.iter().any(|(_, op)| uses(op)),
            }
    }
}

/// Formatter extensions the operators in `texts` need, as upstream adds them.
fn formatters<'a>(texts: impl IntoIterator<Item = &'a str> + Clone) -> Vec<TypedExtensionConfig> {
    let uses = |name: &str| texts.clone().into_iter().any(|t| t.contains(&format!("%{name}(")));
    let mut out = Vec::new();
    if uses("REQ_WITHOUT_QUERY") {
        out.push(TypedExtensionConfig {
            name: "envoy.formatter.req_without_query".into(),
            typed_config: Some(pack_any(ReqWithoutQuery::default())),
        });
    }
    if uses("METADATA") {
        out.push(TypedExtensionConfig {
            name: "envoy.formatter.metadata".into(),
            typed_config: Some(pack_any(MetadataFormatter::default())),
        });
    }
    out
}

/// Log responses with a status of at least `min`, and anything Envoy flagged.
impl Filter {
    /// Envoy's filters for the conditions given; the sample last, so it draws only among the
    /// requests the others let through.
    fn filters(&self) -> Vec<AccessLogFilter> {
        let of = |specifier| AccessLogFilter { filter_specifier: Some(specifier) };
        let compare = |op: comparison_filter::Op, value: u32, key: &str| ComparisonFilter {
            op: op as i32,
            value: Some(RuntimeUInt32 { default_value: value, runtime_key: key.into() }),
        };
        let status = |op, value| {
            of(access_log_filter::FilterSpecifier::StatusCodeFilter(StatusCodeFilter {
                comparison: Some(compare(op, u32::from(value), "contour.accesslog.filter.status_code")),
            }))
        };
        let mut out = Vec::new();
        let ranges: Vec<AccessLogFilter> = self
            .status_codes
            .iter()
            .map(|&(start, end)| {
                if start == end {
                    return status(comparison_filter::Op::Eq, start);
                }
                let both = vec![status(comparison_filter::Op::Ge, start), status(comparison_filter::Op::Le, end)];
                of(access_log_filter::FilterSpecifier::AndFilter(AndFilter { filters: both }))
            })
            .collect();
        match ranges.len() {
            0 => {}
            1 => out.extend(ranges),
            _ => out.push(of(access_log_filter::FilterSpecifier::OrFilter(OrFilter { filters: ranges }))),
        }
        if let Some(ms) = self.min_duration_ms {
            let ms = u32::try_from(ms).unwrap_or(u32::MAX);
            out.push(of(access_log_filter::FilterSpecifier::DurationFilter(DurationFilter {
                comparison: Some(compare(comparison_filter::Op::Ge, ms, "contour.accesslog.filter.duration")),
            })));
        }
        if let Some(percent) = self.sample_percent {
            out.push(of(access_log_filter::FilterSpecifier::RuntimeFilter(RuntimeFilter {
                runtime_key: "contour.accesslog.filter.sample".into(),
                percent_sampled: Some(FractionalPercent {
                    numerator: percent.min(100),
                    denominator: fractional_percent::DenominatorType::Hundred as i32,
                }),
                use_independent_randomness: true,
            })));
        }
        out
    }
}

fn errors_from(min: u32) -> AccessLogFilter {
    let status = AccessLogFilter {
        filter_specifier: Some(access_log_filter::FilterSpecifier::StatusCodeFilter(StatusCodeFilter {
            comparison: Some(ComparisonFilter {
                op: comparison_filter::Op::Ge as i32,
                value: Some(RuntimeUInt32 {
                    default_value: min,
                    runtime_key: "contour.accesslog.filter.status_code".into(),
                }),
            }),
        })),
    };
    // No flags named: any flag matches, and every flag is an error.
    let flagged = AccessLogFilter {
        filter_specifier: Some(access_log_filter::FilterSpecifier::ResponseFlagFilter(ResponseFlagFilter::default())),
    };
    AccessLogFilter {
        filter_specifier: Some(access_log_filter::FilterSpecifier::OrFilter(OrFilter {
            filters: vec![status, flagged],
        })),
    }
}

/// The JSON logger, encoded with its fields in the given order: prost's `Struct` is a hash map,
/// whose order would change the listener's bytes (and make Envoy drain it) from one controller
/// process to the next.
fn json_logger(path: String, fields: &[(String, String)]) -> Any {
    let entries = fields
        .iter()
        .map(|(key, operator)| StructEntry {
            key: key.clone(),
            value: Some(Value { kind: Some(value::Kind::StringValue(operator.clone())) }),
        })
        .collect();
    let message = JsonFileAccessLog {
        path,
        log_format: Some(JsonFormat {
            json_format: Some(OrderedStruct { fields: entries }),
            omit_empty_values: true,
            formatters: formatters(fields.iter().map(|(_, op)| op.as_str())),
        }),
    };
    Any { type_url: FileAccessLog::type_url(), value: message.encode_to_vec() }
}

/// A route's `metadata` naming the object it came from, as upstream's `contour_config_*` fields
/// read it, encoded (fields in a fixed order, for the same reason as [`json_logger`]).
pub(crate) fn route_metadata(kind: &str, namespace: &str, name: &str) -> Vec<u8> {
    let entry = |key: &str, text: &str| StructEntry {
        key: key.into(),
        value: Some(Value { kind: Some(value::Kind::StringValue(text.into())) }),
    };
    let fields = [
        ("io.projectcontour.kind", kind),
        ("io.projectcontour.namespace", namespace),
        ("io.projectcontour.name", name),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| entry(k, v))
    .collect();
    RouteMetadata {
        filter_metadata: vec![MetadataEntry {
            key: "envoy.access_loggers.file".into(),
            value: Some(OrderedStruct { fields }),
        }],
    }
    .encode_to_vec()
}

/// `envoy.config.core.v3.Metadata` with only `filter_metadata` (same tag).
#[derive(Clone, PartialEq, Message)]
struct RouteMetadata {
    #[prost(message, repeated, tag = "1")]
    filter_metadata: Vec<MetadataEntry>,
}

/// One entry of [`RouteMetadata`].
#[derive(Clone, PartialEq, Message)]
struct MetadataEntry {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(message, optional, tag = "2")]
    value: Option<OrderedStruct>,
}

/// `FileAccessLog` with only the fields a JSON logger uses (same tags).
#[derive(Clone, PartialEq, Message)]
struct JsonFileAccessLog {
    #[prost(string, tag = "1")]
    path: String,
    #[prost(message, optional, tag = "5")]
    log_format: Option<JsonFormat>,
}

/// `SubstitutionFormatString` with `json_format` (same tags).
#[derive(Clone, PartialEq, Message)]
struct JsonFormat {
    #[prost(message, optional, tag = "2")]
    json_format: Option<OrderedStruct>,
    #[prost(bool, tag = "3")]
    omit_empty_values: bool,
    #[prost(message, repeated, tag = "6")]
    formatters: Vec<TypedExtensionConfig>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_fields_read_as_upstream_reads_them() {
        let fields = json_fields(&["method", "bytes_sent", "custom=%REQ(X-CUSTOM)%", "method=%PROTOCOL%"]).unwrap();
        assert_eq!(
            fields,
            [
                ("method".to_string(), "%PROTOCOL%".to_string()),
                ("bytes_sent".into(), "%BYTES_SENT%".into()),
                ("custom".into(), "%REQ(X-CUSTOM)%".into()),
            ]
        );
        assert!(json_fields(&DEFAULT_JSON_FIELDS).is_ok());
        let err = json_fields(&["no_such_field"]).unwrap_err();
        assert!(err.contains("no_such_field"), "{err}");
        let err = json_fields(&["x=%NOT_AN_OPERATOR%"]).unwrap_err();
        assert!(err.contains("NOT_AN_OPERATOR"), "{err}");
        assert!(json_fields(&["x="]).is_err());
    }

    #[test]
    fn format_strings_are_checked_as_upstream_checks_them() {
        assert!(validate_format_string("%START_TIME% %REQ(:METHOD)% %RESPONSE_CODE%\n").is_ok());
        assert!(validate_format_string("%START_TIME(%s)% %REQ(:PATH):10%\n").is_ok());
        assert!(validate_format_string("plain text only\n").is_ok());
        for (bad, why) in [
            ("%RESPONSE_CODE%", "newline"),
            ("%REQ%\n", "arguments required"),
            ("%START_TIME(%s):3%\n", "truncation"),
            ("%NOPE%\n", "NOPE"),
            ("100%\n", "invalid Envoy format"),
            ("%REQ(\n", "invalid Envoy format"),
        ] {
            let err = validate_format_string(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }

    #[test]
    fn json_loggers_encode_the_same_bytes_every_time_and_decode_as_envoys_message() {
        let fields = json_fields(&DEFAULT_JSON_FIELDS).unwrap();
        let log = AccessLog { format: Format::Json(fields.clone()), ..Default::default() };
        let first = log.loggers(false);
        assert_eq!(first, log.loggers(false));
        let Some(access_log::ConfigType::TypedConfig(any)) = &first[0].config_type else { panic!("typed config") };
        let decoded = FileAccessLog::decode(any.value.as_slice()).unwrap();
        assert_eq!(decoded.path, DEFAULT_PATH);
        let Some(file_access_log::AccessLogFormat::LogFormat(format)) = decoded.access_log_format else {
            panic!("log format")
        };
        assert!(format.omit_empty_values);
        let Some(substitution_format_string::Format::JsonFormat(json)) = format.format else { panic!("json") };
        assert_eq!(json.fields.len(), fields.len());
        assert_eq!(
            json.fields.get("method").and_then(|v| v.kind.clone()),
            Some(value::Kind::StringValue("%REQ(:METHOD)%".into()))
        );
    }

    #[test]
    fn levels_filter_as_upstream_and_disabled_logs_nothing() {
        let log = |level| AccessLog { level, ..Default::default() };
        assert!(log(Level::Disabled).loggers(false).is_empty());
        assert!(log(Level::Info).loggers(true)[0].filter.is_none());
        let Some(access_log_filter::FilterSpecifier::OrFilter(or)) =
            log(Level::Error).loggers(false)[0].filter.clone().and_then(|f| f.filter_specifier)
        else {
            panic!("an or filter")
        };
        let Some(access_log_filter::FilterSpecifier::StatusCodeFilter(status)) = &or.filters[0].filter_specifier else {
            panic!("status first")
        };
        assert_eq!(status.comparison.as_ref().and_then(|c| c.value.as_ref()).map(|v| v.default_value), Some(300));
    }

    #[test]
    fn route_metadata_decodes_as_envoys_metadata() {
        use envoy_types::pb::envoy::config::core::v3::Metadata;
        let decoded = Metadata::decode(route_metadata("HTTPProxy", "team-a", "web").as_slice()).unwrap();
        let fields = &decoded.filter_metadata["envoy.access_loggers.file"].fields;
        assert_eq!(fields["io.projectcontour.namespace"].kind, Some(value::Kind::StringValue("team-a".into())));
        assert_eq!(fields.len(), 3);
    }

    #[test]
    fn metadata_operators_bring_their_formatter() {
        let fields = json_fields(&["contour_config_name", "path"]).unwrap();
        let log = AccessLog { format: Format::Json(fields), ..Default::default() };
        assert!(log.uses_route_metadata());
        assert!(!AccessLog::default().uses_route_metadata());
        let text =
            AccessLog { format: Format::Envoy(Some("%REQ_WITHOUT_QUERY(:PATH)%\n".into())), ..Default::default() };
        let Some(access_log::ConfigType::TypedConfig(any)) = &text.loggers(false)[0].config_type else { panic!() };
        let decoded = FileAccessLog::decode(any.value.as_slice()).unwrap();
        let Some(file_access_log::AccessLogFormat::LogFormat(format)) = decoded.access_log_format else { panic!() };
        assert_eq!(format.formatters[0].name, "envoy.formatter.req_without_query");
    }

    #[test]
    fn the_filter_and_the_level_must_both_let_a_request_through() {
        use access_log_filter::FilterSpecifier as F;
        let filter =
            Filter { status_codes: vec![(404, 404), (500, 599)], min_duration_ms: Some(250), sample_percent: Some(5) };
        let log = AccessLog { level: Level::Critical, filter, ..Default::default() };
        let Some(F::AndFilter(and)) = log.loggers(false)[0].filter.clone().and_then(|f| f.filter_specifier) else {
            panic!("an and filter")
        };
        let kinds: Vec<&str> = and
            .filters
            .iter()
            .map(|f| match f.filter_specifier.as_ref().unwrap() {
                F::OrFilter(_) => "or",
                F::DurationFilter(_) => "duration",
                F::RuntimeFilter(_) => "sample",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["or", "or", "duration", "sample"], "the level's, the codes', the duration, the sample last");
        let Some(F::RuntimeFilter(sample)) = &and.filters[3].filter_specifier else { panic!() };
        assert_eq!(sample.percent_sampled.as_ref().map(|p| p.numerator), Some(5));
        assert!(sample.use_independent_randomness, "not tied to the request ID");
        let only =
            AccessLog { filter: Filter { min_duration_ms: Some(1), ..Default::default() }, ..Default::default() };
        assert!(matches!(
            only.loggers(false)[0].filter.clone().and_then(|f| f.filter_specifier),
            Some(F::DurationFilter(_))
        ));
    }
}
