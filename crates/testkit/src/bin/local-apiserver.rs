//! `local-apiserver`: the throwaway API server the Kubernetes-mode tests use (etcd and
//! kube-apiserver on loopback, generated certificates), for trying Kubernetes mode by hand. It
//! installs the Gateway API CRDs and ours and the namespace `projectcontour`, prints
//! `export KUBECONFIG=...`, and runs until Ctrl-C (or SIGTERM), when both processes stop and their directory
//! goes. `hack/local-apiserver` runs it with the tools it needs.

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
        let api = testkit::ApiServer::start().await?;
        api.install_gateway_api().await?;
        api.install_crds(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds")).await?;
        let client = api.client().await?;
        testkit::apply_yaml(&client, "apiVersion: v1\nkind: Namespace\nmetadata: {name: projectcontour}\n").await?;
        println!("export KUBECONFIG={}", api.kubeconfig.display());
        eprintln!("the API server is ready; Ctrl-C stops it");
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            stopped = tokio::signal::ctrl_c() => stopped?,
            _ = terminate.recv() => {}
        }
        drop(api);
        Ok(())
    })
}
