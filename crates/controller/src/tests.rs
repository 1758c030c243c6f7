use super::*;

const FIXTURE: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: contour}
spec: {controllerName: projectcontour.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec: {gatewayClassName: contour, listeners: [{name: http, port: 8080, protocol: HTTP}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{port: 9000}]
endpoints: [{addresses: [127.0.0.1]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web}
spec: {parentRefs: [{name: gw}], rules: [{backendRefs: [{name: web, port: 80}]}]}
"#;

fn snapshot(yaml: &str) -> Snapshot {
    Snapshot::from_yaml(yaml).expect("fixture parses")
}

#[test]
fn endpoint_only_changes_skip_the_rebuild() {
    let server = XdsServer::default();
    let mut c = Controller::new(Options::default(), server);
    let counters = c.counters();
    c.apply(Arc::new(snapshot(FIXTURE)));
    c.apply(Arc::new(snapshot(&FIXTURE.replace("9000", "9001"))));
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 1);
    assert_eq!(counters.endpoint_updates.load(Ordering::Relaxed), 1);
    c.apply(Arc::new(snapshot(&FIXTURE.replace("9000", "9001").replace("port: 80}", "port: 81}"))));
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 2, "a Service change rebuilds");
}

#[tokio::test(start_paused = true)]
async fn changes_are_debounced() {
    let store = Store::new();
    let server = XdsServer::default();
    let c = Controller::new(Options::default(), server);
    let counters = c.counters();
    store.replace(snapshot(FIXTURE));
    store.set_synced();
    tokio::spawn(c.run(store.clone()));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 1, "first build right after sync");
    // A burst of changes every 50 ms for a second: rebuilt at most every 500 ms, not 20 times.
    for i in 0..20 {
        store.replace(snapshot(&FIXTURE.replace("port: 80}", &format!("port: {}}}", 100 + i))));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    let rebuilds = counters.rebuilds.load(Ordering::Relaxed);
    assert!((3..=4).contains(&rebuilds), "{rebuilds} rebuilds");
}

#[test]
fn cached_builds_equal_fresh_builds() {
    let mut pipeline = Pipeline::default();
    let options = Options::default();
    let first = snapshot(FIXTURE);
    let _ = pipeline.build(&first, &options);
    // Keep unchanged objects' Arcs, as the sources do, so the caches are exercised.
    let mut next =
        snapshot(&FIXTURE.replace("rules: [{backendRefs", "hostnames: [x.example.com], rules: [{backendRefs"));
    next.share_unchanged(&first);
    let cached = pipeline.build(&next, &options);
    let fresh = build(&next, &options);
    assert_eq!(cached.fleets, fresh.fleets);
    assert_eq!(cached.dag, fresh.dag);
}

/// Builds `yaml` with the cached pipeline (sharing unchanged objects with `previous`, as the
/// sources do) and from scratch; both must agree. Returns the new snapshot.
fn cached_equals_fresh(pipeline: &mut Pipeline, previous: &Snapshot, yaml: &str, step: usize) -> Snapshot {
    cached_equals_fresh_with(pipeline, previous, yaml, step, &Options::default())
}

/// [`cached_equals_fresh`] with `options`.
fn cached_equals_fresh_with(
    pipeline: &mut Pipeline,
    previous: &Snapshot,
    yaml: &str,
    step: usize,
    options: &Options,
) -> Snapshot {
    let mut next = snapshot(yaml);
    next.share_unchanged(previous);
    let cached = pipeline.build(&next, options);
    let fresh = build(&next, options);
    assert_eq!(cached.fleets, fresh.fleets, "step {step}");
    assert_eq!(cached.dag, fresh.dag, "step {step}");
    next
}

#[test]
fn cached_httpproxy_builds_follow_every_change_in_a_tree() {
    let proxies = r#"
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: root}
spec:
  virtualhost: {fqdn: www.example.com}
  includes: [{name: child, conditions: [{prefix: /child}]}, {name: later, conditions: [{prefix: /later}]}]
  routes: [{services: [{name: web, port: 80}]}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: child}
spec: {routes: [{services: [{name: web, port: 80}]}]}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: other}
spec:
  virtualhost: {fqdn: other.example.com}
  routes: [{services: [{name: web, port: 80}]}]
