//! `contour`: upstream's one command, so upstream's manifests run with only the image changed.
//!
//! Each subcommand hands over to one of our binaries, found beside this one (then on PATH):
//! `contour serve` is `contour-serve`, `contour envoy shutdown` is `contour-shutdown-manager
//! shutdown`, and so on. The process is replaced (exec), so signals and exit codes are the
//! binary's own. The microbinaries stay the primary interface.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

mod dispatch;

use dispatch::{Dispatch, dispatch};

fn main() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match dispatch(&args) {
        Dispatch::Run { binary, args } => {
            let path = locate(binary);
            let error = std::process::Command::new(&path).args(&args).exec();
            eprintln!("contour: running {}: {error}", path.display());
            std::process::exit(127);
        }
        Dispatch::Print(text) => print!("{text}"),
        Dispatch::Usage(problem) => {
            eprintln!("contour: {problem}\n\n{}", dispatch::USAGE);
            std::process::exit(2);
        }
    }
}

/// The binary beside this one when it exists, else its bare name for PATH to find.
fn locate(binary: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|me| me.parent().map(|dir| dir.join(binary)))
        .filter(|candidate| candidate.is_file())
        .unwrap_or_else(|| PathBuf::from(binary))
}
