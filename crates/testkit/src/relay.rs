//! A TCP relay on loopback whose open connections a test can cut, as a network blip would:
//! the client must reconnect, and does so with whatever credentials it has at that moment.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A running relay; stops (with every connection) when dropped.
pub struct Relay {
    /// Where clients connect.
    pub addr: SocketAddr,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

impl Relay {
    /// Relays every connection to a free loopback port on to `target`.
    pub async fn start(target: SocketAddr) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", crate::free_port())).await?;
        let addr = listener.local_addr()?;
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let tracked = Arc::clone(&connections);
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let relay = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                let mut open = tracked.lock().expect("relay connections");
                open.retain(|c| !c.is_finished());
                open.push(relay);
            }
        });
        Ok(Self { addr, connections, accept })
    }

    /// Closes every open connection (both sides see the close); new ones are still relayed.
    pub fn cut(&self) {
        for connection in self.connections.lock().expect("relay connections").drain(..) {
            connection.abort();
        }
    }
}