"#;
    let later = "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: later}\nspec: {routes: [{services: [{name: web, port: 80}]}]}\n";
    let api_root = "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: api-root}\nspec: {virtualhost: {fqdn: api.example.com}, routes: [{services: [{name: api, port: 80}]}]}\n";
    let api = "---\napiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec: {ports: [{port: 80}]}\n";
    let unrelated = "---\napiVersion: v1\nkind: Service\nmetadata: {name: unrelated}\nspec: {ports: [{port: 80}]}\n";
    let mut pipeline = Pipeline::default();
    let options = Options::default();
    let mut previous = snapshot(proxies);
    let first = pipeline.build(&previous, &options);
    assert!(first.dag.diagnostics.iter().any(|d| d.reason == "IncludeNotFound"));
    // A child changes; a missing include appears; the Service changes; an unrelated root changes.
    let steps = [
        proxies.to_string(),
        proxies.replace(
            "spec: {routes: [{services: [{name: web, port: 80}]}]}",
            "spec: {routes: [{conditions: [{prefix: /v2}], services: [{name: web, port: 80}]}]}",
        ),
        format!("{proxies}{later}"),
        format!(
            "{}{later}",
            proxies.replace("ports: [{port: 80}]", "ports: [{port: 80, appProtocol: kubernetes.io/h2c}]")
        ),
        format!("{}{later}", proxies.replace("other.example.com", "another.example.com")),
        // A root naming a Service that does not exist yet, then the Service arrives.
        format!("{proxies}{later}{api_root}"),
        format!("{proxies}{later}{api_root}{api}"),
        // An unrelated app's Service arrives, and the Service a root names changes port.
        format!("{proxies}{later}{api_root}{api}{unrelated}"),
        format!("{proxies}{later}{api_root}{}{unrelated}", api.replace("port: 80", "port: 81")),
    ];
    for (i, yaml) in steps.iter().enumerate() {
        previous = cached_equals_fresh(&mut pipeline, &previous, yaml, i);
    }
    assert!(!previous.http_proxies.is_empty());
}

/// The virtual hosts of the default fleet's plain-HTTP listener.
fn http_vhosts(build: &Build) -> Vec<Arc<dag::VirtualHost>> {
    build.dag.fleets[ir::DEFAULT_FLEET]
        .listeners
        .iter()
        .filter_map(|l| match &l.kind {
            dag::ListenerKind::Http(table) => Some(table.virtual_hosts.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn a_new_app_leaves_every_other_virtual_host_as_it_was() {
    let app = |n: usize| {
        format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{name: svc-{n}}}\nspec: {{ports: [{{port: 80}}]}}\n\
             ---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: app-{n}}}\n\
             spec: {{virtualhost: {{fqdn: app-{n}.example.com}}, routes: [{{services: [{{name: svc-{n}, port: 80}}]}}]}}\n"
        )
    };
    let three: String = (0..3).map(app).collect();
    let mut pipeline = Pipeline::default();
    let options = Options::default();
    let before_snapshot = snapshot(&three);
    let before = pipeline.build(&before_snapshot, &options);
    let mut next = snapshot(&format!("{three}{}", app(3)));
    next.share_unchanged(&before_snapshot);
    let after = pipeline.build(&next, &options);
    let (before, after) = (http_vhosts(&before), http_vhosts(&after));
    assert_eq!((before.len(), after.len()), (3, 4));
    for vhost in &before {
        let same = after.iter().find(|v| v.hostname == vhost.hostname).expect("still served");
        assert!(Arc::ptr_eq(vhost, same), "{} was rebuilt for another app's Service", vhost.hostname);
    }
}

