//! How every binary finds its cluster, as upstream's flags say: `--incluster` (the service
//! account), `--kubeconfig` (or `$KUBECONFIG`), else kube's usual inference.
//!
//! A kubeconfig whose client certificate is X.509 version 1 (what `openssl x509 -req` makes
//! without extensions) is accepted, as Go clients accept it: rustls' own check of the pair
//! parses the certificate with a v3-only parser, so for such a pair the TLS stack is built here
//! with the same layers kube uses, minus that check. The API server still verifies the
//! certificate; nothing is trusted that was not before.

use std::path::Path;

mod stack;
mod throttle;
mod v1_identity;

pub use throttle::{Limits, ThrottleLayer};

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The in-cluster service account is not usable.
    #[error("in-cluster configuration: {0}")]
    InCluster(#[source] kube::config::InClusterError),
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// What went wrong.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// Neither in-cluster nor a kubeconfig was found. Said once: kube's own error repeats
    /// itself through its causes, so it is kept for debugging, not printed.
    #[error(
        "no Kubernetes cluster found: no in-cluster service account, and no kubeconfig at $KUBECONFIG or ~/.kube/config; pass --kubeconfig or --incluster"
    )]
    Infer(kube::config::InferConfigError),
    /// The configuration did not make a client.
    #[error("creating the Kubernetes client: {0}")]
    Client(#[source] kube::Error),
    /// The client certificate or key of the configuration cannot be used.
    #[error("the kubeconfig's client certificate: {0}")]
    Identity(String),
}

/// A client for the cluster: in-cluster when `incluster`, else from `kubeconfig`, else inferred.
pub async fn connect(kubeconfig: Option<&Path>, incluster: bool) -> Result<kube::Client, Error> {
    connect_limited(kubeconfig, incluster, None).await
}

/// [`connect`], throttled to `limits` when given.
pub async fn connect_limited(
    kubeconfig: Option<&Path>,
    incluster: bool,
    limits: Option<Limits>,
) -> Result<kube::Client, Error> {
    let config = match (kubeconfig, incluster) {
        (_, true) => kube::Config::incluster().map_err(Error::InCluster)?,
        (Some(path), false) => {
            let kubeconfig_error = |source| Error::Kubeconfig { path: path.display().to_string(), source };
            let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(kubeconfig_error)?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.map_err(kubeconfig_error)?
        }
        (None, false) => kube::Config::infer().await.map_err(Error::Infer)?,
    };
    client_limited(config, limits)
}

/// A client for a configuration, accepting X.509 v1 client certificates.
pub fn client_for(config: kube::Config) -> Result<kube::Client, Error> {
    client_limited(config, None)
}

/// [`client_for`], throttled to `limits` when given.
pub fn client_limited(config: kube::Config, limits: Option<Limits>) -> Result<kube::Client, Error> {
    let throttle = ThrottleLayer::new(limits);
    let https = match stack::https(&config) {
        Err(Error::Client(e)) if is_unsupported_cert_version(&e) => v1_identity::https(&config)?,
        other => other?,
    };
    stack::client(&config, https, &throttle)
}

/// rustls refusing the client certificate for its X.509 version.
fn is_unsupported_cert_version(e: &kube::Error) -> bool {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(s) = source {
        if s.to_string().contains("UnsupportedCertVersion") {
            return true;
        }
        source = s.source();
    }
    false
}
