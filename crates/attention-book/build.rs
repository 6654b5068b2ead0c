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
    println!("cargo:rerun-if-changed=../../src");
    skeptic::generate_doc_tests(&pages);
}