/// A route table of at least 64 routes on one listener is patched from the previous build's,
/// and every patched build equals a fresh one: routes that come, go, move to another host,
/// share a host with others or repeat another's match; a Service they use changing; a host
/// emptied; routes reordered; nothing of theirs changing.
#[test]
fn patched_route_tables_equal_fresh_builds() {
    let head = format!(
        "{}---\napiVersion: v1\nkind: Service\nmetadata: {{name: svc-0}}\nspec: {{ports: [{{port: 80}}]}}\n\
         ---\napiVersion: v1\nkind: Service\nmetadata: {{name: svc-1}}\nspec: {{ports: [{{port: 80}}]}}\n",
        FIXTURE.split("---\napiVersion: v1").next().expect("the class and Gateway")
    );
    let route = |n: usize, host: &str, path: usize, extra: &str| {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: route-{n}{extra}}}\n\
             spec: {{parentRefs: [{{name: gw}}], hostnames: [{host}], rules: [{{matches: [{{path: {{type: PathPrefix, value: /r{path}}}}}], \
             backendRefs: [{{name: svc-{}, port: 80}}]}}]}}\n",
            n % 2
        )
    };
    let routes = |skip: &[usize], f: &dyn Fn(usize) -> String| -> String {
        (0..70).filter(|n| !skip.contains(n)).map(f).collect()
    };
    let plain = |n: usize| route(n, &format!("h{}.example.com", n % 20), n, "");
    let steps = [
        // A route repeating route-0's match on its host.
        format!("{head}{}{}", routes(&[], &plain), route(70, "h0.example.com", 0, "")),
        format!("{head}{}", routes(&[5], &plain)),
        format!("{head}{}", routes(&[5], &|n| if n == 6 { route(6, "new.example.com", 6, "") } else { plain(n) })),
        // A route naming its hostname twice.
        format!(
            "{head}{}",
            routes(&[5], &|n| if n == 8 { route(8, "h8.example.com, h8.example.com", 8, "") } else { plain(n) })
        ),
        format!("{head}{}", routes(&[5, 7, 27, 47, 67], &plain)).replace(
            "name: svc-1}\nspec: {ports: [{port: 80}]}",
            "name: svc-1}\nspec: {ports: [{port: 80, appProtocol: kubernetes.io/h2c}]}",
        ),
        format!(
            "{head}{}---\napiVersion: v1\nkind: Service\nmetadata: {{name: other}}\nspec: {{ports: [{{port: 80}}]}}\n",
            routes(&[5], &plain)
        ),
        format!(
            "{head}{}",
            routes(&[5], &|n| if n == 50 {
                route(50, "h10.example.com", 50, ", creationTimestamp: \"2020-01-01T00:00:00Z\"")
            } else {
                plain(n)
            })
        ),
    ];
    patches_every_step(&format!("{head}{}", routes(&[], &plain)), &steps, &Options::default());
}

/// The same with 70 root HTTPProxies: one comes, one goes, one's Service changes, two claim one
/// fqdn (neither is served), one moves to another fqdn.
#[test]
fn patched_httpproxy_tables_equal_fresh_builds() {
    let service = |n: usize| {
        format!("---\napiVersion: v1\nkind: Service\nmetadata: {{name: svc-{n}}}\nspec: {{ports: [{{port: 80}}]}}\n")
    };
    let proxy = |n: usize, fqdn: &str| {
        format!(
            "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: app-{n}}}\n\
             spec: {{virtualhost: {{fqdn: {fqdn}}}, routes: [{{services: [{{name: svc-{}, port: 80}}]}}]}}\n",
            n % 3
        )
    };
    let apps = |skip: &[usize], fqdn: &dyn Fn(usize) -> String| -> String {
        (0..3).map(service).chain((0..70).filter(|n| !skip.contains(n)).map(|n| proxy(n, &fqdn(n)))).collect()
    };
    let plain = |n: usize| format!("app-{n}.example.com");
    let steps = [
        format!("{}{}", apps(&[], &plain), proxy(70, "app-70.example.com")),
        apps(&[3], &plain),
        apps(&[3], &plain).replace(
            "name: svc-2}\nspec: {ports: [{port: 80}]}",
            "name: svc-2}\nspec: {ports: [{port: 80, appProtocol: kubernetes.io/h2c}]}",
        ),
        apps(&[3], &|n| if n == 4 { plain(5) } else { plain(n) }),
        apps(&[3], &|n| if n == 4 { "moved.example.com".into() } else { plain(n) }),
    ];
    // Inline, then over VHDS: the compiler patches the 70-host route configuration too.
    for vhds in [false, true] {
        let mut options = Options::default();
        options.compile.vhds = vhds;
        let compiled = patches_every_step(&apps(&[], &plain), &steps, &options);
        assert_eq!(compiled, steps.len() as u64, "every step patches the route configuration (vhds: {vhds})");
    }
}

