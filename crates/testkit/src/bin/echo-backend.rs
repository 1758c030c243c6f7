//! A demo backend for the quickstart: answers every request with what it saw.

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:9000".into());
    let name = args.next().unwrap_or_else(|| "demo-backend".into());
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        eprintln!("echo-backend {name} listening on {addr}");
        testkit::serve_echo(listener, name, None).await;
        Ok(())
    })
}
