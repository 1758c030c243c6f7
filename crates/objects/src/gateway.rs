//! The Gateway and the ListenerSet as the controller reads them: the generated type of the
//! gateway-api crate (Gateway API 1.6's fields), and beside it the fields of Gateway API 1.7's
//! experimental channel that type does not know, read from the same object. The generated type
//! is reached through `Deref`, so `gateway.spec.listeners` reads as before.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::Resource;
use serde::{Deserialize, Serialize};

/// The gateway-api crate's Gateway.
pub type GatewayBase = gateway_api::gateways::Gateway;

/// The gateway-api crate's ListenerSet.
pub type ListenerSetBase = gateway_api::listenersets::ListenerSet;

/// A ListenerSet with the 1.7 fields its generated type lacks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListenerSet {
    base: ListenerSetBase,
    /// Gateway API 1.7's experimental fields.
    pub v1_7: ListenerSetV1_7,
}

/// The fields of Gateway API 1.7's experimental channel a ListenerSet's generated type does not
/// read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListenerSetV1_7 {
    /// `spec.listeners[].filters`, by listener name (only listeners that have them).
    pub listener_filters: BTreeMap<String, ListenerFilters>,
}

impl ListenerSetV1_7 {
    fn of(object: &serde_json::Value) -> Self {
        Self { listener_filters: listener_filters(&object["spec"]) }
    }
}

/// `listeners[].filters` of a Gateway's or ListenerSet's spec, by listener name. A listener
/// whose `filters` do not match their schema (the API server checks it) is left without filters.
fn listener_filters(spec: &serde_json::Value) -> BTreeMap<String, ListenerFilters> {
    spec["listeners"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| {
            let name = l["name"].as_str()?;
            let filters = serde_json::from_value(l.get("filters")?.clone()).ok()?;
            Some((name.to_string(), filters))
        })
        .collect()
}

/// An ExternalAuth filter's payload: the same type as HTTPRoute's `ExternalAuth` filter.
pub type ExternalAuth = gateway_api::experimental::httproutes::HttpRouteRulesFiltersExternalAuth;

/// A Gateway with the 1.7 fields its generated type lacks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gateway {
    base: GatewayBase,
    /// Gateway API 1.7's experimental fields.
    pub v1_7: GatewayV1_7,
}

/// The fields of Gateway API 1.7's experimental channel the generated type does not read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayV1_7 {
    /// `spec.listeners[].filters`, by listener name (only listeners that have them).
    pub listener_filters: BTreeMap<String, ListenerFilters>,
    /// `spec.addresses[].routability`, by the address's position (`None`: unset or empty).
    pub address_routability: Vec<Option<String>>,
}

/// A listener's pre-routing filters (`filters`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ListenerFilters {
    /// Run in order, before a route is chosen.
    #[serde(default)]
    pub requests: Vec<ListenerFilter>,
}

/// One pre-routing filter: `ExternalAuth` or `ExtensionRef`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerFilter {
    /// `ExternalAuth` or `ExtensionRef`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The authorization server, for `ExternalAuth`.
    pub external_auth: Option<ExternalAuth>,
    /// The extension object, for `ExtensionRef`.
    pub extension_ref: Option<LocalObjectReference>,
}

/// A reference to an object in the Gateway's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LocalObjectReference {
    /// API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
}

/// Routability `Cluster`: a Service ClusterIP, reachable from inside the cluster.
pub const CLUSTER: &str = "Cluster";
/// The routability reserved for conformance: carries no guarantee, and a claimant honours it.
pub const SENTINEL: &str = "testing.x-k8s.io/sentinel";

/// One `spec.addresses` entry as asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressRequest<'a> {
    /// `type` (`IPAddress` when unset).
    pub type_: &'a str,
    /// `value`, when set and not empty.
    pub value: Option<&'a str>,
    /// `routability`, when set and not empty.
    pub routability: Option<&'a str>,
}

impl AddressRequest<'_> {
    /// Whether it asks for no particular scope (the conformance sentinel is none).
    pub fn unscoped(&self) -> bool {
        self.routability.is_none_or(|r| r == SENTINEL)
    }

    /// Its value as an IP address, for an `IPAddress` entry.
    pub fn ip(&self) -> Option<std::net::IpAddr> {
        self.value.filter(|_| self.type_ == "IPAddress")?.parse().ok()
    }
}

