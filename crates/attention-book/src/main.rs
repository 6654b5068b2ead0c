//! `mdbook-listings`: the book's preprocessor. Declared in `book.toml`, it
//! runs before mdBook's `links` preprocessor on every `mdbook build` and
//! `mdbook serve`: it finds the listings whose code changed since their
//! outputs were made, has the listing runner (`cargo run --release -p
//! listing-runner`, which links burn) run them when there are any, and
//! passes the book on with each figure embedded as an `<object>`
//! ([`embed_figures`]). It checks every page's quoted numbers against the
//! page's outputs ([`agreement`]) and marks, on the page and in the
//! terminal, each that agrees with none (after a listing printed others). On an
//! up-to-date tree it compiles and runs no tensor code. To run listings by
//! hand, use the runner:
//! `cargo run --release -p listing-runner -- render`.

use std::io;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use attention_book::agreement::{self, Mark, check_page};
use attention_book::embed::{
    embed_figures, with_failure_notice, with_stale_notice,
};
use attention_book::marks::mark_listings;
use attention_book::math::{protect, restore};
use attention_book::runner::{backend_from_env, run_stale};
use attention_book::search::{sections, write_index};
use attention_book::table::registered;
use attention_book::{Report, plan};
use clap::{Parser, Subcommand};
use mdbook_preprocessor::PreprocessorContext;
use mdbook_preprocessor::book::Book;
use mdbook_preprocessor::parse_input;

#[derive(Parser)]
#[command(
    version,
    about = "The book's mdBook preprocessors: runs stale listings (through the listing runner) and embeds figures; keeps formulas through the translation"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// mdBook asks whether a renderer is supported: every one is.
    Supports { renderer: String },
    /// Prints the manifest of the widgets' WebAssembly build as it is now
    /// (`scripts/build-widgets` saves it as src/widgets/pkg/BUILD.json).
    WidgetsManifest,
    /// The `math` preprocessor, which runs before the translation and its
    /// extraction: every formula put where mdbook-gettext's rewriting of
    /// the pages leaves it as it is (see `attention_book::math`); the
    /// `listings` preprocessor takes them out again.
    ProtectMath,
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Some(Command::Supports { .. }) => Ok(()),
        Some(Command::WidgetsManifest) => widgets_manifest(),
        Some(Command::ProtectMath) => protect_math(),
        None => preprocess(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mdbook-listings: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The manifest of the widgets' build in the current folder (the book's
/// root, where `scripts/build-widgets` runs it).
fn widgets_manifest() -> anyhow::Result<()> {
    let manifest = attention_book::widgets::manifest(Path::new("."))?;
    println!("{}", serde_json::to_string_pretty(&manifest)?);
    Ok(())
}

fn protect_math() -> anyhow::Result<()> {
    let (_, mut book) =
        parse_input(io::stdin()).context("reading mdBook's input")?;
    book.for_each_chapter_mut(|chapter| {
        chapter.content = protect(&chapter.content);
    });
    write_book(&book)
}

/// Hands the preprocessed book back to mdBook.
fn write_book(book: &Book) -> anyhow::Result<()> {
    serde_json::to_writer(io::stdout(), book)
        .context("writing the book back to mdBook")
}

fn preprocess() -> anyhow::Result<()> {
    let (ctx, mut book) =
        parse_input(io::stdin()).context("reading mdBook's input")?;
    book.for_each_chapter_mut(|chapter| {
        chapter.content = restore(&chapter.content);
    });
    if ctx.renderer == "linkcheck2" && !on_path("mdbook-linkcheck2") {
        eprintln!(
            "mdbook-listings: mdbook-linkcheck2 is not installed, so links \
             were not checked (`.ci/setup --linkcheck` installs it)"
        );
    }
    let report = bring_up_to_date(&ctx.root)?;
    write_search_index(&ctx, &book)?;
    write_book(&embed(&ctx, book, &report)?)
}

/// Runs the listings whose outputs are stale (none on a fresh clone) on the
/// backend `D2L_DEVICE` names, through the listing runner.
fn bring_up_to_date(root: &Path) -> anyhow::Result<Report> {
    let backend = backend_from_env()?;
    // The committed figures are the default backend's; another
    // backend's go next to the build, and the book shows the former.
    let figures = if backend == "flex" {
        root.join("figures")
    } else {
        let folder = root.join(format!("target/figures-{backend}"));
        eprintln!(
            "mdbook-listings: {backend} outputs go to {}",
            folder.display()
        );
        folder
    };
    let plan = plan(root, &registered(root)?, &figures, &backend, false)?;
    if plan.stale.is_empty() {
        return Ok(Report::default());
    }
    run_stale(root, &backend, &figures, &plan.stale)
}

/// The book with every figure embedded, every listing's code marked, and
/// a notice on the pages of each listing that failed (its committed files
/// stay; the rest of the book builds, so `mdbook serve` goes on).
fn embed(
    ctx: &PreprocessorContext,
    mut book: Book,
    report: &Report,
) -> anyhow::Result<Book> {
    let src = ctx.root.join(&ctx.config.book.src);
    let marks = agreement::marks(&ctx.root)?;
    let mut failed = None;
    book.for_each_chapter_mut(|chapter| {
        let content = report
            .failed
            .iter()
            .fold(chapter.content.clone(), |page, f| {
                with_failure_notice(&page, f)
            });
        // includes are relative to the page's folder
        let page = chapter.path.as_ref().map(|p| src.join(p));
        let dir = page.as_ref().and_then(|p| p.parent()).unwrap_or(&src);
        let name = page
            .as_ref()
            .and_then(|p| p.file_name())
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        let checked = (ctx.root.as_path(), dir, name.as_str());
        match mark_stale_numbers(checked, &content, &marks)
            .and_then(|content| mark_listings(&content, dir))
            .and_then(|marked| embed_figures(&marked, &ctx.root))
        {
            Ok(html) => chapter.content = html,
            Err(e) => failed = Some(e.context(chapter.name.clone())),
        }
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(book),
    }
}

/// `content`, the page `page` (its file name) in `dir` of the book at
/// `root`, with a notice above each paragraph that quotes a number
/// agreeing with none of the page's sources (a listing ran again and
/// printed another), each also named on stderr; `cargo test` fails on it.
fn mark_stale_numbers(
    (root, dir, page): (&Path, &Path, &str),
    content: &str,
    marks: &[Mark],
) -> anyhow::Result<String> {
    let sources = agreement::sources(root, dir, page, content)?;
    let found = check_page(page, content, &sources, marks);
    let mut marked = content.to_owned();
    // from the last, so that the earlier lines keep their numbers
    for q in found.unsupported.iter().rev() {
        eprintln!(
            "mdbook-listings: {page}:{}: {} in “{}” agrees with none of the \
             page's outputs: correct the sentence",
            q.line, q.text, q.sentence
        );
        marked = with_stale_notice(&marked, q);
    }
    Ok(marked)
}

/// Writes the book's search index for its language, from the pages as
/// they are now (translated, includes not yet expanded).
fn write_search_index(
    ctx: &PreprocessorContext,
    book: &Book,
) -> anyhow::Result<()> {
    let mut found = Vec::new();
    for chapter in book.chapters() {
        if let Some(path) = &chapter.path {
            let page = path.to_string_lossy();
            found.extend(sections(&chapter.name, &page, &chapter.content));
        }
    }
    let language = ctx.config.book.language.as_deref().unwrap_or("en");
    write_index(&ctx.root.join(&ctx.config.book.src), language, &found)
}

/// Whether an executable called `name` is in a folder of `PATH`.
fn on_path(name: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(name).is_file())
}
