//! Route configurations (RDS).

use dag::{Route, RouteAction};
use envoy_types::pb::envoy::config::core::v3::RuntimeFractionalPercent;
use envoy_types::pb::envoy::config::route::v3 as r;
use envoy_types::pb::envoy::r#type::matcher::v3::RegexMatchAndSubstitute;
use envoy_types::pb::envoy::r#type::v3::{FractionalPercent, fractional_percent};
use envoy_types::pb::google::protobuf::UInt32Value;
use ir::{HttpMatch, PathMatch, PathModifier, StringMatch};

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

use envoy_types::pb::google::protobuf::Any;
use prost::Message;
use sha2::{Digest, Sha256};

use crate::matchers::{header_matcher, header_options, is_host, regex, string_match};
use crate::{Resource, duration_ms};

mod table;

use table::EncodedTable;
pub use table::VHDS_ROUTE_CONFIGURATION_HEADER;
pub(crate) use table::{RouteForms, forms_of, route_configuration};

/// The cluster name invalid backends point at. It never exists, so Envoy answers their share of
/// requests with `cluster_not_found_response_code` (500), as the Gateway API asks.
pub const INVALID_BACKEND_CLUSTER: &str = "contour/invalid-backend";

/// Encoded routes and virtual hosts kept between builds, keyed by the identity of the DAG
/// values they came from (which the DAG shares when unchanged).
#[derive(Debug, Default)]
pub struct RouteCache {
    generation: u64,
    /// Routes carry the name of their object as metadata (for access logs that print it).
    metadata: bool,
    routes: FxHashMap<usize, EncodedRoute>,
    vhosts: FxHashMap<usize, EncodedVhost>,
    /// Large route tables as the last build encoded them, by fleet and name.
    tables: FxHashMap<String, EncodedTable>,
    /// How many times a kept table was patched.
    pub(crate) patched: u64,
}

/// A DAG route (kept alive so its address stays its key), its encoding, and the last build
/// that used it.
type EncodedRoute = (Arc<Route>, Arc<[u8]>, u64);

/// A DAG virtual host, its encoding and digest, the last build that used it, and its VHDS
/// resource once asked for.
struct EncodedVhost {
    vhost: Arc<dag::VirtualHost>,
    bytes: Arc<[u8]>,
    digest: [u8; 32],
    used: u64,
    /// Where the routes start in `bytes` (after the name and domains).
    routes_at: usize,
    vhds: Option<Resource>,
}

impl std::fmt::Debug for EncodedVhost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodedVhost").field("host", &self.vhost.hostname).field("len", &self.bytes.len()).finish()
    }
}

impl RouteCache {
    /// Whether routes carry their object's name as metadata; a change forgets every encoding.
    pub(crate) fn set_metadata(&mut self, metadata: bool) {
        if self.metadata != metadata {
            *self = RouteCache { metadata, ..RouteCache::default() };
        }
    }

    /// Forgets what the last build did not use.
    pub(crate) fn sweep(&mut self) {
        let generation = self.generation;
        self.tables.retain(|_, t| t.used == generation);
        // A kept table's unchanged hosts are not looked up: their encodings live on in the
        // table's bytes, and go from here.
        self.vhosts.retain(|_, v| v.used == generation);
        // Routes of a reused virtual host were not looked at, so they carry old generations.
        // Sweep them only when the cache has grown to twice what the live hosts hold: amortised,
        // and memory stays bounded.
        let vhosts = &self.vhosts;
        let mut alive: FxHashSet<usize> = FxHashSet::default();
        if self.routes.len() > 2 * vhosts.values().map(|v| v.vhost.routes.len()).sum::<usize>() {
            alive.extend(vhosts.values().flat_map(|v| v.vhost.routes.iter().map(|r| Arc::as_ptr(r) as usize)));
            self.routes.retain(|k, r| r.2 == generation || alive.contains(k));
        }
        self.generation += 1;
    }

