//! A TCP relay on loopback whose open connections a test can cut, as a network blip would:
//! the client must reconnect, and does so with whatever credentials it has at that moment.
//!
//! With several targets it stands for a Service in front of replicas: each new connection goes
//! to the first target that accepts it. Blocked, it stands for a partition: every connection is
//! cut and new ones are closed at once, until unblocked. Paused, it stands for a slow link: the
//! connections stay open and what is sent waits until resumed.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running relay; stops (with every connection) when dropped.
pub struct Relay {
    /// Where clients connect.
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    accept: JoinHandle<()>,
    paused: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    targets: Vec<SocketAddr>,
    blocked: bool,
    connections: Vec<JoinHandle<()>>,
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
        Self::start_many(vec![target]).await
    }

    /// Relays every connection to the first of `targets` that accepts it.
    pub async fn start_many(targets: Vec<SocketAddr>) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", crate::free_port())).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State { targets, ..State::default() }));
        let shared = Arc::clone(&state);
        let paused = watch::channel(false).0;
        let gate = paused.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let (targets, blocked) = {
                    let s = shared.lock().expect("relay state");
                    (s.targets.clone(), s.blocked)
                };
                if blocked {
                    continue;
                }
                let gate = gate.clone();
                let relay = tokio::spawn(async move {
                    for target in targets {
                        if let Ok(outbound) = TcpStream::connect(target).await {
                            let (from_client, to_client) = inbound.into_split();
                            let (from_target, to_target) = outbound.into_split();
                            let up = forward(from_client, to_target, gate.subscribe());
                            let down = forward(from_target, to_client, gate.subscribe());
                            tokio::join!(up, down);
                            return;
                        }
                    }
                    let _ = inbound.shutdown().await;
                });
                let mut s = shared.lock().expect("relay state");
                s.connections.retain(|c| !c.is_finished());
                s.connections.push(relay);
            }
        });
        Ok(Self { addr, state, accept, paused })
    }

    /// Holds what either side sends, connections open, until [`Relay::resume`].
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    /// Passes on what was held, and what comes after.
    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    /// Closes every open connection (both sides see the close); new ones are still relayed.
    pub fn cut(&self) {
        for connection in self.state.lock().expect("relay state").connections.drain(..) {
            connection.abort();
        }
    }

    /// Cuts every connection and closes new ones at once, until [`Relay::unblock`].
    pub fn block(&self) {
        self.state.lock().expect("relay state").blocked = true;
        self.cut();
    }

    /// Relays new connections again.
    pub fn unblock(&self) {
        self.state.lock().expect("relay state").blocked = false;
    }

    /// Where new connections go from now on (open ones stay where they are).
    pub fn set_targets(&self, targets: Vec<SocketAddr>) {
        self.state.lock().expect("relay state").targets = targets;
    }
}

/// Copies one direction of a connection, holding each read while paused.
async fn forward(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut paused: watch::Receiver<bool>,
) {
    let mut buf = vec![0; 64 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 || paused.wait_for(|p| !*p).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that writes its name on every connection and closes it.
    async fn named(name: &'static str) -> (SocketAddr, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let _ = s.write_all(name.as_bytes()).await;
            }
        });
        (addr, task)
    }

    async fn read_through(relay: &Relay) -> String {
        let mut s = TcpStream::connect(relay.addr).await.expect("connect to the relay");
        let mut out = String::new();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), s.read_to_string(&mut out)).await;
        out
    }

    #[tokio::test]
    async fn connections_go_to_the_first_target_that_accepts_and_none_while_blocked() {
        let (a, a_task) = named("a").await;
        let (b, _b_task) = named("b").await;
        let relay = Relay::start_many(vec![a, b]).await.expect("relay");
        assert_eq!(read_through(&relay).await, "a");
        a_task.abort();
        let _ = a_task.await;
        assert_eq!(read_through(&relay).await, "b", "a is gone: the next target answers");
        relay.block();
        assert_eq!(read_through(&relay).await, "", "blocked: closed at once");
        relay.unblock();
        relay.set_targets(vec![b]);
        assert_eq!(read_through(&relay).await, "b");
    }

    #[tokio::test]
    async fn a_paused_relay_holds_what_is_sent_on_open_connections_until_resumed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = listener.local_addr().expect("addr");
        let _echo = tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        let relay = Relay::start(target).await.expect("relay");
        let mut s = TcpStream::connect(relay.addr).await.expect("connect to the relay");
        let mut buf = [0u8; 1];
        let wait = std::time::Duration::from_millis(300);
        s.write_all(b"a").await.expect("write");
        tokio::time::timeout(wait, s.read_exact(&mut buf)).await.expect("relayed").expect("read");
        assert_eq!(&buf, b"a");
        relay.pause();
        s.write_all(b"b").await.expect("write");
        assert!(tokio::time::timeout(wait, s.read_exact(&mut buf)).await.is_err(), "held while paused");
        relay.resume();
        tokio::time::timeout(wait, s.read_exact(&mut buf)).await.expect("passed on").expect("read");
        assert_eq!(&buf, b"b", "the same connection, what was held");
    }
}
