//! Route configurations assembled from their virtual hosts' encodings, in both forms (inline
//! and over VHDS); large ones patched from the previous build's.

use std::sync::Arc;

use dag::RouteTable;
use envoy_types::pb::envoy::config::route::v3 as r;
use envoy_types::pb::google::protobuf::Any;
use prost::Message;
use sha2::{Digest, Sha256};

use super::{EncodedVhost, RouteCache, append_field, vhost_head};
use crate::matchers::header_options;
use crate::per_type::XDS_CLUSTER;
use crate::{Resource, ResourceType};

/// Route tables with fewer virtual hosts are encoded whole each time.
const KEPT_FROM: usize = 64;

/// A large route table as the last build encoded it. The next build with the same head compares
/// its virtual hosts with these by address (a walk over two arrays of pointers), copies the runs
/// that did not change from the previous bytes, and encodes only the hosts that came or changed:
/// at 50,000 virtual hosts, assembling the table from every host's encoding cost a cache miss per
/// host.
#[derive(Debug)]
pub(super) struct EncodedTable {
    vhds: bool,
    http3_port: Option<u16>,
    /// The virtual hosts, in the table's order (kept alive, so their addresses stay theirs).
    vhosts: Vec<Arc<dag::VirtualHost>>,
    /// Where each virtual host's field starts in the inline form's bytes, and then the end.
    offsets: Vec<usize>,
    /// Each virtual host's digest, in order: the inline form's version is made from them.
    digests: Vec<[u8; 32]>,
    forms: RouteForms,
    pub(super) used: u64,
}

/// A route table in both forms: inline, and for VHDS (the route configuration naming VHDS, and
/// its virtual hosts as resources named `<route configuration>/<host>`).
#[derive(Debug, Clone)]
pub(crate) struct RouteForms {
    pub(crate) inline: Resource,
    pub(crate) vhds: Resource,
    pub(crate) virtual_hosts: crate::Resources,
}

/// The `alt-svc` value advertising HTTP/3 on `port` for a day (as browsers expect it).
pub(crate) fn alt_svc(port: u16) -> String {
    format!("h3=\":{port}\"; ma=86400")
}

/// Route table `table` of fleet `fleet` in both forms. `http3_port` is the port `alt-svc`
/// advertises HTTP/3 on, for a table served over QUIC too. A large table is patched from the
/// previous build's encoding (see [`EncodedTable`]).
pub(crate) fn route_configuration(
    fleet: &str,
    table: &RouteTable,
    vhds: bool,
    http3_port: Option<u16>,
    cache: &mut RouteCache,
) -> RouteForms {
    if table.virtual_hosts.len() < KEPT_FROM {
        return encode_whole(table, vhds, http3_port, cache).forms;
    }
    let key = format!("{fleet}\n{}", table.name);
    let generation = cache.generation;
    let kept = cache.tables.remove(&key).filter(|k| k.vhds == vhds && k.http3_port == http3_port);
    let mut kept = match kept.and_then(|kept| patch(kept, table, cache)) {
        Some(patched) => {
            cache.patched += 1;
            patched
        }
        None => encode_whole(table, vhds, http3_port, cache),
    };
    kept.used = generation;
    let forms = kept.forms.clone();
    cache.tables.insert(key, kept);
    forms
}

/// The head of a table's route configuration: everything but its virtual hosts.
fn table_head(table: &RouteTable, http3_port: Option<u16>) -> r::RouteConfiguration {
    // A Host header with a port (`example.com:8080`) selects the same virtual host as without.
    r::RouteConfiguration {
        name: table.name.clone(),
        ignore_port_in_host_matching: true,
        response_headers_to_add: http3_port
            .map(|port| {
                let set = vec![("alt-svc".to_string(), alt_svc(port))];
                header_options(&ir::HeaderModifier { set, ..Default::default() })
            })
            .unwrap_or_default(),
        ..Default::default()
    }
}

/// The inline form's resource from its bytes (head, then each virtual host) and the digests of
/// its virtual hosts.
fn inline_form(name: &str, bytes: Vec<u8>, head_len: usize, digests: &[[u8; 32]]) -> Resource {
    let version = Sha256::new()
        .chain_update(ResourceType::Route.type_url())
        .chain_update(&bytes[..head_len])
        .chain_update(digests.as_flattened())
        .finalize();
    Resource::with_digest(name, Any { type_url: ResourceType::Route.type_url().into(), value: bytes }, &version)
}

/// The route configuration naming VHDS for its virtual hosts.
fn vhds_form(table: &RouteTable, head: r::RouteConfiguration) -> Resource {
    let over_vhds =
        r::RouteConfiguration { vhds: Some(r::Vhds { config_source: Some(vhds_source(&table.name)) }), ..head };
    Resource::new(&table.name, over_vhds)
}

