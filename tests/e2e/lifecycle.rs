//! Changes over time: empty Services, live changes under load, and a rejected resource.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use testkit::{Backend, Request};
use xds::ResourceType;

use crate::harness::{GATEWAY, Harness, gateway, http_listener, http_route, service, single_route};

#[tokio::test]
async fn a_service_without_endpoints_gets_503_and_nothing_else_breaks() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    let yaml = [
        gateway(&http_listener("http", port)),
        service("web", &[web.addr]),
        service("empty", &[]),
        http_route("web", "  hostnames: [web.example.com]\n  rules: [{backendRefs: [{name: web, port: 80}]}]"),
        http_route("empty", "  hostnames: [empty.example.com]\n  rules: [{backendRefs: [{name: empty, port: 80}]}]"),
    ]
    .concat();
    let h = Harness::start(&yaml, false).await?;
    h.until(port, &Request::get("web.example.com", "/"), |r| r.status == 200).await?;
    assert_eq!(h.get(port, &Request::get("empty.example.com", "/")).await?.status, 503);
    assert_eq!(h.get(port, &Request::get("web.example.com", "/")).await?.status, 200);
    h.assert_no_nacks().await
}

#[tokio::test]
async fn traffic_follows_endpoint_changes_alone() -> anyhow::Result<()> {
    let (old, new) = (Backend::start("old").await?, Backend::start("new").await?);
    let port = testkit::free_port();
    let h = Harness::start(&single_route(port, old.addr), true).await?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("old")).await?;
    // Only the EndpointSlice changes (a rollout): the update goes out as EDS alone, and back again.
    for (to, name) in [(&new, "new"), (&old, "old")] {
        h.write(&single_route(port, to.addr))?;
        h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some(name)).await?;
    }
    h.assert_no_nacks().await
}

#[tokio::test]
async fn a_live_change_under_load_drops_nothing() -> anyhow::Result<()> {
    // State-of-the-World, Delta, and Delta with virtual hosts over VHDS (make-before-break
    // across two streams).
    for (delta, vhds) in [(false, false), (true, false), (true, true)] {
        let blue = Backend::start("blue").await?;
        let green = Backend::start("green").await?;
        let port = testkit::free_port();
        let base =
            [gateway(&http_listener("http", port)), service("blue", &[blue.addr]), service("green", &[green.addr])]
                .concat();
        let to = |svc: &str| {
            format!("{base}{}", http_route("app", &format!("  rules: [{{backendRefs: [{{name: {svc}, port: 80}}]}}]")))
        };
        let h = Arc::new(match vhds {
            true => Harness::start_vhds(&to("blue")).await?,
            false => Harness::start(&to("blue"), delta).await?,
        });
        h.until(port, &Request::get("app", "/"), |r| r.status == 200).await?;

        // 1000 requests from 4 clients; the route moves from blue to green a quarter of the way in.
        let done = Arc::new(AtomicUsize::new(0));
        let mut clients = Vec::new();
        for _ in 0..4 {
            let (h, done) = (Arc::clone(&h), Arc::clone(&done));
            clients.push(tokio::spawn(async move {
                let mut failures = Vec::new();
                let mut last = String::new();
                while done.fetch_add(1, Ordering::SeqCst) < 1000 {
                    match h.get(port, &Request::get("app", "/")).await {
                        Ok(r) if r.status == 200 => last = r.header("x-backend").unwrap_or_default().to_string(),
                        other => failures.push(format!("{other:?}")),
                    }
                }
                (failures, last)
            }));
        }
        while done.load(Ordering::SeqCst) < 250 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        h.write(&to("green"))?;
        let mut failures = Vec::new();
        let mut lasts = Vec::new();
        for c in clients {
            let (f, last) = c.await?;
            failures.extend(f);
            lasts.push(last);
        }
        assert!(
            failures.is_empty(),
            "delta={delta}: {} failed requests, first: {:?}",
            failures.len(),
            failures.first()
        );
        // If the stream finished before the change landed, the next request still must see it.
        h.until(port, &Request::get("app", "/"), |r| r.header("x-backend") == Some("green")).await?;
        h.assert_no_nacks().await?;
    }
    Ok(())
}

