//! Host ports: a pod's `hostPort` is served on the host's loopback and relayed to the pod, as a
//! node's host port would be (only loopback: nothing here is reachable from off the machine).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, LazyLock, Mutex};

use tokio::sync::Notify;
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

/// The pods' addresses that relayed connections go to, each with what tells its relays that the
/// pod stopped.
static RELAYED: LazyLock<Mutex<HashMap<IpAddr, Arc<Notify>>>> = LazyLock::new(Default::default);

/// Relays one accepted connection to `target` until either side closes (a refused target closes
/// the inbound one), or until the pod at `target` stops ([`pod_stopped`]).
pub async fn splice(mut inbound: tokio::net::TcpStream, target: SocketAddr) {
    let stopped = Arc::clone(RELAYED.lock().expect("relayed lock").entry(target.ip()).or_default());
    let stopped = stopped.notified();
    tokio::pin!(stopped);
    stopped.as_mut().enable();
    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
        let _ = outbound.set_nodelay(true);
        let _ = inbound.set_nodelay(true);
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
            () = stopped => {}
        }
    }
}

/// The pod at `address` stopped: the connections relayed to it are closed, as its kernel closes
/// them when its processes exit. (The close it sends can be lost when the pod's network goes
/// right after, under load; the client would then hold a relayed connection to nothing, which
/// its keepalives cannot find out, since the relay answers them.)
pub fn pod_stopped(address: Ipv4Addr) {
    if let Some(stopped) = RELAYED.lock().expect("relayed lock").remove(&IpAddr::V4(address)) {
        stopped.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    #[tokio::test]
    async fn a_stopped_pods_relayed_connections_close_though_it_never_closed_them() {
        // The "pod": accepts and holds its connection open, as a process whose close was lost.
        let pod = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = pod.local_addr().unwrap();
        let held = tokio::spawn(async move { pod.accept().await.unwrap().0 });
        let relay = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(relay.local_addr().unwrap()).await.unwrap();
        let (inbound, _) = relay.accept().await.unwrap();
        tokio::spawn(splice(inbound, target));
        let mut at_pod = held.await.unwrap();
        client.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        at_pod.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping", "relayed while the pod runs");

        pod_stopped(Ipv4Addr::LOCALHOST);
        let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "the client's connection is closed: {read:?}");
    }
}
