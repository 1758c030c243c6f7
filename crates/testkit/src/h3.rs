//! An HTTP/3 client that really speaks QUIC: the Python package aioquic
//! (`CONTOUR_AIOQUIC_PYTHON`, installed by `hack/install-test-clients`) running
//! `fixtures/h3_request.py`.

use std::net::SocketAddr;

use crate::{Request, Response};

const SCRIPT: &str = include_str!("fixtures/h3_request.py");

/// Sends `req` over HTTP/3 to `addr` with SNI `sni`, trusting only `ca_pem`. The answer's
/// negotiated ALPN protocol is its `alpn` pseudo-header (`h3`).
pub async fn request_h3(addr: SocketAddr, sni: &str, ca_pem: &str, req: &Request) -> anyhow::Result<Response> {
    crate::require_tools(&["CONTOUR_AIOQUIC_PYTHON"], "hack/test (hack/install-test-clients)")?;
    let python = std::env::var("CONTOUR_AIOQUIC_PYTHON")?;
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg("-c")
        .arg(SCRIPT)
        .env("H3_CA_PEM", ca_pem)
        .arg(addr.ip().to_string())
        .arg(addr.port().to_string())
        .arg(sni)
        .arg(&req.method)
        .arg(&req.host)
        .arg(&req.path)
        .args(req.headers.iter().map(|(n, v)| format!("{n}:{v}")))
        .kill_on_drop(true);
    let out = tokio::time::timeout(std::time::Duration::from_secs(15), cmd.output()).await??;
    anyhow::ensure!(
        out.status.success(),
        "HTTP/3 request to {addr} ({sni}) failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let mut headers: Vec<(String, String)> = v["headers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| Some((h[0].as_str()?.to_string(), h[1].as_str()?.to_string())))
        .collect();
    headers.push(("alpn".into(), v["alpn"].as_str().unwrap_or_default().into()));
    let body = v["body"].as_str().unwrap_or_default().to_string();
    Ok(Response {
        status: v["status"].as_u64().unwrap_or_default() as u16,
        headers,
        raw: body.clone().into_bytes(),
        body,
    })
}
