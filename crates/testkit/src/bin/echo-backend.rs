//! A demo backend for the quickstart: answers every request with what it saw. Without arguments
//! but with `PORT` set it stands in for the ealen/echo-server image (upstream's e2e suites run it
//! in pods): all addresses on that port, named after `POD_NAME`.
//!
//! `echo-backend ADDRESS NAME [CERT.pem KEY.pem]`: with a certificate and key it speaks HTTPS.

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let image_port = std::env::var("PORT").ok().filter(|_| std::env::args().len() == 1);
    let addr = match &image_port {
        Some(port) => format!("0.0.0.0:{port}"),
        None => args.next().unwrap_or_else(|| "127.0.0.1:9000".into()),
    };
    let name = match &image_port {
        Some(_) => std::env::var("POD_NAME").unwrap_or_else(|_| "echo-server".into()),
        None => args.next().unwrap_or_else(|| "demo-backend".into()),
    };
    let tls = match (args.next(), args.next()) {
        (Some(cert), Some(key)) => {
            Some(testkit::tls_acceptor(&std::fs::read_to_string(cert)?, &std::fs::read_to_string(key)?)?)
        }
        _ => None,
    };
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        eprintln!("echo-backend {name} listening on {addr}");
        testkit::serve_echo(listener, name, tls).await;
        Ok(())
    })
}