#[tokio::test]
async fn a_rejected_resource_is_nacked_once_and_the_old_config_keeps_serving() -> anyhow::Result<()> {
    for (delta, vhds) in [(false, false), (true, false), (true, true)] {
        let web = Backend::start("web").await?;
        let port = testkit::free_port();
        let yaml = single_route(port, web.addr);
        let h = match vhds {
            true => Harness::start_vhds(&yaml).await?,
            false => Harness::start(&yaml, delta).await?,
        };
        h.until(port, &Request::get("x", "/"), |r| r.status == 200).await?;

        // A route configuration, or a virtual host over VHDS, Envoy must reject: its regex does
        // not compile.
        let route_configuration = format!("http-{port}");
        let (t, bad) = if vhds {
            (ResourceType::VirtualHost, crate::harness::rejected_virtual_host(&route_configuration))
        } else {
            (ResourceType::Route, crate::harness::rejected_route_config(&route_configuration))
        };
        let name = bad.name.to_string();
        h.server.inject_for_test(GATEWAY, t, bad);

        let rejected = testkit::eventually(std::time::Duration::from_secs(10), || async {
            let n = h.envoy.rejected_updates().await.ok()?;
            (n > 0).then_some(n)
        })
        .await;
        assert_eq!(rejected, Some(1), "delta={delta}: Envoy rejected the route once");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(h.envoy.rejected_updates().await?, 1, "delta={delta}: and it was not sent again");
        assert_eq!(h.server.stats().nacks_total(), 1, "delta={delta}: the controller counted exactly one NACK");
        let rejections = h.server.rejections();
        assert_eq!(rejections.len(), 1);
        assert_eq!(rejections[0].name, name);
        assert!(rejections[0].error.contains("missing )"), "Envoy's own error is kept: {rejections:?}");
        let r = h.get(port, &Request::get("x", "/")).await?;
        assert_eq!(
            (r.status, r.header("x-backend")),
            (200, Some("web")),
            "delta={delta}: the last accepted routes still serve"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_broken_file_keeps_its_objects_and_the_rest_keeps_serving() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    let yaml = single_route(port, web.addr);
    let h = Harness::start(&yaml, false).await?;
    h.until(port, &Request::get("x", "/"), |r| r.status == 200).await?;
    // Half-saved: the YAML no longer parses. The last good objects of the file stay.
    h.write(&yaml[..yaml.len() / 2].replace("spec:", "spec: {"))?;
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    assert_eq!(h.get(port, &Request::get("x", "/")).await?.header("x-backend"), Some("web"));
    // A document of an unknown kind is skipped; everything else is applied (the new endpoint).
    let other = Backend::start("other").await?;
    let next = single_route(port, other.addr);
    h.write(&format!("{next}---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: unrelated}}\n"))?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("other")).await?;
    h.assert_no_nacks().await
}

#[tokio::test]
async fn xds_over_mutual_tls_serves_envoy_and_refuses_clients_without_a_certificate() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("contour-mtls-{}-{}", std::process::id(), testkit::free_port()));
    std::fs::create_dir_all(&dir)?;
    // As certgen issues them: the controller's certificate names `contour`; Envoy's names its
    // Gateway's fleet (`--fleet default/gw`).
    let installation = certs::generate("projectcontour", 1)?;
    let fleet = certs::FleetId::parse(crate::harness::GATEWAY).expect("a fleet name");
    let issued = installation.authority()?.issue_fleet(
        &fleet,
        certs::DEFAULT_TRUST_DOMAIN,
        std::time::Duration::from_secs(86_400),
    )?;
    let contour =
        testkit::Issued { cert_pem: installation.contour_cert.clone(), key_pem: installation.contour_key.clone() };
    let envoy = testkit::Issued { cert_pem: issued.cert, key_pem: issued.key };
    let write = |name: &str, text: &str| -> anyhow::Result<String> {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        Ok(path.display().to_string())
    };
    let ca_file = write("ca.pem", &installation.ca)?;
    let server = xds_server::Reloading::new(xds_server::TlsFiles {
        ca: ca_file.clone().into(),
        cert: write("contour.pem", &contour.cert_pem)?.into(),
        key: write("contour-key.pem", &contour.key_pem)?.into(),
    })?;
    let envoy = bootstrap::XdsTls {
        ca_file,
        cert_file: write("envoy.pem", &envoy.cert_pem)?,
        key_file: write("envoy-key.pem", &envoy.key_pem)?,
    };

    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    let tls = crate::harness::XdsMtls { server: std::sync::Arc::new(server), envoy };
    let h = Harness::start_mtls(&single_route(port, web.addr), tls).await?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("web")).await?;

    // A client without a certificate gets no configuration: plaintext is refused, and so is TLS
    // without a client certificate (the server ends the session instead of answering HTTP/2).
    use envoy_types::pb::envoy::service::discovery::v3::{
        DiscoveryRequest, aggregated_discovery_service_client::AggregatedDiscoveryServiceClient,
    };
    let plaintext = match AggregatedDiscoveryServiceClient::connect(format!("http://127.0.0.1:{}", h.xds_port)).await {
        Err(e) => Err(e.to_string()),
        Ok(mut client) => {
            let request = tonic::codegen::tokio_stream::iter(vec![DiscoveryRequest::default()]);
            client.stream_aggregated_resources(request).await.map(|_| ()).map_err(|e| e.to_string())
        }
    };
    assert!(plaintext.is_err(), "a plaintext client was served");
    let xds = std::net::SocketAddr::from(([127, 0, 0, 1], h.xds_port));
    let no_cert = testkit::h2_preface_tls(xds, "contour", &installation.ca).await;
    assert!(no_cert.is_err(), "a TLS client without a certificate was answered: {no_cert:?}");
    let _ = std::fs::remove_dir_all(&dir);
    h.assert_no_nacks().await
}
