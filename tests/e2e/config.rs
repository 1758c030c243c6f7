//! Global configuration as a Contour user gives it: contour.yaml and `contour serve`'s flags,
//! each key proven by what Envoy does with real traffic.

use std::net::SocketAddr;
use std::time::Duration;

use testkit::{Backend, Request, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{Serve, extension_service, service};

/// One HTTPProxy `web` for `www.example.com`, every path to the backend `web`.
fn objects(backend: SocketAddr) -> String {
    [
        service("web", &[backend]),
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: web, namespace: default}\nspec:\n  virtualhost: {fqdn: www.example.com}\n  routes: [{services: [{name: web, port: 80}]}]\n".into(),
    ]
    .concat()
}

/// Waits until the default fleet's HTTP port answers `www.example.com` with 200.
async fn served(serve: &Serve) -> anyhow::Result<()> {
    let addr = SocketAddr::from(([127, 0, 0, 1], serve.http));
    let ok = testkit::eventually(Duration::from_secs(20), || async move {
        testkit::request(addr, &Request::get("www.example.com", "/")).await.ok().filter(|r| r.status == 200)
    })
    .await;
    anyhow::ensure!(ok.is_some(), "www.example.com never served; controller log:\n{}", serve.log());
    Ok(())
}

/// Waits until `host` is routed (any answer but 404) and returns the first such answer.
async fn routed(serve: &Serve, host: &'static str) -> anyhow::Result<Response> {
    let addr = SocketAddr::from(([127, 0, 0, 1], serve.http));
    let answer = testkit::eventually(Duration::from_secs(20), || async move {
        testkit::request(addr, &Request::get(host, "/")).await.ok().filter(|r| r.status != 404)
    })
    .await;
    answer.ok_or_else(|| anyhow::anyhow!("{host} never routed; controller log:\n{}", serve.log()))
}

async fn get(serve: &Serve, req: &Request) -> anyhow::Result<Response> {
    testkit::request(SocketAddr::from(([127, 0, 0, 1], serve.http)), req).await
}

/// `gzip -dc`, the tool a user would reach for.
fn gunzip(bytes: &[u8]) -> anyhow::Result<String> {
    let mut child = std::process::Command::new("gzip")
        .arg("-dc")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    std::io::Write::write_all(&mut child.stdin.take().expect("piped"), bytes)?;
    let out = child.wait_with_output()?;
    anyhow::ensure!(out.status.success(), "gzip -dc failed");
    Ok(String::from_utf8(out.stdout)?)
}

