//! The pod network: one bridge on the host, one network namespace and veth pair per pod, and no
//! route out of the pod network (pods reach each other, the host's bridge address, and the
//! Services' range, served next to the host's address: services.rs).
//! Each pod's resolv.conf (`/etc/netns/NAME/resolv.conf`, which `ip netns exec` binds over
//! /etc/resolv.conf) names the runner's cluster DNS on the bridge address with the kubelet's
//! search path. Everything is named with a prefix of its own, so a restarted runner can find and
//! remove what a previous one left behind.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use anyhow::Context as _;

/// Prefix of every namespace and host-side interface this runner creates.
const PREFIX: &str = "gwc-";

/// Where the service range is served: the namespace's address on the pod bridge.
#[derive(Debug, Clone)]
pub struct Range {
    /// The range (CIDR).
    pub cidr: String,
    /// The next hop to it from the host and from every pod.
    pub via: Ipv4Addr,
}

/// Runs `ip` with `args`; its error output names what failed.
pub fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip").args(args).stdin(Stdio::null()).output().context("running ip")?;
    anyhow::ensure!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    Ok(())
}

/// Creates the bridge with the host's address on it (once; an existing one is kept).
pub fn bridge(name: &str, gateway: Ipv4Addr, prefix: u8) -> anyhow::Result<()> {
    if ip(&["link", "show", name]).is_err() {
        ip(&["link", "add", name, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{gateway}/{prefix}"), "dev", name])?;
    }
    ip(&["link", "set", name, "up"])
}

/// Removes the bridge.
pub fn remove_bridge(name: &str) {
    let _ = ip(&["link", "del", name]);
}

/// Removes namespaces a previous runner left behind (their veths go with them).
pub fn remove_stale() -> anyhow::Result<()> {
    let out = Command::new("ip").args(["netns", "list"]).output().context("running ip netns list")?;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        if name.starts_with(PREFIX) {
            let _ = ip(&["netns", "del", name]);
            let _ = std::fs::remove_dir_all(format!("/etc/netns/{name}"));
        }
    }
    Ok(())
}

/// One pod's namespace and veth pair; removed when dropped.
pub struct PodNet {
    /// The namespace's name (for `ip netns exec`).
    pub netns: String,
    host_if: String,
}

impl PodNet {
    /// Creates the namespace for the pod with `uid` in `namespace` at `address`, joined to
    /// `bridge` on the network `(gateway, prefix)`, with a route to the `services` range.
    pub fn create(
        uid: &str,
        namespace: &str,
        address: Ipv4Addr,
        bridge: &str,
        (gateway, prefix): (Ipv4Addr, u8),
        services: Option<&Range>,
    ) -> anyhow::Result<Self> {
        let tag: String = uid.chars().filter(char::is_ascii_alphanumeric).take(10).collect();
        let me = Self { netns: format!("{PREFIX}{tag}"), host_if: format!("g{tag}h") };
        let pod_if = format!("g{tag}p");
        // Leftovers of a pod whose runner died are replaced.
        let _ = ip(&["netns", "del", &me.netns]);
        let _ = ip(&["link", "del", &me.host_if]);
        ip(&["netns", "add", &me.netns])?;
        // The pod's MAC follows from its address: a pod that gets the address of one just
        // deleted (kwok reuses them) is reached at once, not after every neighbour on the bridge
        // (the host, Envoy's pod) has let its cached entry for the old MAC go stale.
        let mac = mac_for(address);
        ip(&["link", "add", &me.host_if, "type", "veth", "peer", "name", &pod_if, "address", &mac])?;
        ip(&["link", "set", &pod_if, "netns", &me.netns])?;
        ip(&["link", "set", &me.host_if, "master", bridge, "up"])?;
        let exec = |args: &[&str]| {
            let mut all = vec!["netns", "exec", me.netns.as_str(), "ip"];
            all.extend_from_slice(args);
            ip(&all)
        };
        exec(&["link", "set", "lo", "up"])?;
        exec(&["addr", "add", &format!("{address}/{prefix}"), "dev", &pod_if])?;
        exec(&["link", "set", &pod_if, "up"])?;
        if let Some(range) = services {
            exec(&["route", "add", &range.cidr, "via", &range.via.to_string()])?;
        }
        let etc = format!("/etc/netns/{}", me.netns);
        std::fs::create_dir_all(&etc).with_context(|| format!("creating {etc}"))?;
        std::fs::write(format!("{etc}/resolv.conf"), resolv_conf(namespace, gateway))?;
        Ok(me)
    }
}

/// A locally administered unicast MAC that carries the IPv4 address (`02:42:a:b:c:d`).
fn mac_for(address: Ipv4Addr) -> String {
    let [a, b, c, d] = address.octets();
    format!("02:42:{a:02x}:{b:02x}:{c:02x}:{d:02x}")
}

impl Drop for PodNet {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.host_if]);
        let _ = ip(&["netns", "del", &self.netns]);
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{}", self.netns));
    }
}

/// The kubelet's resolv.conf for a pod of `namespace` (ClusterFirst), with the cluster DNS at
/// `server`.
pub fn resolv_conf(namespace: &str, server: Ipv4Addr) -> String {
    format!("search {namespace}.svc.{DOMAIN} svc.{DOMAIN} {DOMAIN}\nnameserver {server}\noptions ndots:5\n")
}

/// The cluster domain.
pub const DOMAIN: &str = "cluster.local";

#[cfg(test)]
mod tests {
    #[test]
    fn a_pod_address_always_gets_the_same_mac() {
        let mac = super::mac_for(std::net::Ipv4Addr::new(10, 244, 1, 5));
        assert_eq!(mac, "02:42:0a:f4:01:05");
        assert_eq!(mac, super::mac_for(std::net::Ipv4Addr::new(10, 244, 1, 5)));
        assert_ne!(mac, super::mac_for(std::net::Ipv4Addr::new(10, 244, 1, 6)));
    }
}