    fn vhost(&mut self, vh: &Arc<dag::VirtualHost>) -> &mut EncodedVhost {
        let key = Arc::as_ptr(vh) as usize;
        let generation = self.generation;
        if !self.vhosts.contains_key(&key) {
            // The message without routes, then each route appended as field 3: the same bytes
            // prost would write, built from per-route pieces that survive the next build.
            let mut bytes = vhost_head(vh, vh.hostname.clone());
            let routes_at = bytes.len();
            for route in &vh.routes {
                let encoded = self.route(route);
                append_field(&mut bytes, 3, &encoded);
            }
            // Requests no route matches get the host's 404 page from a last route.
            if vh.policy.as_ref().is_some_and(|p| crate::custom_response::covers_no_route(&p.error_pages)) {
                append_field(&mut bytes, 3, &not_found_route().encode_to_vec());
            }
            let digest: [u8; 32] = Sha256::digest(&bytes).into();
            let encoded = EncodedVhost {
                vhost: Arc::clone(vh),
                bytes: bytes.into(),
                digest,
                used: generation,
                routes_at,
                vhds: None,
            };
            self.vhosts.insert(key, encoded);
        }
        let entry = self.vhosts.get_mut(&key).expect("inserted above");
        entry.used = generation;
        entry
    }

    fn route(&mut self, route: &Arc<Route>) -> Arc<[u8]> {
        let key = Arc::as_ptr(route) as usize;
        let generation = self.generation;
        if let Some((_, bytes, used)) = self.routes.get_mut(&key) {
            *used = generation;
            return Arc::clone(bytes);
        }
        let mut bytes = self::route(route).encode_to_vec();
        // Route.typed_per_filter_config is field 13.
        append_per_filter_config(&mut bytes, 13, per_filter_configs(route));
        if self.metadata {
            // Route.metadata (field 4), appended: a message's fields may come in any order.
            let o = &route.origin;
            append_field(&mut bytes, 4, &crate::accesslog::route_metadata(o.kind, &o.namespace, &o.name));
        }
        let bytes: Arc<[u8]> = bytes.into();
        self.routes.insert(key, (Arc::clone(route), Arc::clone(&bytes), generation));
        bytes
    }
}

fn append_field(buf: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, buf);
    prost::encoding::encode_varint(bytes.len() as u64, buf);
    buf.extend_from_slice(bytes);
}

/// A virtual host's name, domains and policies, encoded.
fn vhost_head(vh: &dag::VirtualHost, name: String) -> Vec<u8> {
    let mut bytes = r::VirtualHost { name, domains: vec![vh.hostname.clone()], ..Default::default() }.encode_to_vec();
    // The owning listener's pre-routing checks, off by default, are on for this host.
    let checks: Vec<(String, Any)> = vh
        .pre_routing
        .iter()
        .map(|key| (crate::ext_authz::pre_routing_name(key), crate::ext_authz::enabled()))
        .collect();
    let policy = vh.policy.as_deref();
    let configs = [
        policy.and_then(|p| p.cors.as_ref()).map(|c| (crate::cors::NAME, crate::cors::per_route(c))),
        policy
            .and_then(|p| p.local_rate_limit.as_ref())
            .map(|l| (crate::ratelimit::LOCAL, crate::ratelimit::local_per_route(l))),
        policy.and_then(|p| p.ip_filter.as_ref()).map(|f| (crate::rbac::NAME, crate::rbac::per_route(f))),
        policy
            .filter(|p| !p.error_pages.is_empty())
            .map(|p| (crate::custom_response::NAME, crate::custom_response::per_route(&p.error_pages))),
    ];
    let checks = checks.iter().map(|(name, any)| (name.as_str(), any.clone()));
    // VirtualHost.typed_per_filter_config is field 15.
    append_per_filter_config(&mut bytes, 15, configs.into_iter().flatten().chain(checks));
    if let Some(policy) = policy {
        // VirtualHost.rate_limits is field 6.
        for limit in policy.global_rate_limit.iter().flat_map(crate::ratelimit::rate_limits) {
            append_field(&mut bytes, 6, &limit.encode_to_vec());
        }
    }
    bytes
}

/// Appends a `map<string, Any>` field as its entries, sorted by filter name: prost writes a
/// HashMap in a different order in every process, and a resource's version is its bytes' hash.
fn append_per_filter_config<'a>(buf: &mut Vec<u8>, tag: u32, configs: impl IntoIterator<Item = (&'a str, Any)>) {
    #[derive(Clone, PartialEq, Message)]
    struct Entry {
        #[prost(string, tag = "1")]
        key: String,
        #[prost(message, optional, tag = "2")]
        value: Option<Any>,
    }
    let mut configs: Vec<(&str, Any)> = configs.into_iter().collect();
    configs.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in configs {
        append_field(buf, tag, &Entry { key: key.into(), value: Some(value) }.encode_to_vec());
    }
}