/// With no configuration at all, Envoy logs every request to its standard output in Envoy's
/// text format, compresses with gzip, and names itself in the Server header, as upstream.
#[tokio::test]
async fn without_configuration_envoy_logs_every_request_and_compresses_with_gzip() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let serve = Serve::start(&objects(web.addr), None, &[])?;
    let envoy = serve.envoy().await?;
    served(&serve).await?;

    let r = get(&serve, &Request::get("www.example.com", "/logged?q=1").header("User-Agent", "config-test")).await?;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("server"), Some("envoy"), "upstream's default overwrites the Server header");
    let line = envoy.stdout_line(|l| l.contains("/logged?q=1")).await;
    let line = line.unwrap_or_else(|| panic!("no access log line; stdout:\n{}", envoy.stdout()));
    // Envoy's default format: `[time] "METHOD PATH PROTOCOL" CODE FLAGS ... "USER-AGENT" ... "AUTHORITY" "UPSTREAM"`.
    assert!(line.contains(r#""GET /logged?q=1 HTTP/1.1" 200"#), "{line}");
    assert!(line.contains(r#""config-test""#) && line.contains(r#""www.example.com""#), "{line}");
    assert!(line.contains(&web.addr.to_string()), "the upstream host: {line}");

    let r = get(&serve, &Request::get("www.example.com", "/zipped").header("Accept-Encoding", "gzip")).await?;
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let body: serde_json::Value = serde_json::from_str(&gunzip(&r.raw)?)?;
    assert_eq!(body["path"], "/zipped");
    // Upstream's dashboards read the default fleet's HTTP statistics under `ingress_http`.
    assert!(envoy.counter_sum("http.ingress_http.downstream_rq_total").await? >= 2);
    Ok(())
}

/// contour.yaml's access log, compression, Server header and X-Forwarded-For keys.
#[tokio::test]
async fn contour_yaml_sets_the_access_log_compression_server_header_and_trusted_hops() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let config = r#"
accesslog-format: json
json-fields: ["@timestamp", method, path, response_code, contour_config_name, "tenant=%REQ(X-TENANT)%"]
accesslog-level: error
compression: {algorithm: disabled}
serverHeaderTransformation: pass_through
network: {num-trusted-hops: 1}
"#;
    let serve = Serve::start(&objects(web.addr), Some(config), &[])?;
    let envoy = serve.envoy().await?;
    served(&serve).await?;

    // Level `error` logs 300 and above only: a 200 leaves no line, a 503 does.
    get(&serve, &Request::get("www.example.com", "/fine")).await?;
    let r = get(
        &serve,
        &Request::get("www.example.com", "/broken").header("X-Echo-Status", "503").header("X-Tenant", "blue"),
    )
    .await?;
    assert_eq!(r.status, 503);
    let line = envoy.stdout_line(|l| l.contains("/broken")).await;
    let line = line.unwrap_or_else(|| panic!("no access log line; stdout:\n{}", envoy.stdout()));
    let json: serde_json::Value = serde_json::from_str(&line)?;
    assert_eq!(json["method"], "GET");
    assert_eq!(json["response_code"], 503);
    assert_eq!(json["tenant"], "blue", "a custom field: {line}");
    assert_eq!(json["contour_config_name"], "web", "the route's HTTPProxy: {line}");
    assert!(json["@timestamp"].is_string());
    assert!(!envoy.stdout().contains("/fine"), "a 200 is below level error:\n{}", envoy.stdout());

    let r = get(&serve, &Request::get("www.example.com", "/plain").header("Accept-Encoding", "gzip")).await?;
    assert_eq!(r.header("content-encoding"), None, "compression disabled");
    assert_eq!(r.echo()["path"], "/plain");
    assert_eq!(r.header("server"), None, "pass_through: the backend sent none, so none");

    // One trusted hop: the client's own X-Forwarded-For entry is the client's address.
    let r = get(&serve, &Request::get("www.example.com", "/").header("X-Forwarded-For", "203.0.113.7")).await?;
    assert_eq!(r.echo()["headers"]["x-envoy-external-address"], "203.0.113.7");
    Ok(())
}

/// `accesslog-filter` (a contour-rs extension): only requests with a listed status that took
/// at least the minimum duration are logged.
#[tokio::test]
async fn accesslog_filter_logs_only_the_statuses_and_durations_asked_for() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let config = "accesslog-filter: {status-codes: [404, \"500-599\"], min-duration: 200ms}\n";
    let serve = Serve::start(&objects(web.addr), Some(config), &[])?;
    let envoy = serve.envoy().await?;
    served(&serve).await?;
    let send = |path: &str, status: &str, delay: &str| {
        Request::get("www.example.com", path).header("X-Echo-Status", status).header("X-Echo-Delay-Ms", delay)
    };
    for (path, status, delay) in [
        ("/slow-503", "503", "400"),
        ("/fast-503", "503", "0"),
        ("/slow-200", "200", "400"),
        ("/slow-418", "418", "400"),
        ("/slow-404", "404", "400"),
    ] {
        let r = get(&serve, &send(path, status, delay)).await?;
        assert_eq!(r.status.to_string(), status, "{path}");
    }
    for logged in ["/slow-503", "/slow-404"] {
        let line = envoy.stdout_line(|l| l.contains(logged)).await;
        assert!(line.is_some(), "{logged} was not logged; stdout:\n{}", envoy.stdout());
    }
    let out = envoy.stdout();
    for skipped in ["/fast-503", "/slow-200", "/slow-418"] {
        assert!(!out.contains(skipped), "{skipped} was logged:\n{out}");
    }
    Ok(())
}

/// `--use-proxy-protocol`: the address in the PROXY header is the client's.
#[tokio::test]
async fn proxy_protocol_gives_the_client_address() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let serve = Serve::start(&objects(web.addr), None, &["--use-proxy-protocol"])?;
    let _envoy = serve.envoy().await?;
    let addr = SocketAddr::from(([127, 0, 0, 1], serve.http));
    let request = "PROXY TCP4 198.51.100.9 127.0.0.1 40000 80\r\nGET / HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n";
    let answer = testkit::eventually(Duration::from_secs(20), || async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut text = String::new();
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut text)).await.ok()?.ok()?;
        text.starts_with("HTTP/1.1 200").then_some(text)
    })
    .await;
    let answer = answer.unwrap_or_else(|| panic!("never served; controller log:\n{}", serve.log()));
    let body = &answer[answer.find("\r\n\r\n").expect("a body") + 4..];
    let echo: serde_json::Value = serde_json::from_str(body)?;
    assert_eq!(echo["headers"]["x-forwarded-for"], "198.51.100.9", "{echo}");
    // Without the header, the connection is refused rather than misread.
    let plain = testkit::request(addr, &Request::get("www.example.com", "/")).await;
    assert!(plain.is_err() || plain.is_ok_and(|r| r.status != 200), "a request without PROXY header is not served");
    Ok(())
}

/// `timeouts.stream-idle-timeout`: when the backend stays silent longer, Envoy answers for it
/// (504 `stream timeout`: the request was complete, the response never started).
#[tokio::test]
async fn stream_idle_timeout_closes_a_silent_request() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let serve = Serve::start(&objects(web.addr), Some("timeouts: {stream-idle-timeout: 1s}\n"), &[])?;
    let _envoy = serve.envoy().await?;
    served(&serve).await?;
    let started = std::time::Instant::now();
    let r = get(&serve, &Request::get("www.example.com", "/slow").header("X-Echo-Delay-Ms", "4000")).await?;
    assert_eq!((r.status, r.body.as_str()), (504, "stream timeout"));
    assert!(started.elapsed() < Duration::from_secs(3), "closed after {:?}", started.elapsed());
    assert_eq!(get(&serve, &Request::get("www.example.com", "/quick")).await?.status, 200);
    Ok(())
}

