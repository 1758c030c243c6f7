//! Who may receive which fleet: the identity in an Envoy's verified client certificate against the
//! fleet its node names.
//!
//! A fleet's configuration carries its tenants' private keys, so the node cluster an Envoy claims
//! is not enough. A fleet certificate ([`certs::fleet`]) receives the fleets it names; a
//! certificate that names none (upstream's `envoy`) receives the default fleet. Without TLS
//! nothing can be checked and every fleet is served. A refused stream ends with
//! `PermissionDenied` and its connection is closed, so that Envoy's next attempt is a new TLS
//! handshake with the certificate it holds then (Envoy keeps using an open connection after its
//! certificate file changes).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use crate::DEFAULT_FLEET;

/// Why a stream was refused: the `reason` label of `contour_xds_refused_streams_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Refusal {
    /// A fleet certificate claimed a fleet it does not name.
    OtherFleet,
    /// A certificate naming no fleet claimed a Gateway's fleet (or any other than the default).
    NoFleetIdentity,
    /// The certificate's URI names are not exactly one fleet identity of the trust domain.
    UnrecognisedIdentity,
    /// The client certificate could not be read.
    UnreadableCertificate,
}

impl Refusal {
    /// Every reason, in label order.
    pub const ALL: [Refusal; 4] =
        [Refusal::NoFleetIdentity, Refusal::OtherFleet, Refusal::UnrecognisedIdentity, Refusal::UnreadableCertificate];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::OtherFleet => "other_fleet",
            Refusal::NoFleetIdentity => "no_fleet_identity",
            Refusal::UnrecognisedIdentity => "unrecognised_identity",
            Refusal::UnreadableCertificate => "unreadable_certificate",
        }
    }

    pub(crate) fn index(self) -> usize {
        Self::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// The other end of an xDS connection, as the TLS handshake verified it.
#[derive(Debug, Clone)]
pub(crate) enum Peer {
    /// No TLS: nothing to check.
    Unchecked,
    /// A certificate the CA signed.
    Certified(certs::Identity),
    /// A certificate that could not be read (the handshake accepted it, so this is unlikely).
    Unreadable(String),
}

impl Peer {
    /// The peer of a connection's verified chain, leaf first (`None`: no TLS).
    pub(crate) fn of(chain: Option<&[CertificateDer<'static>]>, trust_domain: &str) -> Self {
        match chain {
            None => Peer::Unchecked,
            Some(chain) => match chain.first() {
                None => Peer::Unreadable("no client certificate".into()),
                Some(leaf) => match certs::fleet::identity(leaf, trust_domain) {
                    Ok(identity) => Peer::Certified(identity),
                    Err(e) => Peer::Unreadable(e.to_string()),
                },
            },
        }
    }

    /// What log lines call it.
    pub(crate) fn subject(&self) -> &str {
        match self {
            Peer::Unchecked => "none (plaintext xDS)",
            Peer::Certified(identity) => &identity.subject,
            Peer::Unreadable(error) => error,
        }
    }

    /// Whether it may receive `fleet` (as [`crate::Options::fleet_of`] resolved the node's
    /// cluster).
    pub(crate) fn may_receive(&self, fleet: &str) -> Result<(), Refusal> {
        match self {
            Peer::Unchecked => Ok(()),
            Peer::Unreadable(_) => Err(Refusal::UnreadableCertificate),
            Peer::Certified(identity) => match &identity.claim {
                certs::Claim::Installation if fleet == DEFAULT_FLEET => Ok(()),
                certs::Claim::Installation => Err(Refusal::NoFleetIdentity),
                certs::Claim::Fleet(id) if id.fleet() == fleet => Ok(()),
                certs::Claim::Fleet(_) => Err(Refusal::OtherFleet),
                certs::Claim::Unrecognised => Err(Refusal::UnrecognisedIdentity),
            },
        }
    }
}

/// What tonic hands each request of a TLS connection: the peer's certificates and a way to
/// close the connection.
#[derive(Debug, Clone)]
pub struct PeerInfo {
    pub(crate) certs: Option<Arc<Vec<CertificateDer<'static>>>>,
    pub(crate) closer: Closer,
}

/// Closes one connection from the server's side.
#[derive(Debug, Clone, Default)]
pub(crate) struct Closer(Arc<CloseState>);

#[derive(Debug, Default)]
struct CloseState {
    closed: AtomicBool,
    reader: AtomicWaker,
}

impl Closer {
    /// The connection reads end-of-stream from now on, so the server shuts it down.
    pub(crate) fn close(&self) {
        self.0.closed.store(true, Ordering::Release);
        self.0.reader.wake();
    }
}

/// A server-side TLS connection that can be closed through its [`Closer`].
pub struct PeerStream {
    inner: TlsStream<TcpStream>,
    closer: Closer,
}

impl PeerStream {
    pub(crate) fn new(inner: TlsStream<TcpStream>) -> Self {
        Self { inner, closer: Closer::default() }
    }
}

impl tonic::transport::server::Connected for PeerStream {
    type ConnectInfo = PeerInfo;

    fn connect_info(&self) -> PeerInfo {
        let certs = self.inner.get_ref().1.peer_certificates().map(|c| Arc::new(c.to_vec()));
        PeerInfo { certs, closer: self.closer.clone() }
    }
}

impl AsyncRead for PeerStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        // Registered before the flag is read, so a close in between still wakes this reader.
        self.closer.0.reader.register(cx.waker());
        if self.closer.0.closed.load(Ordering::Acquire) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for PeerStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use rustls::pki_types::pem::PemObject as _;

    use super::*;

    fn peer(cert_pem: &str) -> Peer {
        let der = rustls::pki_types::CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap();
        Peer::of(Some(&[der]), certs::DEFAULT_TRUST_DOMAIN)
    }

    #[test]
    fn a_fleet_certificate_receives_its_fleet_only_and_the_installation_one_the_default_fleet() {
        let installation = certs::generate("projectcontour", 1).unwrap();
        let ca = installation.authority().unwrap();
        let day = std::time::Duration::from_secs(86_400);
        let a =
            ca.issue_fleet(&certs::FleetId::parse("tenant-a/gw").unwrap(), certs::DEFAULT_TRUST_DOMAIN, day).unwrap();
        let a = peer(&a.cert);
        assert_eq!(a.may_receive("tenant-a/gw"), Ok(()));
        assert_eq!(a.may_receive("tenant-b/gw"), Err(Refusal::OtherFleet));
        assert_eq!(a.may_receive("tenant-a/gw2"), Err(Refusal::OtherFleet));
        assert_eq!(a.may_receive(DEFAULT_FLEET), Err(Refusal::OtherFleet));
        let envoy = peer(&installation.envoy_cert);
        assert_eq!(envoy.subject(), "CN=envoy");
        assert_eq!(envoy.may_receive(DEFAULT_FLEET), Ok(()));
        assert_eq!(envoy.may_receive("tenant-a/gw"), Err(Refusal::NoFleetIdentity));
        assert_eq!(envoy.may_receive("anything-else"), Err(Refusal::NoFleetIdentity));
        // Plaintext xDS checks nothing; a certificate that cannot be read gets nothing.
        assert_eq!(Peer::of(None, certs::DEFAULT_TRUST_DOMAIN).may_receive("tenant-b/gw"), Ok(()));
        let empty: [CertificateDer<'static>; 0] = [];
        assert_eq!(
            Peer::of(Some(&empty), certs::DEFAULT_TRUST_DOMAIN).may_receive(DEFAULT_FLEET),
            Err(Refusal::UnreadableCertificate)
        );
    }
}
