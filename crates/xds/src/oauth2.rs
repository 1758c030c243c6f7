//! OpenID Connect login (HTTPProxy `virtualhost.oidc`, a contour-rs extension): Envoy's OAuth2
//! filter on a TLS virtual host's connection manager runs the authorization code flow (with
//! PKCE and a CSRF-checked state), keeps the session in signed, encrypted cookies, renews it
//! with the refresh token, and ends it at the logout path (and at the provider's end session
//! endpoint). A route can turn it off.

use envoy_types::pb::envoy::config::route::v3::FilterConfig;
use envoy_types::pb::envoy::extensions::filters::http::oauth2::v3::{
    OAuth2, OAuth2Config, OAuth2Credentials, PostLogoutRedirectUri, o_auth2_config, o_auth2_credentials,
    post_logout_redirect_uri,
};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::SdsSecretConfig;
use envoy_types::pb::envoy::r#type::matcher::v3::{PathMatcher, StringMatcher, path_matcher, string_matcher};
use envoy_types::pb::google::protobuf::{Any, BoolValue};
use envoy_types::util::pack_any;

/// The filter's name, which routes turn it off under.
pub(crate) const NAME: &str = "envoy.filters.http.oauth2";

/// The filter of a TLS virtual host with a login.
pub(crate) fn filter(oidc: &ir::Oidc) -> HttpFilter {
    let sds = |name: String| SdsSecretConfig { name, sds_config: Some(crate::ads()) };
    let path = |p: &str| PathMatcher {
        rule: Some(path_matcher::Rule::Path(StringMatcher {
            match_pattern: Some(string_matcher::MatchPattern::Exact(p.into())),
            ..Default::default()
        })),
    };
    let config = OAuth2Config {
        token_endpoint: Some(crate::jwt::remote_uri(&oidc.token_endpoint)),
        authorization_endpoint: oidc.authorization_endpoint.clone(),
        end_session_endpoint: oidc.end_session_endpoint.clone().unwrap_or_default(),
        // Not sent: the provider accepts only addresses registered for the client.
        post_logout_redirect_uri: oidc
            .end_session_endpoint
            .as_ref()
            .map(|_| PostLogoutRedirectUri { config: Some(post_logout_redirect_uri::Config::Disabled(true)) }),
        credentials: Some(OAuth2Credentials {
            client_id: oidc.client_id.clone(),
            token_secret: Some(sds(oidc.client_secret_sds())),
            token_formation: Some(o_auth2_credentials::TokenFormation::HmacSecret(sds(oidc.hmac_sds()))),
            ..Default::default()
        }),
        // TLS hosts only: the scheme is always https.
        redirect_uri: format!("https://%REQ(:authority)%{}", oidc.redirect_path),
        redirect_path_matcher: Some(path(&oidc.redirect_path)),
        signout_path: Some(path(&oidc.logout_path)),
        forward_bearer_token: oidc.forward_access_token,
        auth_scopes: oidc.scopes.clone(),
        // The OpenID Connect default (client_secret_basic).
        auth_type: o_auth2_config::AuthType::BasicAuth as i32,
        use_refresh_token: Some(BoolValue { value: oidc.refresh_tokens }),
        ..Default::default()
    };
    crate::http_filter(NAME, pack_any(OAuth2 { config: Some(config) }))
}

/// A route's per-filter configuration that turns the login off.
pub(crate) fn disabled() -> Any {
    pack_any(FilterConfig { config: None, is_optional: true, disabled: true })
}
