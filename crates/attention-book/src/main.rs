//! `mdbook-listings`: the book's preprocessor. Declared in `book.toml`, it
//! runs before mdBook's `links` preprocessor on every `mdbook build` and
//! `mdbook serve`, brings `figures/` up to date, and passes the book on
//! with each figure embedded as an `<object>` ([`embed_figures`]). Run by hand, `mdbook-listings render` does the same.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use attention_book::embed::{embed_figures, with_failure_notice};
use attention_book::marks::mark_listings;
use attention_book::{check, compare_folders, render};
use clap::{Parser, Subcommand};
use d2l_attention::BackendChoice;
use d2l_attention::device::VALID_DEVICES;
use d2l_attention::listings;
use d2l_attention::listings::Listing;
use mdbook_preprocessor::parse_input;

/// burn allocates a fresh buffer for nearly every tensor operation; with
/// the Bahdanau chapter's thousands of small tensors per batch, mimalloc
/// trains about 10% faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    version,
    about = "Renders the book's figures and captured outputs; an mdBook preprocessor"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// mdBook asks whether a renderer is supported: every one is.
    Supports { renderer: String },
    /// Brings the figures folder up to date without building the book.
    Render {
        /// The backend to run the listings on [default: $D2L_DEVICE, else flex].
        #[arg(long, help = format!("Backend to run the listings on: {VALID_DEVICES} [default: $D2L_DEVICE, else flex]"))]
        device: Option<BackendChoice>,
        /// The figures folder [default: figures, the committed one, which
        /// only the default backend (flex) writes: name another folder for
        /// another backend].
        #[arg(long)]
        figures: Option<PathBuf>,
        /// Run the listings even when they are up to date.
        #[arg(long)]
        force: bool,
        /// Only these listings [default: all].
        names: Vec<String>,
    },
    /// Runs listings again (a release build) and checks their outputs
    /// against the committed figures folder: within tolerance, or, for a
    /// training whose outcome varies by machine, its stated facts.
    Check {
        /// The figures folder.
        #[arg(long, default_value = "figures")]
        figures: PathBuf,
        /// Only these listings [default: all].
        names: Vec<String>,
    },
    /// Compares two figures folders within tolerance (e.g. a copy of the
    /// committed one and the one a build left).
    Compare { committed: PathBuf, new: PathBuf },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mdbook-listings: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(Command::Supports { .. }) => Ok(()),
        Some(Command::Render {
            device,
            figures,
            force,
            names,
        }) => {
            let backend = device.map_or_else(BackendChoice::from_env, Ok)?;
            let figures = match figures {
                Some(folder) => folder,
                None if backend == BackendChoice::default() => {
                    PathBuf::from("figures")
                }
                None => anyhow::bail!(
                    "figures/ holds the {} outputs; name a folder for {backend} with --figures",
                    BackendChoice::default()
                ),
            };
            let report = render(&select(&names)?, &figures, backend, force)?;
            eprintln!(
                "{} listings run, {} up to date, {} failed",
                report.ran.len(),
                report.skipped.len(),
                report.failed.len()
            );
            let failed: Vec<String> =
                report.failed.iter().map(|f| f.to_string()).collect();
            fail_on(&failed)
        }
        Some(Command::Check { figures, names }) => {
            let listings = select(&names)?;
            let problems = check(&listings, &figures, BackendChoice::Flex)?;
            fail_on(&problems)?;
            eprintln!(
                "{} listings agree with {}",
                listings.len(),
                figures.display()
            );
            Ok(())
        }
        Some(Command::Compare { committed, new }) => {
            fail_on(&compare_folders(&committed, &new)?)?;
            eprintln!("{} agrees with {}", new.display(), committed.display());
            Ok(())
        }
        None => {
            let (ctx, book) =
                parse_input(io::stdin()).context("reading mdBook's input")?;
            let backend = BackendChoice::from_env()?;
            // The committed figures are the default backend's; another
            // backend's go next to the build, and the book shows the former.
            let figures = if backend == BackendChoice::default() {
                ctx.root.join("figures")
            } else {
                let folder = ctx.root.join(format!("target/figures-{backend}"));
                eprintln!(
                    "mdbook-listings: {backend} outputs go to {}",
                    folder.display()
                );
                folder
            };
            // A failed listing leaves its committed files and a notice on
            // its page; the rest of the book builds (mdbook serve goes on).
            let report = render(&listings::all(), &figures, backend, false)?;
            let mut book = book;
            let mut failed = None;
            book.for_each_chapter_mut(|chapter| {
                let content = report
                    .failed
                    .iter()
                    .fold(chapter.content.clone(), |page, f| {
                        with_failure_notice(&page, f)
                    });
                // includes are relative to the page's folder
                let src = ctx.root.join(&ctx.config.book.src);
                let page = chapter.path.as_ref().map(|p| src.join(p));
                let dir =
                    page.as_ref().and_then(|p| p.parent()).unwrap_or(&src);
                match mark_listings(&content, dir)
                    .and_then(|marked| embed_figures(&marked, &ctx.root))
                {
                    Ok(html) => chapter.content = html,
                    Err(e) => failed = Some(e.context(chapter.name.clone())),
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
            serde_json::to_writer(io::stdout(), &book)
                .context("writing the book back to mdBook")?;
            Ok(())
        }
    }
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
