//! `contour convert` proven equivalent: every case of `tests/convert-corpus` (HTTPProxy and
//! Ingress, with upstream's annotations) is served by the default fleet as it is, then converted
//! to Gateway API and served by the converted Gateway's fleet; a set of requests generated from
//! the original objects (hosts, paths, headers, query parameters, methods, HTTP and HTTPS) must
//! get the same answers from both Envoys: status, backend, the path, host and headers the backend
//! saw, the response headers and any redirect's location. Names differ between the two
//! configurations, answers may not. The converted objects are also created on a real
//! kube-apiserver with the Gateway API CRDs, which must accept every one.
//!
//! A case file holds the objects of one example. Its Services get one echo backend per port (a
//! TLS one for a Service annotated `corpus.contour-rs.dev/backend: tls`), and its
//! `kubernetes.io/tls` Secrets without data get a certificate for every host of the case. Comment
//! lines add what the generator cannot guess: `# probe-path: /p`, `# probe-header: name=value`,
//! `# expect: text` for a line the conversion report must contain, `# include: dir` for the
//! project's own examples (their EndpointSlices replaced by the test's), and
//! `# unconvertible-path: /p` (or `# unconvertible-host: h`) for a path (or host) whose answer
//! depends on what the report names as having no Gateway API equivalent (left out of the
//! comparison; the case's `# expect:` lines hold the report to naming it).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use testkit::{Backend, Ca, Request, Response};

use crate::harness::{Harness, default_fleet_options};

/// The converted Gateway's fleet.
const GATEWAY_FLEET: &str = "projectcontour/contour";

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("convert-corpus")
}

/// The case files, sorted.
fn cases() -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(corpus_dir())?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    files.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    files.sort();
    Ok(files)
}

/// One case: its objects (Secrets filled in), the hints of its comments, its backends.
struct Case {
    name: String,
    objects: Vec<Value>,
    probe_paths: Vec<String>,
    probe_headers: Vec<(String, String)>,
    expect: Vec<String>,
    /// Paths whose answers a reported, unconvertible field decides.
    unconvertible: Vec<String>,
    /// Hosts whose answers a reported, unconvertible semantic decides.
    unconvertible_hosts: Vec<String>,
    /// Every host the case serves (and what TLS needs: certificates, SNI).
    hosts: BTreeSet<String>,
    /// Hosts served over TLS (terminated or passed through).
    tls_hosts: BTreeSet<String>,
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_str)
}

fn kind(v: &Value) -> &str {
    str_at(v, &["kind"]).unwrap_or_default()
}

/// Every string value under a key named `key`, anywhere in `v`.
fn strings_under(v: &Value, key: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k == key
                    && let Some(s) = child.as_str()
                {
                    out.push(s.to_string());
                }
                strings_under(child, key, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| strings_under(i, key, out)),
        _ => {}
    }
}

/// Every object (map) that is the value of a key named `key`, anywhere in `v`.
fn objects_under<'a>(v: &'a Value, key: &str, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k == key && child.is_object() {
                    out.push(child);
                }
                objects_under(child, key, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| objects_under(i, key, out)),
        _ => {}
    }
}

