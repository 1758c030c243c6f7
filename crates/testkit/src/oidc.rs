//! A real OpenID provider: zitadel/oidc's example provider, built from its Go module by
//! `hack/install-test-clients` (`CONTOUR_OIDC_PROVIDER` names the binary), on loopback, stopped
//! when dropped. Its users log in with a password form; its client `web` has the secret
//! `secret` and authenticates with HTTP Basic.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running provider.
pub struct OidcProvider {
    /// Where it listens (plain HTTP).
    pub addr: SocketAddr,
    /// Its issuer, `http://localhost:<port>/`, the base of its endpoints.
    pub issuer: String,
    child: Child,
}

/// The provider's user that logs in, and its password.
pub const OIDC_USER: (&str, &str) = ("test-user@localhost", "verysecure");
/// The provider's confidential client and its secret.
pub const OIDC_CLIENT: (&str, &str) = ("web", "secret");

impl OidcProvider {
    /// Starts the provider, which sends its client's browsers back only to `redirect_uri`, and
    /// waits until its discovery document answers.
    pub async fn start(redirect_uri: &str) -> anyhow::Result<Self> {
        crate::require_tools(&["CONTOUR_OIDC_PROVIDER"], "hack/test (hack/install-test-clients)")?;
        let binary = std::env::var("CONTOUR_OIDC_PROVIDER")?;
        let port = crate::free_port();
        let child = Command::new(binary)
            .env("PORT", port.to_string())
            .env("REDIRECT_URI", redirect_uri)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let issuer = format!("http://localhost:{port}/");
        let me = Self { addr, issuer, child };
        let discovery = crate::Request::get(&me.authority(), "/.well-known/openid-configuration");
        let ready = crate::eventually(Duration::from_secs(20), || async {
            crate::request(addr, &discovery).await.ok().filter(|r| r.status == 200)
        })
        .await;
        anyhow::ensure!(ready.is_some(), "the OpenID provider did not answer on {addr}");
        Ok(me)
    }

    /// Its `Host`, `localhost:<port>`.
    pub fn authority(&self) -> String {
        format!("localhost:{}", self.addr.port())
    }

    /// One of its endpoints, such as `authorize` or `oauth/token`.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