/// A bad key stops `contour serve` at once, naming the key.
#[tokio::test]
async fn a_bad_value_stops_start_up_naming_the_key() -> anyhow::Result<()> {
    let mut serve = Serve::start("", Some("json-fields: [no_such_field]\naccesslog-format: json\n"), &[])?;
    let status = tokio::time::timeout(Duration::from_secs(10), serve.child.wait()).await??;
    assert!(!status.success());
    let log = serve.log();
    assert!(log.contains("json-fields") && log.contains("no_such_field"), "{log}");
    Ok(())
}

/// Start-up problems are said once, with what to do: no cluster found, or a `--from-dir` that
/// does not exist. And a log that goes to a file carries no colour codes.
#[tokio::test]
async fn start_up_errors_say_what_to_do_once() -> anyhow::Result<()> {
    let home = std::env::temp_dir().join(format!("contour-no-cluster-{}", testkit::free_port()));
    std::fs::create_dir_all(&home)?;
    let run = |args: &'static [&'static str]| {
        let home = home.clone();
        async move {
            tokio::process::Command::new(testkit::workspace_binary("contour-serve")?)
                .args(args)
                .env_remove("KUBECONFIG")
                .env_remove("KUBERNETES_SERVICE_HOST")
                .env("HOME", &home)
                .kill_on_drop(true)
                .output()
                .await
                .map_err(anyhow::Error::from)
        }
    };
    let out = tokio::time::timeout(Duration::from_secs(20), run(&["--insecure", "--xds-port=0"])).await??;
    let _ = std::fs::remove_dir_all(&home);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.matches("no Kubernetes cluster found").count(), 1, "{err}");
    assert!(err.contains("--kubeconfig") && err.contains("--incluster") && err.contains("--from-dir"), "{err}");
    assert!(!err.contains("Caused by"), "{err}");

    let out = tokio::time::timeout(Duration::from_secs(20), run(&["--from-dir=/nonexistent/objects"])).await??;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refuses to start: {err}");
    assert!(err.contains("/nonexistent/objects") && err.contains("no such directory"), "{err}");

    let web = Backend::start("web").await?;
    let serve = Serve::start(&objects(web.addr), None, &[])?;
    let _envoy = serve.envoy().await?;
    served(&serve).await?;
    let log = serve.log();
    assert!(log.contains("contour-serve starting") && !log.contains('\u{1b}'), "plain text:\n{log}");
    Ok(())
}