/// Builds `first`, then each step with the cached pipeline and fresh (they must agree), and
/// checks that every step patched the large route table instead of building it whole. Returns
/// how many route configurations the compiler patched.
fn patches_every_step(first: &str, steps: &[String], options: &Options) -> u64 {
    let mut pipeline = Pipeline::default();
    let mut previous = snapshot(first);
    let _ = pipeline.build(&previous, options);
    for (i, yaml) in steps.iter().enumerate() {
        previous = cached_equals_fresh_with(&mut pipeline, &previous, yaml, i, options);
    }
    assert_eq!(pipeline.dag.patched_tables(), steps.len() as u64, "every step patches the table");
    pipeline.compile.patched_route_configurations()
}

#[test]
fn cached_ingress_builds_follow_every_change() {
    let base = r#"
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: a}
spec: {rules: [{host: a.test, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}]}}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: b, annotations: {kubernetes.io/ingress.class: mine}}
spec: {rules: [{host: b.test, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]}
"#;
    let class = "---\napiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: mine}\nspec: {controller: projectcontour.io/ingress-controller}\n";
    let mut pipeline = Pipeline::default();
    let options = Options::default();
    let mut previous = snapshot(base);
    let _ = pipeline.build(&previous, &options);
    let steps = [
        base.replace("host: a.test", "host: a2.test"),
        format!("{}{class}", base.replace("host: a.test", "host: a2.test")),
        format!(
            "{}{class}",
            base.replace("name: http, port: 80", "name: http, port: 8080").replace("host: a.test", "host: a2.test")
        ),
    ];
    for (i, yaml) in steps.iter().enumerate() {
        previous = cached_equals_fresh(&mut pipeline, &previous, yaml, i);
    }
}

/// A controller running on a store that holds FIXTURE (start it in a paused-time test).
fn running_controller() -> (Store, Arc<Counters>) {
    let store = Store::new();
    let c = Controller::new(Options::default(), XdsServer::default());
    let counters = c.counters();
    store.replace(snapshot(FIXTURE));
    store.set_synced();
    tokio::spawn(c.run(store.clone()));
    (store, counters)
}

/// Endpoint churn goes to EDS within milliseconds, not after the rebuild holdoff; a change after
/// a quiet period rebuilds as soon as the rest of it (an app's other objects) has come.
#[tokio::test(start_paused = true)]
async fn endpoints_skip_the_holdoff_and_a_quiet_change_rebuilds_at_once() {
    let (store, counters) = running_controller();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 1);

    // A burst of three slice changes while the first waits its millisecond: one EDS update.
    for port in [9001, 9002, 9003] {
        store.replace(snapshot(&FIXTURE.replace("9000", &port.to_string())));
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(counters.endpoint_updates.load(Ordering::Relaxed), 1, "well before the 100 ms holdoff");
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 1, "no rebuild for endpoints");

    // Quiet for longer than the longest holdoff: a change and the rest of it 3 ms later
    // rebuild once, 5 ms after the last, without the holdoff.
    tokio::time::sleep(Duration::from_secs(1)).await;
    store.replace(snapshot(&FIXTURE.replace("9000", "9003").replace("port: 80}", "port: 81}")));
    tokio::time::sleep(Duration::from_millis(3)).await;
    store.replace(snapshot(&FIXTURE.replace("9000", "9003").replace("port: 80}", "port: 83}")));
    tokio::time::sleep(Duration::from_millis(4)).await;
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 1, "still collecting the change");
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 2, "leading edge");
    // The next one is part of a burst: it waits for the holdoff.
    store.replace(snapshot(&FIXTURE.replace("9000", "9003").replace("port: 80}", "port: 82}")));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 2, "debounced");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 3);
}