/// A route table encoded from every virtual host's encoding.
fn encode_whole(table: &RouteTable, vhds: bool, http3_port: Option<u16>, cache: &mut RouteCache) -> EncodedTable {
    let head = table_head(table, http3_port);
    let mut bytes = head.encode_to_vec();
    let head_len = bytes.len();
    let mut offsets = Vec::with_capacity(table.virtual_hosts.len() + 1);
    let mut digests = Vec::with_capacity(table.virtual_hosts.len());
    let mut virtual_hosts = Vec::new();
    for vh in &table.virtual_hosts {
        let entry = cache.vhost(vh);
        offsets.push(bytes.len());
        append_field(&mut bytes, 2, &entry.bytes);
        digests.push(entry.digest);
        if vhds {
            virtual_hosts.push(vhds_vhost(&table.name, entry));
        }
    }
    offsets.push(bytes.len());
    let inline = inline_form(&table.name, bytes, head_len, &digests);
    let over_vhds = if vhds { vhds_form(table, head) } else { inline.clone() };
    let virtual_hosts = virtual_hosts.into_iter().map(|r| (Arc::clone(&r.name), r)).collect();
    EncodedTable {
        vhds,
        http3_port,
        vhosts: table.virtual_hosts.clone(),
        offsets,
        digests,
        forms: RouteForms { inline, vhds: over_vhds, virtual_hosts },
        used: cache.generation,
    }
}

/// One step from a kept table's virtual hosts to a new table's: a run of kept hosts (indices
/// into the kept ones), or a host of the new table to encode.
enum Step {
    Keep(usize, usize),
    Encode(usize),
}

/// `kept` patched into `table`'s encoding: unchanged runs of virtual hosts copied, the others
/// encoded. `None` when the two do not line up as sorted tables should (built whole instead).
fn patch(mut kept: EncodedTable, table: &RouteTable, cache: &mut RouteCache) -> Option<EncodedTable> {
    let (old, new) = (std::mem::take(&mut kept.vhosts), &table.virtual_hosts);
    let mut steps = Vec::new();
    let mut gone = Vec::new();
    let (mut i, mut j) = (0, 0);
    loop {
        if i < old.len() && j < new.len() && Arc::ptr_eq(&old[i], &new[j]) {
            let start = i;
            while i < old.len() && j < new.len() && Arc::ptr_eq(&old[i], &new[j]) {
                (i, j) = (i + 1, j + 1);
            }
            steps.push(Step::Keep(start, i));
            continue;
        }
        match (old.get(i), new.get(j)) {
            (None, None) => break,
            (Some(_), None) => {
                gone.push(i);
                i += 1;
            }
            (None, Some(_)) => {
                steps.push(Step::Encode(j));
                j += 1;
            }
            (Some(o), Some(n)) => match o.hostname.cmp(&n.hostname) {
                std::cmp::Ordering::Equal => {
                    steps.push(Step::Encode(j));
                    (i, j) = (i + 1, j + 1);
                }
                std::cmp::Ordering::Less => {
                    gone.push(i);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    steps.push(Step::Encode(j));
                    j += 1;
                }
            },
        }
    }
    let encoded = steps.iter().filter(|s| matches!(s, Step::Encode(_))).count();
    // Hosts out of order would be filed wrongly: a table the DAG built is sorted by hostname.
    let sorted = steps.iter().all(|s| match s {
        Step::Encode(j) => {
            (*j == 0 || new[j - 1].hostname < new[*j].hostname)
                && (*j + 1 == new.len() || new[*j].hostname < new[j + 1].hostname)
        }
        Step::Keep(..) => true,
    });
    if !sorted || encoded > new.len() / 2 {
        return None;
    }
    if encoded == 0 && gone.is_empty() {
        kept.vhosts = old;
        return Some(kept);
    }
    let previous = &kept.forms.inline.body.value;
    let head_len = kept.offsets[0];
    let mut bytes = Vec::with_capacity(previous.len() + previous.len() / 16);
    bytes.extend_from_slice(&previous[..head_len]);
    let mut offsets = Vec::with_capacity(new.len() + 1);
    let mut digests = Vec::with_capacity(new.len());
    let mut vhds = std::mem::take(&mut kept.forms.virtual_hosts);
    for i in gone {
        vhds.remove(format!("{}/{}", table.name, old[i].hostname).as_str());
    }
    for step in &steps {
        match *step {
            Step::Keep(from, to) => {
                let shift = bytes.len() as isize - kept.offsets[from] as isize;
                offsets.extend(kept.offsets[from..to].iter().map(|o| (*o as isize + shift) as usize));
                bytes.extend_from_slice(&previous[kept.offsets[from]..kept.offsets[to]]);
                digests.extend_from_slice(&kept.digests[from..to]);
            }
            Step::Encode(j) => {
                let entry = cache.vhost(&new[j]);
                offsets.push(bytes.len());
                append_field(&mut bytes, 2, &entry.bytes);
                digests.push(entry.digest);
                if kept.vhds {
                    let r = vhds_vhost(&table.name, entry);
                    vhds.insert(Arc::clone(&r.name), r);
                }
            }
        }
    }
    offsets.push(bytes.len());
    // The kept hosts move over from the old list (no count touched); the others are the new ones.
    let mut old: Vec<Option<Arc<dag::VirtualHost>>> = old.into_iter().map(Some).collect();
    let mut vhosts = Vec::with_capacity(new.len());
    for step in &steps {
        match *step {
            Step::Keep(from, to) => vhosts.extend(old[from..to].iter_mut().filter_map(Option::take)),
            Step::Encode(j) => vhosts.push(Arc::clone(&new[j])),
        }
    }
    let inline = inline_form(&table.name, bytes, head_len, &digests);
    let over_vhds = if kept.vhds { kept.forms.vhds.clone() } else { inline.clone() };
    Some(EncodedTable {
        vhosts,
        offsets,
        digests,
        forms: RouteForms { inline, vhds: over_vhds, virtual_hosts: vhds },
        ..kept
    })
}

