//! How every binary finds its cluster, as upstream's flags say: `--incluster` (the service
//! account), `--kubeconfig` (or `$KUBECONFIG`), else kube's usual inference.

use std::path::Path;

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
    /// Neither in-cluster nor a kubeconfig was found.
    #[error("finding a Kubernetes configuration: {0}")]
    Infer(#[source] kube::config::InferConfigError),
    /// The configuration did not make a client.
    #[error("creating the Kubernetes client: {0}")]
    Client(#[source] kube::Error),
}

/// A client for the cluster: in-cluster when `incluster`, else from `kubeconfig`, else inferred.
pub async fn connect(kubeconfig: Option<&Path>, incluster: bool) -> Result<kube::Client, Error> {
    let config = match (kubeconfig, incluster) {
        (_, true) => kube::Config::incluster().map_err(Error::InCluster)?,
        (Some(path), false) => {
            let kubeconfig_error = |source| Error::Kubeconfig { path: path.display().to_string(), source };
            let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(kubeconfig_error)?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.map_err(kubeconfig_error)?
        }
        (None, false) => kube::Config::infer().await.map_err(Error::Infer)?,
    };
    kube::Client::try_from(config).map_err(Error::Client)
}
