//! `contour-convert` (also `contour convert`): HTTPProxy and Ingress in, Gateway API out.
//!
//! Reads YAML files, directories of them (`.yaml`, `.yml`, `.json`, sorted) or `-` for standard
//! input; writes the converted objects as YAML on standard output and the report (each field
//! without a Gateway API equivalent, with its object) on standard error.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Parser;

/// Converts HTTPProxy and Ingress objects to Gateway API objects.
#[derive(Debug, Parser)]
#[command(name = "contour-convert", version)]
struct Args {
    /// YAML files or directories to read; `-` (or nothing) reads standard input.
    paths: Vec<PathBuf>,
    /// An existing Gateway (NAMESPACE/NAME) the routes attach to; without it the output
    /// includes a Gateway with the listeners the hosts need.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    gateway: Option<String>,
    /// The GatewayClass of the Gateway written.
    #[arg(long, default_value = "contour")]
    gateway_class: String,
    /// The namespace of the Gateway written.
    #[arg(long, default_value = "projectcontour")]
    namespace: String,
    /// The name of the Gateway written.
    #[arg(long, default_value = "contour")]
    gateway_name: String,
    /// The port of the HTTP listener.
    #[arg(long, default_value_t = 80)]
    http_port: u16,
    /// The port of the HTTPS and TLS listeners.
    #[arg(long, default_value_t = 443)]
    https_port: u16,
    /// Convert objects of this ingress class (repeatable); by default those without a class
    /// or of class `contour`, as the controller serves.
    #[arg(long = "ingress-class-name", value_name = "CLASS")]
    ingress_class_names: Vec<String>,
}

/// The files of a path: itself, or a directory's YAML and JSON files in name order.
fn files(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))? {
        let p = entry?.path();
        if p.is_dir() {
            out.extend(files(&p)?);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let gateway = match &args.gateway {
        None => None,
        Some(g) => {
            let (namespace, name) = g
                .split_once('/')
                .filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
                .with_context(|| format!("--gateway {g:?}: expected NAMESPACE/NAME"))?;
            Some((namespace.to_string(), name.to_string()))
        }
    };
    let options = convert::Options {
        gateway,
        gateway_namespace: args.namespace,
        gateway_name: args.gateway_name,
        gateway_class: args.gateway_class,
        http_port: args.http_port,
        https_port: args.https_port,
        ingress_class_names: args.ingress_class_names,
    };
    let paths = if args.paths.is_empty() { vec![PathBuf::from("-")] } else { args.paths };
    let mut objects = Vec::new();
    for path in &paths {
        if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("reading standard input")?;
            objects.extend(convert::read_yaml(&text, "standard input")?);
            continue;
        }
        for file in files(path)? {
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            objects.extend(convert::read_yaml(&text, &file.display().to_string())?);
        }
    }
    let conversion = convert::convert(objects, &options)?;
    std::io::stdout().write_all(convert::to_yaml(&conversion.objects)?.as_bytes())?;
    let mut stderr = std::io::stderr().lock();
    for finding in &conversion.report {
        writeln!(stderr, "{finding}")?;
    }
    Ok(())
}
