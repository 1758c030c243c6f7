//! What the test-cluster binaries (the pod runner, the cert-manager stand-in) share as processes:
//! logging to stderr and stopping on SIGTERM or Ctrl-C.

/// Logs to stderr, colour only on a terminal; `RUST_LOG` overrides the `info` level.
pub fn init_logs() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("signal handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
