//! OpenID Connect login on a TLS virtual host (HTTPProxy `virtualhost.oidc`, a contour-rs
//! extension): Envoy's OAuth2 filter runs the authorization code flow with the provider and
//! keeps the session in cookies.

use crate::RemoteJwks;

/// A login at an OpenID provider.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct Oidc {
    /// Where browsers log in.
    pub authorization_endpoint: String,
    /// Where Envoy exchanges codes and refresh tokens (its cluster is made as a remote JWKS
    /// server's: DNS, TLS for `https` verified against the system's trust store).
    pub token_endpoint: RemoteJwks,
    /// Where logging out ends the provider's session too.
    pub end_session_endpoint: Option<String>,
    /// The client's ID.
    pub client_id: String,
    /// The client's secret and the key that signs and encrypts the session cookies, as SDS
    /// secrets named `<secret_name>/client-secret` and `<secret_name>/hmac`.
    pub secret_name: String,
    /// The client's secret.
    pub client_secret: Redacted,
    /// The cookies' key, derived from the client's secret and the virtual host.
    pub hmac_secret: Redacted,
    /// Scopes asked for, `openid` first.
    pub scopes: Vec<String>,
    /// The path the provider sends browsers back to.
    pub redirect_path: String,
    /// The path that ends the session.
    pub logout_path: String,
    /// The access token reaches backends as `Authorization: Bearer`.
    pub forward_access_token: bool,
    /// Expired sessions are renewed with the refresh token.
    pub refresh_tokens: bool,
}

/// A secret value: never printed, never serialized (so never in logs, `/debug/dag` or status).
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Redacted(pub Vec<u8>);

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl serde::Serialize for Redacted {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

impl Oidc {
    /// The SDS name of the client's secret.
    pub fn client_secret_sds(&self) -> String {
        format!("{}/client-secret", self.secret_name)
    }

    /// The SDS name of the cookies' key.
    pub fn hmac_sds(&self) -> String {
        format!("{}/hmac", self.secret_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redacted_value_is_neither_printed_nor_serialized() {
        let r = Redacted(b"hunter2".to_vec());
        assert_eq!(format!("{r:?}"), "<redacted>");
        assert_eq!(serde_json::to_string(&r).unwrap(), "\"<redacted>\"");
    }
}