/// `policy`: headers on every HTTPProxy service (a service's own value wins), and on Ingress
/// backends only with `applyToIngress: true`.
#[tokio::test]
async fn global_header_policy_reaches_httpproxy_and_ingress_only_when_asked() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let objects = [
        service("web", &[web.addr]),
        r#"---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: web, namespace: default}
spec:
  virtualhost: {fqdn: www.example.com}
  routes:
  - services: [{name: web, port: 80}]
  - conditions: [{prefix: /own}]
    services: [{name: web, port: 80, requestHeadersPolicy: {set: [{name: X-Global, value: own}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: legacy, namespace: default}
spec:
  rules:
  - host: ingress.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
"#
        .into(),
    ]
    .concat();
    let policy = |apply: bool| {
        format!(
            "policy:\n  request-headers: {{set: {{X-Global: \"%CONTOUR_NAMESPACE%\"}}, remove: [X-Secret]}}\n  response-headers: {{set: {{X-Policy: global}}}}\n  applyToIngress: {apply}\n"
        )
    };
    for apply in [false, true] {
        let serve = Serve::start(&objects, Some(&policy(apply)), &[])?;
        let _envoy = serve.envoy().await?;
        served(&serve).await?;
        let r = get(&serve, &Request::get("www.example.com", "/").header("X-Secret", "s3cr3t")).await?;
        let headers = &r.echo()["headers"];
        assert_eq!(headers["x-global"], "default", "set, with the namespace filled in: {headers}");
        assert!(headers.get("x-secret").is_none(), "removed: {headers}");
        assert_eq!(r.header("x-policy"), Some("global"));
        let r = get(&serve, &Request::get("www.example.com", "/own")).await?;
        assert_eq!(r.echo()["headers"]["x-global"], "own", "the service's own value wins");

        let r = get(&serve, &Request::get("ingress.example.com", "/").header("X-Secret", "s3cr3t")).await?;
        assert_eq!(r.status, 200);
        let headers = &r.echo()["headers"];
        match apply {
            false => {
                assert!(headers.get("x-global").is_none(), "not on Ingress by default: {headers}");
                assert_eq!(headers["x-secret"], "s3cr3t");
                assert_eq!(r.header("x-policy"), None);
            }
            true => {
                assert_eq!(headers["x-global"], "default", "{headers}");
                assert!(headers.get("x-secret").is_none(), "{headers}");
                assert_eq!(r.header("x-policy"), Some("global"));
            }
        }
    }
    Ok(())
}

/// `enableExternalNameService`: off by default (the route answers 503), and when on, Envoy
/// resolves the Service's name itself; names of Envoy itself (localhost, loopback addresses)
/// and link-local addresses (the cloud metadata service) stay refused.
#[tokio::test]
async fn external_name_services_answer_only_when_enabled_and_never_for_localhost() -> anyhow::Result<()> {
    // Outside the cluster: a backend in a network namespace of its own, not on loopback.
    let outside = testkit::NetnsBackend::start("outside").await?;
    let (ip, port) = (outside.addr.ip(), outside.addr.port());
    let service = |name: &str, external: &str| {
        format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: default}}\nspec: {{type: ExternalName, externalName: \"{external}\", ports: [{{port: {port}}}]}}\n"
        )
    };
    let proxy = |name: &str, service: &str| {
        format!(
            "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  virtualhost: {{fqdn: {name}.example.com}}\n  routes: [{{services: [{{name: {service}, port: {port}}}]}}]\n"
        )
    };
    let refused = [("itself", "localhost"), ("loopback", "127.0.0.7"), ("metadata", "169.254.169.254")];
    let mut objects = service("outside", &ip.to_string()) + &proxy("www", "outside");
    for (name, external) in refused {
        objects += &(service(name, external) + &proxy(name, name));
    }
    for enabled in [false, true] {
        let serve = Serve::start(&objects, Some(&format!("enableExternalNameService: {enabled}\n")), &[])?;
        let _envoy = serve.envoy().await?;
        let answer = routed(&serve, "www.example.com").await?;
        match enabled {
            false => assert_eq!(answer.status, 503, "refused by default"),
            true => {
                assert_eq!((answer.status, answer.header("x-backend")), (200, Some("outside")), "{}", answer.body);
                for (name, external) in refused {
                    let r = get(&serve, &Request::get(&format!("{name}.example.com"), "/")).await?;
                    assert_eq!(r.status, 503, "{external} is refused");
                }
            }
        }
    }
    Ok(())
}

/// `tls.envoy-client-certificate`: Envoy presents this certificate to backends it speaks TLS to,
/// so a backend behind mutual TLS answers; without it, the backend refuses the handshake.
#[tokio::test]
async fn envoy_presents_its_client_certificate_to_tls_backends() -> anyhow::Result<()> {
    let (server_ca, client_ca) = (testkit::Ca::new()?, testkit::Ca::new()?);
    let secure = Backend::start_mtls("secure", &server_ca.issue(&["secure.internal"])?, &client_ca.pem()).await?;
    let objects = [
        service("secure", &[secure.addr]),
        crate::tls::tls_secret("envoy-client", &client_ca.issue(&["envoy"])?),
        r#"---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: web, namespace: default}
spec:
  virtualhost: {fqdn: www.example.com}
  routes: [{services: [{name: secure, port: 80, protocol: tls}]}]
"#
        .into(),
    ]
    .concat();
    let config = "tls:\n  envoy-client-certificate: {name: envoy-client, namespace: default}\n";
    for configured in [false, true] {
        let serve = Serve::start(&objects, configured.then_some(config), &[])?;
        let _envoy = serve.envoy().await?;
        let answer = routed(&serve, "www.example.com").await?;
        match configured {
            false => assert_eq!(answer.status, 503, "the backend refuses a client without a certificate"),
            true => assert_eq!((answer.status, answer.header("x-backend")), (200, Some("secure")), "{}", answer.body),
        }
    }
    Ok(())
}

/// `listener.max-connections-per-listener`, delivered as upstream delivers it (the runtime layer
/// `dynamic` over RTDS): with a limit of 1, a second connection is closed while the first is
/// open, and served once it is gone.
#[tokio::test]
async fn the_listener_connection_limit_reaches_envoy_over_rtds() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let config = "listener: {max-connections-per-listener: 1}\n";
    let serve = Serve::start(&objects(web.addr), Some(config), &[])?;
    let _envoy = serve.envoy().await?;
    served(&serve).await?;
    let addr = SocketAddr::from(([127, 0, 0, 1], serve.http));
    // The first connection stays open after its answer (keep-alive). Envoy may still count the
    // connections that `served` closed a moment ago, so it is retried until it is served.
    let first = testkit::eventually(Duration::from_secs(10), || async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        stream.write_all(b"GET / HTTP/1.1\r\nHost: www.example.com\r\n\r\n").await.ok()?;
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await.ok()?.ok()?;
        buf[..n].starts_with(b"HTTP/1.1 200").then_some(stream)
    })
    .await;
    let first = first.expect("a first connection served");
    let second = testkit::request(addr, &Request::get("www.example.com", "/")).await;
    assert!(second.is_err(), "a second connection is closed at the limit: {:?}", second.map(|r| r.status));
    drop(first);
    let again = testkit::eventually(Duration::from_secs(5), || async move {
        testkit::request(addr, &Request::get("www.example.com", "/")).await.ok().filter(|r| r.status == 200)
    })
    .await;
    assert!(again.is_some(), "served again once the first connection is gone");
    Ok(())
}

/// A metrics server's HTTPS as a user sets it up: certificate files for `name` signed by one CA
/// (written to a scratch directory, removed on drop), and a scraper's client certificate from
/// another, whose CA the server is told to require.
struct ScrapeTls {
    dir: std::path::PathBuf,
    name: &'static str,
    server_ca: String,
    client: testkit::Issued,
}

impl ScrapeTls {
    fn new(name: &'static str) -> anyhow::Result<Self> {
        let (server_ca, client_ca) = (testkit::Ca::new()?, testkit::Ca::new()?);
        let dir = std::env::temp_dir().join(format!("contour-scrape-tls-{}", testkit::free_port()));
        std::fs::create_dir_all(&dir)?;
        let server = server_ca.issue(&[name])?;
        for (file, pem) in
            [("tls.crt", server.cert_pem.as_str()), ("tls.key", &server.key_pem), ("ca.crt", &client_ca.pem())]
        {
            std::fs::write(dir.join(file), pem)?;
        }
        Ok(Self { dir, name, server_ca: server_ca.pem(), client: client_ca.issue(&["prometheus"])? })
    }