/// A route's own policies, which replace its virtual host's of the same filter. A redirect or a
/// direct answer is not limited or filtered by the route's own policies (as upstream).
fn per_filter_configs(route: &Route) -> impl Iterator<Item = (&'static str, Any)> {
    let forward = matches!(route.action, RouteAction::Forward { .. });
    let policy = &route.policy;
    let single = matches!(&route.action, RouteAction::Forward { backends, .. } if single_cluster(backends));
    [
        // CORS answers preflights whatever the route does with other requests.
        policy.cors.as_ref().map(|c| (crate::cors::NAME, crate::cors::per_route(c))),
        policy
            .local_rate_limit
            .as_ref()
            .filter(|_| forward)
            .map(|l| (crate::ratelimit::LOCAL, crate::ratelimit::local_per_route(l))),
        policy.ip_filter.as_ref().filter(|_| forward).map(|f| (crate::rbac::NAME, crate::rbac::per_route(f))),
        policy.authorization.as_ref().and_then(crate::ext_authz::per_route).map(|a| (crate::ext_authz::NAME, a)),
        policy.jwt_provider.as_deref().map(|p| (crate::jwt::NAME, crate::jwt::per_route(p))),
        policy.ignore_host_rate_limits.then(|| (crate::ratelimit::GLOBAL, crate::ratelimit::ignore_host_limits())),
        // With weighted clusters, each carries the route's rules merged with its own.
        crate::lua::cookie_rewrites(&policy.cookie_rewrites).filter(|_| single).map(|c| (crate::lua::NAME, c)),
        (!policy.error_pages.is_empty())
            .then(|| (crate::custom_response::NAME, crate::custom_response::per_route(&policy.error_pages))),
        policy.oidc_disabled.then(|| (crate::oauth2::NAME, crate::oauth2::disabled())),
    ]
    .into_iter()
    .flatten()
}

/// The last route of a virtual host whose error pages cover 404: what no other route matched
/// is answered 404 by the route, not by Envoy's lack of one, so the host's pages apply.
fn not_found_route() -> r::Route {
    r::Route {
        name: "error-pages/not-found".into(),
        r#match: Some(r::RouteMatch {
            path_specifier: Some(r::route_match::PathSpecifier::Prefix("/".into())),
            ..Default::default()
        }),
        action: Some(r::route::Action::DirectResponse(r::DirectResponseAction { status: 404, ..Default::default() })),
        ..Default::default()
    }
}

/// One backend without per-backend changes: the route names its cluster directly.
fn single_cluster(backends: &[dag::WeightedCluster]) -> bool {
    matches!(backends, [one] if one.filters.is_none())
}

fn route(route: &Route) -> r::Route {
    let action = match &route.action {
        RouteAction::Forward { backends, rewrite, mirrors } => {
            r::route::Action::Route(forward(route, backends, rewrite.as_ref(), mirrors))
        }
        RouteAction::Redirect(redirect) => r::route::Action::Redirect(redirect_action(&route.matcher, redirect)),
        RouteAction::Direct { status, body } => r::route::Action::DirectResponse(r::DirectResponseAction {
            status: u32::from(*status),
            body: body.as_ref().map(|b| envoy_types::pb::envoy::config::core::v3::DataSource {
                specifier: Some(envoy_types::pb::envoy::config::core::v3::data_source::Specifier::InlineString(
                    b.clone(),
                )),
                ..Default::default()
            }),
            ..Default::default()
        }),
    };
    let mut action = action;
    if let (r::route::Action::Route(forward), Some(host)) = (&mut action, host_header(&route.request_headers))
        && forward.host_rewrite_specifier.is_none()
    {
        forward.host_rewrite_specifier = Some(r::route_action::HostRewriteSpecifier::HostRewriteLiteral(host.clone()));
    }
    r::Route {
        name: format!("{}/{}/{}", route.origin.kind, route.origin.namespace, route.origin.name),
        r#match: Some(route_match(&route.matcher)),
        action: Some(action),
        request_headers_to_add: header_options(&route.request_headers),
        request_headers_to_remove: route.request_headers.remove.clone(),
        response_headers_to_add: header_options(&route.response_headers),
        response_headers_to_remove: route.response_headers.remove.clone(),
        stat_prefix: route.policy.stat_prefix.clone().unwrap_or_default(),
        ..Default::default()
    }
}

