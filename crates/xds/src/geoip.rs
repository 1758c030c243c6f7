//! Location lookup for HTTPProxy's location rules (`envoy.filters.http.geoip` with the MaxMind
//! provider), in the connection managers whose routes have such rules. The client address is the
//! one the connection manager derives (X-Forwarded-For with the trusted hops, or the PROXY
//! protocol), as for `Remote` IP rules. The lookup fills one request header per dimension a
//! configured database knows (upstream's `x-contour-geo-*` names); RBAC then matches them.
//!
//! A lookup that finds nothing leaves a header unset, so the same headers sent by the client are
//! removed first: a client cannot claim a location.

use envoy_types::pb::envoy::config::common::mutation_rules::v3::{HeaderMutation, header_mutation};
use envoy_types::pb::envoy::config::core::v3::TypedExtensionConfig;
use envoy_types::pb::envoy::extensions::filters::http::geoip::v3::Geoip;
use envoy_types::pb::envoy::extensions::filters::http::header_mutation::v3::{
    HeaderMutation as HeaderMutationFilter, Mutations,
};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::envoy::extensions::geoip_providers::common::v3::{
    CommonGeoipProviderConfig, common_geoip_provider_config::GeolocationFieldKeys,
};
use envoy_types::pb::envoy::extensions::geoip_providers::maxmind::v3::MaxMindConfig;
use envoy_types::util::pack_any;
use ir::GeoDimension;

/// The two filters, in order: the client's own location headers removed, then the lookup.
pub(crate) fn filters(databases: &ir::GeoDatabases) -> [HttpFilter; 2] {
    let removals = GeoDimension::ALL
        .iter()
        .map(|d| HeaderMutation { action: Some(header_mutation::Action::Remove(d.header().into())) })
        .collect();
    let strip = HeaderMutationFilter {
        mutations: Some(Mutations { request_mutations: removals, ..Default::default() }),
        ..Default::default()
    };
    let header = |d: GeoDimension| if databases.fills(d) { d.header().to_string() } else { String::new() };
    let keys = GeolocationFieldKeys {
        country: header(GeoDimension::Country),
        region: header(GeoDimension::Region),
        city: header(GeoDimension::City),
        asn: header(GeoDimension::Asn),
        isp: header(GeoDimension::Isp),
        anon: header(GeoDimension::Anon),
        anon_vpn: header(GeoDimension::AnonVpn),
        anon_tor: header(GeoDimension::AnonTor),
        anon_hosting: header(GeoDimension::AnonHosting),
        anon_proxy: header(GeoDimension::AnonProxy),
        ..Default::default()
    };
    let path = |p: &Option<String>| p.clone().unwrap_or_default();
    let provider = MaxMindConfig {
        city_db_path: path(&databases.city),
        country_db_path: path(&databases.country),
        asn_db_path: path(&databases.asn),
        isp_db_path: path(&databases.isp),
        anon_db_path: path(&databases.anon),
        common_provider_config: Some(CommonGeoipProviderConfig { geo_field_keys: Some(keys), ..Default::default() }),
    };
    let lookup = Geoip {
        provider: Some(TypedExtensionConfig {
            name: "envoy.geoip_providers.maxmind".into(),
            typed_config: Some(pack_any(provider)),
        }),
        ..Default::default()
    };
    [
        crate::http_filter("contour.geoip.strip", pack_any(strip)),
        crate::http_filter("envoy.filters.http.geoip", pack_any(lookup)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_dimensions_a_database_fills_get_a_header() {
        let databases = ir::GeoDatabases { country: Some("/db/country.mmdb".into()), ..Default::default() };
        let [strip, lookup] = filters(&databases);
        assert_eq!(strip.name, "contour.geoip.strip");
        let Some(envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::http_filter::ConfigType::TypedConfig(any)) = lookup.config_type else {
            panic!("typed config")
        };
        let geoip: Geoip = prost::Message::decode(any.value.as_slice()).expect("a Geoip");
        let provider = geoip.provider.expect("provider");
        let maxmind: MaxMindConfig =
            prost::Message::decode(provider.typed_config.expect("config").value.as_slice()).unwrap();
        assert_eq!(maxmind.country_db_path, "/db/country.mmdb");
        let keys = maxmind.common_provider_config.and_then(|c| c.geo_field_keys).expect("keys");
        assert_eq!((keys.country.as_str(), keys.city.as_str(), keys.anon.as_str()), ("x-contour-geo-country", "", ""));
    }
}
