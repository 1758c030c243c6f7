//! A route's retry policy. Each retry goes to another endpoint than the tries before it when
//! the cluster has one (Envoy's `previous_hosts` predicate): a retry after a reset or a refused
//! connection would otherwise often land on the same failing endpoint. Upstream Contour leaves
//! Envoy's default, any endpoint.

use envoy_types::pb::envoy::config::route::v3::{self as r, retry_policy::RetryHostPredicate};
use envoy_types::pb::envoy::extensions::retry::host::previous_hosts::v3::PreviousHostsPredicate;
use envoy_types::pb::google::protobuf::{Any, UInt32Value};
use prost::{Message, Name};

use crate::duration_ms;

/// How many endpoints Envoy picks before it settles for one a retry already tried.
const HOST_SELECTION_ATTEMPTS: i64 = 3;

pub(crate) fn policy(p: &ir::RetryPolicy) -> r::RetryPolicy {
    r::RetryPolicy {
        retry_on: p.retry_on.join(","),
        num_retries: Some(UInt32Value { value: p.count }),
        per_try_timeout: p.per_try_timeout_ms.map(duration_ms),
        retriable_status_codes: p.retriable_status_codes.clone(),
        retry_back_off: p
            .backoff_ms
            .map(|ms| r::retry_policy::RetryBackOff { base_interval: Some(duration_ms(ms)), max_interval: None }),
        retry_host_predicate: vec![RetryHostPredicate {
            name: "envoy.retry_host_predicates.previous_hosts".into(),
            config_type: Some(r::retry_policy::retry_host_predicate::ConfigType::TypedConfig(Any {
                type_url: PreviousHostsPredicate::type_url(),
                value: PreviousHostsPredicate {}.encode_to_vec(),
            })),
        }],
        host_selection_retry_max_attempts: HOST_SELECTION_ATTEMPTS,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_go_to_other_endpoints_and_keep_the_policy() {
        let p = policy(&ir::RetryPolicy {
            retry_on: vec!["reset".into(), "connect-failure".into()],
            count: 3,
            per_try_timeout_ms: Some(500),
            retriable_status_codes: vec![],
            backoff_ms: None,
        });
        assert_eq!(p.retry_on, "reset,connect-failure");
        assert_eq!(p.num_retries, Some(UInt32Value { value: 3 }));
        assert_eq!(p.retry_host_predicate.len(), 1);
        assert_eq!(p.retry_host_predicate[0].name, "envoy.retry_host_predicates.previous_hosts");
        assert_eq!(p.host_selection_retry_max_attempts, 3);
    }
}
