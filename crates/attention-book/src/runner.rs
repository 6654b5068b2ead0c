//! Starting the listing runner: the `listing-runner` crate, which links the
//! library and burn, is built (in release, by cargo, on demand) and run
//! only when [`crate::plan`] finds a stale listing.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::Report;

/// The cargo command that runs the listing runner on `backend`: a release
/// build, with the `tch` feature for the libtorch backends. `cargo` is the
/// cargo to use (`$CARGO` when run by cargo).
///
/// # Examples
/// ```
/// use attention_book::runner::command;
///
/// let args = |backend| {
///     let cmd = command("cargo", backend);
///     cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>()
/// };
/// assert_eq!(args("flex"), ["run", "--release", "-p", "listing-runner", "--"]);
/// assert!(args("libtorch").contains(&"--features=tch".to_owned()));
/// ```
pub fn command(cargo: impl AsRef<std::ffi::OsStr>, backend: &str) -> Command {
    let mut cmd = Command::new(cargo);
    cmd.args(["run", "--release", "-p", "listing-runner"]);
    if backend.starts_with("libtorch") {
        cmd.arg("--features=tch");
    }
    cmd.arg("--");
    cmd
}

/// Runs the stale listings on `backend` into `figures` with the listing
/// runner, built from the workspace at `root`, and returns its report.
/// Cargo's progress and the listings' own go to stderr (mdBook shows it in
/// the terminal); stdout stays free for the book.
///
/// # Errors
/// When cargo cannot be started, or the runner fails to build or stops
/// with an error (its messages are on stderr above), or its report cannot
/// be read.
pub fn run_stale(
    root: &Path,
    backend: &str,
    figures: &Path,
    stale: &[String],
) -> anyhow::Result<Report> {
    eprintln!(
        "mdbook-listings: {} listing(s) to run ({}); building the listing \
         runner (a release build of burn: minutes the first time, seconds \
         after)",
        stale.len(),
        stale.join(", ")
    );
    let report = root.join("target/listings-report.json");
    let _ = std::fs::remove_file(&report);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = command(cargo, backend)
        .arg("render")
        .arg(format!("--device={backend}"))
        .arg("--figures")
        .arg(figures)
        .arg("--report")
        .arg(&report)
        .args(stale)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .status()
        .context("cannot start cargo to build the listing runner")?;
    anyhow::ensure!(
        status.success(),
        "the listing runner failed ({status}); its messages are above"
    );
    let text = std::fs::read_to_string(&report).with_context(|| {
        format!(
            "the listing runner left no report at `{}`",
            report.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| {
        format!("the listing runner's report `{}`", report.display())
    })
}