    /// The contour.yaml keys naming the files (`metrics.contour` and `metrics.envoy` take the same).
    fn keys(&self) -> String {
        let path = |file: &str| self.dir.join(file).display().to_string();
        format!(
            "server-certificate-path: {}, server-key-path: {}, ca-certificate-path: {}",
            path("tls.crt"),
            path("tls.key"),
            path("ca.crt")
        )
    }

    /// Scrapes `path` with the client certificate until it answers (at most 20 s).
    async fn scrape(&self, addr: SocketAddr, path: &str) -> Option<Response> {
        let req = Request::get(self.name, path);
        testkit::eventually(Duration::from_secs(20), || async {
            testkit::request_mtls(addr, self.name, &self.server_ca, &self.client, &req).await.ok()
        })
        .await
    }

    /// Scrapes `path` once without a client certificate.
    async fn scrape_anonymously(&self, addr: SocketAddr, path: &str) -> anyhow::Result<Response> {
        testkit::request_tls(addr, self.name, &self.server_ca, &Request::get(self.name, path)).await
    }
}

impl Drop for ScrapeTls {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `metrics.envoy` with certificate files: Envoy's statistics over HTTPS on their own port, only
/// for scrapers with a client certificate from the CA; readiness stays plain HTTP.
#[tokio::test]
async fn envoy_statistics_over_https_refuse_a_client_without_a_certificate() -> anyhow::Result<()> {
    let tls = ScrapeTls::new("envoy-metrics")?;
    let port = testkit::free_port();
    let config = format!("metrics:\n  envoy: {{address: 127.0.0.1, port: {port}, {}}}\n", tls.keys());
    let serve = Serve::start("", Some(&config), &[])?;
    let _envoy = serve.envoy().await?;
    let metrics = SocketAddr::from(([127, 0, 0, 1], port));
    let scraped = tls.scrape(metrics, "/stats/prometheus").await;
    let scraped = scraped.unwrap_or_else(|| panic!("never scraped; controller log:\n{}", serve.log()));
    assert_eq!(scraped.status, 200);
    assert!(
        scraped.body.contains("envoy_server_live"),
        "Prometheus text: {}",
        &scraped.body[..200.min(scraped.body.len())]
    );
    let anonymous = tls.scrape_anonymously(metrics, "/stats/prometheus").await;
    assert!(anonymous.is_err(), "a scraper without a certificate is refused: {:?}", anonymous.map(|r| r.status));
    let plain = testkit::request(metrics, &Request::get("envoy-metrics", "/stats/prometheus")).await;
    assert!(plain.is_err() || plain.is_ok_and(|r| r.status != 200), "no plain HTTP on the statistics port");
    let ready = testkit::request(SocketAddr::from(([127, 0, 0, 1], serve.stats)), &Request::get("x", "/ready")).await?;
    assert_eq!(ready.status, 200, "readiness stays plain HTTP on its own port");
    Ok(())
}

/// `metrics.contour` with certificate files: contour-serve's `/metrics` over HTTPS, only for
/// scrapers with a client certificate from the CA; health stays plain HTTP on its own port.
#[tokio::test]
async fn contour_metrics_over_https_refuse_a_client_without_a_certificate() -> anyhow::Result<()> {
    let tls = ScrapeTls::new("contour-metrics")?;
    let config = format!("metrics:\n  contour: {{{}}}\n", tls.keys());
    let serve = Serve::start("", Some(&config), &[])?;
    let metrics = SocketAddr::from(([127, 0, 0, 1], serve.metrics));
    let scraped = tls.scrape(metrics, "/metrics").await;
    let scraped = scraped.unwrap_or_else(|| panic!("never scraped; log:\n{}", serve.log()));
    assert_eq!(scraped.status, 200);
    assert!(scraped.body.contains("contour_build_info"), "{}", &scraped.body[..200.min(scraped.body.len())]);
    let anonymous = tls.scrape_anonymously(metrics, "/metrics").await;
    assert!(anonymous.is_err(), "a scraper without a certificate is refused: {:?}", anonymous.map(|r| r.status));
    let health = SocketAddr::from(([127, 0, 0, 1], serve.health));
    assert_eq!(testkit::request(health, &Request::get("x", "/healthz")).await?.status, 200);
    assert_eq!(testkit::request(health, &Request::get("x", "/metrics")).await?.status, 404, "no plain metrics");
    Ok(())
}

/// `tls.fingerprint`: the TLS inspector computes the client's JA4 fingerprint, which the access
/// log prints under upstream's field name.
#[tokio::test]
async fn the_ja4_fingerprint_of_a_tls_client_reaches_the_access_log() -> anyhow::Result<()> {
    let ca = testkit::Ca::new()?;
    let web = Backend::start("web").await?;
    let objects = [
        service("web", &[web.addr]),
        crate::tls::tls_secret("cert", &ca.issue(&["secure.example.com"])?),
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: secure, namespace: default}\nspec:\n  virtualhost: {fqdn: secure.example.com, tls: {secretName: cert}}\n  routes: [{services: [{name: web, port: 80}]}]\n".into(),
    ]
    .concat();
    let config = "tls: {fingerprint: {ja4: true}}\naccesslog-format: json\njson-fields: [path, tls_ja4_fingerprint]\n";
    let serve = Serve::start(&objects, Some(config), &[])?;
    let envoy = serve.envoy().await?;
    let addr = SocketAddr::from(([127, 0, 0, 1], serve.https));
    let pem = ca.pem();
    let req = Request::get("secure.example.com", "/fingerprinted");
    let answer =
        testkit::eventually(Duration::from_secs(20), || {
            let (pem, req) = (pem.clone(), req.clone());
            async move {
                testkit::request_tls(addr, "secure.example.com", &pem, &req).await.ok().filter(|r| r.status == 200)
            }
        })
        .await;
    assert!(answer.is_some(), "never served over TLS; log:\n{}", serve.log());
    let line = envoy.stdout_line(|l| l.contains("/fingerprinted")).await;
    let line = line.unwrap_or_else(|| panic!("no access log line; stdout:\n{}", envoy.stdout()));
    let json: serde_json::Value = serde_json::from_str(&line)?;
    let ja4 = json["tls_ja4_fingerprint"].as_str().unwrap_or_default();
    assert!(ja4.starts_with("t13") || ja4.starts_with("t12"), "a JA4 fingerprint: {line}");
    Ok(())
}

