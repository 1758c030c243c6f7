//! Host ports: a pod's `hostPort` is served on the host's loopback and relayed to the pod, as a
//! node's host port would be (only loopback: nothing here is reachable from off the machine).

use std::net::{Ipv4Addr, SocketAddr};

use tokio::task::JoinHandle;

/// Starts one relay per host port; abort the handles to stop them.
pub fn forward(pod: &str, address: Ipv4Addr, ports: &[podrunner::HostPort]) -> Vec<JoinHandle<()>> {
    ports
        .iter()
        .map(|p| {
            let (pod, p) = (pod.to_string(), *p);
            tokio::spawn(async move {
                let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, p.host));
                let listener = match tokio::net::TcpListener::bind(listen).await {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(%pod, %listen, error = %e, "host port unavailable");
                        return;
                    }
                };
                tracing::info!(%pod, %listen, to = p.container, "host port");
                let target = SocketAddr::from((address, p.container));
                while let Ok((inbound, _)) = listener.accept().await {
                    tokio::spawn(splice(inbound, target));
                }
            })
        })
        .collect()
}

/// Relays one accepted connection to `target` until either side closes (a refused target closes
/// the inbound one).
pub async fn splice(mut inbound: tokio::net::TcpStream, target: SocketAddr) {
    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
        let _ = outbound.set_nodelay(true);
        let _ = inbound.set_nodelay(true);
        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
    }
}
