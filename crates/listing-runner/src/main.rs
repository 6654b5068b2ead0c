//! `listing-runner`: runs the book's listings. The `mdbook-listings`
//! preprocessor starts it (`render`) when a listing is stale; CI runs
//! `check` and `compare`; a contributor runs `render --force NAME` to remake
//! a listing's files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use d2l_attention::BackendChoice;
use d2l_attention::device::VALID_DEVICES;
use d2l_attention::files::write_atomic;
use d2l_attention::listings;
use d2l_attention::listings::Listing;
use listing_runner::{check, check_root, compare_folders, render};

/// burn allocates a fresh buffer for nearly every tensor operation; with
/// the Bahdanau chapter's thousands of small tensors per batch, mimalloc
/// trains about 10% faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    version,
    about = "Runs the book's listings: renders their figures and captured outputs, and checks them"
)]
struct Cli {
    /// The book's root folder: where its sources, figures and models are
    /// [default: the nearest folder holding book.toml, from the current
    /// one up]. The runner stops if it was compiled from another folder.
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Brings the figures folder up to date without building the book.
    Render {
        /// The backend to run the listings on [default: $D2L_DEVICE, else flex].
        #[arg(long, help = format!("Backend to run the listings on: {VALID_DEVICES} [default: $D2L_DEVICE, else flex]"))]
        device: Option<BackendChoice>,
        /// The figures folder [default: figures under the root, the
        /// committed one, which only the default backend (flex) writes:
        /// name another folder for another backend].
        #[arg(long)]
        figures: Option<PathBuf>,
        /// Run the listings even when they are up to date.
        #[arg(long)]
        force: bool,
        /// Write what ran and what failed to this file (JSON) and succeed
        /// even when a listing failed (the preprocessor shows failures on
        /// their pages).
        #[arg(long)]
        report: Option<PathBuf>,
        /// Only these listings [default: all].
        names: Vec<String>,
    },
    /// Runs listings again (a release build) and checks their outputs
    /// against the committed figures folder: within tolerance, or, for a
    /// training whose outcome varies by machine, its stated facts.
    Check {
        /// The figures folder [default: figures under the root].
        #[arg(long)]
        figures: Option<PathBuf>,
        /// Only these listings [default: all].
        names: Vec<String>,
    },
    /// Compares two figures folders within tolerance (e.g. a copy of the
    /// committed one and the one a build left).
    Compare { committed: PathBuf, new: PathBuf },
}

fn main() -> ExitCode {
    // a listing measuring peak memory started this program afresh
    let peak_request = d2l_attention::efficient_attention::serve_peak_request();
    match peak_request.unwrap_or_else(|| run(Cli::parse())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("listing-runner: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace this binary was compiled in (for [`check_root`] only).
const BUILT_FROM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn run(cli: Cli) -> anyhow::Result<()> {
    // Only render and check read the book: compare runs anywhere.
    let root = || -> anyhow::Result<PathBuf> {
        let root = match &cli.root {
            Some(root) => root.clone(),
            None => book_root()?,
        };
        check_root(&root, &[BUILT_FROM, listings::BUILT_FROM])?;
        Ok(root)
    };
    match cli.command {
        Command::Render {
            device,
            figures,
            force,
            report: report_file,
            names,
        } => {
            let root = root()?;
            let backend = device.map_or_else(BackendChoice::from_env, Ok)?;
            let figures = match figures {
                Some(folder) => folder,
                None if backend == BackendChoice::default() => {
                    root.join("figures")
                }
                None => anyhow::bail!(
                    "figures/ holds the {} outputs; name a folder for {backend} with --figures",
                    BackendChoice::default()
                ),
            };
            let listings = select(&names)?;
            let report = render(&root, &listings, &figures, backend, force)?;
            eprintln!(
                "{} listings run, {} up to date, {} failed",
                report.ran.len(),
                report.skipped.len(),
                report.failed.len()
            );
            if let Some(file) = report_file {
                let json = serde_json::to_string(&report)?;
                return Ok(write_atomic(&file, json.as_bytes())?);
            }
            let failed: Vec<String> =
                report.failed.iter().map(|f| f.to_string()).collect();
            fail_on(&failed)
        }
        Command::Check { figures, names } => {
            let root = root()?;
            let listings = select(&names)?;
            let figures = figures.unwrap_or_else(|| root.join("figures"));
            let problems =
                check(&root, &listings, &figures, BackendChoice::Flex)?;
            fail_on(&problems)?;
            eprintln!(
                "{} listings agree with {}",
                listings.len(),
                figures.display()
            );
            Ok(())
        }
        Command::Compare { committed, new } => {
            fail_on(&compare_folders(&committed, &new)?)?;
            eprintln!("{} agrees with {}", new.display(), committed.display());
            Ok(())
        }
    }
}

/// The nearest folder holding `book.toml`, from the current one up.
fn book_root() -> anyhow::Result<PathBuf> {
    let here = std::env::current_dir()?;
    here.ancestors()
        .find(|dir| dir.join("book.toml").is_file())
        .map(PathBuf::from)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no book.toml in `{}` or above it: run in the book, or name it with --root",
                here.display()
            )
        })
}

/// The listings called `names`, in the book's order; all of them when
/// `names` is empty.
fn select(names: &[String]) -> anyhow::Result<Vec<Listing>> {
    let all = listings::all();
    if let Some(unknown) =
        names.iter().find(|n| !all.iter().any(|l| l.name == *n))
    {
        let known: Vec<&str> = all.iter().map(|l| l.name).collect();
        anyhow::bail!(
            "no listing `{unknown}`; the listings are: {}",
            known.join(", ")
        );
    }
    Ok(all
        .into_iter()
        .filter(|l| names.is_empty() || names.iter().any(|n| n == l.name))
        .collect())
}

/// Prints every problem and fails when there is one.
fn fail_on(problems: &[String]) -> anyhow::Result<()> {
    for p in problems {
        eprintln!("{p}");
    }
    anyhow::ensure!(
        problems.is_empty(),
        "{} problem(s), listed above",
        problems.len()
    );
    Ok(())
}