/// `runtime-settings`: the keys reach Envoy's runtime through the layer `dynamic`.
#[tokio::test]
async fn runtime_settings_reach_envoys_runtime() -> anyhow::Result<()> {
    let config = "runtime-settings:\n  contour.test.answer: 42\n  contour.test.enabled: true\n";
    let serve = Serve::start("", Some(config), &[])?;
    let envoy = serve.envoy().await?;
    let runtime = testkit::eventually(Duration::from_secs(20), || async {
        let body = envoy.admin_get("/runtime").await.ok()?;
        let json: serde_json::Value = serde_json::from_str(&body).ok()?;
        json["entries"]["contour.test.answer"].is_object().then_some(json)
    })
    .await;
    let runtime = runtime.unwrap_or_else(|| panic!("the key never reached Envoy; log:\n{}", serve.log()));
    let answer = runtime["entries"]["contour.test.answer"]["final_value"].as_str().unwrap_or_default();
    assert_eq!(answer.parse::<f64>().ok(), Some(42.0), "{runtime}");
    assert_eq!(runtime["entries"]["contour.test.enabled"]["final_value"], "true");
    assert!(runtime["layers"].as_array().is_some_and(|l| l.iter().any(|n| n == "dynamic")), "{runtime}");
    Ok(())
}

/// `globalExtAuth`: every virtual host's requests are checked by the named ExtensionService,
/// plain HTTP too, with the global context; a virtual host opts out with
/// `authorization.authPolicy.disabled`.
#[tokio::test]
async fn global_external_authorization_checks_every_virtual_host() -> anyhow::Result<()> {
    use base64::Engine;
    let web = Backend::start("web").await?;
    let auth = testkit::AuthServer::start(&[("alice", "wonderland")]).await?;
    let objects = [
        objects(web.addr),
        service("authz", &[auth.addr]),
        extension_service("authz", "authz"),
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: optout, namespace: default}\nspec:\n  virtualhost: {fqdn: optout.example.com, authorization: {authPolicy: {disabled: true}}}\n  routes: [{services: [{name: web, port: 80}]}]\n".into(),
    ]
    .concat();
    let config = "globalExtAuth:\n  extensionService: default/authz\n  responseTimeout: 2s\n  authPolicy: {context: {scope: global}}\n";
    let serve = Serve::start(&objects, Some(config), &[])?;
    let _envoy = serve.envoy().await?;
    let r = routed(&serve, "www.example.com").await?;
    assert_eq!(r.status, 401, "no credentials: {r:?}");
    let credentials = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("alice:wonderland"));
    let r = get(&serve, &Request::get("www.example.com", "/").header("authorization", &credentials)).await?;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.echo()["headers"]["auth-context-scope"], "global");
    let r = get(&serve, &Request::get("optout.example.com", "/")).await?;
    assert_eq!((r.status, r.header("x-backend")), (200, Some("web")), "the virtual host opted out: {r:?}");
    Ok(())
}

/// Upstream main's spellings: `globalExtAuth.httpSettings` with the lower-case keys upstream's
/// own YAML decoding writes, and an ExtensionService of `protocol: http/1.1`, the protocol of
/// an HTTP authorization server. Envoy asks the server over HTTP/1.1 under the prefix.
#[tokio::test]
async fn http_authorization_as_upstream_main_spells_it() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let auth = testkit::AuthServer::start_http(&[("alice", "wonderland")]).await?;
    let extension = "---\napiVersion: projectcontour.io/v1alpha1\nkind: ExtensionService\nmetadata: {name: authz, namespace: default}\nspec: {protocol: http/1.1, services: [{name: authz, port: 80}]}\n";
    let objects = [objects(web.addr), service("authz", &[auth.addr]), extension.into()].concat();
    let config = "globalExtAuth:
  extensionService: default/authz
  serviceType: http
  httpSettings:
    pathprefix: /verify
    allowedupstreamheaders: [{exact: auth-username}, {prefix: AUTH-P, ignorecase: true}]
