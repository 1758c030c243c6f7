//! Protobuf messages whose `google.protobuf.Struct` fields are written in a fixed order.
//!
//! prost's `Struct` is a hash map, so its encoding changes from one process to the next; a
//! resource's version is the hash of its bytes, and a different version makes Envoy apply (and
//! for a listener, drain) a configuration that did not change. These mirror types have the same
//! wire format with entries in the order given.

use envoy_types::pb::google::protobuf::{Value, value};
use prost::Message;

/// `google.protobuf.Struct` as the wire sees its map: entries in order.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct OrderedStruct {
    #[prost(message, repeated, tag = "1")]
    pub(crate) fields: Vec<StructEntry>,
}

/// One entry of [`OrderedStruct`].
#[derive(Clone, PartialEq, Message)]
pub(crate) struct StructEntry {
    #[prost(string, tag = "1")]
    pub(crate) key: String,
    #[prost(message, optional, tag = "2")]
    pub(crate) value: Option<Value>,
}

impl OrderedStruct {
    /// Entries in the order given.
    pub(crate) fn new(entries: impl IntoIterator<Item = (String, value::Kind)>) -> Self {
        Self {
            fields: entries
                .into_iter()
                .map(|(key, kind)| StructEntry { key, value: Some(Value { kind: Some(kind) }) })
                .collect(),
        }
    }
}

/// A `google.protobuf.Struct` whose values are structs of scalars: entries in order, and so are
/// theirs.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct OrderedStructOfStructs {
    #[prost(message, repeated, tag = "1")]
    pub(crate) fields: Vec<StructOfStructsEntry>,
}

/// One entry of [`OrderedStructOfStructs`].
#[derive(Clone, PartialEq, Message)]
pub(crate) struct StructOfStructsEntry {
    #[prost(string, tag = "1")]
    pub(crate) key: String,
    #[prost(message, optional, tag = "2")]
    pub(crate) value: Option<StructValue>,
}

/// `google.protobuf.Value` holding a struct (`struct_value`, field 5).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct StructValue {
    #[prost(message, optional, tag = "5")]
    pub(crate) struct_value: Option<OrderedStruct>,
}

impl OrderedStructOfStructs {
    /// Entries in the order given.
    pub(crate) fn new(entries: impl IntoIterator<Item = (String, OrderedStruct)>) -> Self {
        Self {
            fields: entries
                .into_iter()
                .map(|(key, s)| StructOfStructsEntry { key, value: Some(StructValue { struct_value: Some(s) }) })
                .collect(),
        }
    }
}