fn route_match(m: &HttpMatch) -> r::RouteMatch {
    let path_specifier = match &m.path {
        PathMatch::Exact(p) => r::route_match::PathSpecifier::Path(p.clone()),
        PathMatch::Regex(p) => r::route_match::PathSpecifier::SafeRegex(regex(p)),
        PathMatch::StringPrefix(p) => r::route_match::PathSpecifier::Prefix(p.clone()),
        PathMatch::Prefix(p) => {
            let trimmed = p.trim_end_matches('/');
            if trimmed.is_empty() {
                r::route_match::PathSpecifier::Prefix("/".into())
            } else {
                // Segment-aware: /foo matches /foo and /foo/bar, never /foobar.
                r::route_match::PathSpecifier::PathSeparatedPrefix(trimmed.into())
            }
        }
    };
    let mut headers: Vec<r::HeaderMatcher> = m.headers.iter().map(header_matcher).collect();
    if let Some(method) = &m.method {
        headers.push(r::HeaderMatcher {
            name: ":method".into(),
            header_match_specifier: Some(r::header_matcher::HeaderMatchSpecifier::StringMatch(string_match(
                &StringMatch::Exact(method.clone()),
                false,
            ))),
            ..Default::default()
        });
    }
    let query_parameters = m
        .query
        .iter()
        .map(|q| r::QueryParameterMatcher {
            name: q.name.clone(),
            query_parameter_match_specifier: Some(match &q.value {
                StringMatch::Present => r::query_parameter_matcher::QueryParameterMatchSpecifier::PresentMatch(true),
                value => r::query_parameter_matcher::QueryParameterMatchSpecifier::StringMatch(string_match(
                    value,
                    q.ignore_case,
                )),
            }),
        })
        .collect();
    r::RouteMatch { path_specifier: Some(path_specifier), headers, query_parameters, ..Default::default() }
}

/// Weights as Envoy takes them: their sum must fit in 32 bits, so larger ones are scaled down
/// together, keeping their ratios (and a weight above zero stays above zero).
pub(crate) fn fit_weights(weights: impl Iterator<Item = u32> + Clone) -> impl Iterator<Item = u32> {
    let total: u64 = weights.clone().map(u64::from).sum();
    let n = weights.clone().count() as u64;
    // Room for the rounding up of every non-zero weight.
    let room = u64::from(u32::MAX) - n;
    let divisor = if total > u64::from(u32::MAX) { total.div_ceil(room) } else { 1 };
    weights.map(move |w| match (w, divisor) {
        (w, 1) => w,
        (0, _) => 0,
        (w, d) => (u64::from(w) / d).max(1) as u32,
    })
}