";
    let serve = Serve::start(&objects, Some(config), &[])?;
    let _envoy = serve.envoy().await?;
    let r = routed(&serve, "www.example.com").await?;
    assert_eq!(r.status, 401, "no credentials: {r:?}");
    let credentials = testkit::basic("alice", "wonderland");
    let r = get(&serve, &Request::get("www.example.com", "/app").header("authorization", &credentials)).await?;
    assert_eq!((r.status, r.header("x-backend")), (200, Some("web")), "{r:?}");
    let seen = &r.echo()["headers"];
    assert_eq!(
        (seen["auth-username"].as_str(), seen["auth-path"].as_str(), seen["auth-protocol"].as_str()),
        (Some("alice"), Some("/verify/app"), Some("HTTP/1.1")),
        "the server saw HTTP/1.1 under the prefix and its allowed headers reach the backend: {seen}"
    );
    Ok(())
}

/// `rateLimitService`: the real rate-limit service (with Redis) counts a virtual host's
/// descriptors; a route opts out with `global.disabled`; with the service gone, failing
/// closed answers 500.
#[tokio::test]
async fn global_rate_limits_are_counted_by_the_rate_limit_service() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let config = "domain: contour\ndescriptors:\n- key: generic_key\n  value: vhost\n  rate_limit: {unit: minute, requests_per_unit: 2}\n";
    let mut limiter = testkit::RateLimitService::start(config).await?;
    let objects = [
        service("web", &[web.addr]),
        service("ratelimit", &[limiter.grpc]),
        extension_service("ratelimit", "ratelimit"),
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: web, namespace: default}\nspec:
  virtualhost:
    fqdn: www.example.com
    rateLimitPolicy: {global: {descriptors: [{entries: [{genericKey: {value: vhost}}]}]}}
  routes:
  - conditions: [{prefix: /unlimited}]
    rateLimitPolicy: {global: {disabled: true}}
    services: [{name: web, port: 80}]
  - services: [{name: web, port: 80}]\n"
            .into(),
        // A host whose descriptor the service has no limit for: its first answers take the
        // service's connection up (a check that times out then fails closed, as it should).
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: warm, namespace: default}\nspec:\n  virtualhost: {fqdn: warm.example.com, rateLimitPolicy: {global: {descriptors: [{entries: [{genericKey: {value: warm}}]}]}}}\n  routes: [{services: [{name: web, port: 80}]}]\n".into(),
    ]
    .concat();
    let contour = "rateLimitService:\n  extensionService: default/ratelimit\n  domain: contour\n  failOpen: false\n  enableXRateLimitHeaders: true\n";
    let serve = Serve::start(&objects, Some(contour), &[])?;
    let _envoy = serve.envoy().await?;
    let addr = SocketAddr::from(([127, 0, 0, 1], serve.http));
    let warm = testkit::eventually(Duration::from_secs(20), || async move {
        testkit::request(addr, &Request::get("warm.example.com", "/")).await.ok().filter(|r| r.status == 200)
    })
    .await;
    anyhow::ensure!(warm.is_some(), "the rate-limit service never answered a check; log:\n{}", serve.log());
    let first = routed(&serve, "www.example.com").await?;
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.header("x-ratelimit-limit").map(|l| l.starts_with('2')), Some(true), "{first:?}");
    let mut statuses = vec![first.status];
    for _ in 0..3 {
        statuses.push(get(&serve, &Request::get("www.example.com", "/")).await?.status);
    }
    assert_eq!(statuses, [200, 200, 429, 429], "two a minute");
    for _ in 0..3 {
        let r = get(&serve, &Request::get("www.example.com", "/unlimited")).await?;
        assert_eq!(r.status, 200, "the route ignores the host's limits: {r:?}");
    }
    // The service is gone: failing closed, requests get 500.
    limiter.stop();
    let down = testkit::eventually(Duration::from_secs(15), || async {
        get(&serve, &Request::get("www.example.com", "/")).await.ok().filter(|r| r.status == 500)
    })
    .await;
    assert!(down.is_some(), "no 500 with the rate-limit service down; log:\n{}", serve.log());
    Ok(())
}