/// The wait for the rest of a change grows with what a rebuild costs, within bounds.
#[test]
fn the_leading_wait_follows_the_cost_of_a_rebuild() {
    let holdoff = Duration::from_millis(100);
    assert_eq!(crate::leading_gap(Duration::ZERO, holdoff), LEADING_COALESCE);
    assert_eq!(crate::leading_gap(Duration::from_millis(8), holdoff), LEADING_COALESCE, "a small build");
    assert_eq!(crate::leading_gap(Duration::from_millis(60), holdoff), Duration::from_millis(15), "10k objects");
    assert_eq!(crate::leading_gap(Duration::from_secs(2), holdoff), holdoff, "never past the holdoff");
    assert_eq!(crate::leading_gap(Duration::ZERO, Duration::from_millis(1)), Duration::from_millis(1));
}

/// A new app arrives as its Service first, then its route a little later: the Service alone
/// changes nothing for Envoy, so the route is not held back by the burst holdoff. Churn of
/// objects nothing uses is still debounced after a few quick rebuilds.
#[tokio::test(start_paused = true)]
async fn an_unused_service_does_not_hold_back_the_route_that_follows() {
    let (store, counters) = running_controller();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 1);

    let unused = |n: usize| {
        (0..n)
            .map(|i| {
                format!(
                    "---\napiVersion: v1\nkind: Service\nmetadata: {{name: new-{i}}}\nspec: {{ports: [{{port: 80}}]}}\n"
                )
            })
            .collect::<String>()
    };
    store.replace(snapshot(&format!("{FIXTURE}{}", unused(1))));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 2, "the Service alone, after quiet");
    let route = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: new-0}\nspec: {parentRefs: [{name: gw}], hostnames: [new.example.com], rules: [{backendRefs: [{name: new-0, port: 80}]}]}\n";
    store.replace(snapshot(&format!("{FIXTURE}{}{route}", unused(1))));
    tokio::time::sleep(Duration::from_millis(7)).await;
    assert_eq!(counters.rebuilds.load(Ordering::Relaxed), 3, "the route, without the 100 ms holdoff");

    // Unused Services every 20 ms: quick rebuilds only until QUICK_REBUILDS changed nothing.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = counters.rebuilds.load(Ordering::Relaxed);
    for n in 2..22 {
        store.replace(snapshot(&format!("{FIXTURE}{}{route}", unused(n))));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rebuilds = counters.rebuilds.load(Ordering::Relaxed) - before;
    assert!(rebuilds <= 3 + 2, "{rebuilds} rebuilds for 400 ms of unused Services");
}

