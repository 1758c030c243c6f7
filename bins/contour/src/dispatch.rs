//! Upstream's command line, mapped onto our binaries. Pure: arguments in, a decision out.

use std::ffi::{OsStr, OsString};

/// What `contour` does with its arguments.
#[derive(Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Replace this process with `binary` and these arguments.
    Run {
        /// One of our binaries.
        binary: &'static str,
        /// Its arguments.
        args: Vec<OsString>,
    },
    /// Print this and exit 0.
    Print(String),
    /// The arguments name no subcommand we have; exit 2 with this problem and the usage.
    Usage(String),
}

/// The subcommands, as upstream lists them.
pub const USAGE: &str = "\
usage: contour [--log-format=text|json] <command> [<args> ...]

Commands (each runs one of the contour-rs binaries beside this one):
  serve                    the controller and xDS server (contour-serve)
  bootstrap <path>         write Envoy's bootstrap configuration (contour-bootstrap)
  certgen [<outputdir>]    generate the xDS certificates (contour-certgen)
  envoy shutdown-manager   the Envoy pod's drain sidecar (contour-shutdown-manager serve)
  envoy shutdown           drain Envoy, run as a preStop hook (contour-shutdown-manager shutdown)
  gateway-provisioner      the GatewayClass provisioner (contour-provisioner)
  cli {cds|eds|lds|rds|sds} [names]   watch xDS resources on a controller (contour-cli)
  convert [<path>...]      HTTPProxy and Ingress YAML to Gateway API (contour-convert)
  version                  build information
";

/// Decides what to run. `--log-format` is upstream's one global flag and may come anywhere
/// before or after the subcommand; it goes to `serve`, the one binary that logs at length.
pub fn dispatch(args: &[OsString]) -> Dispatch {
    let mut log_format: Option<OsString> = None;
    let mut rest: Vec<OsString> = Vec::with_capacity(args.len());
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let text = arg.to_string_lossy();
        if text == "--log-format" {
            match iter.next() {
                Some(value) => log_format = Some(value.clone()),
                None => return Dispatch::Usage("--log-format needs a value (text or json)".into()),
            }
        } else if let Some(value) = text.strip_prefix("--log-format=") {
            log_format = Some(value.into());
        } else {
            rest.push(arg.clone());
        }
    }
    if let Some(format) = &log_format
        && !matches!(format.to_str(), Some("text" | "json"))
    {
        return Dispatch::Usage(format!("--log-format must be text or json, not {format:?}"));
    }
    let Some(command) = rest.first().map(|c| c.to_string_lossy().into_owned()) else {
        return Dispatch::Usage("no command given".into());
    };
    let tail = || rest[1..].to_vec();
    let run = |binary: &'static str, mut args: Vec<OsString>| Dispatch::Run { binary, args: std::mem::take(&mut args) };
    match command.as_str() {
        "serve" => {
            let mut args = tail();
            if let Some(format) = log_format {
                args.splice(0..0, [OsString::from("--log-format"), format]);
            }
            run("contour-serve", args)
        }
        "bootstrap" => run("contour-bootstrap", tail()),
        "certgen" => run("contour-certgen", tail()),
        "gateway-provisioner" => run("contour-provisioner", tail()),
        "envoy" => match rest.get(1).map(|s| s.as_os_str()) {
            Some(sub) if sub == OsStr::new("shutdown-manager") => {
                run("contour-shutdown-manager", with("serve", &rest[2..]))
            }
            Some(sub) if sub == OsStr::new("shutdown") => run("contour-shutdown-manager", with("shutdown", &rest[2..])),
            Some(other) => Dispatch::Usage(format!("unknown envoy command {other:?}: shutdown-manager or shutdown")),
            None => Dispatch::Usage("envoy needs a command: shutdown-manager or shutdown".into()),
        },
        "version" => Dispatch::Print(version()),
        "help" | "--help" | "-h" => Dispatch::Print(USAGE.into()),
        "cli" => run("contour-cli", tail()),
        "convert" => run("contour-convert", tail()),
        other => Dispatch::Usage(format!("unknown command {other:?}")),
    }
}

fn with(first: &str, rest: &[OsString]) -> Vec<OsString> {
    std::iter::once(OsString::from(first)).chain(rest.iter().cloned()).collect()
}

/// Upstream's `contour version` shape (YAML with branch, sha and version).
fn version() -> String {
    format!(
        "branch: {}\nsha: {}\nversion: v{}\n",
        option_env!("CONTOUR_BUILD_BRANCH").unwrap_or("main"),
        option_env!("CONTOUR_BUILD_SHA").unwrap_or("unknown"),
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(words: &str) -> Dispatch {
        dispatch(&words.split_whitespace().map(OsString::from).collect::<Vec<_>>())
    }

    fn exec(binary: &'static str, words: &str) -> Dispatch {
        Dispatch::Run { binary, args: words.split_whitespace().map(OsString::from).collect() }
    }

    /// The argument lists of upstream's own manifests.
    #[test]
    fn upstream_manifest_commands_reach_our_binaries() {
        assert_eq!(
            run("bootstrap /config/envoy.json --xds-address=contour --xds-port=8001 --xds-resource-version=v3"),
            exec(
                "contour-bootstrap",
                "/config/envoy.json --xds-address=contour --xds-port=8001 --xds-resource-version=v3"
            )
        );
        assert_eq!(
            run("serve --incluster --xds-address=0.0.0.0 --contour-cafile=/certs/ca.crt"),
            exec("contour-serve", "--incluster --xds-address=0.0.0.0 --contour-cafile=/certs/ca.crt")
        );
        assert_eq!(
            run("certgen --kube --incluster --overwrite --secrets-format=compact --namespace=$(CONTOUR_NAMESPACE)"),
            exec(
                "contour-certgen",
                "--kube --incluster --overwrite --secrets-format=compact --namespace=$(CONTOUR_NAMESPACE)"
            )
        );
        assert_eq!(run("envoy shutdown-manager"), exec("contour-shutdown-manager", "serve"));
        assert_eq!(run("convert - --gateway infra/edge"), exec("contour-convert", "- --gateway infra/edge"));
        assert_eq!(
            run("envoy shutdown --check-delay=30s"),
            exec("contour-shutdown-manager", "shutdown --check-delay=30s")
        );
        assert_eq!(
            run("gateway-provisioner --metrics-addr=:8080"),
            exec("contour-provisioner", "--metrics-addr=:8080")
        );
    }

    #[test]
    fn the_global_log_format_goes_to_serve_wherever_it_stands() {
        let expected = exec("contour-serve", "--log-format json --insecure");
        assert_eq!(run("--log-format=json serve --insecure"), expected);
        assert_eq!(run("serve --insecure --log-format json"), expected);
        assert_eq!(run("--log-format json bootstrap -"), exec("contour-bootstrap", "-"));
        assert!(matches!(run("--log-format xml serve"), Dispatch::Usage(m) if m.contains("xml")));
    }

    #[test]
    fn version_help_and_mistakes() {
        assert!(matches!(run("version"), Dispatch::Print(v) if v.contains("version: v")));
        assert!(matches!(run("--help"), Dispatch::Print(u) if u.contains("envoy shutdown-manager")));
        assert!(matches!(run(""), Dispatch::Usage(_)));
        assert!(matches!(run("serv"), Dispatch::Usage(m) if m.contains("serv")));
        assert!(matches!(run("envoy drain"), Dispatch::Usage(m) if m.contains("drain")));
        assert_eq!(run("cli lds --contour 127.0.0.1:8001"), exec("contour-cli", "lds --contour 127.0.0.1:8001"));
    }
}
