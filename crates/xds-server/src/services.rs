//! The tonic services and the task that drives one stream.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use envoy_types::pb::envoy::service::cluster::v3::cluster_discovery_service_server::{
    ClusterDiscoveryService, ClusterDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_server::{
    AggregatedDiscoveryService, AggregatedDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use envoy_types::pb::envoy::service::endpoint::v3::endpoint_discovery_service_server::{
    EndpointDiscoveryService, EndpointDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::listener::v3::listener_discovery_service_server::{
    ListenerDiscoveryService, ListenerDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::route::v3::route_discovery_service_server::{
    RouteDiscoveryService, RouteDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::route::v3::virtual_host_discovery_service_server::{
    VirtualHostDiscoveryService, VirtualHostDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::runtime::v3::runtime_discovery_service_server::{
    RuntimeDiscoveryService, RuntimeDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::secret::v3::secret_discovery_service_server::{
    SecretDiscoveryService, SecretDiscoveryServiceServer,
};
use futures::Stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::{debug, info, warn};

use crate::peer::{Peer, PeerInfo};
use crate::protocol::{Delta, Protocol, Sotw};
use crate::stream::{Feedback, Mode, StreamState};
use crate::{Inner, ResourceType, XdsServer, index};

type ResponseStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// How many connections may wait to be accepted; the kernel caps it at `net.core.somaxconn`.
const BACKLOG: u32 = 4096;

/// Binds a listener for Envoys' xDS connections with a backlog for a burst of them (a fleet
/// restarting, or every Envoy reconnecting at once). The standard library's and tokio's `bind`
/// ask for 128, so a thousand Envoys connecting at once overflowed the queue and had a third of
/// their connections reset; Go servers, upstream Contour's among them, get `somaxconn`.
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Serves ADS and the per-type services on a bound listener until `shutdown` completes.
pub async fn serve(
    server: XdsServer,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    bounded(shutdown, |stop| routes(server).serve_with_incoming_shutdown(incoming, stop)).await
}

/// How long open xDS streams get to finish after shutdown starts. Envoy never ends its streams
/// itself, so a graceful stop alone would wait forever; after the grace the connections are
/// dropped and Envoy reconnects (to another replica, or to this one once it is back).
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs `serve` with a shutdown signal, and stops it for good [`SHUTDOWN_GRACE`] after the
/// signal.
async fn bounded<F>(
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    serve: impl FnOnce(futures::future::Shared<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>) -> F,
) -> Result<(), tonic::transport::Error>
where
    F: std::future::Future<Output = Result<(), tonic::transport::Error>>,
{
    use futures::FutureExt as _;
    let boxed: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> = Box::pin(shutdown);
    let stop = boxed.shared();
    let deadline = stop.clone().then(|()| tokio::time::sleep(SHUTDOWN_GRACE));
    tokio::select! {
        result = serve(stop) => result,
        () = deadline => Ok(()),
    }
}

/// [`serve`] with mTLS: TLS 1.3, client certificates verified against the CA bundle, files
/// re-read when they change.
pub async fn serve_tls(
    server: XdsServer,
    listener: tokio::net::TcpListener,
    tls: std::sync::Arc<crate::Reloading>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let incoming = ReceiverStream::new(crate::tls::accept(listener, tls));
    let server = XdsServer { mtls: true, ..server };
    bounded(shutdown, |stop| routes(server).serve_with_incoming_shutdown(incoming, stop)).await
}

fn routes(server: XdsServer) -> tonic::transport::server::Router {
    tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(std::time::Duration::from_secs(60)))
        .http2_keepalive_timeout(Some(std::time::Duration::from_secs(20)))
        .add_service(AggregatedDiscoveryServiceServer::new(server.clone()))
        .add_service(ClusterDiscoveryServiceServer::new(server.clone()))
        .add_service(EndpointDiscoveryServiceServer::new(server.clone()))
        .add_service(ListenerDiscoveryServiceServer::new(server.clone()))
        .add_service(RouteDiscoveryServiceServer::new(server.clone()))
        .add_service(RuntimeDiscoveryServiceServer::new(server.clone()))
        .add_service(VirtualHostDiscoveryServiceServer::new(server.clone()))
        .add_service(SecretDiscoveryServiceServer::new(server))
}

impl XdsServer {
    fn open<P: Protocol>(
        &self,
        request: Request<Streaming<P::Req>>,
        only: Option<ResourceType>,
    ) -> ResponseStream<P::Resp>
    where
        P::Req: prost::Message + Default,
    {
        self.open_scoped::<P>(request, only, None)
    }

    /// [`XdsServer::open`], the subscription narrowed to one namespace (VHDS).
    fn open_scoped<P: Protocol>(
        &self,
        request: Request<Streaming<P::Req>>,
        only: Option<ResourceType>,
        scope: Option<String>,
    ) -> ResponseStream<P::Resp>
    where
        P::Req: prost::Message + Default,
    {
        let connection = request.extensions().get::<PeerInfo>().cloned();
        let (tx, rx) = mpsc::channel(16);
        let stream = Opened { inbound: request.into_inner(), tx, only, scope, connection, mtls: self.mtls };
        tokio::spawn(drive::<P>(Arc::clone(&self.inner), stream));
        Box::pin(ReceiverStream::new(rx))
    }
}

/// One xDS stream: what Envoy sends, where responses go, what it asked for, and its connection.
struct Opened<P: Protocol> {
    inbound: Streaming<P::Req>,
    tx: mpsc::Sender<Result<P::Resp, Status>>,
    only: Option<ResourceType>,
    scope: Option<String>,
    /// The TLS connection's peer (`None` without TLS).
    connection: Option<PeerInfo>,
    /// Served over mTLS ([`serve_tls`]).
    mtls: bool,
}

/// How long a refused stream's error gets to reach Envoy before its connection is closed.
const REFUSAL_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Whether the stream's certificate may receive `fleet`; when not, says so (log line, counter,
/// `PermissionDenied`) and closes the connection.
async fn admitted<P: Protocol>(inner: &Inner, stream: &Opened<P>, node: &str, claimed: &str, fleet: &str) -> bool {
    // Over mTLS every stream has its connection's certificates; one without counts as none.
    let certificates = match (&stream.connection, stream.mtls) {
        (Some(c), _) => Some(c.certs.as_deref().map_or(&[][..], Vec::as_slice)),
        (None, true) => Some(&[][..]),
        (None, false) => None,
    };
    let peer = Peer::of(certificates, &inner.options.trust_domain);
    let Err(reason) = peer.may_receive(fleet) else { return true };
    inner.stats.refused[reason.index()].fetch_add(1, Ordering::Relaxed);
    let subject = peer.subject();
    // The node's id and cluster are the client's words: quoted, so they cannot forge log lines.
    warn!(?node, certificate = ?subject, claimed_fleet = ?claimed, ?fleet, reason = reason.label(), "xDS stream refused: the client certificate may not receive this fleet");
    let message = format!("the client certificate ({subject}) may not receive fleet {fleet:?}");
    let _ = stream.tx.send(Err(Status::permission_denied(message))).await;
    if let Some(closer) = stream.connection.as_ref().map(|c| c.closer.clone()) {
        tokio::spawn(async move {
            tokio::time::sleep(REFUSAL_GRACE).await;
            closer.close();
        });
    }
    false
}

async fn drive<P: Protocol>(inner: Arc<Inner>, mut stream: Opened<P>)
where
    P::Req: prost::Message + Default,
{
    let Ok(Some(first)) = stream.inbound.message().await else {
        return;
    };
    let node = P::node(&first).cloned().unwrap_or_default();
    let fleet = inner.options.fleet_of(&node.cluster);
    if !admitted(&inner, &stream, &node.id, &node.cluster, &fleet).await {
        return;
    }
    let Opened { mut inbound, tx, only, scope, .. } = stream;
    inner.stats.connections.fetch_add(1, Ordering::Relaxed);
    inner.stats.streams_total.fetch_add(1, Ordering::Relaxed);
    let _guard = ConnectionGuard(Arc::clone(&inner));
    info!(node = %node.id, %fleet, mode = ?P::MODE, "xDS stream opened");

    // Nothing is served before the first build is done.
    let mut ready = inner.ready.subscribe();
    if ready.wait_for(|r| *r).await.is_err() {
        return;
    }
    let (mut served, known) = inner.fleets.lock().expect("fleets lock").watch(&fleet, only);
    let _watching = Watching { inner: Arc::clone(&inner), fleet: fleet.clone(), only };
    if !known {
        inner.stats.unknown_fleet.fetch_add(1, Ordering::Relaxed);
        warn!(node = %node.id, %fleet, "Envoy names a fleet with no configuration; it gets none until the fleet exists");
    }
    let mut state = StreamState::new(P::MODE, only, inner.options.eds_wait);
    if inner.options.vhds {
        state = state.with_vhds();
    }
    // Delta ADS and VHDS streams of one Envoy keep make-before-break between them (see `link`).
    let vhds = only == Some(ResourceType::VirtualHost);
    let link = (P::MODE == Mode::Delta && (only.is_none() || vhds)).then(|| inner.links.get(&fleet, &node.id));
    let vhds_guard = link.as_ref().filter(|_| vhds).map(|l| l.vhds_stream());
    let mut gate = link.as_ref().map(|l| l.gate.subscribe());
    let mut vhds_synced = link.as_ref().map(|l| l.vhds_changed.subscribe());
    let mut pending = Some(first);
    let mut scope = scope;
    loop {
        if let Some(req) = pending.take() {
            let incoming = P::incoming(req);
            debug!(node = %node.id, %fleet, type_url = %incoming.type_url, nonce = %incoming.nonce, names = ?incoming.names, subscribe = ?incoming.subscribe, unsubscribe = ?incoming.unsubscribe, nack = incoming.error.is_some(), "xDS request");
            match state.on_request(&incoming) {
                Ok(Some(feedback)) => record(&inner, &fleet, &node.id, feedback),
                Ok(None) => {}
                Err(e) => {
                    let _ = tx.send(Err(Status::invalid_argument(e))).await;
                    return;
                }
            }
            if let (Some(t), Some(namespace)) = (only, scope.take()) {
                state.scope_to(t, &namespace);
            }
        }
        // The VHDS stream serves the snapshot the ADS stream opened the gate on.
        let snapshot = match (&mut gate, vhds) {
            (Some(gate), true) => gate.borrow_and_update().clone(),
            _ => Some(Arc::clone(&served.borrow_and_update())),
        };
        if let Some(snapshot) = snapshot {
            if let (Some(link), false) = (&link, vhds) {
                if let Some(rx) = vhds_synced.as_mut() {
                    rx.borrow_and_update();
                }
                state.set_others_synced(link.vhds_in_step(&snapshot));
            }
            for mut out in state.pump(&snapshot, std::time::Instant::now()) {
                // A stream of one type is an Envoy without ADS (upstream's bootstrap).
                if matches!(only, Some(ResourceType::Cluster | ResourceType::Listener)) {
                    for r in &mut out.resources {
                        *r = xds::per_type::without_ads(out.resource_type, r);
                    }
                }
                let i = index(out.resource_type);
                inner.stats.pushes[i].fetch_add(1, Ordering::Relaxed);
                inner.stats.resources_sent[i].fetch_add(out.resources.len() as u64, Ordering::Relaxed);
                debug!(node = %node.id, %fleet, r#type = out.resource_type.short(), nonce = %out.nonce, resources = out.resources.len(), removed = out.removed.len(), "xDS push");
                if tx.send(Ok(P::outgoing(out))).await.is_err() {
                    return;
                }
            }
            if let Some(link) = &link {
                if let Some(guard) = &vhds_guard {
                    if state.synced(ResourceType::VirtualHost, &snapshot) {
                        link.vhds_synced(guard, &snapshot);
                    }
                } else if state.prerequisites_in_envoy() {
                    link.open_gate(&snapshot);
                }
            }
        }
        let deadline = state.deadline().map(tokio::time::Instant::from_std);
        let gate_changed = async {
            match (&mut gate, vhds) {
                (Some(gate), true) => gate.changed().await,
                _ => std::future::pending().await,
            }
        };
        let vhds_changed = async {
            match (&mut vhds_synced, vhds) {
                (Some(rx), false) => rx.changed().await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            msg = inbound.message() => match msg {
                Ok(Some(req)) => pending = Some(req),
                Ok(None) => return,
                Err(status) => {
                    debug!(node = %node.id, %status, "xDS stream ended");
                    return;
                }
            },
            changed = served.changed(), if !vhds => if changed.is_err() { return },
            changed = gate_changed => if changed.is_err() { return },
            changed = vhds_changed => if changed.is_err() { return },
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => {
                warn!(node = %node.id, %fleet, "Envoy did not ask for the endpoints of new clusters in time; sending listeners and routes anyway");
            }
        }
    }
}

fn record(inner: &Inner, fleet: &str, node: &str, feedback: Feedback) {
    let mut fleets = inner.fleets.lock().expect("fleets lock");
    match feedback {
        Feedback::Ack(t, resources) => fleets.accepted(fleet, t, &resources),
        Feedback::Nack(t, resources, error) => {
            inner.stats.nacks[index(t)].fetch_add(1, Ordering::Relaxed);
            let names: Vec<&str> = resources.iter().map(|r| &*r.name).collect();
            warn!(%node, %fleet, r#type = t.short(), ?names, %error, "Envoy rejected configuration; serving the last accepted version");
            fleets.rejected(fleet, t, &resources, &error);
        }
    }
}

struct ConnectionGuard(Arc<Inner>);

/// A stream's part in its fleet's state ([`crate::fleets::Fleets::watch`]), given up when the
/// stream ends.
struct Watching {
    inner: Arc<Inner>,
    fleet: String,
    only: Option<ResourceType>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.inner.fleets.lock().expect("fleets lock").unwatch(&self.fleet, self.only);
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.stats.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

#[tonic::async_trait]
impl AggregatedDiscoveryService for XdsServer {
    type StreamAggregatedResourcesStream = ResponseStream<DiscoveryResponse>;
    type DeltaAggregatedResourcesStream = ResponseStream<DeltaDiscoveryResponse>;

    async fn stream_aggregated_resources(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Self::StreamAggregatedResourcesStream>, Status> {
        Ok(Response::new(self.open::<Sotw>(request, None)))
    }

    async fn delta_aggregated_resources(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaAggregatedResourcesStream>, Status> {
        Ok(Response::new(self.open::<Delta>(request, None)))
    }
}

/// Implements one per-type discovery service over the shared stream driver.
macro_rules! per_type_service {
    ($trait:ident, $t:expr, $stream:ident, $delta_stream:ident, $stream_fn:ident, $delta_fn:ident, $fetch_fn:ident) => {
        #[tonic::async_trait]
        impl $trait for XdsServer {
            type $stream = ResponseStream<DiscoveryResponse>;
            type $delta_stream = ResponseStream<DeltaDiscoveryResponse>;

            async fn $stream_fn(
                &self,
                request: Request<Streaming<DiscoveryRequest>>,
            ) -> Result<Response<Self::$stream>, Status> {
                Ok(Response::new(self.open::<Sotw>(request, Some($t))))
            }

            async fn $delta_fn(
                &self,
                request: Request<Streaming<DeltaDiscoveryRequest>>,
            ) -> Result<Response<Self::$delta_stream>, Status> {
                Ok(Response::new(self.open::<Delta>(request, Some($t))))
            }

            async fn $fetch_fn(
                &self,
                _request: Request<DiscoveryRequest>,
            ) -> Result<Response<DiscoveryResponse>, Status> {
                Err(Status::unimplemented("REST-style fetch is not served; use a stream"))
            }
        }
    };
}

per_type_service!(
    ClusterDiscoveryService,
    ResourceType::Cluster,
    StreamClustersStream,
    DeltaClustersStream,
    stream_clusters,
    delta_clusters,
    fetch_clusters
);
per_type_service!(
    EndpointDiscoveryService,
    ResourceType::Endpoint,
    StreamEndpointsStream,
    DeltaEndpointsStream,
    stream_endpoints,
    delta_endpoints,
    fetch_endpoints
);
per_type_service!(
    ListenerDiscoveryService,
    ResourceType::Listener,
    StreamListenersStream,
    DeltaListenersStream,
    stream_listeners,
    delta_listeners,
    fetch_listeners
);
per_type_service!(
    RouteDiscoveryService,
    ResourceType::Route,
    StreamRoutesStream,
    DeltaRoutesStream,
    stream_routes,
    delta_routes,
    fetch_routes
);
// Upstream's bootstrap reads its runtime layer `dynamic` over a stream of its own.
per_type_service!(
    RuntimeDiscoveryService,
    ResourceType::Runtime,
    StreamRuntimeStream,
    DeltaRuntimeStream,
    stream_runtime,
    delta_runtime,
    fetch_runtime
);
per_type_service!(
    SecretDiscoveryService,
    ResourceType::Secret,
    StreamSecretsStream,
    DeltaSecretsStream,
    stream_secrets,
    delta_secrets,
    fetch_secrets
);

/// VHDS: the virtual hosts of Delta streams' route configurations, on a stream of their own (as
/// Envoy requires).
#[tonic::async_trait]
impl VirtualHostDiscoveryService for XdsServer {
    type DeltaVirtualHostsStream = ResponseStream<DeltaDiscoveryResponse>;

    async fn delta_virtual_hosts(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaVirtualHostsStream>, Status> {
        let scope = request
            .metadata()
            .get(xds::VHDS_ROUTE_CONFIGURATION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Ok(Response::new(self.open_scoped::<Delta>(request, Some(ResourceType::VirtualHost), scope)))
    }
}