/// One EndpointSlice changes: its cluster's load assignment follows, the others are reused, and
/// the result is what a fresh pipeline computes.
#[test]
fn one_slice_change_recomputes_one_cluster() {
    let two = format!(
        "{FIXTURE}---\napiVersion: v1\nkind: Service\nmetadata: {{name: api}}\nspec: {{ports: [{{port: 80}}]}}\n\
         ---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: api, labels: {{kubernetes.io/service-name: api}}}}\n\
         addressType: IPv4\nports: [{{port: 7000}}]\nendpoints: [{{addresses: [127.0.0.2]}}]\n\
         ---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: api}}\n\
         spec: {{parentRefs: [{{name: gw}}], hostnames: [api.example.com], rules: [{{backendRefs: [{{name: api, port: 80}}]}}]}}\n"
    );
    let options = Options::default();
    let mut pipeline = Pipeline::default();
    let first = snapshot(&two);
    let build = pipeline.build(&first, &options);
    let before = pipeline.endpoints(&build.dag, &first);
    let mut next = snapshot(&two.replace("127.0.0.2", "127.0.0.3"));
    next.share_unchanged(&first);
    let after = pipeline.endpoints(&build.dag, &next);
    let fresh = Pipeline::default().endpoints(&build.dag, &next);
    assert_eq!(after, fresh, "the cached endpoints are the fresh ones");
    let (b, a) = (&before["default/gw"], &after["default/gw"]);
    let web = b.keys().find(|k| k.starts_with("default/web/")).expect("web's load assignment");
    let api = b.keys().find(|k| k.starts_with("default/api/")).expect("api's load assignment");
    assert!(Arc::ptr_eq(&b[web].body, &a[web].body), "web's endpoints did not change: reused");
    assert_ne!(b[api].version, a[api].version, "api's endpoints changed");
}

/// The endpoint-only path patches the previous load assignments: for a slice changed, added,
/// removed, or moved to another Service, the result is what a fresh pipeline computes, and an
/// untouched cluster's load assignment is the previous one, shared.
#[test]
fn endpoint_only_changes_patch_what_a_fresh_pipeline_computes() {
    let api = "---\napiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec: {ports: [{port: 80}]}\n\
         ---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: api, labels: {kubernetes.io/service-name: api}}\n\
         addressType: IPv4\nports: [{port: 7000}]\nendpoints: [{addresses: [127.0.0.2]}]\n\
         ---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: api}\n\
         spec: {parentRefs: [{name: gw}], hostnames: [api.example.com], rules: [{backendRefs: [{name: api, port: 80}]}]}\n";
    let base = format!("{FIXTURE}{api}");
    let extra = "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: api-2, labels: {kubernetes.io/service-name: api}}\n\
         addressType: IPv4\nports: [{port: 7000}]\nendpoints: [{addresses: [127.0.0.9]}]\n";
    let steps = [
        base.replace("127.0.0.2", "127.0.0.3"),                       // a slice changes
        format!("{}{extra}", base.replace("127.0.0.2", "127.0.0.3")), // a second slice comes
        base.replace("127.0.0.2", "127.0.0.3"),                       // and goes
        base.replace("127.0.0.2", "127.0.0.3")
            .replace("{kubernetes.io/service-name: api}", "{kubernetes.io/service-name: web}"), // moves to web
        base.replace("127.0.0.2", "127.0.0.3").replace("endpoints: [{addresses: [127.0.0.3]}]", "endpoints: []"), // empties
    ];
    let options = Options::default();
    let mut pipeline = Pipeline::default();
    let mut previous = snapshot(&base);
    let build = pipeline.build(&previous, &options);
    for (i, yaml) in steps.iter().enumerate() {
        let mut next = snapshot(yaml);
        next.share_unchanged(&previous);
        assert_eq!(previous.changed_kinds(&next), BTreeSet::from([Kind::EndpointSlice]), "step {i}");
        let before = pipeline.endpoints(&build.dag, &previous);
        let after = pipeline.endpoints(&build.dag, &next);
        let fresh = Pipeline::default().endpoints(&build.dag, &next);
        assert_eq!(after, fresh, "step {i}: the patched endpoints are the fresh ones");
        if i == 0 {
            let (b, a) = (&before["default/gw"], &after["default/gw"]);
            let web = b.keys().find(|k| k.starts_with("default/web/")).expect("web's load assignment");
            assert!(Arc::ptr_eq(&b[web].body, &a[web].body), "web's endpoints did not change: shared");
        }
        previous = next;
    }
}
