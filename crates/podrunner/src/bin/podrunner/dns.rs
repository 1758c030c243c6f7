//! The stand-in for the CoreDNS pod of the conformance base manifests. It reads the Corefile
//! (`-conf PATH`) and answers, over UDP, the zones whose server block has the `whoami` plugin as
//! CoreDNS does (the client's address and port in the additional section). Every other name is
//! refused: `forward` blocks are never served, so no query leaves the machine.

use std::net::{IpAddr, SocketAddr};

use anyhow::Context as _;

/// One server block: its zone (lowercase, with the root dot), port and whether it has `whoami`.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    zone: String,
    port: u16,
    whoami: bool,
}

fn parse_corefile(text: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut depth = 0usize;
    let mut current = 0usize; // the first block of the server block being read
    for line in text.lines().map(|l| l.split('#').next().unwrap_or_default().trim()) {
        if depth == 0 && line.ends_with('{') {
            current = out.len();
            for key in line.trim_end_matches('{').split_whitespace() {
                let key = key.trim_start_matches("dns://");
                let (zone, port) = key.rsplit_once(':').unwrap_or((key, "53"));
                let mut zone = zone.to_ascii_lowercase();
                if !zone.ends_with('.') {
                    zone.push('.');
                }
                out.push(Block { zone, port: port.parse().unwrap_or(53), whoami: false });
            }
            depth = 1;
        } else if depth > 0 {
            if line.split_whitespace().next() == Some("whoami") && depth == 1 {
                for b in &mut out[current..] {
                    b.whoami = true;
                }
            }
            depth += line.matches('{').count();
            depth -= line.matches('}').count().min(depth);
        }
    }
    out
}

/// The block serving `name`: the longest zone it falls in.
fn block_for<'a>(blocks: &'a [Block], name: &str) -> Option<&'a Block> {
    blocks
        .iter()
        .filter(|b| b.zone == "." || name == b.zone || name.ends_with(&format!(".{}", b.zone)))
        .max_by_key(|b| b.zone.len())
}

/// The question's name (lowercase, with the root dot) and where the question section ends.
pub(crate) fn question(packet: &[u8]) -> Option<(String, usize)> {
    if packet.len() < 12 || u16::from_be_bytes([packet[4], packet[5]]) != 1 {
        return None;
    }
    let mut at = 12;
    let mut name = String::new();
    loop {
        let len = usize::from(*packet.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        if len > 63 {
            return None; // compression in a question: not from a real client
        }
        name.push_str(&String::from_utf8_lossy(packet.get(at..at + len)?).to_ascii_lowercase());
        name.push('.');
        at += len;
    }
    if name.is_empty() {
        name.push('.');
    }
    (packet.len() >= at + 4).then_some((name, at + 4))
}

/// The answer to `packet` from `client`, or `None` for something that is not a query.
fn answer(blocks: &[Block], packet: &[u8], client: SocketAddr) -> Option<Vec<u8>> {
    let (name, end) = question(packet)?;
    let mut out = packet[..end].to_vec();
    let rd = packet[2] & 0x01;
    out[2] = 0x84 | rd; // response, authoritative
    out[3] = 0; // NOERROR
    out[6..12].copy_from_slice(&[0, 0, 0, 0, 0, 0]);
    if !block_for(blocks, &name).is_some_and(|b| b.whoami) {
        out[2] = 0x80 | rd;
        out[3] = 5; // REFUSED
        return Some(out);
    }
    // whoami: the client's address, and `_udp.<name>` SRV with its port, as additional records.
    let (rtype, rdata): (u16, Vec<u8>) = match client.ip() {
        IpAddr::V4(ip) => (1, ip.octets().to_vec()),
        IpAddr::V6(ip) => (28, ip.octets().to_vec()),
    };
    let mut record = |owner: &[u8], rtype: u16, rdata: &[u8]| {
        out.extend_from_slice(owner);
        out.extend_from_slice(&rtype.to_be_bytes());
        out.extend_from_slice(&[0, 1, 0, 0, 0, 0]); // class IN, TTL 0
        out.extend_from_slice(&u16::try_from(rdata.len()).unwrap_or(0).to_be_bytes());
        out.extend_from_slice(rdata);
    };
    record(&[0xc0, 12], rtype, &rdata);
    let mut srv_owner = vec![4];
    srv_owner.extend_from_slice(b"_udp");
    srv_owner.extend_from_slice(&[0xc0, 12]);
    let mut srv = vec![0, 0, 0, 0];
    srv.extend_from_slice(&client.port().to_be_bytes());
    srv.push(0);
    record(&srv_owner, 33, &srv);
    out[11] = 2; // ARCOUNT
    Some(out)
}

pub fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let conf = args.windows(2).find(|w| w[0] == "-conf").map(|w| w[1].clone()).unwrap_or("Corefile".into());
    let text = std::fs::read_to_string(&conf).with_context(|| format!("reading {conf}"))?;
    let blocks = parse_corefile(&text);
    let mut ports: Vec<u16> = blocks.iter().map(|b| b.port).collect();
    ports.sort_unstable();
    ports.dedup();
    let threads: Vec<_> = ports
        .into_iter()
        .map(|port| {
            let socket = std::net::UdpSocket::bind(("0.0.0.0", port)).with_context(|| format!("binding UDP {port}"))?;
            let blocks: Vec<Block> = blocks.iter().filter(|b| b.port == port).cloned().collect();
            println!(
                "serving whoami zones {:?} on UDP {port}; refusing the rest",
                blocks.iter().filter(|b| b.whoami).map(|b| &b.zone).collect::<Vec<_>>()
            );
            Ok(std::thread::spawn(move || {
                let mut buf = [0u8; 1500];
                while let Ok((n, from)) = socket.recv_from(&mut buf) {
                    if let Some(reply) = answer(&blocks, &buf[..n], from) {
                        let _ = socket.send_to(&reply, from);
                    }
                }
            }))
        })
        .collect::<anyhow::Result<_>>()?;
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const COREFILE: &str = ".:53 {\n    forward . 8.8.8.8 9.9.9.9\n    log\n}\nfoo.bar.com:53 {\n  whoami\n}\n";

    fn query(name: &str) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.').filter(|l| !l.is_empty()) {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 1, 0, 1]);
        q
    }

    #[test]
    fn corefile_blocks() {
        let blocks = parse_corefile(COREFILE);
        assert_eq!(
            blocks,
            vec![
                Block { zone: ".".into(), port: 53, whoami: false },
                Block { zone: "foo.bar.com.".into(), port: 53, whoami: true },
            ]
        );
    }

    #[test]
    fn whoami_zone_answered_rest_refused() {
        let blocks = parse_corefile(COREFILE);
        let client: SocketAddr = "10.244.0.1:40212".parse().unwrap();
        let reply = answer(&blocks, &query("Foo.Bar.com."), client).expect("answered");
        assert_eq!(&reply[..2], &[0x12, 0x34], "same id");
        assert_eq!(reply[3] & 0x0f, 0, "NOERROR");
        assert_eq!(reply[11], 2, "two additional records");
        assert!(reply.windows(4).any(|w| w == [10, 244, 0, 1]), "client address in the reply");
        let refused = answer(&blocks, &query("example.com."), client).expect("answered");
        assert_eq!(refused[3] & 0x0f, 5, "REFUSED, never forwarded");
        assert_eq!(answer(&blocks, &[1, 2, 3], client), None);
    }
}
