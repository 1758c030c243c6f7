//! Backends in network namespaces of their own, reachable from the host over a veth pair.
//!
//! The API server refuses loopback addresses in EndpointSlices, so tests that go through it run
//! their backends here, on addresses from 10.248.0.0/16 that exist only inside this machine.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// An echo backend in its own network namespace; everything is removed when dropped.
pub struct NetnsBackend {
    /// Where it listens (inside the namespace, reachable from the host).
    pub addr: SocketAddr,
    /// The host's end of the veth pair: an address of this machine that is not loopback, which
    /// the API server accepts in an EndpointSlice (a server of the test can listen on it).
    pub host: Ipv4Addr,
    /// Its name, echoed in every answer.
    pub name: String,
    netns: String,
    host_if: String,
    child: Option<tokio::process::Child>,
    /// The certificate and key files of an HTTPS backend.
    tls_dir: Option<PathBuf>,
}

impl Drop for NetnsBackend {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        let _ = std::process::Command::new("ip").args(["link", "del", &self.host_if]).status();
        let _ = std::process::Command::new("ip").args(["netns", "del", &self.netns]).status();
        if let Some(dir) = &self.tls_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn echo_backend() -> anyhow::Result<PathBuf> {
    crate::workspace_binary("echo-backend")
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    let status = std::process::Command::new("ip").args(args).status()?;
    anyhow::ensure!(status.success(), "ip {}: {status}", args.join(" "));
    Ok(())
}

impl NetnsBackend {
    /// Kills the backend at once, as a crash would; its address stays and refuses connections.
    pub async fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Creates a namespace with a veth pair and starts an echo backend in it on port 8080.
    pub async fn start(name: &str) -> anyhow::Result<Self> {
        Self::start_with(name, None).await
    }

    /// [`NetnsBackend::start`] speaking HTTPS with this certificate.
    pub async fn start_tls(name: &str, cert: &crate::Issued) -> anyhow::Result<Self> {
        Self::start_with(name, Some(cert)).await
    }

    async fn start_with(name: &str, cert: Option<&crate::Issued>) -> anyhow::Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let slot = (std::process::id() % 64) * 256 + NEXT.fetch_add(1, Ordering::Relaxed) % 256;
        let base = u32::from(Ipv4Addr::new(10, 248, 0, 0)) + slot * 4;
        let (host_ip, ns_ip) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
        let tag = format!("{}-{}", std::process::id() % 64, slot % 256);
        let mut me = Self {
            addr: SocketAddr::from((ns_ip, 8080)),
            host: host_ip,
            name: name.into(),
            netns: format!("contour-t{tag}"),
            host_if: format!("ct{tag}h"),
            child: None,
            tls_dir: None,
        };
        let ns_if = format!("ct{tag}n");
        ip(&["netns", "add", &me.netns])?;
        ip(&["link", "add", &me.host_if, "type", "veth", "peer", "name", &ns_if])?;
        ip(&["link", "set", &ns_if, "netns", &me.netns])?;
        ip(&["addr", "add", &format!("{host_ip}/30"), "dev", &me.host_if])?;
        ip(&["link", "set", &me.host_if, "up"])?;
        ip(&["netns", "exec", &me.netns, "ip", "addr", "add", &format!("{ns_ip}/30"), "dev", &ns_if])?;
        ip(&["netns", "exec", &me.netns, "ip", "link", "set", &ns_if, "up"])?;
        ip(&["netns", "exec", &me.netns, "ip", "link", "set", "lo", "up"])?;
        let mut tls_args = Vec::new();
        if let Some(cert) = cert {
            // The backend reads them once at start; they go when the backend does.
            let dir = std::env::temp_dir().join(format!("contour-backend-{}", me.netns));
            std::fs::create_dir_all(&dir)?;
            me.tls_dir = Some(dir.clone());
            for (file, pem) in [("tls.crt", &cert.cert_pem), ("tls.key", &cert.key_pem)] {
                std::fs::write(dir.join(file), pem)?;
                tls_args.push(dir.join(file));
            }
        }
        me.child = Some(
            tokio::process::Command::new("ip")
                .args(["netns", "exec", &me.netns])
                .arg(echo_backend()?)
                .args([me.addr.to_string(), name.to_string()])
                .args(&tls_args)
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn()?,
        );
        let addr = me.addr;
        let up = crate::eventually(Duration::from_secs(10), || async move {
            tokio::net::TcpStream::connect(addr).await.ok().map(drop)
        })
        .await;
        anyhow::ensure!(up.is_some(), "backend {name} in {} did not start", me.netns);
        Ok(me)
    }
}
