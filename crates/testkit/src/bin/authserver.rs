//! Stands in for upstream's contour-authserver image in upstream's e2e suites:
//! `authserver testserver --address=:9443 [--tls-cert-path=F --tls-key-path=F [--tls-ca-path=F]]`
//! serves the ext_authz gRPC API over TLS (in clear text without the files), passing requests
//! whose path contains `allow`.

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    anyhow::ensure!(
        args.first().map(String::as_str) == Some("testserver"),
        "usage: authserver testserver --address=:PORT --tls-cert-path=F --tls-key-path=F"
    );
    let flag = |name: &str| args.iter().find_map(|a| a.strip_prefix(&format!("--{name}=")).map(str::to_string));
    let address = flag("address").unwrap_or_else(|| ":9443".into());
    let address: std::net::SocketAddr = match address.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}").parse()?,
        None => address.parse()?,
    };
    let tls = match (flag("tls-cert-path"), flag("tls-key-path")) {
        (Some(cert), Some(key)) => Some((cert.into(), key.into())),
        (None, None) => None,
        _ => anyhow::bail!("--tls-cert-path and --tls-key-path go together"),
    };
    eprintln!("authserver testserver listening on {address}");
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(testkit::serve_test_mode(address, tls))
}
