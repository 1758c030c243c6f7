//! An OpenTelemetry collector for the tests: it serves OTLP's trace service over gRPC (h2c) on
//! loopback and keeps every span it receives, with its resource's `service.name` and its
//! attributes as strings.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};

/// A span as the collector received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The resource's `service.name`.
    pub service: String,
    /// The span's name.
    pub name: String,
    /// The trace id, in hex.
    pub trace_id: String,
    /// The span's kind (OTLP's numbering: 2 server, 3 client).
    pub kind: i32,
    /// The span's attributes, their values as strings.
    pub attributes: BTreeMap<String, String>,
}

/// A running collector; stopped when dropped.
pub struct OtlpCollector {
    /// Where it listens.
    pub addr: SocketAddr,
    spans: Arc<Mutex<Vec<Span>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl OtlpCollector {
    /// Serves on a free port of 127.0.0.1.
    pub async fn start() -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let service = Collector { spans: Arc::clone(&spans) };
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(service))
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self { addr, spans, _stop: stop })
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().expect("not poisoned").clone()
    }
}

struct Collector {
    spans: Arc<Mutex<Vec<Span>>>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut received = Vec::new();
        for resource in request.into_inner().resource_spans {
            let resource_attributes = resource.resource.map(|r| attributes(&r.attributes)).unwrap_or_default();
            let service = resource_attributes.get("service.name").cloned().unwrap_or_default();
            for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                received.push(Span {
                    service: service.clone(),
                    name: span.name,
                    trace_id: span.trace_id.iter().map(|b| format!("{b:02x}")).collect(),
                    kind: span.kind,
                    attributes: attributes(&span.attributes),
                });
            }
        }
        self.spans.lock().expect("not poisoned").extend(received);
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter().map(|kv| (kv.key.clone(), kv.value.as_ref().map(text).unwrap_or_default())).collect()
}

fn text(value: &AnyValue) -> String {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}
