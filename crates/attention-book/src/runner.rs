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
/// runner, built from the workspace at `root` and told to work on it
/// (`--root`: it stops when cargo handed it another checkout's build), and
/// returns its report.
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
    let report = tempfile::Builder::new()
        .prefix("listings-report")
        .suffix(".json")
        .tempfile()
        .context("cannot create a file for the listing runner's report")?;
    let report = report.path();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = command(cargo, backend)
        .arg("--root")
        .arg(root)
        .arg("render")
        .arg(format!("--device={backend}"))
        .arg("--figures")
        .arg(figures)
        .arg("--report")
        .arg(report)
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
    let text = std::fs::read_to_string(report).with_context(|| {
        format!(
            "the listing runner left no report at `{}`",
            report.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| {
        format!("the listing runner's report `{}`", report.display())
    })
}

/// The backend `D2L_DEVICE` names, as the runner writes it (`flex` when
/// unset or empty; `flex`, `libtorch` or `libtorch-cuda:N`, case and
/// surrounding spaces ignored), so that the preprocessor's fingerprints
/// are the runner's.
///
/// # Errors
/// When the variable names another device (before anything is built).
pub fn backend_from_env() -> anyhow::Result<String> {
    let given = std::env::var("D2L_DEVICE").unwrap_or_default();
    backend_name(&given).ok_or_else(|| {
        anyhow::anyhow!(
            "D2L_DEVICE=`{given}` names an unknown device; valid choices: \
             flex, libtorch, libtorch-cuda:N (N = GPU index)"
        )
    })
}

/// `given`'s backend as the runner writes it; `None` when it names none.
///
/// # Examples
/// ```
/// use attention_book::runner::backend_name;
///
/// assert_eq!(backend_name("").as_deref(), Some("flex"));
/// assert_eq!(backend_name(" LibTorch ").as_deref(), Some("libtorch"));
/// assert_eq!(backend_name("libtorch-cuda:01").as_deref(), Some("libtorch-cuda:1"));
/// assert_eq!(backend_name("cuda"), None);
/// ```
pub fn backend_name(given: &str) -> Option<String> {
    let name = given.trim().to_ascii_lowercase();
    match name.as_str() {
        "" | "flex" => Some("flex".to_owned()),
        "libtorch" => Some(name),
        _ => {
            let index: usize =
                name.strip_prefix("libtorch-cuda:")?.parse().ok()?;
            Some(format!("libtorch-cuda:{index}"))
        }
    }
}