impl Gateway {
    /// `spec.addresses`, in order, with the routability each asks for.
    pub fn address_requests(&self) -> Vec<AddressRequest<'_>> {
        self.spec
            .addresses
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, a)| AddressRequest {
                type_: a.r#type.as_deref().unwrap_or("IPAddress"),
                value: a.value.as_deref().filter(|v| !v.is_empty()),
                routability: self.v1_7.routability(i),
            })
            .collect()
    }
}

impl GatewayV1_7 {
    /// The routability `spec.addresses[i]` asks for (`None`: unset or empty).
    pub fn routability(&self, i: usize) -> Option<&str> {
        self.address_routability.get(i).and_then(Option::as_deref)
    }

    /// Reads the 1.7 fields of a Gateway object.
    fn of(object: &serde_json::Value) -> Self {
        let spec = &object["spec"];
        let listener_filters = listener_filters(spec);
        let address_routability = spec["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| a["routability"].as_str().filter(|r| !r.is_empty()).map(String::from))
            .collect::<Vec<_>>();
        // Nothing to keep when no address sets one.
        let address_routability =
            if address_routability.iter().all(Option::is_none) { Vec::new() } else { address_routability };
        Self { listener_filters, address_routability }
    }
}

/// `Deref` to the generated type; read with the 1.7 fields beside it; written as the generated
/// type (the 1.7 fields are read, never written back); the generated type's kind and version.
macro_rules! beside_generated {
    ($wrapper:ident, $base:ty, $extra:ident) => {
        impl From<$base> for $wrapper {
            fn from(base: $base) -> Self {
                Self { base, v1_7: $extra::default() }
            }
        }

        impl Deref for $wrapper {
            type Target = $base;
            fn deref(&self) -> &$base {
                &self.base
            }
        }

        impl DerefMut for $wrapper {
            fn deref_mut(&mut self) -> &mut $base {
                &mut self.base
            }
        }

        impl<'de> Deserialize<'de> for $wrapper {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let object = serde_json::Value::deserialize(deserializer)?;
                let v1_7 = $extra::of(&object);
                let base = serde_json::from_value(object).map_err(serde::de::Error::custom)?;
                Ok(Self { base, v1_7 })
            }
        }

        impl Serialize for $wrapper {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.base.serialize(serializer)
            }
        }

        impl Resource for $wrapper {
            type DynamicType = ();
            type Scope = kube_core::NamespaceResourceScope;

            fn kind(dt: &()) -> Cow<'_, str> {
                <$base>::kind(dt)
            }
            fn group(dt: &()) -> Cow<'_, str> {
                <$base>::group(dt)
            }
            fn version(dt: &()) -> Cow<'_, str> {
                <$base>::version(dt)
            }
            fn plural(dt: &()) -> Cow<'_, str> {
                <$base>::plural(dt)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.base.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.base.metadata
            }
        }
    };
}

beside_generated!(Gateway, GatewayBase, GatewayV1_7);
beside_generated!(ListenerSet, ListenerSetBase, ListenerSetV1_7);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v1_7_fields_are_read_beside_the_generated_type() {
        let gateway: Gateway = serde_yaml::from_str(
            "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: contour
  addresses: [{type: IPAddress, value: 10.0.0.1, routability: Cluster}, {value: 10.0.0.2}]
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    filters:
      requests:
      - type: ExternalAuth
        externalAuth: {protocol: HTTP, backendRef: {name: auth, port: 9000}, http: {path: /check}}
      - {type: ExtensionRef, extensionRef: {group: example.com, kind: Thing, name: t}}
  - {name: plain, port: 8080, protocol: HTTP}
",
        )
        .expect("parses");
        assert_eq!(gateway.spec.listeners.len(), 2, "the generated type reads what it knows");
        assert_eq!(gateway.v1_7.address_routability, [Some("Cluster".to_string()), None]);
        let filters = &gateway.v1_7.listener_filters["http"].requests;
        assert_eq!(filters.len(), 2);
        let auth = filters[0].external_auth.as_ref().expect("ExternalAuth");
        assert_eq!((auth.backend_ref.name.as_str(), auth.backend_ref.port), ("auth", Some(9000)));
        assert_eq!(filters[1].extension_ref.as_ref().map(|r| r.kind.as_str()), Some("Thing"));
        assert!(!gateway.v1_7.listener_filters.contains_key("plain"));
        // Without the 1.7 fields nothing is kept beside the generated type.
        let plain: Gateway = serde_json::from_value(serde_json::to_value(&gateway).unwrap()).unwrap();
        assert_eq!(plain.v1_7, GatewayV1_7::default());
        assert_eq!(*plain, *gateway);
    }
}