/// Both forms of an already-built route configuration (tests, and resources made outside the
/// compiler). Virtual hosts are named `<route configuration>/<virtual host name>` over VHDS.
pub(crate) fn forms_of(rc: r::RouteConfiguration) -> RouteForms {
    let virtual_hosts = rc
        .virtual_hosts
        .iter()
        .map(|vh| {
            let name = format!("{}/{}", rc.name, vh.name);
            let r = Resource::new(&name, r::VirtualHost { name: name.clone(), ..vh.clone() });
            (Arc::clone(&r.name), r)
        })
        .collect();
    let vhds = r::RouteConfiguration {
        virtual_hosts: Vec::new(),
        vhds: Some(r::Vhds { config_source: Some(vhds_source(&rc.name)) }),
        ..rc.clone()
    };
    let name = rc.name.clone();
    RouteForms { vhds: Resource::new(&name, vhds), inline: Resource::new(&name, rc), virtual_hosts }
}

/// A virtual host as a VHDS resource of route configuration `table`: named `<table>/<host>`,
/// the name Envoy both files it under and removes it by.
fn vhds_vhost(table: &str, entry: &mut EncodedVhost) -> Resource {
    let host = &entry.vhost.hostname;
    let named = |r: &Resource| {
        r.name.len() == table.len() + 1 + host.len() && r.name.starts_with(table) && r.name.ends_with(host.as_str())
    };
    if let Some(r) = entry.vhds.as_ref().filter(|r| named(r)) {
        return r.clone();
    }
    let name = format!("{table}/{host}");
    let mut value = vhost_head(&entry.vhost, name.clone());
    value.extend_from_slice(&entry.bytes[entry.routes_at..]);
    let r = Resource::from_any(&name, Any { type_url: ResourceType::VirtualHost.type_url().into(), value });
    entry.vhds = Some(r.clone());
    r
}

/// The gRPC metadata that tells the controller which route configuration a VHDS stream is for.
/// Envoy opens one stream per route configuration and subscribes with no names (it filters the
/// answer by the `<route configuration>/` prefix itself), so without it every stream would get
/// the virtual hosts of every route configuration.
pub const VHDS_ROUTE_CONFIGURATION_HEADER: &str = "x-contour-route-configuration";

/// VHDS is Delta-only and Envoy takes it only from its own stream (not ADS): the
/// VirtualHostDiscoveryService of the controller, through the bootstrap's xDS cluster.
fn vhds_source(route_configuration: &str) -> envoy_types::pb::envoy::config::core::v3::ConfigSource {
    use envoy_types::pb::envoy::config::core::v3::{
        ApiConfigSource, ApiVersion, ConfigSource, GrpcService, HeaderValue, api_config_source, config_source,
        grpc_service,
    };
    ConfigSource {
        resource_api_version: ApiVersion::V3 as i32,
        config_source_specifier: Some(config_source::ConfigSourceSpecifier::ApiConfigSource(ApiConfigSource {
            api_type: api_config_source::ApiType::DeltaGrpc as i32,
            transport_api_version: ApiVersion::V3 as i32,
            grpc_services: vec![GrpcService {
                target_specifier: Some(grpc_service::TargetSpecifier::EnvoyGrpc(grpc_service::EnvoyGrpc {
                    cluster_name: XDS_CLUSTER.into(),
                    ..Default::default()
                })),
                initial_metadata: vec![HeaderValue {
                    key: VHDS_ROUTE_CONFIGURATION_HEADER.into(),
                    value: route_configuration.into(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            set_node_on_first_message_only: true,
            ..Default::default()
        })),
        ..Default::default()
    }
}
