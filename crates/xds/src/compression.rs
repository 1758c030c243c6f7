//! The response compressor (`envoy.filters.http.compressor`) of every HTTP listener, as
//! upstream installs it: gzip unless `compression.algorithm` says otherwise, for text, JSON,
//! JavaScript, SVG and gRPC-Web responses.

use envoy_types::pb::envoy::config::core::v3::TypedExtensionConfig;
use envoy_types::pb::envoy::extensions::compression::brotli::compressor::v3::Brotli;
use envoy_types::pb::envoy::extensions::compression::gzip::compressor::v3::Gzip;
use envoy_types::pb::envoy::extensions::compression::zstd::compressor::v3::Zstd;
use envoy_types::pb::envoy::extensions::filters::http::compressor::v3::{Compressor, compressor};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{HttpFilter, http_filter};
use envoy_types::pb::envoy::r#type::matcher::v3::{StringMatcher, string_matcher};
use envoy_types::util::pack_any;

/// The filter's name.
pub(crate) const NAME: &str = "envoy.filters.http.compressor";

use crate::settings::Compression;

/// The content types compressed: Envoy's own defaults, and gRPC-Web's.
const CONTENT_TYPES: [&str; 25] = [
    "text/html",
    "text/plain",
    "text/css",
    "application/javascript",
    "application/x-javascript",
    "text/javascript",
    "text/x-javascript",
    "text/ecmascript",
    "text/js",
    "text/jscript",
    "text/x-js",
    "application/ecmascript",
    "application/x-json",
    "application/xml",
    "application/json",
    "image/svg+xml",
    "text/xml",
    "application/xhtml+xml",
    "application/grpc-web",
    "application/grpc-web+proto",
    "application/grpc-web+json",
    "application/grpc-web+thrift",
    "application/grpc-web-text",
    "application/grpc-web-text+proto",
    "application/grpc-web-text+thrift",
];

/// The compressor filter, or none when compression is disabled.
pub(crate) fn filter(algorithm: Compression) -> Option<HttpFilter> {
    let library = match algorithm {
        Compression::Gzip => {
            TypedExtensionConfig { name: "gzip".into(), typed_config: Some(pack_any(Gzip::default())) }
        }
        Compression::Brotli => {
            TypedExtensionConfig { name: "brotli".into(), typed_config: Some(pack_any(Brotli::default())) }
        }
        Compression::Zstd => {
            TypedExtensionConfig { name: "zstd".into(), typed_config: Some(pack_any(Zstd::default())) }
        }
        Compression::Disabled => return None,
    };
    let config = Compressor {
        compressor_library: Some(library),
        response_direction_config: Some(compressor::ResponseDirectionConfig {
            common_config: Some(compressor::CommonDirectionConfig {
                content_type_matcher: CONTENT_TYPES
                    .iter()
                    .map(|t| StringMatcher {
                        match_pattern: Some(string_matcher::MatchPattern::Exact(t.to_string())),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    Some(HttpFilter {
        name: NAME.into(),
        config_type: Some(http_filter::ConfigType::TypedConfig(pack_any(config))),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_algorithm_names_its_library_and_disabled_installs_nothing() {
        assert!(filter(Compression::Disabled).is_none());
        for (algorithm, name) in
            [(Compression::Gzip, "gzip"), (Compression::Brotli, "brotli"), (Compression::Zstd, "zstd")]
        {
            let Some(http_filter::ConfigType::TypedConfig(any)) = filter(algorithm).and_then(|f| f.config_type) else {
                panic!("a typed filter")
            };
            let decoded: Compressor = prost::Message::decode(any.value.as_slice()).unwrap();
            assert_eq!(decoded.compressor_library.map(|l| l.name).as_deref(), Some(name));
        }
    }
}
