//! Every binary's flags: each one's `--help`, as clap prints it.

use std::path::PathBuf;
use std::process::Command;

use crate::{Error, GENERATED};

/// The binaries the book documents, each with the argument lists whose help it shows.
pub(crate) const BINARIES: &[(&str, &[&[&str]])] = &[
    ("contour", &[&["--help"]]),
    ("contour-serve", &[&["--help"]]),
    ("contour-bootstrap", &[&["--help"]]),
    ("contour-certgen", &[&["--help"]]),
    ("contour-shutdown-manager", &[&["serve", "--help"], &["shutdown", "--help"]]),
    ("contour-provisioner", &[&["--help"]]),
    ("contour-convert", &[&["--help"]]),
    ("contour-cli", &[&["--help"]]),
];

/// The flags page.
pub(crate) fn page(binary: &dyn Fn(&str) -> Option<PathBuf>) -> Result<String, Error> {
    let mut out = format!(
        "{GENERATED}\n\n# Flags\n\nEvery binary's flags, as its `--help` prints them. `contour` is upstream's one \
         command: each of its subcommands runs one of the binaries below with the same flags. A flag with \
         `[env: NAME=]` can also be set in that environment variable. contour.yaml and a ContourConfiguration \
         set most of `contour-serve`'s settings too ([contour.yaml and ContourConfiguration](configuration.md)); \
         a flag wins over both.\n"
    );
    for (name, invocations) in BINARIES {
        let path = binary(name).ok_or_else(|| Error::NotBuilt(name.to_string()))?;
        out.push_str(&format!("\n## {name}\n"));
        for args in *invocations {
            // No environment: clap would show the values of the variables it reads.
            let output = Command::new(&path).args(*args).env_clear().output().map_err(|e| Error::Help {
                binary: name.to_string(),
                args: args.iter().map(|a| a.to_string()).collect(),
                message: e.to_string(),
            })?;
            let text = String::from_utf8_lossy(&output.stdout);
            if !output.status.success() || text.trim().is_empty() {
                return Err(Error::Help {
                    binary: name.to_string(),
                    args: args.iter().map(|a| a.to_string()).collect(),
                    message: format!("{}: {}", output.status, String::from_utf8_lossy(&output.stderr)),
                });
            }
            if args.len() > 1 {
                out.push_str(&format!("\n### {name} {}\n", args[..args.len() - 1].join(" ")));
            }
            out.push_str(&format!("\n```text\n{}\n```\n", text.trim_end()));
        }
    }
    Ok(out)
}
