//! End-to-end tests live in `e2e/`: the real Envoy, the real xDS server, real traffic.
