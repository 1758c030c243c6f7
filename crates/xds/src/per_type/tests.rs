use envoy_types::pb::envoy::config::core::v3::transport_socket::ConfigType;
use envoy_types::pb::envoy::config::listener::v3::filter;

use super::*;
use crate::{CompileOptions, FleetResources, compile};

/// An ADS config source as prost encodes it inside its parent: length 4, `ads {}` (field 3),
/// `resource_api_version: V3` (field 6). Nested messages and packed `Any`s are embedded bytes,
/// so this finds one at any depth, independently of the rewrite's own walk.
const ADS_SOURCE: [u8; 5] = [0x04, 0x1a, 0x00, 0x30, 0x02];

fn has_ads_source(resource: &Resource) -> bool {
    resource.body.value.windows(ADS_SOURCE.len()).any(|w| w == ADS_SOURCE)
}

/// A TLS host verifying client certificates (SDS for the certificate and the CA, RDS), and a TLS
/// backend verified against a CA (EDS, SDS for the CA).
fn fleet() -> FleetResources {
    use objects::secrets::testing::{CERT, KEY, quoted};
    let (cert, key) = (quoted(CERT), quoted(KEY));
    let yaml = format!(
        r#"
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: apps}}
spec: {{ports: [{{port: 443}}]}}
---
apiVersion: v1
kind: Secret
metadata: {{name: cert, namespace: apps}}
type: kubernetes.io/tls
stringData: {{tls.crt: "{cert}", tls.key: "{key}", ca.crt: "{cert}"}}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {{name: p, namespace: apps}}
spec:
  virtualhost:
    fqdn: p.test
    tls: {{secretName: cert, clientValidation: {{caSecret: cert}}}}
  routes: [{{services: [{{name: web, port: 443, protocol: tls, validation: {{caSecret: cert, subjectName: web.apps}}}}]}}]
"#
    );
    let s = objects::Snapshot::from_yaml(&yaml).expect("fixture parses");
    let t = frontends::httpproxy::translate(&s, &Default::default());
    assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
    let dag = dag::build(&t.ir, &s, t.diagnostics);
    compile(&dag, &CompileOptions::default()).remove(ir::DEFAULT_FLEET).expect("fleet compiled")
}

fn is_grpc_to_the_xds_cluster(source: Option<&ConfigSource>) -> bool {
    source == Some(&grpc_source())
}

#[test]
fn every_ads_source_of_clusters_and_listeners_names_the_xds_cluster_over_grpc() {
    let fleet = fleet();
    let mut rewritten = 0;
    for t in [ResourceType::Cluster, ResourceType::Listener] {
        for r in fleet.of(t).values() {
            let out = without_ads(t, r);
            assert_eq!((&out.name, &out.version), (&r.name, &r.version), "the resource as built is acknowledged");
            assert!(!has_ads_source(&out), "{} still has an ADS source", r.name);
            if has_ads_source(r) {
                rewritten += 1;
                assert_ne!(out.body, r.body);
            } else {
                assert_eq!(out.body, r.body, "{} had nothing to rewrite", r.name);
            }
        }
    }
    assert!(rewritten >= 3, "the fixture's cluster and its HTTP and HTTPS listeners: {rewritten}");

    // Where upstream's resources name the xDS cluster: EDS, RDS, SDS.
    let cluster = fleet.of(ResourceType::Cluster).values().find(|c| c.name.starts_with("apps/web/443/")).unwrap();
    let cluster = Cluster::decode(without_ads(ResourceType::Cluster, cluster).body.value.as_slice()).unwrap();
    assert!(is_grpc_to_the_xds_cluster(cluster.eds_cluster_config.as_ref().unwrap().eds_config.as_ref()));
    let Some(ConfigType::TypedConfig(any)) = cluster.transport_socket.unwrap().config_type else { panic!() };
    let upstream = UpstreamTlsContext::decode(any.value.as_slice()).unwrap();
    let Some(common_tls_context::ValidationContextType::CombinedValidationContext(combined)) =
        upstream.common_tls_context.unwrap().validation_context_type
    else {
        panic!()
    };
    let ca = combined.validation_context_sds_secret_config.unwrap();
    assert!(is_grpc_to_the_xds_cluster(ca.sds_config.as_ref()));

    let https = fleet.of(ResourceType::Listener).values().find(|l| l.name.starts_with("https")).unwrap();
    let https = Listener::decode(without_ads(ResourceType::Listener, https).body.value.as_slice()).unwrap();
    let chain = &https.filter_chains[0];
    let Some(ConfigType::TypedConfig(any)) = chain.transport_socket.as_ref().unwrap().config_type.clone() else {
        panic!()
    };
    let common = DownstreamTlsContext::decode(any.value.as_slice()).unwrap().common_tls_context.unwrap();
    assert!(is_grpc_to_the_xds_cluster(common.tls_certificate_sds_secret_configs[0].sds_config.as_ref()));
    let Some(common_tls_context::ValidationContextType::ValidationContextSdsSecretConfig(ca)) =
        common.validation_context_type
    else {
        panic!()
    };
    assert!(is_grpc_to_the_xds_cluster(ca.sds_config.as_ref()));
    let Some(filter::ConfigType::TypedConfig(hcm)) = &chain.filters[0].config_type else { panic!() };
    let hcm = HttpConnectionManager::decode(hcm.value.as_slice()).unwrap();
    let Some(http_connection_manager::RouteSpecifier::Rds(rds)) = hcm.route_specifier else { panic!() };
    assert!(is_grpc_to_the_xds_cluster(rds.config_source.as_ref()));
}

#[test]
fn other_types_pass_unchanged() {
    let fleet = fleet();
    for t in [ResourceType::Route, ResourceType::Secret, ResourceType::Runtime] {
        for r in fleet.of(t).values() {
            assert_eq!(&without_ads(t, r), r);
        }
    }
}