fn forward(
    route: &Route,
    backends: &[dag::WeightedCluster],
    rewrite: Option<&ir::UrlRewrite>,
    mirrors: &[(String, u32)],
) -> r::RouteAction {
    let name = |b: &dag::WeightedCluster| b.cluster.clone().unwrap_or_else(|| INVALID_BACKEND_CLUSTER.into());
    let cluster_specifier = match backends {
        // Per-backend header changes live on weighted cluster entries, even for one backend.
        [one] if single_cluster(backends) => r::route_action::ClusterSpecifier::Cluster(name(one)),
        many => r::route_action::ClusterSpecifier::WeightedClusters(r::WeightedCluster {
            clusters: many
                .iter()
                .zip(fit_weights(many.iter().map(|b| b.weight)))
                .map(|(b, weight)| {
                    let f = b.filters.as_deref().cloned().unwrap_or_default();
                    let host = f.host_rewrite.clone().or_else(|| host_header(&f.request).cloned());
                    let cookies = ir::merge_cookie_rewrites(&route.policy.cookie_rewrites, &f.cookie_rewrites);
                    // At most one entry, so the map encodes the same in every process.
                    let typed_per_filter_config = crate::lua::cookie_rewrites(&cookies)
                        .map(|c| (crate::lua::NAME.to_string(), c))
                        .into_iter()
                        .collect();
                    r::weighted_cluster::ClusterWeight {
                        name: name(b),
                        weight: Some(UInt32Value { value: weight }),
                        request_headers_to_add: header_options(&f.request),
                        request_headers_to_remove: f.request.remove,
                        response_headers_to_add: header_options(&f.response),
                        response_headers_to_remove: f.response.remove,
                        host_rewrite_specifier: host
                            .map(r::weighted_cluster::cluster_weight::HostRewriteSpecifier::HostRewriteLiteral),
                        typed_per_filter_config,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        }),
    };
    let policy = &route.policy;
    let mut action = r::RouteAction {
        cluster_specifier: Some(cluster_specifier),
        cluster_not_found_response_code: r::route_action::ClusterNotFoundResponseCode::InternalServerError as i32,
        timeout: route.timeout_ms.map(duration_ms),
        idle_timeout: policy.idle_timeout_ms.map(duration_ms),
        retry_policy: policy.retry.as_ref().map(crate::retry::policy),
        upgrade_configs: if policy.websockets {
            vec![r::route_action::UpgradeConfig { upgrade_type: "websocket".into(), ..Default::default() }]
        } else {
            Vec::new()
        },
        hash_policy: policy.hash_policies.iter().map(hash_policy).collect(),
        internal_redirect_policy: policy.internal_redirect.as_ref().map(internal_redirect),
        rate_limits: policy.global_rate_limit.as_ref().map(crate::ratelimit::rate_limits).unwrap_or_default(),
        request_mirror_policies: mirrors
            .iter()
            .map(|(cluster, percent)| r::route_action::RequestMirrorPolicy {
                cluster: cluster.clone(),
                runtime_fraction: (*percent < 100).then(|| RuntimeFractionalPercent {
                    default_value: Some(FractionalPercent {
                        numerator: *percent,
                        denominator: fractional_percent::DenominatorType::Hundred as i32,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    if let Some(rewrite) = rewrite {
        if let Some(host) = &rewrite.hostname {
            action.host_rewrite_specifier =
                Some(r::route_action::HostRewriteSpecifier::HostRewriteLiteral(host.clone()));
        } else if let Some(header) = &rewrite.hostname_from_header {
            action.host_rewrite_specifier =
                Some(r::route_action::HostRewriteSpecifier::HostRewriteHeader(header.clone()));
        }
        match (&rewrite.path, &route.matcher.path) {
            (Some(PathModifier::Full(path)), _) => action.regex_rewrite = Some(substitute("^/.*$", path)),
            (Some(PathModifier::Regex { pattern, substitution }), _) => {
                action.regex_rewrite = Some(substitute(pattern, substitution))
            }
            (Some(PathModifier::Prefix(replacement)), PathMatch::Prefix(prefix)) => {
                prefix_rewrite(prefix, replacement, &mut action.prefix_rewrite, &mut action.regex_rewrite)
            }
            // A plain string prefix is replaced as it is (HTTPProxy's pathRewritePolicy).
            (Some(PathModifier::Prefix(replacement)), PathMatch::StringPrefix(_)) => {
                action.prefix_rewrite = replacement.clone()
            }
            _ => {}
        }
    }
    action
}

fn hash_policy(p: &ir::HashPolicy) -> r::route_action::HashPolicy {
    use r::route_action::hash_policy::{self as hp, PolicySpecifier};
    let (specifier, terminal) = match p {
        ir::HashPolicy::Header { name, terminal } => {
            (PolicySpecifier::Header(hp::Header { header_name: name.clone(), ..Default::default() }), *terminal)
        }
        ir::HashPolicy::QueryParameter { name, terminal } => {
            (PolicySpecifier::QueryParameter(hp::QueryParameter { name: name.clone() }), *terminal)
        }
        ir::HashPolicy::SourceIp { terminal } => {
            (PolicySpecifier::ConnectionProperties(hp::ConnectionProperties { source_ip: true }), *terminal)
        }
        ir::HashPolicy::Cookie { name } => (
            PolicySpecifier::Cookie(hp::Cookie {
                name: name.clone(),
                ttl: Some(duration_ms(0)),
                path: "/".into(),
                ..Default::default()
            }),
            false,
        ),
    };
    r::route_action::HashPolicy { policy_specifier: Some(specifier), terminal }
}

fn internal_redirect(p: &ir::InternalRedirect) -> r::InternalRedirectPolicy {
    use envoy_types::pb::envoy::config::core::v3::TypedExtensionConfig;
    use envoy_types::pb::envoy::extensions::internal_redirect::{
        previous_routes::v3::PreviousRoutesConfig, safe_cross_scheme::v3::SafeCrossSchemeConfig,
    };
    let mut predicates = Vec::new();
    if p.deny_repeated_route {
        predicates.push(TypedExtensionConfig {
            name: "envoy.internal_redirect_predicates.previous_routes".into(),
            typed_config: Some(envoy_types::util::pack_any(PreviousRoutesConfig::default())),
        });
    }
    if p.cross_scheme == ir::CrossScheme::SafeOnly {
        predicates.push(TypedExtensionConfig {
            name: "envoy.internal_redirect_predicates.safe_cross_scheme".into(),
            typed_config: Some(envoy_types::util::pack_any(SafeCrossSchemeConfig::default())),
        });
    }
    r::InternalRedirectPolicy {
        max_internal_redirects: Some(UInt32Value { value: p.max }),
        redirect_response_codes: p.codes.clone(),
        predicates,
        allow_cross_scheme_redirect: p.cross_scheme != ir::CrossScheme::Never,
        ..Default::default()
    }
}

/// Replaces a matched prefix. Envoy's plain prefix rewrite would turn `/foo/bar` with `/foo` → `/`
/// into `//bar`, so a replacement of `/` strips the prefix and its slashes with a regex instead.
fn prefix_rewrite(
    prefix: &str,
    replacement: &str,
    prefix_out: &mut String,
    regex_out: &mut Option<RegexMatchAndSubstitute>,
) {
    let prefix = prefix.trim_end_matches('/');
    let replacement = if replacement.len() > 1 { replacement.trim_end_matches('/') } else { replacement };
    if replacement == "/" || replacement.is_empty() {
        *regex_out = Some(substitute(&format!("^{}/*", ir::regex_escape(prefix)), "/"));
    } else {
        *prefix_out = replacement.to_string();
    }
}

fn redirect_action(m: &HttpMatch, redirect: &ir::Redirect) -> r::RedirectAction {
    use r::redirect_action::{PathRewriteSpecifier, RedirectResponseCode, SchemeRewriteSpecifier};
    let response_code = match redirect.status {
        301 => RedirectResponseCode::MovedPermanently,
        303 => RedirectResponseCode::SeeOther,
        307 => RedirectResponseCode::TemporaryRedirect,
        308 => RedirectResponseCode::PermanentRedirect,
        _ => RedirectResponseCode::Found,
    };
    // With a scheme and no port, the Gateway API wants the scheme's well-known port, which the
    // Location header leaves out; Envoy writes any explicit port, so a well-known one is omitted.
    let port = match (redirect.port, redirect.scheme.as_deref()) {
        (Some(443), Some("https")) | (Some(80), Some("http")) => None,
        (port, _) => port,
    };
    let mut action = r::RedirectAction {
        host_redirect: redirect.hostname.clone().unwrap_or_default(),
        port_redirect: port.map(u32::from).unwrap_or(0),
        response_code: response_code as i32,
        scheme_rewrite_specifier: redirect.scheme.clone().map(SchemeRewriteSpecifier::SchemeRedirect),
        ..Default::default()
    };
    match (&redirect.path, &m.path) {
        (Some(PathModifier::Full(p)), _) => {
            action.path_rewrite_specifier = Some(PathRewriteSpecifier::PathRedirect(p.clone()))
        }
        (Some(PathModifier::Prefix(replacement)), PathMatch::StringPrefix(_)) => {
            action.path_rewrite_specifier = Some(PathRewriteSpecifier::PrefixRewrite(replacement.clone()))
        }
        (Some(PathModifier::Prefix(replacement)), PathMatch::Prefix(prefix)) => {
            let mut prefix_out = String::new();
            let mut regex_out = None;
            prefix_rewrite(prefix, replacement, &mut prefix_out, &mut regex_out);
            action.path_rewrite_specifier = Some(match regex_out {
                Some(re) => PathRewriteSpecifier::RegexRewrite(re),
                None => PathRewriteSpecifier::PrefixRewrite(prefix_out),
            });
        }
        _ => {}
    }
    action
}

/// The Host a header modifier sets or adds, if any (the last one wins).
fn host_header(m: &ir::HeaderModifier) -> Option<&String> {
    m.set.iter().chain(&m.add).filter(|(k, _)| is_host(k)).map(|(_, v)| v).next_back()
}

fn substitute(pattern: &str, substitution: &str) -> RegexMatchAndSubstitute {
    RegexMatchAndSubstitute { pattern: Some(regex(pattern)), substitution: substitution.to_string() }
}