/// The count is the rate-limit service's, not one Envoy's: what one Envoy of the fleet let
/// through counts for the next one. (The first Envoy is gone before the second starts, so which
/// Envoy answers is certain; the limit is per hour so no window ends mid-test.)
#[tokio::test]
async fn global_rate_limits_are_shared_by_the_envoys_of_a_fleet() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let config = "domain: contour\ndescriptors:\n- key: generic_key\n  value: vhost\n  rate_limit: {unit: hour, requests_per_unit: 2}\n";
    let limiter = testkit::RateLimitService::start(config).await?;
    let objects = [
        service("web", &[web.addr]),
        service("ratelimit", &[limiter.grpc]),
        extension_service("ratelimit", "ratelimit"),
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: web, namespace: default}\nspec:\n  virtualhost: {fqdn: www.example.com, rateLimitPolicy: {global: {descriptors: [{entries: [{genericKey: {value: vhost}}]}]}}}\n  routes: [{services: [{name: web, port: 80}]}]\n".into(),
    ]
    .concat();
    let contour = "rateLimitService: {extensionService: default/ratelimit, domain: contour, failOpen: false}\n";
    let serve = Serve::start(&objects, Some(contour), &[])?;
    let first = serve.envoy().await?;
    let r = routed(&serve, "www.example.com").await?;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(get(&serve, &Request::get("www.example.com", "/")).await?.status, 200);
    drop(first);
    let _second = serve.envoy().await?;
    let statuses = std::sync::Mutex::new(Vec::new());
    let limited = testkit::eventually(Duration::from_secs(20), || async {
        let r = get(&serve, &Request::get("www.example.com", "/")).await.ok()?;
        statuses.lock().expect("not poisoned").push(r.status);
        (r.status == 429).then_some(r)
    })
    .await;
    let statuses = statuses.into_inner().expect("not poisoned");
    assert!(limited.is_some(), "the second Envoy never answered 429: {statuses:?}; log:\n{}", serve.log());
    assert!(!statuses.contains(&200), "the second Envoy let a request through: {statuses:?}");
    Ok(())
}

/// `rateLimitService.failOpen`: with the service unreachable, requests go through when it is
/// true and get 500 when it is false.
#[tokio::test]
async fn global_rate_limits_fail_open_when_asked() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    // Nothing listens here: the service is down.
    let down = SocketAddr::from(([127, 0, 0, 1], testkit::free_port()));
    let objects = [
        service("web", &[web.addr]),
        service("ratelimit", &[down]),
        extension_service("ratelimit", "ratelimit"),
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: web, namespace: default}\nspec:\n  virtualhost: {fqdn: www.example.com, rateLimitPolicy: {global: {descriptors: [{entries: [{remoteAddress: {}}]}]}}}\n  routes: [{services: [{name: web, port: 80}]}]\n".into(),
    ]
    .concat();
    for (fail_open, status) in [(true, 200), (false, 500)] {
        let contour = format!(
            "rateLimitService: {{extensionService: default/ratelimit, domain: contour, failOpen: {fail_open}}}\n"
        );
        let serve = Serve::start(&objects, Some(&contour), &[])?;
        let _envoy = serve.envoy().await?;
        let r = routed(&serve, "www.example.com").await?;
        assert_eq!(r.status, status, "failOpen {fail_open}: {r:?}");
    }
    Ok(())
}

/// `tracing`: Envoy traces every request to the OpenTelemetry collector the ExtensionService
/// names, under the configured service name, with upstream's pod tags, the custom tags and the
/// path cut to `maxPathTagLength`; the backend gets the trace context. A virtual host's requests
/// are traced whichever front end made it.
#[tokio::test]
async fn tracing_sends_spans_to_the_opentelemetry_collector() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let collector = testkit::OtlpCollector::start().await?;
    let objects = [objects(web.addr), service("otel", &[collector.addr]), extension_service("otel", "otel")].concat();
    let config = "tracing:
  extensionService: default/otel
  serviceName: shop
  maxPathTagLength: 12
  customTags:
  - {tagName: team, literal: web}
  - {tagName: agent, requestHeaderName: X-Agent}
";
    let serve = Serve::start(&objects, Some(config), &[])?;
    let _envoy = serve.envoy().await?;
    assert_eq!(routed(&serve, "www.example.com").await?.status, 200);
    let r = get(&serve, &Request::get("www.example.com", "/a/long/path/to/trace").header("x-agent", "probe")).await?;
    assert_eq!(r.status, 200, "{r:?}");
    let traceparent = r.echo()["headers"]["traceparent"].as_str().map(str::to_string);
    let trace_id = traceparent.as_deref().and_then(|t| t.split('-').nth(1)).map(str::to_string);
    assert!(trace_id.is_some(), "the backend got no trace context: {r:?}");
    // Envoy sends its spans in batches, every 5 s.
    let spans = testkit::eventually(Duration::from_secs(20), || async {
        let spans: Vec<testkit::Span> =
            collector.spans().into_iter().filter(|s| Some(&s.trace_id) == trace_id.as_ref()).collect();
        (spans.len() >= 2).then_some(spans)
    })
    .await;
    let Some(spans) = spans else {
        anyhow::bail!("no spans of trace {trace_id:?}; received: {:?}; log:\n{}", collector.spans(), serve.log());
    };
    // The request's own span (server) and the one towards the backend (client).
    let kinds: std::collections::BTreeSet<i32> = spans.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [2, 3].into(), "{spans:#?}");
    let server = spans.iter().find(|s| s.kind == 2).expect("a server span");
    assert_eq!(server.service, "shop");
    let tag = |name: &str| server.attributes.get(name).map(String::as_str);
    assert_eq!((tag("team"), tag("agent")), (Some("web"), Some("probe")), "{server:#?}");
    assert_eq!(tag("podNamespace"), Some("projectcontour"), "{server:#?}");
    assert!(tag("podName").is_some_and(|n| n.starts_with("contour-envoy-")), "{server:#?}");
    let url = tag("http.url").unwrap_or_default();
    assert!(url.ends_with("/a/long/path"), "the path is cut to 12 bytes: {url}");
    assert_eq!(tag("http.status_code"), Some("200"), "{server:#?}");
    Ok(())
}