impl Case {
    fn load(path: &Path, ca: &Ca) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)?;
        let name = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let hint = |prefix: &str| -> Vec<String> {
            text.lines().filter_map(|l| l.trim().strip_prefix(prefix)).map(|s| s.trim().to_string()).collect()
        };
        let probe_paths = hint("# probe-path:");
        let probe_headers = hint("# probe-header:")
            .iter()
            .filter_map(|h| h.split_once('=').map(|(n, v)| (n.trim().to_string(), v.trim().to_string())))
            .collect();
        let expect = hint("# expect:");
        let unconvertible = hint("# unconvertible-path:");
        let unconvertible_hosts = hint("# unconvertible-host:");
        let mut texts = vec![text.clone()];
        for dir in hint("# include:") {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
            let mut files: Vec<PathBuf> =
                std::fs::read_dir(&dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
            files.sort();
            for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "yaml")) {
                texts.push(std::fs::read_to_string(f)?);
            }
        }
        let mut objects = Vec::new();
        for text in &texts {
            for document in serde_yaml::Deserializer::from_str(text) {
                let value: Value = serde::Deserialize::deserialize(document)?;
                if value.is_object() && kind(&value) != "EndpointSlice" {
                    objects.push(value);
                }
            }
        }
        let mut hosts = BTreeSet::new();
        let mut tls_hosts = BTreeSet::new();
        for o in &objects {
            match kind(o) {
                "HTTPProxy" => {
                    if let Some(fqdn) = str_at(o, &["spec", "virtualhost", "fqdn"]) {
                        hosts.insert(fqdn.to_string());
                        if o.pointer("/spec/virtualhost/tls").is_some() {
                            tls_hosts.insert(fqdn.to_string());
                        }
                    }
                }
                "Ingress" => {
                    let rules = o.pointer("/spec/rules").and_then(Value::as_array).cloned().unwrap_or_default();
                    hosts.extend(rules.iter().filter_map(|r| str_at(r, &["host"])).map(String::from));
                    let tls = o.pointer("/spec/tls").and_then(Value::as_array).cloned().unwrap_or_default();
                    for t in &tls {
                        let names = t.get("hosts").and_then(Value::as_array).cloned().unwrap_or_default();
                        tls_hosts.extend(names.iter().filter_map(Value::as_str).map(String::from));
                    }
                }
                _ => {}
            }
        }
        // Every empty TLS Secret gets a certificate for every host of the case.
        let names: Vec<&str> = hosts.iter().chain(&tls_hosts).map(String::as_str).collect();
        let issued = ca.issue(&names)?;
        let b64 = |pem: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, pem);
        for o in &mut objects {
            if kind(o) == "Secret"
                && str_at(o, &["type"]) == Some("kubernetes.io/tls")
                && o.get("data").is_none_or(|d| d.as_object().is_none_or(|m| m.is_empty()))
            {
                o["data"] = serde_json::json!({"tls.crt": b64(&issued.cert_pem), "tls.key": b64(&issued.key_pem)});
            }
        }
        Ok(Self {
            name,
            objects,
            probe_paths,
            probe_headers,
            expect,
            unconvertible,
            unconvertible_hosts,
            hosts,
            tls_hosts,
        })
    }

    /// The hosts requests go to: each served host (a wildcard's as one and as two labels),
    /// and one no object serves.
    fn request_hosts(&self) -> Vec<String> {
        let mut out = Vec::new();
        for h in &self.hosts {
            match h.strip_prefix("*.") {
                Some(rest) => {
                    out.push(format!("one.{rest}"));
                    out.push(format!("two.labels.{rest}"));
                }
                None => out.push(h.clone()),
            }
        }
        out.push("nobody.example.net".into());
        out
    }

    /// Paths from every condition, include and Ingress path, each as it is, one level deeper,
    /// with a trailing slash and continued mid-segment; include prefixes joined with their
    /// routes'; the case's own probe paths.
    fn request_paths(&self) -> Vec<String> {
        let mut seeds = Vec::new();
        for o in &self.objects {
            if matches!(kind(o), "HTTPProxy" | "Ingress") {
                for key in ["prefix", "exact", "path", "replacePrefix"] {
                    strings_under(o, key, &mut seeds);
                }
            }
        }
        seeds.retain(|s| s.starts_with('/'));
        let mut includes = Vec::new();
        let mut routes = Vec::new();
        for o in self.objects.iter().filter(|o| kind(o) == "HTTPProxy") {
            for i in o.pointer("/spec/includes").and_then(Value::as_array).into_iter().flatten() {
                strings_under(i, "prefix", &mut includes);
            }
            for r in o.pointer("/spec/routes").and_then(Value::as_array).into_iter().flatten() {
                strings_under(r.get("conditions").unwrap_or(&Value::Null), "prefix", &mut routes);
            }
        }
        for i in &includes {
            for r in &routes {
                seeds.push(format!("{}{}", i.trim_end_matches('/'), r));
            }
        }
        let mut paths = BTreeSet::from(["/".to_string(), "/zz-nothing".to_string()]);
        for s in seeds {
            let base = s.trim_end_matches('/');
            for p in [s.clone(), format!("{base}/"), format!("{base}x"), format!("{base}/sub/page"), base.to_string()] {
                if p.starts_with('/') {
                    paths.insert(p);
                }
            }
        }
        paths.extend(self.probe_paths.iter().cloned());
        paths.into_iter().collect()
    }

    /// Header and query-parameter variants from the conditions: none, then each condition's
    /// header (or parameter) with a value that satisfies it and one in other case.
    fn variants(&self) -> Vec<Variant> {
        let mut out = vec![Variant::default()];
        let mut headers = Vec::new();
        let mut queries = Vec::new();
        for o in self.objects.iter().filter(|o| kind(o) == "HTTPProxy") {
            objects_under(o, "header", &mut headers);
            objects_under(o, "queryParameter", &mut queries);
        }
        let values = |c: &Value| -> Vec<String> {
            let mut v = Vec::new();
            for key in ["exact", "notexact", "prefix", "suffix", "contains", "notcontains"] {
                if let Some(s) = str_at(c, &[key]) {
                    v.push(match key {
                        "prefix" => format!("{s}-tail"),
                        "suffix" => format!("head-{s}"),
                        "contains" | "notcontains" => format!("a{s}b"),
                        _ => s.to_string(),
                    });
                    v.push(s.to_uppercase());
                }
            }
            v.push("other".into());
            v
        };
        for h in headers {
            if let Some(name) = str_at(h, &["name"]) {
                for value in values(h) {
                    out.push(Variant { header: Some((name.to_string(), value)), query: None });
                }
            }
        }
        for q in queries {
            if let Some(name) = str_at(q, &["name"]) {
                for value in values(q) {
                    out.push(Variant { header: None, query: Some((name.to_string(), value)) });
                }
            }
        }
        for (name, value) in &self.probe_headers {
            out.push(Variant { header: Some((name.clone(), value.clone())), query: None });
        }
        out.dedup();
        out
    }

    /// Every request: host × path × variant over HTTP, and over HTTPS for TLS hosts, plus a
    /// POST per host and path.
    fn probes(&self) -> Vec<Probe> {
        let mut out = Vec::new();
        let paths = self.request_paths();
        let variants = self.variants();
        for host in self.request_hosts() {
            let tls = self.tls_hosts.contains(&host)
                || self.tls_hosts.iter().any(|t| t.strip_prefix('*').is_some_and(|s| host.ends_with(s)));
            for tls in [false, true].into_iter().filter(|t| !*t || tls) {
                for path in &paths {
                    for v in &variants {
                        out.push(Probe {
                            tls,
                            host: host.clone(),
                            path: path.clone(),
                            method: "GET",
                            variant: v.clone(),
                        });
                    }
                    let variant = Variant::default();
                    out.push(Probe { tls, host: host.clone(), path: path.clone(), method: "POST", variant });
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Variant {
    header: Option<(String, String)>,
    query: Option<(String, String)>,
}

#[derive(Debug, Clone)]
struct Probe {
    tls: bool,
    host: String,
    path: String,
    method: &'static str,
    variant: Variant,
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "https" } else { "http" };
        write!(f, "{} {scheme}://{}{}", self.method, self.host, self.path)?;
        if let Some((n, v)) = &self.variant.query {
            write!(f, "?{n}={v}")?;
        }
        if let Some((n, v)) = &self.variant.header {
            write!(f, " [{n}: {v}]")?;
        }
        Ok(())
    }
}

/// Request headers a backend sees that differ per request or per Envoy, whatever the routing.
const VOLATILE_REQUEST_HEADERS: &[&str] = &["x-request-id", "content-length"];
/// Response headers that differ per request.
const VOLATILE_RESPONSE_HEADERS: &[&str] = &["date", "x-envoy-upstream-service-time", "content-length"];

/// A redirect's location with the fleet's own test ports spelled as the standard ports it
/// stands for (`http://h:<http port>/` as `http://h/`): each fleet listens on free ports in
/// place of 80 and 443, and a Gateway API redirect names its listener's port unless it is the
/// scheme's standard one.
fn location(location: &str, ports: (u16, u16)) -> String {
    let mut out = location.to_string();
    for (scheme, port) in [("http://", ports.0), ("https://", ports.1)] {
        if let Some(rest) = out.strip_prefix(scheme) {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if let Some(host) = authority.strip_suffix(&format!(":{port}")) {
                out = format!("{scheme}{host}{path}");
            }
        }
    }
    out
}

/// What a user would notice of an answer (`ports`: the fleet's HTTP and HTTPS ports).
fn answer(r: &anyhow::Result<Response>, ports: (u16, u16)) -> String {
    let r = match r {
        Ok(r) => r,
        Err(e) => return format!("no answer ({})", e.root_cause()),
    };
    let mut out = format!("{} backend={}", r.status, r.header("x-backend").unwrap_or("-"));
    if let Some(l) = r.header("location") {
        out += &format!(" location={}", location(l, ports));
    }
    let mut response: Vec<String> = r
        .headers
        .iter()
        .filter(|(n, _)| !VOLATILE_RESPONSE_HEADERS.contains(&n.to_ascii_lowercase().as_str()))
        .map(|(n, v)| match n.eq_ignore_ascii_case("location") {
            true => format!("location={}", location(v, ports)),
            false => format!("{}={v}", n.to_ascii_lowercase()),
        })
        .collect();
    response.sort();
    out += &format!(" response-headers=[{}]", response.join(", "));
    if r.header("x-backend").is_some() {
        let echo = r.echo();
        out += &format!(" saw {} {}", echo["host"].as_str().unwrap_or("-"), echo["path"].as_str().unwrap_or("-"));
        let seen: BTreeMap<String, String> = echo["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(n, _)| !VOLATILE_REQUEST_HEADERS.contains(&n.as_str()))
            .map(|(n, v)| (n.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        out += &format!(" request-headers={seen:?}");
    } else if !r.body.is_empty() {
        out += &format!(" body={:?}", r.body);
    }
    out
}

async fn send(probe: &Probe, ports: (u16, u16), ca_pem: &str) -> anyhow::Result<Response> {
    let path = match &probe.variant.query {
        Some((n, v)) => format!("{}?{n}={v}", probe.path),
        None => probe.path.clone(),
    };
    let mut req = Request::get(&probe.host, &path);
    req.method = probe.method.into();
    if let Some((n, v)) = &probe.variant.header {
        req = req.header(n, v);
    }
    if probe.tls {
        let addr = SocketAddr::from(([127, 0, 0, 1], ports.1));
        testkit::request_tls(addr, &probe.host, ca_pem, &req).await
    } else {
        testkit::request(SocketAddr::from(([127, 0, 0, 1], ports.0)), &req).await
    }
}

/// Every probe's answer, once the answers stop changing (the configuration has arrived):
/// two rounds in a row alike (three when some request gets no answer), within 30 s.
async fn answers(probes: &[Probe], ports: (u16, u16), ca_pem: &str) -> Vec<String> {
    let mut last: Vec<String> = Vec::new();
    let mut alike = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        // Sixteen requests at a time: the answers come back in the probes' order.
        let mut round = Vec::with_capacity(probes.len());
        for chunk in probes.chunks(16) {
            let sent = futures::future::join_all(chunk.iter().map(|p| send(p, ports, ca_pem))).await;
            round.extend(sent.iter().map(|r| answer(r, ports)));
        }
        // Requests no listener answers (TLS for a name no certificate or route serves) may be
        // the final answer: then three rounds alike, and some request answered.
        alike = if round == last { alike + 1 } else { 1 };
        let refused = round.iter().filter(|a| a.starts_with("no answer")).count();
        let settled = match refused {
            0 => alike >= 2,
            n => n < round.len() && alike >= 3,
        };
        if settled || tokio::time::Instant::now() >= deadline {
            return round;
        }
        last = round;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// One echo backend per Service port, and the EndpointSlices that send each port to its own.
async fn backends(case: &Case, ca: &Ca) -> anyhow::Result<(Vec<Backend>, String)> {
    let mut running = Vec::new();
    let mut slices = String::new();
    let names: Vec<&str> = case.hosts.iter().map(String::as_str).collect();
    let issued = ca.issue(&names)?;
    for service in case.objects.iter().filter(|o| kind(o) == "Service") {
        let namespace = str_at(service, &["metadata", "namespace"]).unwrap_or("default");
        let name = str_at(service, &["metadata", "name"]).unwrap_or_default();
        let tls = str_at(service, &["metadata", "annotations", "corpus.contour-rs.dev/backend"]) == Some("tls");
        let ports = service.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
        for (i, port) in ports.iter().enumerate() {
            let number = port.get("port").and_then(Value::as_u64).unwrap_or(80);
            let port_name = str_at(port, &["name"]).unwrap_or_default();
            let id = format!("{namespace}/{name}:{number}");
            let backend = if tls { Backend::start_tls(&id, &issued).await? } else { Backend::start(&id).await? };
            slices += &format!(
                "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: {name}-{i}, namespace: {namespace}, labels: {{kubernetes.io/service-name: {name}}}}}\naddressType: IPv4\nports: [{{name: '{port_name}', port: {}}}]\nendpoints: [{{addresses: ['127.0.0.1']}}]\n",
                backend.addr.port()
            );
            running.push(backend);
        }
    }
    Ok((running, slices))
}

fn yaml_of(objects: &[Value]) -> anyhow::Result<String> {
    let mut out = String::new();
    for o in objects {
        out += "---\n";
        out += &serde_yaml::to_string(o)?;
    }
    Ok(out)
}

const GATEWAY_CLASS: &str = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: contour}\nspec: {controllerName: projectcontour.io/gateway-controller}\n";

/// One case through both fleets: the mismatching answers, with the probes' count.
async fn compare(case: &Case, ca: &Ca) -> anyhow::Result<(usize, Vec<String>)> {
    let (_backends, slices) = backends(case, ca).await?;
    let probes = case.probes();
    let ca_pem = ca.pem();

    let original_ports = (testkit::free_port(), testkit::free_port());
    let original = format!("{}{slices}", yaml_of(&case.objects)?);
    let harness = Harness::start_default_fleet(&original, original_ports.0, original_ports.1).await?;
    let before = answers(&probes, original_ports, &ca_pem).await;
    harness.assert_no_nacks().await?;
    drop(harness);

    let converted_ports = (testkit::free_port(), testkit::free_port());
    let options =
        convert::Options { http_port: converted_ports.0, https_port: converted_ports.1, ..Default::default() };
    let conversion = convert::convert(case.objects.clone(), &options)?;
    let report: Vec<String> = conversion.report.iter().map(ToString::to_string).collect();
    for expected in &case.expect {
        anyhow::ensure!(
            report.iter().any(|line| line.contains(expected.as_str())),
            "{}: the report has no line with {expected:?}:\n{}",
            case.name,
            report.join("\n")
        );
    }
    let converted = format!("{GATEWAY_CLASS}{}{slices}", yaml_of(&conversion.objects)?);
    let options = default_fleet_options(converted_ports.0, converted_ports.1);
    let harness = Harness::start_with(&converted, GATEWAY_FLEET, options).await?;
    let after = answers(&probes, converted_ports, &ca_pem).await;
    harness.assert_no_nacks().await?;

    let served = before.iter().filter(|a| !a.starts_with("404") && !a.starts_with("no answer")).count();
    anyhow::ensure!(served > 0, "{}: the original objects served none of {} requests", case.name, probes.len());
    let mismatches: Vec<String> = probes
        .iter()
        .zip(before.iter().zip(&after))
        .filter(|(p, (b, a))| {
            b != a && !case.unconvertible.contains(&p.path) && !case.unconvertible_hosts.contains(&p.host)
        })
        .map(|(p, (b, a))| format!("{p}\n    original:  {b}\n    converted: {a}"))
        .collect();
    Ok((probes.len(), mismatches))
}

#[tokio::test]
async fn converted_corpus_answers_every_request_as_the_original() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let mut failures = Vec::new();
    let mut total = 0;
    let files = cases()?;
    anyhow::ensure!(files.len() >= 15, "the corpus has {} cases", files.len());
    for file in &files {
        let case = Case::load(file, &ca)?;
        match compare(&case, &ca).await {
            Ok((count, mismatches)) => {
                total += count;
                eprintln!("{}: {count} requests, {} answered differently", case.name, mismatches.len());
                if !mismatches.is_empty() {
                    let shown: Vec<&String> = mismatches.iter().take(8).collect();
                    failures.push(format!(
                        "{} ({} of {count}):\n  {}",
                        case.name,
                        mismatches.len(),
                        shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n  ")
                    ));
                }
            }
            Err(e) => failures.push(format!("{}: {e:#}", case.name)),
        }
    }
    eprintln!("{} cases, {total} requests per fleet", files.len());
    anyhow::ensure!(failures.is_empty(), "{}", failures.join("\n\n"));
    Ok(())
}

/// Every converted object of every case is created on a real kube-apiserver with the Gateway
/// API CRDs (the standard channel, then the experimental one): the output applies as it is.
#[tokio::test]
async fn converted_corpus_is_accepted_by_the_api_server() -> anyhow::Result<()> {
    let api = testkit::ApiServer::start().await?;
    api.install_gateway_api_latest().await?;
    crate::harness::install_contour_crds(&api).await?;
    let client = api.client().await?;
    let ca = Ca::new()?;
    let mut namespaces = BTreeSet::new();
    let mut converted = Vec::new();
    for file in cases()? {
        let case = Case::load(&file, &ca)?;
        let conversion = convert::convert(case.objects.clone(), &convert::Options::default())?;
        for o in &conversion.objects {
            if let Some(ns) = str_at(o, &["metadata", "namespace"]) {
                namespaces.insert(ns.to_string());
            }
        }
        converted.push((case.name, yaml_of(&conversion.objects)?));
    }
    for ns in namespaces {
        testkit::apply_yaml(&client, &format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n")).await?;
    }
    testkit::apply_yaml(&client, GATEWAY_CLASS).await?;
    for (name, yaml) in converted {
        testkit::apply_yaml(&client, &yaml).await.map_err(|e| anyhow::anyhow!("{name}: {e:#}\n{yaml}"))?;
    }
    Ok(())
}
