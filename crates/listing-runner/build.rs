//! Generates a skeptic test for every Rust block written inline in the
//! book's Markdown (blocks that `{{#include}}` a listing are compiled as
//! part of the `d2l-attention` crate instead, and marked `rust,ignore`).

fn main() {
    let mut pages: Vec<String> = std::fs::read_dir("../../src")
        .expect("the book's src/ folder")
        .map(|e| e.expect("a readable entry of src/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    pages.sort();
    // The pages themselves, not src/: src/figures links to the figures the
    // listing runner writes, which must not make this crate build again.
    // A new page is listed in SUMMARY.md, whose edit reruns this script.
    for page in &pages {
        println!("cargo:rerun-if-changed={page}");
    }
    skeptic::generate_doc_tests(&pages);
}
