//! Two checkouts of the book and one build: the built `mdbook-listings`
//! preprocessor reads the book whose root mdBook hands it
//! (`PreprocessorContext::root`), never the workspace it was compiled in,
//! and starts the listing runner on that root (`--root`). Run on two
//! temporary copies of a small book: each up to date by its own sources,
//! one still read after the other is deleted, and an edit to one making
//! that one's listing stale. On such a book's page, the preprocessor also
//! marks a quoted number that no output prints.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use attention_book::fingerprint::fingerprint;
use attention_book::table::registered;
use attention_book::{MANIFEST, content_hash};
use mdbook_preprocessor::PreprocessorContext;
use mdbook_preprocessor::book::{Book, Chapter};
use mdbook_preprocessor::config::Config;
use tempfile::TempDir;

const LISTING: &str = "crates/d2l-attention/src/listings/demo.rs";

fn write(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A book with one listing, `demo`, whose code holds `marker` and whose
/// committed output is up to date.
fn small_book(marker: &str) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (file, text) in [
        ("Cargo.lock", "# no dependencies\n"),
        ("crates/d2l-attention/Cargo.toml", "[package]\n"),
        ("crates/d2l-attention/src/lib.rs", "pub mod listings;\n"),
        (
            "crates/d2l-attention/src/listings/mod.rs",
            "pub mod demo;\n\npub fn all() -> Vec<Listing> {\n    \
             [demo::LISTINGS].concat()\n}\n",
        ),
        ("crates/d2l-attention/src/plot/mod.rs", "\n"),
        ("crates/d2l-attention/src/device.rs", "\n"),
        ("src/SUMMARY.md", "- [Demo](demo.md)\n"),
        ("src/demo.md", "# Demo\n"),
        ("figures/demo.txt", marker),
    ] {
        write(root, file, text);
    }
    write(root, LISTING, &listing(marker));
    let table = registered(root).unwrap();
    let now = fingerprint(root, &table[0], "flex").unwrap();
    let hash = content_hash(marker.as_bytes());
    write(
        root,
        &format!("figures/{MANIFEST}"),
        &format!("demo {now} demo.txt@{hash}\n"),
    );
    dir
}

fn listing(marker: &str) -> String {
    format!(
        "pub const LISTINGS: &[Listing] = &[Listing::new(\"demo\", file!(), demo)];\n\n\
         fn demo() {{\n    // {marker}\n}}\n"
    )
}

/// Runs the built preprocessor on the book at `root` as mdBook does (in
/// that folder, the context and the book on stdin), with `cargo` standing
/// for cargo when it starts the runner.
fn preprocess(root: &Path, cargo: &Path) -> Output {
    preprocess_page(root, cargo, "# Demo\n")
}

/// [`preprocess`] with `page` as the demo chapter's text.
fn preprocess_page(root: &Path, cargo: &Path, page: &str) -> Output {
    let ctx = PreprocessorContext::new(
        root.to_owned(),
        Config::default(),
        "html".into(),
    );
    let mut book = Book::new();
    book.push_item(Chapter::new("Demo", page.into(), "demo.md", Vec::new()));
    let input = serde_json::to_vec(&(ctx, book)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mdbook-listings"))
        .current_dir(root)
        .env_remove("D2L_DEVICE")
        .env("CARGO", cargo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_preprocessor_reads_the_book_mdbook_names() {
    let (a, b) = (small_book("checkout A"), small_book("checkout B"));
    // a stand-in for cargo that records how it was asked to start the
    // runner, and fails as a runner that cannot build would
    let tools = tempfile::tempdir().unwrap();
    let cargo = tools.path().join("cargo");
    let args = tools.path().join("args.txt");
    write(
        tools.path(),
        "cargo",
        &format!("#!/bin/sh\necho \"$@\" > '{}'\nexit 3\n", args.display()),
    );
    Command::new("chmod")
        .arg("+x")
        .arg(&cargo)
        .status()
        .unwrap();
    for book in [&a, &b] {
        let out = preprocess(book.path(), &cargo);
        assert!(out.status.success(), "{}", stderr(&out));
        let handed_back: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap();
        assert!(handed_back.to_string().contains("# Demo"));
    }
    assert!(!args.exists(), "an up-to-date book starts no runner");
    // B is read on its own once A is gone
    let b_root = b.path().to_owned();
    drop(a);
    let out = preprocess(&b_root, &cargo);
    assert!(out.status.success(), "{}", stderr(&out));
    // an edit to B's listing makes B's listing stale, run on B's root
    write(&b_root, LISTING, &listing("checkout B, edited"));
    let out = preprocess(&b_root, &cargo);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("1 listing(s) to run (demo)"), "{err}");
    assert!(err.contains("the listing runner failed"), "{err}");
    let asked = fs::read_to_string(&args).unwrap();
    let expected = format!("--root {} render --device=flex", b_root.display());
    assert!(asked.contains(&expected), "{asked}");
    assert!(asked.trim_end().ends_with(" demo"), "{asked}");
}

#[test]
fn a_quoted_number_that_no_output_prints_is_marked_and_named() {
    let book = small_book("loss 0.6132\n");
    let src = book.path().join("src");
    write(&src, "figures/demo.txt", "loss 0.6132\n");
    let page = "# Demo\n\n```text\n{{#include figures/demo.txt}}\n```\n\n\
                The loss ends\nat 0.58.\n";
    // up to date: no runner is started, whatever `cargo` is
    let out = preprocess_page(book.path(), Path::new("false"), page);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("demo.md:8: 0.58 in “The loss ends at 0.58.”"),
        "{err}"
    );
    let handed_back = String::from_utf8_lossy(&out.stdout);
    assert!(
        handed_back.contains("0.58 agrees with none"),
        "{handed_back}"
    );
    // the number the output prints passes
    let out = preprocess_page(
        book.path(),
        Path::new("false"),
        &page.replace("0.58", "0.61"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("agrees with none"),
        "{}",
        stderr(&out)
    );
}
